"""Control of Target's workspaces, QA mode previews, trace token and visitors log (`/_sim/target/...`)."""

from __future__ import annotations

import json

from preflight_sim import target, target_artifacts, target_geo
from preflight_sim.control import ControlError, _known_fields, _object, _ok, _validated_offers
from preflight_sim.exchange import Request, Response


def get_workspaces(sim, req: Request, m) -> Response:
    """Every workspace and its mboxes: the default one (propertyToken null) first."""
    state = sim.target
    with state.lock:
        listed = [{"propertyToken": None, "mboxes": list(state.offers)}]
        listed += [{"propertyToken": token, "mboxes": list(offers)} for token, offers in state.workspaces.items()]
    return _ok({"workspaces": listed})


# QA mode previews -----------------------------------------------------------------------------

def _previews(state) -> Response:
    with state.lock:
        return _ok({"previews": [{"token": token, "offers": {name: target.describe_offer(name, offer, preview=True)
                                                             for name, offer in offers.items()}}
                                 for token, offers in state.previews.items()]})


def get_preview(sim, req: Request, m) -> Response:
    return _previews(sim.target)


def put_preview(sim, req: Request, m) -> Response:
    """Registers (or replaces) the preview offers a request with `qaMode.token` equal to `token` is answered from."""
    doc = _object(req)
    _known_fields(doc, ("token", "offers"), "preview")
    token = doc.get("token")
    if not isinstance(token, str) or not token:
        raise ControlError(400, "token must be a non-empty string (the qaMode.token requests will send)")
    if "offers" not in doc:
        raise ControlError(400, "offers is required: an offers document, as PUT /_sim/target/offers takes")
    try:
        offers = target.normalize_offers(doc["offers"])
    except target.OfferError as exc:
        raise ControlError(400, str(exc)) from None
    _validated_offers(sim, offers)
    with sim.target.lock:
        sim.target.previews[token] = offers
    return _previews(sim.target)


def delete_preview(sim, req: Request, m) -> Response:
    """Every preview forgotten, or only `?token=`'s (404 when it is not registered)."""
    token = req.query.get("token")
    state = sim.target
    with state.lock:
        if token is None:
            cleared = len(state.previews)
            state.previews = {}
        elif isinstance(token, str) and token in state.previews:
            del state.previews[token]
            cleared = 1
        else:
            raise ControlError(404, f"no preview registered for token {token!r}")
    return _ok({"cleared": cleared})


# trace ----------------------------------------------------------------------------------------

def get_trace_token(sim, req: Request, m) -> Response:
    with sim.target.lock:
        return _ok({"token": sim.target.trace_token})


def put_trace_token(sim, req: Request, m) -> Response:
    """The `trace.authorizationToken` Target accepts (null: none, no request is traced)."""
    doc = _object(req)
    _known_fields(doc, ("token",), "traceToken")
    if "token" not in doc:
        raise ControlError(400, "token is required: a non-empty string, or null (no trace for anyone)")
    token = doc["token"]
    if token is not None and (not isinstance(token, str) or not token):
        raise ControlError(400, "token must be a non-empty string or null")
    with sim.target.lock:
        sim.target.trace_token = token
    return _ok({"token": token})


def delete_trace_token(sim, req: Request, m) -> Response:
    with sim.target.lock:
        sim.target.trace_token = None
    return _ok({"token": None})


# visitors -------------------------------------------------------------------------------------

def get_visitors(sim, req: Request, m) -> Response:
    with sim.target.lock:
        return _ok({"requests": [dict(v) for v in sim.target.visitors]})


# on-device decisioning artifacts ----------------------------------------------------------------

def _property_token(req: Request) -> str | None:
    token = req.query.get("propertyToken")
    if token is not None and (not isinstance(token, str) or not token):
        raise ControlError(400, "propertyToken must be given once, not empty")
    return token


def get_artifact(sim, req: Request, m) -> Response:
    """The artifact served for the default workspace (or `?propertyToken=`), and its ETag."""
    token = _property_token(req)
    with sim.target.lock:
        body = sim.target.artifacts.get(token)
    if body is None:
        raise ControlError(404, f"no artifact set for propertyToken {token!r}")
    return _ok({"propertyToken": token, "etag": target_artifacts.etag(body), "artifact": json.loads(body)})


def put_artifact(sim, req: Request, m) -> Response:
    """Sets the artifact served at `/{client}/{environment}/v1/[{propertyToken}/]rules.json`: the body is
    the artifact JSON, served as given (any version: the agent is the one to refuse); or, with `?sample=geo`
    and no body, the simulator's own artifact that targets by geo (`target_geo.GEO_ARTIFACT`)."""
    token = _property_token(req)
    sample = req.query.get("sample")
    if sample is not None:
        if sample not in target_geo.SAMPLES:
            raise ControlError(400, f"sample must be one of: {', '.join(sorted(target_geo.SAMPLES))}")
        if req.raw_body:
            raise ControlError(400, "a sample artifact takes no body")
        doc = target_geo.SAMPLES[sample]
    else:
        doc = _object(req)
    body = target_artifacts.encode(doc)
    with sim.target.lock:
        sim.target.artifacts[token] = body
    return _ok({"propertyToken": token, "etag": target_artifacts.etag(body)})


def delete_artifact(sim, req: Request, m) -> Response:
    """No artifact for the default workspace (or `?propertyToken=`): its address answers 404."""
    token = _property_token(req)
    with sim.target.lock:
        removed = sim.target.artifacts.pop(token, None) is not None
    return _ok({"propertyToken": token, "removed": removed})


def put_artifact_organization(sim, req: Request, m) -> Response:
    """The organization id `rules.bin` is obfuscated for."""
    doc = _object(req)
    _known_fields(doc, ("organizationId",), "artifactOrganization")
    organization = doc.get("organizationId")
    if not isinstance(organization, str) or not organization:
        raise ControlError(400, "organizationId must be a non-empty string")
    with sim.target.lock:
        sim.target.artifact_organization = organization
    return _ok({"organizationId": organization})


# the geo service -------------------------------------------------------------------------------------

def _geo(sim) -> Response:
    with sim.target.lock:
        location = dict(sim.target.geo) if sim.target.geo is not None else None
        lookups = sim.target.geo_lookups
    return _ok({"location": location, "headers": target_geo.headers_for(location), "lookups": lookups})


def get_geo(sim, req: Request, m) -> Response:
    """Where `GET /v1/geo` places its callers, its `x-geo-*` headers, and how many lookups it answered."""
    return _geo(sim)


def put_geo(sim, req: Request, m) -> Response:
    """Sets the location `GET /v1/geo` answers: `{"city", "regionCode", "countryCode", "latitude",
    "longitude"}`, each optional (an absent one is not sent), at least one given."""
    doc = _object(req)
    _known_fields(doc, tuple(target_geo.FIELDS), "geo")
    location = {}
    for key, value in doc.items():
        if value is None:
            continue
        if key in ("latitude", "longitude"):
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ControlError(400, f"{key} must be a number")
            limit = 90 if key == "latitude" else 180
            if not -limit <= value <= limit:
                raise ControlError(400, f"{key} must be between -{limit} and {limit}")
        elif not isinstance(value, str) or not value or "\r" in value or "\n" in value:
            raise ControlError(400, f"{key} must be a non-empty string on one line")
        location[key] = value
    if not location:
        raise ControlError(400, "give at least one of: " + ", ".join(target_geo.FIELDS))
    with sim.target.lock:
        sim.target.geo = location
    return _geo(sim)


def delete_geo(sim, req: Request, m) -> Response:
    """`GET /v1/geo` cannot place its callers: its answers carry no `x-geo-*` header."""
    with sim.target.lock:
        sim.target.geo = None
    return _geo(sim)


ROUTES = [
    ("GET", r"/_sim/target/geo", get_geo),
    ("PUT", r"/_sim/target/geo", put_geo),
    ("DELETE", r"/_sim/target/geo", delete_geo),
    ("PUT", r"/_sim/target/artifactOrganization", put_artifact_organization),
    ("GET", r"/_sim/target/artifact", get_artifact),
    ("PUT", r"/_sim/target/artifact", put_artifact),
    ("DELETE", r"/_sim/target/artifact", delete_artifact),
    ("GET", r"/_sim/target/workspaces", get_workspaces),
    ("GET", r"/_sim/target/preview", get_preview),
    ("PUT", r"/_sim/target/preview", put_preview),
    ("DELETE", r"/_sim/target/preview", delete_preview),
    ("GET", r"/_sim/target/traceToken", get_trace_token),
    ("PUT", r"/_sim/target/traceToken", put_trace_token),
    ("DELETE", r"/_sim/target/traceToken", delete_trace_token),
    ("GET", r"/_sim/target/visitors", get_visitors),
]

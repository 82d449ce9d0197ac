"""Control and inspection API: `/health` and everything under `/_sim/` (JSON in, JSON out)."""

from __future__ import annotations

import re
import time
from typing import Any, Callable
from urllib.parse import unquote

from preflight_sim import VERSION, pass_, pass_sessions, target
from preflight_sim.clock import ClockError
from preflight_sim.exchange import Request, Response
from preflight_sim.faults import FaultError


class ControlError(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def _ok(document: Any, status: int = 200) -> Response:
    return Response.json(status, document)


def _body(req: Request, required: bool = True) -> Any:
    if not req.raw_body:
        if required:
            raise ControlError(400, "a JSON body is required")
        return {}
    ok, value = req.json()
    if not ok:
        raise ControlError(400, "the body is not valid JSON")
    return value


def _object(req: Request, required: bool = True) -> dict:
    value = _body(req, required)
    if not isinstance(value, dict):
        raise ControlError(400, "the body must be a JSON object")
    return value


def _int_field(doc: dict, key: str, minimum: int | None = None) -> int | None:
    value = doc.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ControlError(400, f"{key} must be a number")
    if minimum is not None and value < minimum:
        raise ControlError(400, f"{key} must be >= {minimum}")
    return int(value)


def _whole_number(doc: dict, key: str) -> int:
    value = doc[key]
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ControlError(400, f"{key} must be an integer (milliseconds)")
    return value


def _str_list(doc: dict, key: str) -> list[str]:
    value = doc.get(key)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(x, str) and x for x in value):
        raise ControlError(400, f"{key} must be a list of non-empty strings")
    return value


def _known_fields(doc: dict, fields: tuple[str, ...], what: str) -> None:
    unknown = set(doc) - set(fields)
    if unknown:
        raise ControlError(400, f"unknown {what} fields: {', '.join(sorted(unknown))} (use {', '.join(fields)})")


def _str_field(doc: dict, key: str, required: bool = False) -> str | None:
    value = doc.get(key)
    if value is None:
        if required:
            raise ControlError(400, f"{key} is required")
        return None
    if not isinstance(value, str) or not value:
        raise ControlError(400, f"{key} must be a non-empty string")
    return value


# health, log, stats ---------------------------------------------------------------------------

def health(sim, req: Request, m) -> Response:
    described = sim.specs.describe()
    return _ok({"status": "ok", "validating": described["validating"], "specs": described["specs"],
                "overlays": described["overlays"], "version": VERSION,
                "uptimeMs": round((time.time() - sim.started) * 1000.0),
                "offers": sim.offers_source or "built-in"})


def get_requests(sim, req: Request, m) -> Response:
    since = req.query.get("since", "0")
    try:
        since_seq = int(since)
    except (TypeError, ValueError):
        raise ControlError(400, "since must be an integer") from None
    service = req.query.get("service")
    if service is not None and service not in ("target", "dcr", "pass"):
        raise ControlError(400, "service must be target, dcr or pass")
    return _ok({"requests": sim.log.entries(since_seq, service), "lastSeq": sim.log.last_seq()})


def delete_requests(sim, req: Request, m) -> Response:
    sim.log.clear()
    return _ok({"cleared": True})


def get_violations(sim, req: Request, m) -> Response:
    violations = sim.log.violations()
    return _ok({"count": len(violations), "violations": violations})


def delete_violations(sim, req: Request, m) -> Response:
    sim.log.clear_violations()
    return _ok({"cleared": True})


def get_stats(sim, req: Request, m) -> Response:
    return _ok(sim.stats())


def post_reset(sim, req: Request, m) -> Response:
    sim.reset()
    return _ok({"reset": True})


def get_connections(sim, req: Request, m) -> Response:
    return _ok(sim.connections.describe())


def post_close_idle(sim, req: Request, m) -> Response:
    return _ok({"closed": sim.connections.close_idle()})


# clock ----------------------------------------------------------------------------------------

CLOCK_FIELDS = ("offsetMs", "now")


def get_clock(sim, req: Request, m) -> Response:
    return _ok(sim.clock.describe())


def put_clock(sim, req: Request, m) -> Response:
    doc = _object(req)
    _known_fields(doc, CLOCK_FIELDS, "clock")
    given = [key for key in CLOCK_FIELDS if key in doc]
    if len(given) != 1:
        raise ControlError(400, "give exactly one of offsetMs (added to the machine's clock) or now (epoch ms)")
    value = _whole_number(doc, given[0])
    try:
        if given[0] == "offsetMs":
            sim.clock.set_offset(value)
        else:
            sim.clock.set_now(value)
    except ClockError as exc:
        raise ControlError(400, str(exc)) from None
    return _ok(sim.clock.describe())


# faults ---------------------------------------------------------------------------------------

def get_faults(sim, req: Request, m) -> Response:
    return _ok({"faults": sim.faults.describe()})


def post_fault(sim, req: Request, m) -> Response:
    try:
        fault = sim.faults.add(_body(req))
    except FaultError as exc:
        raise ControlError(400, str(exc)) from None
    return _ok(fault.describe(), 201)


def delete_faults(sim, req: Request, m) -> Response:
    return _ok({"cleared": sim.faults.clear()})


def delete_fault(sim, req: Request, m) -> Response:
    if not sim.faults.remove(m["id"]):
        raise ControlError(404, f"no fault {m['id']}")
    return _ok({"deleted": m["id"]})


# target ---------------------------------------------------------------------------------------

def _validated_offers(sim, offers: dict[str, dict]) -> dict[str, dict]:
    problems = target.offer_problems(sim.specs, offers)
    if problems:
        raise ControlError(400, problems[0])
    return offers


def _property_token(req: Request) -> str | None:
    """`?propertyToken=`: the workspace a control call is about (None: the default one)."""
    token = req.query.get("propertyToken")
    if token is None:
        return None
    if not isinstance(token, str) or not token:
        raise ControlError(400, "propertyToken must be given once, non-empty")
    return token


def _offers_answer(sim, token: str | None, offers: dict | None = None) -> Response:
    return _ok({"propertyToken": token, "offers": sim.target.describe_offers(token) if offers is None else offers})


def get_offers(sim, req: Request, m) -> Response:
    return _offers_answer(sim, _property_token(req))


def put_offers(sim, req: Request, m) -> Response:
    token = _property_token(req)
    try:
        offers = target.normalize_offers(_body(req))
    except target.OfferError as exc:
        raise ControlError(400, str(exc)) from None
    _validated_offers(sim, offers)
    with sim.target.lock:
        if token is None:
            sim.target.offers = offers
        else:
            sim.target.workspaces[token] = offers
    return _offers_answer(sim, token)


def delete_offers(sim, req: Request, m) -> Response:
    """The default workspace emptied, or another workspace forgotten (404 if it was never set)."""
    token = _property_token(req)
    with sim.target.lock:
        if token is None:
            cleared = len(sim.target.offers)
            sim.target.offers = {}
        elif token in sim.target.workspaces:
            cleared = len(sim.target.workspaces.pop(token))
        else:
            raise ControlError(404, f"no offers for property token {token}")
    return _ok({"propertyToken": token, "cleared": cleared})


def put_offer(sim, req: Request, m) -> Response:
    name = m["name"]
    token = _property_token(req)
    try:
        offer = target.normalize_offer(name, _body(req))
    except target.OfferError as exc:
        raise ControlError(400, str(exc)) from None
    _validated_offers(sim, {name: offer})
    with sim.target.lock:
        if token is None:
            sim.target.offers[name] = offer
        else:
            sim.target.workspaces.setdefault(token, {})[name] = offer
    return _offers_answer(sim, token, {name: target.describe_offer(name, offer)})


def delete_offer(sim, req: Request, m) -> Response:
    token = _property_token(req)
    with sim.target.lock:
        if sim.target.workspace(token).pop(m["name"], None) is None:
            where = "" if token is None else f" in property token {token}"
            raise ControlError(404, f"no offer for mbox {m['name']}{where}")
    return _ok({"deleted": m["name"], "propertyToken": token})


def put_edge_host(sim, req: Request, m) -> Response:
    """Any string is served as given (a scheme, a port, a path, a user part, an empty or unresolvable name:
    what an agent must refuse or survive); null answers without `edgeHost`, which the spec allows."""
    doc = _object(req)
    _known_fields(doc, ("edgeHost",), "edgeHost")
    if "edgeHost" not in doc:
        raise ControlError(400, "edgeHost is required: a string (any) or null (answer without edgeHost)")
    value = doc["edgeHost"]
    if value is not None and not isinstance(value, str):
        raise ControlError(400, "edgeHost must be a string or null (the spec types it as a string)")
    sim.edge_host = value
    return _ok({"edgeHost": sim.edge_host})


def get_edge_host(sim, req: Request, m) -> Response:
    return _ok({"edgeHost": sim.edge_host})


NOTIFICATION_RULE_FIELDS = ("maxAgeMs", "maxFutureMs")


def get_notification_rules(sim, req: Request, m) -> Response:
    return _ok(sim.target.notification_rules())


def put_notification_rules(sim, req: Request, m) -> Response:
    doc = _object(req)
    _known_fields(doc, NOTIFICATION_RULE_FIELDS, "notification rule")
    if not doc:
        raise ControlError(400, "give maxAgeMs and/or maxFutureMs")
    max_age = _int_field(doc, "maxAgeMs", 0)
    max_future = _int_field(doc, "maxFutureMs", 0)
    state = sim.target
    with state.lock:
        if max_age is not None:
            state.max_age_ms = max_age
        if max_future is not None:
            state.max_future_ms = max_future
    return _ok(state.notification_rules())


def _revoked(state) -> Response:
    with state.lock:
        return _ok({"count": len(state.revoked_tokens), "tokens": sorted(state.revoked_tokens)})


def get_revoked_tokens(sim, req: Request, m) -> Response:
    return _revoked(sim.target)


def put_revoked_tokens(sim, req: Request, m) -> Response:
    doc = _object(req)
    _known_fields(doc, ("tokens", "mboxes", "replace"), "revoked-token")
    tokens, mboxes = _str_list(doc, "tokens"), _str_list(doc, "mboxes")
    replace = doc.get("replace", True)
    if not isinstance(replace, bool):
        raise ControlError(400, "replace must be a boolean")
    state = sim.target
    with state.lock:
        revoked = set(tokens)
        for name in mboxes:
            issued = state.tokens_for(name)
            if not issued:
                raise ControlError(400, f"mbox {name!r} has no offer and no token issued: nothing to revoke")
            revoked |= issued
        if replace:
            state.revoked_tokens = revoked
        else:
            state.revoked_tokens |= revoked
    return _revoked(state)


def delete_revoked_tokens(sim, req: Request, m) -> Response:
    state = sim.target
    with state.lock:
        cleared = len(state.revoked_tokens)
        state.revoked_tokens = set()
    return _ok({"cleared": cleared})


NOTIFICATION_TYPES = ("display", "click")


def get_notifications(sim, req: Request, m) -> Response:
    kind = req.query.get("type")
    if kind is not None and kind not in NOTIFICATION_TYPES:
        raise ControlError(400, f"type must be one of {', '.join(NOTIFICATION_TYPES)}")
    state = sim.target
    with state.lock:
        notes = [dict(n) for n in state.notifications if kind is None or n["type"] == kind]
        counts = state.notification_counts
        received = sum(counts.values()) if kind is None else counts[kind]
    # `count`: those listed (the newest `--notification-log`); `received`: every one since the start or a reset.
    return _ok({"count": len(notes), "received": received, "notifications": notes})


# pass -----------------------------------------------------------------------------------------

def post_login(sim, req: Request, m) -> Response:
    doc = _object(req)
    sp = _str_field(doc, "serviceProvider", required=True)
    mvpd = _str_field(doc, "mvpd", required=True)
    now = int(sim.clock.now_ms())
    not_after = _int_field(doc, "notAfter")
    ttl = _int_field(doc, "ttlSeconds", 1)
    if not_after is None:
        not_after = now + (ttl if ttl is not None else 3600) * 1000
    not_before = _int_field(doc, "notBefore")
    device = _str_field(doc, "deviceIdentifier")
    attributes = doc.get("attributes")
    if attributes is not None and not isinstance(attributes, dict):
        raise ControlError(400, "attributes must be an object")
    state = sim.pass_
    with state.lock:
        record = state.login(sp, mvpd, not_after, now if not_before is None else not_before, device, attributes)
    return _ok({"login": record})


def post_logout(sim, req: Request, m) -> Response:
    doc = _object(req, required=False)
    state = sim.pass_
    with state.lock:
        removed = state.logout(_str_field(doc, "serviceProvider"), _str_field(doc, "mvpd"))
    return _ok({"removed": removed})


def put_decisions(sim, req: Request, m) -> Response:
    doc = _object(req)
    sp = _str_field(doc, "serviceProvider") or "*"
    decisions = doc.get("decisions", {})
    if not isinstance(decisions, dict):
        raise ControlError(400, "decisions must be an object keyed by resource id")
    clean: dict[str, dict] = {}
    for resource, value in decisions.items():
        if isinstance(value, bool):
            value = {"authorized": value}
        if not isinstance(value, dict):
            raise ControlError(400, f"decision for {resource!r} must be an object or a boolean")
        error = value.get("error")
        if error is not None and not isinstance(error, (dict, str)):
            raise ControlError(400, f"error for {resource!r} must be an object or a code string")
        authorized = value.get("authorized", error is None)
        if not isinstance(authorized, bool):
            raise ControlError(400, f"authorized for {resource!r} must be a boolean")
        entry = {"authorized": authorized}
        if error is not None:
            problems = sim.specs.validate(sim.specs.schema_ref("pass", "ErrorInformation"), pass_.complete_error(error))
            if problems:
                raise ControlError(400, f"error for {resource!r} is not a valid ErrorInformation: {problems[0]}")
            entry["error"] = error
        if "source" in value:
            if value["source"] not in pass_.DECISION_SOURCES:
                raise ControlError(400, f"source for {resource!r} must be one of "
                                        f"{', '.join(pass_.DECISION_SOURCES)}, got {value['source']!r}")
            entry["source"] = value["source"]
        clean[resource] = entry
    missing = doc.get("missingProfile")
    if missing is not None and missing not in ("top-level", "item-level"):
        raise ControlError(400, "missingProfile must be 'top-level' or 'item-level'")
    state = sim.pass_
    with state.lock:
        if doc.get("replace", True):
            state.decisions[sp] = clean
        else:
            state.decisions.setdefault(sp, {}).update(clean)
        if missing is not None:
            state.missing_profile = missing
        current = dict(state.decisions)
    return _ok({"decisions": current, "missingProfile": state.missing_profile})


def get_decisions(sim, req: Request, m) -> Response:
    state = sim.pass_
    with state.lock:
        return _ok({"decisions": dict(state.decisions), "missingProfile": state.missing_profile})


def post_tokens(sim, req: Request, m) -> Response:
    doc = _object(req)
    expires_in = _int_field(doc, "expiresIn", 1)
    if expires_in is None:
        raise ControlError(400, "expiresIn is required")
    state = sim.pass_
    with state.lock:
        state.token_lifetime = expires_in
    return _ok({"expiresIn": expires_in})


def post_revoke(sim, req: Request, m) -> Response:
    state = sim.pass_
    with state.lock:
        revoked = 0
        for token in state.tokens.values():
            if not token["revoked"]:
                token["revoked"] = True
                revoked += 1
    return _ok({"revoked": revoked})


def post_ratelimit(sim, req: Request, m) -> Response:
    doc = _object(req)
    enabled = doc.get("enabled", True)
    if not isinstance(enabled, bool):
        raise ControlError(400, "enabled must be a boolean")
    per_second = _int_field(doc, "perSecond", 1)
    burst = _int_field(doc, "burst", 0)
    state = sim.pass_
    with state.lock:
        limiter = state.ratelimit
        limiter.configure(enabled, per_second if per_second is not None else limiter.per_second,
                          burst if burst is not None else limiter.burst)
        return _ok(limiter.describe())


def post_service_provider(sim, req: Request, m) -> Response:
    doc = _object(req)
    known = doc.get("known", True)
    if not isinstance(known, bool):
        raise ControlError(400, "known must be a boolean")
    mvpds = doc.get("mvpds")
    if mvpds is not None:
        if not isinstance(mvpds, list):
            raise ControlError(400, "mvpds must be a list")
        mvpds = [{"id": x, "displayName": x} if isinstance(x, str) else x for x in mvpds]
        if not all(isinstance(x, dict) and isinstance(x.get("id"), str) for x in mvpds):
            raise ControlError(400, "each mvpd must be an id string or an object with an id")
        ref = sim.specs.schema_ref("pass", "MvpdType")
        for x in mvpds:
            problems = sim.specs.validate(ref, x)
            if problems:
                raise ControlError(400, f"mvpd {x['id']} is not a valid MvpdType: {problems[0]}")
    name = _str_field(doc, "name")
    state = sim.pass_
    with state.lock:
        state.service_providers[m["name"]] = {"known": known, "mvpds": mvpds, "name": name}
        return _ok({"serviceProvider": m["name"], **state.service_providers[m["name"]]})


SESSION_SETTING_FIELDS = {"codeTtlSeconds": "code_ttl", "mediaTokenTtlSeconds": "media_token_ttl",
                          "decisionTtlSeconds": "decision_ttl"}


def get_session_settings(sim, req: Request, m) -> Response:
    state = sim.pass_
    with state.lock:
        return _ok(state.settings())


def put_session_settings(sim, req: Request, m) -> Response:
    """Lifetimes in seconds; a new code lifetime applies to sessions created from now on."""
    doc = _object(req)
    _known_fields(doc, tuple(SESSION_SETTING_FIELDS), "session setting")
    if not doc:
        raise ControlError(400, f"give one or more of {', '.join(SESSION_SETTING_FIELDS)}")
    values = {key: _whole_seconds(doc, key) for key in doc}
    state = sim.pass_
    with state.lock:
        for key, value in values.items():
            setattr(state, SESSION_SETTING_FIELDS[key], value)
        return _ok(state.settings())


def _whole_seconds(doc: dict, key: str) -> int:
    value = doc[key]
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ControlError(400, f"{key} must be an integer >= 1 (seconds)")
    return value


def get_logout_flow(sim, req: Request, m) -> Response:
    state = sim.pass_
    with state.lock:
        return _ok(state.logout_flow())


def put_logout_flow(sim, req: Request, m) -> Response:
    """Per MVPD: whether logout sends the user agent to the MVPD (`logout`, interactive, with a url) or
    Adobe completes it alone (`complete`, no url)."""
    doc = _object(req)
    _known_fields(doc, ("mvpd", "browserStep"), "logout flow")
    mvpd = _str_field(doc, "mvpd", required=True)
    step = doc.get("browserStep")
    if not isinstance(step, bool):
        raise ControlError(400, "browserStep must be a boolean")
    state = sim.pass_
    with state.lock:
        state.logout_browser_step[mvpd] = step
        return _ok(state.logout_flow())


SIGNIN_FIELDS = ("mvpd", "ttlSeconds", "notAfter", "attributes", "userID")


def get_sessions(sim, req: Request, m) -> Response:
    state = sim.pass_
    with state.lock:
        return _ok({"sessions": pass_sessions.describe_sessions(state, sim.clock.now_ms())})


def post_session_signin(sim, req: Request, m) -> Response:
    """The user signs in on the second screen: JSON from a test, or the form of the authenticate page
    (answered with a page for the person holding the browser)."""
    from_page = req.content_type == "application/x-www-form-urlencoded"
    if from_page:
        mvpd = req.form().get("mvpd")
        options: dict = {"mvpd": mvpd if isinstance(mvpd, str) and mvpd else None}
    else:
        doc = _object(req, required=False)
        _known_fields(doc, SIGNIN_FIELDS, "sign-in")
        attributes = doc.get("attributes")
        if attributes is not None and not isinstance(attributes, dict):
            raise ControlError(400, "attributes must be an object")
        user = _str_field(doc, "userID")
        if user is not None:
            attributes = dict(attributes or {}, userID=user)
        options = {"mvpd": _str_field(doc, "mvpd"), "not_after": _int_field(doc, "notAfter"),
                   "ttl_seconds": _int_field(doc, "ttlSeconds", 1), "attributes": attributes}
    state = sim.pass_
    with state.lock:
        try:
            login, session = pass_sessions.sign_in(state, m["code"], int(sim.clock.now_ms()), **options)
        except pass_sessions.SignInError as exc:
            if from_page:
                return pass_sessions.problem_page(exc.status, "Sign-in failed", str(exc))
            raise ControlError(exc.status, str(exc)) from None
    if from_page:
        return pass_sessions.signed_in_page(session)
    return _ok({"login": login, "session": session})


def get_pass_state(sim, req: Request, m) -> Response:
    return _ok(sim.pass_.describe(sim.clock.now_ms()))


# routing --------------------------------------------------------------------------------------

# Workspaces, QA mode previews, the trace token and the visitors log; its handlers use the helpers above.
from preflight_sim import control_target  # noqa: E402


Handler = Callable[[Any, Request, dict], Response]

ROUTES: list[tuple[str, str, Handler]] = [
    ("GET", r"/health", health),
    ("GET", r"/_sim/health", health),
    ("GET", r"/_sim/requests", get_requests),
    ("DELETE", r"/_sim/requests", delete_requests),
    ("GET", r"/_sim/violations", get_violations),
    ("DELETE", r"/_sim/violations", delete_violations),
    ("GET", r"/_sim/stats", get_stats),
    ("POST", r"/_sim/reset", post_reset),
    ("GET", r"/_sim/connections", get_connections),
    ("POST", r"/_sim/connections/close-idle", post_close_idle),
    ("GET", r"/_sim/clock", get_clock),
    ("PUT", r"/_sim/clock", put_clock),
    ("GET", r"/_sim/faults", get_faults),
    ("POST", r"/_sim/faults", post_fault),
    ("DELETE", r"/_sim/faults", delete_faults),
    ("DELETE", r"/_sim/faults/(?P<id>[^/]+)", delete_fault),
    ("GET", r"/_sim/target/offers", get_offers),
    ("PUT", r"/_sim/target/offers", put_offers),
    ("DELETE", r"/_sim/target/offers", delete_offers),
    ("PUT", r"/_sim/target/offers/(?P<name>[^/]+)", put_offer),
    ("DELETE", r"/_sim/target/offers/(?P<name>[^/]+)", delete_offer),
    ("GET", r"/_sim/target/notifications", get_notifications),
    ("GET", r"/_sim/target/notificationRules", get_notification_rules),
    ("PUT", r"/_sim/target/notificationRules", put_notification_rules),
    ("GET", r"/_sim/target/revokedTokens", get_revoked_tokens),
    ("PUT", r"/_sim/target/revokedTokens", put_revoked_tokens),
    ("DELETE", r"/_sim/target/revokedTokens", delete_revoked_tokens),
    ("GET", r"/_sim/target/edgeHost", get_edge_host),
    *control_target.ROUTES,
    ("PUT", r"/_sim/target/edgeHost", put_edge_host),
    ("POST", r"/_sim/pass/login", post_login),
    ("POST", r"/_sim/pass/logout", post_logout),
    ("GET", r"/_sim/pass/decisions", get_decisions),
    ("PUT", r"/_sim/pass/decisions", put_decisions),
    ("POST", r"/_sim/pass/tokens", post_tokens),
    ("POST", r"/_sim/pass/tokens/revoke", post_revoke),
    ("POST", r"/_sim/pass/ratelimit", post_ratelimit),
    ("POST", r"/_sim/pass/serviceProviders/(?P<name>[^/]+)", post_service_provider),
    ("GET", r"/_sim/pass/state", get_pass_state),
    ("GET", r"/_sim/pass/sessions", get_sessions),
    ("POST", r"/_sim/pass/sessions/(?P<code>[^/]+)/signin", post_session_signin),
    ("GET", r"/_sim/pass/sessionSettings", get_session_settings),
    ("PUT", r"/_sim/pass/sessionSettings", put_session_settings),
    ("GET", r"/_sim/pass/logoutFlow", get_logout_flow),
    ("PUT", r"/_sim/pass/logoutFlow", put_logout_flow),
]
_COMPILED = [(method, re.compile(f"^{pattern}$"), fn) for method, pattern, fn in ROUTES]


def handle(sim, req: Request) -> Response:
    path = req.path.rstrip("/") or "/"
    allowed = []
    for method, pattern, fn in _COMPILED:
        m = pattern.match(path)
        if not m:
            continue
        if method != req.method:
            allowed.append(method)
            continue
        try:
            return fn(sim, req, {k: unquote(v) for k, v in m.groupdict().items()})
        except ControlError as exc:
            return Response.json(exc.status, {"error": str(exc)})
    if allowed:
        return Response.json(405, {"error": f"use {', '.join(allowed)}"}, {"Allow": ", ".join(allowed)})
    return Response.json(404, {"error": f"no control endpoint {req.method} {req.path}"})

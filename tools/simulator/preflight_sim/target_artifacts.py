"""Target's on-device decisioning artifacts, as its CDN serves them (`assets.adobetarget.com`).

`GET /{client}/{environment}/v1/rules.json` and `/{client}/{environment}/v1/{propertyToken}/rules.json`
answer the artifact set for the default workspace or that property (`PUT /_sim/target/artifact`), with a
strong `ETag`; a request whose `If-None-Match` names it gets 304. Any client and environment are served.
`rules.bin` at the same places is the obfuscated form, for the organization `artifact_organization`.
"""

from __future__ import annotations

import hashlib
import json

from preflight_sim.exchange import Request, Response
from preflight_sim.outcome import Outcome

RULES = "/{client}/{environment}/v1/rules.json"
PROPERTY_RULES = "/{client}/{environment}/v1/{propertyToken}/rules.json"
RULES_BIN = "/{client}/{environment}/v1/rules.bin"
PROPERTY_RULES_BIN = "/{client}/{environment}/v1/{propertyToken}/rules.bin"

# The organization `rules.bin` is obfuscated for (`PUT /_sim/target/artifactOrganization` changes it).
DEFAULT_ORGANIZATION = "PREFLIGHTSIM0000000000@AdobeOrg"

# The simulator's own default: a version 1 artifact with no rules (hand-written, not Adobe's).
DEFAULT_ARTIFACT = {
    "version": "1.0.0",
    "meta": {"clientCode": "preflightsim", "environment": "production", "generatedAt": "2026-01-01T00:00:00.000Z"},
    "globalMbox": "target-global-mbox",
    "geoTargetingEnabled": False,
    "responseTokens": [],
    "remoteMboxes": [],
    "remoteViews": [],
    "localMboxes": [],
    "localViews": [],
    "rules": {"mboxes": {}, "views": {}},
}


def encode(document) -> bytes:
    return json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def etag(body: bytes) -> str:
    """A strong validator: the same bytes, the same tag."""
    return '"' + hashlib.sha256(body).hexdigest()[:32] + '"'


def default_artifacts() -> dict[str | None, bytes]:
    return {None: encode(DEFAULT_ARTIFACT)}


def obfuscate(body: bytes, organization: str) -> bytes:
    """`rules.bin` as the SDKs read it (obfuscationProvider.ts): an 8-byte `TDA:1` header padded with
    spaces, a 32-character key, then the JSON XORed with the organization id followed by the key."""
    key = hashlib.sha256(body).hexdigest()[:32].encode("ascii")
    secret = organization.encode("utf-8") + key
    return b"TDA:1   " + key + bytes(byte ^ secret[index % len(secret)] for index, byte in enumerate(body))


def _matches(if_none_match: str | None, tag: str) -> bool:
    if not if_none_match:
        return False
    candidates = [c.strip() for c in if_none_match.split(",")]
    return "*" in candidates or tag in candidates


def artifact_checks(sim, req: Request, params: dict) -> list[str]:
    return []


def handle_artifact(sim, req: Request, params: dict, seq: int) -> Outcome:
    token = params.get("propertyToken")
    state = sim.target
    with state.lock:
        body = state.artifacts.get(token)
    if body is None:
        what = f"property {token!r}" if token is not None else "the default workspace"
        response = Response.text(404, f"no artifact for {what}")
        return Outcome(response, [], validate_response=False)
    content_type = "application/json"
    if req.path.endswith(".bin"):
        with state.lock:
            organization = state.artifact_organization
        body = obfuscate(body, organization)
        content_type = "application/octet-stream"
    tag = etag(body)
    headers = {"ETag": tag, "Cache-Control": "max-age=60"}
    if _matches(req.header("if-none-match"), tag):
        return Outcome(Response.empty(304, headers), [], validate_response=False)
    return Outcome(Response(200, body, content_type, headers), [], validate_response=False)


def event_tokens(body: bytes) -> set[str]:
    """Every `eventToken` an artifact carries: Target issued them, for the display notifications of the
    decisions an on-device engine makes from it."""
    found: set[str] = set()

    def walk(value) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                if key == "eventToken" and isinstance(item, str):
                    found.add(item)
                else:
                    walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    try:
        walk(json.loads(body))
    except ValueError:
        pass
    return found

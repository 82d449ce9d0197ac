"""Target's geo service, as on-device decisioning engines call it (`https://assets.adobetarget.com/v1/geo`).

`GET /v1/geo` answers 200 with an empty body and the caller's location in `x-geo-*` response headers
(`x-geo-latitude`, `x-geo-longitude`, `x-geo-country-code`, `x-geo-region-code`, `x-geo-city`). Adobe's
engines send `x-forwarded-for: <ip>` to locate an address, and nothing to have the caller located; the
simulator answers the same location either way (`PUT /_sim/target/geo` sets it) and echoes
`x-forwarded-for` when one was sent, as the service does. With no location set (`DELETE /_sim/target/geo`)
the answer carries no `x-geo-*` header: the service could not place the caller. Failures come from the
fault hooks (`POST /_sim/faults {"path": "/v1/geo", ...}`).
"""

from __future__ import annotations

import base64
import hashlib

from preflight_sim.exchange import Request, Response
from preflight_sim.outcome import Outcome

GEO = "/v1/geo"

# The control API's field -> the response header carrying it.
FIELDS = {
    "latitude": "x-geo-latitude",
    "longitude": "x-geo-longitude",
    "countryCode": "x-geo-country-code",
    "regionCode": "x-geo-region-code",
    "city": "x-geo-city",
}

# Where the simulator's geo service places its callers until told otherwise (upper case, as Target's
# service writes cities and regions).
DEFAULT_LOCATION = {"latitude": 37.75, "longitude": -122.4, "countryCode": "US", "regionCode": "CA",
                    "city": "SAN FRANCISCO"}


def default_location() -> dict:
    return dict(DEFAULT_LOCATION)


def headers_for(location: dict | None) -> dict[str, str]:
    """The `x-geo-*` headers of a location (numbers as the service writes them, strings as given)."""
    if not location:
        return {}
    return {FIELDS[key]: str(value) for key, value in location.items() if key in FIELDS and value is not None}


def geo_checks(sim, req: Request, params: dict) -> list[str]:
    return []


def handle_geo(sim, req: Request, params: dict, seq: int) -> Outcome:
    state = sim.target
    with state.lock:
        location = dict(state.geo) if state.geo is not None else None
        state.geo_lookups += 1
    headers = headers_for(location)
    forwarded = req.header("x-forwarded-for")
    if forwarded:
        headers["x-forwarded-for"] = forwarded
    headers["Cache-Control"] = "no-cache"
    return Outcome(Response(200, b"", "text/plain", headers), [], validate_response=False)


# A rules artifact that targets by geo (hand-written, not Adobe's): mbox `geo-offer` gets the offer of
# activity 990001 for visitors the geo service places in San Francisco, US, and nothing anywhere else (the
# app's default content). `PUT /_sim/target/artifact?sample=geo` serves it.
GEO_EVENT_TOKEN = base64.b64encode(hashlib.sha256(b"preflight-sim geo-offer 990001").digest()).decode("ascii")

GEO_ARTIFACT = {
    "version": "1.0.0",
    "meta": {"clientCode": "preflightsim", "environment": "production", "generatedAt": "2026-01-01T00:00:00.000Z"},
    "globalMbox": "target-global-mbox",
    "geoTargetingEnabled": True,
    "responseTokens": ["activity.id", "geo.city", "geo.country", "geo.state"],
    "remoteMboxes": [],
    "remoteViews": [],
    "localMboxes": ["geo-offer"],
    "localViews": [],
    "rules": {
        "mboxes": {
            "geo-offer": [
                {
                    "ruleKey": "990001",
                    "activityId": 990001,
                    "meta": {"activity.id": 990001, "activity.name": "preflight-sim geo offer", "activity.type": "xt",
                             "experience.id": 0, "experience.name": "San Francisco", "location.name": "geo-offer",
                             "location.type": "mbox", "location.id": 0, "audience.ids": [990101],
                             "offer.id": 990201, "offer.name": "geo-offer/san-francisco", "option.id": 2,
                             "option.name": "Offer2"},
                    "condition": {"and": [{"==": [{"var": "geo.city"}, "SAN FRANCISCO"]},
                                          {"==": [{"var": "geo.country"}, "US"]}]},
                    "consequence": {
                        "name": "geo-offer",
                        "options": [{"type": "json", "eventToken": GEO_EVENT_TOKEN,
                                     "content": {"geo": True, "city": "SAN FRANCISCO"}}],
                        "metrics": [],
                    },
                }
            ]
        },
        "views": {},
    },
}

SAMPLES = {"geo": GEO_ARTIFACT}

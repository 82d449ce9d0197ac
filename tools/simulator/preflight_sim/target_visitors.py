"""Who a Delivery request is for, and what a traced request is told: visitor ids and `trace`.

Visitor ids (`id`: tntId, thirdPartyId, marketingCloudVisitorId, customerIds) are checked against the
VisitorId rules the spec and the API description state, echoed in the response, and the last
`VISITOR_LOG_SIZE` requests' ids are kept for `GET /_sim/target/visitors`.

Trace: a request whose `trace.authorizationToken` equals the token set by `PUT /_sim/target/traceToken` gets a
`trace` in each mbox answer. The spec's TraceResponse is a map of objects; the simulator's has
`request` (the mbox asked for, how, and the request's session, client and property token), `visitor`
(the request's ids) and `activity` (`matched`, and for content the activity, experience and offers).
"""

from __future__ import annotations

import re
from typing import Any

from preflight_sim import target_metrics as metrics

VISITOR_LOG_SIZE = 100
VISITOR_FIELDS = ("tntId", "thirdPartyId", "marketingCloudVisitorId", "customerIds")
TNT_ID = re.compile(r"^[^.]+(\.\d+_\d+)?$")


def visitor_violations(body: dict) -> tuple[list[str], list[str]]:
    """VisitorId rules beyond the schema: (errors, advisories)."""
    errors: list[str] = []
    advisories: list[str] = []
    visitor = body.get("id")
    if not isinstance(visitor, dict):
        return errors, advisories
    tnt = visitor.get("tntId")
    if isinstance(tnt, str) and not TNT_ID.match(tnt):
        errors.append("$.id.tntId: must not contain '.' unless it delimits the location hint "
                      "(VisitorId validation)")
    if not any(visitor.get(key) is not None for key in ("tntId", "thirdPartyId", "marketingCloudVisitorId")):
        errors.append("$.id: either tntId, thirdPartyId or marketingCloudVisitorId is required "
                      "(VisitorId validation)")
    customers = visitor.get("customerIds")
    if isinstance(customers, list) and customers:
        if visitor.get("marketingCloudVisitorId") is None:
            advisories.append("docs: $.id.customerIds: whenever sending customerIds the marketingCloudVisitorId "
                              "must also be provided (API description, Customer ID)")
    return errors, advisories


def visitor_record(seq: int, session_id: Any, body: dict, answered: dict, property_token: str | None) -> dict:
    """One entry of the visitors log: the ids the request sent (null when absent) and the tntId answered."""
    sent = body.get("id") if isinstance(body.get("id"), dict) else {}
    record: dict[str, Any] = {"seq": seq}
    for key in VISITOR_FIELDS:
        record[key] = sent.get(key)
    record["sessionId"] = session_id
    record["propertyToken"] = property_token
    record["responseTntId"] = answered.get("tntId")
    return record


def trace_problem(state, body: dict) -> str | None:
    """Why a request with `trace` gets none (an advisory), or None (traced, or no trace asked for)."""
    trace = body.get("trace")
    if not isinstance(trace, dict):
        return None
    token = trace.get("authorizationToken")
    if state.trace_token is None:
        return ("advisory: $.trace.authorizationToken: no trace token is set (PUT /_sim/target/traceToken), "
                "so the response has no trace")
    if token != state.trace_token:
        return ("advisory: $.trace.authorizationToken: not the authorization token Target accepts; the response "
                "has no trace")
    return None


def traced(state, body: dict) -> bool:
    trace = body.get("trace")
    return isinstance(trace, dict) and state.trace_token is not None \
        and trace.get("authorizationToken") == state.trace_token


def mbox_trace(*, mbox: dict, kind: str, request: dict, visitor: dict, offer: dict | None, preview: bool,
               property_token: str | None) -> dict:
    """The `trace` of one mbox answer (a TraceResponse: every value an object)."""
    asked = {"name": mbox.get("name"), "index": mbox.get("index"), "type": kind}
    for key in ("parameters", "profileParameters"):
        if isinstance(mbox.get(key), dict):
            asked[key] = mbox[key]
    trace_request = dict(request, mbox=asked, propertyToken=property_token)
    ids = {key: visitor[key] for key in VISITOR_FIELDS if key in visitor}
    options = (offer or {}).get("options") or []
    if not options:
        return {"request": trace_request, "visitor": ids, "activity": {"matched": False}}
    name = mbox.get("name")
    served = metrics.activity(name, preview)
    activity = {
        "matched": True,
        "id": served["id"],
        "name": served["name"],
        "experience": {"id": served["experienceId"], "name": served["experienceName"]},
        "offers": [{"id": metrics.offer_id(name, i), "type": o["type"]} for i, o in enumerate(options)],
        "preview": preview,
        "clickMetric": metrics.click_token(name, offer) is not None,
    }
    return {"request": trace_request, "visitor": ids, "activity": activity}

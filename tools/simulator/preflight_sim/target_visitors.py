"""Who a Delivery request is for: visitor ids.

Visitor ids (`id`: tntId, thirdPartyId, marketingCloudVisitorId, customerIds) are checked against the
VisitorId rules the spec and the API description state, echoed in the response, and the last
`VISITOR_LOG_SIZE` requests' ids are kept for `GET /_sim/target/visitors`.
"""

from __future__ import annotations

import re
from typing import Any

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

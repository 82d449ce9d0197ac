"""What Target says about the activity behind an mbox's content: click metrics, response tokens, A4T payloads.

Each mbox with content is played as one activity with one experience, an offer per option. Their ids are
made up but stable: functions of the mbox name (and the option's index), so a test can predict them and an
agent sees the same ids across simulator restarts.

- Click metrics: an offer with `clickMetric` gets `metrics: [{"type": "click", "eventToken": ...}]` in its
  mbox answers. The click token is the offer's explicit one, or a function of (mbox, offer) like event tokens.
- Response tokens: an offer (or option) with `responseTokens: true` gets the default set Target sends
  (`activity.id`, `activity.name`, `experience.*`, `offer.*`, `option.*`).
- A4T: a request with `experienceCloud.analytics.logging: "client_side"` gets an `analytics.payload` in each
  mbox answer with content and in each click metric (Analytics for Target, the API description's "Retrieve
  Analytics Payload from Adobe Target").
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from typing import Any

# The hit types in an A4T `tnta` payload: an impression (display), a click.
A4T_DISPLAY = 2
A4T_CLICK = 32767
EXPERIENCE_ID = "0"
EXPERIENCE_NAME = "Experience A"
PREVIEW_PREFIX = "(preview) "
SUPPLEMENTAL_DATA_ID = re.compile(r"^[0-9A-Fa-f]{16}-[0-9A-Fa-f]{16}$")


def _number(*parts: str, digits: int = 6) -> str:
    """A stable decimal id of `digits` digits (no leading zero) from `parts`."""
    digest = hashlib.sha256("\x00".join(parts).encode()).digest()
    low = 10 ** (digits - 1)
    return str(low + int.from_bytes(digest[:8], "big") % (9 * low))


def activity_id(mbox: str) -> str:
    return _number("activity", mbox)


def activity(mbox: str, preview: bool = False) -> dict:
    """The made-up activity serving `mbox`: what response tokens, A4T payloads and traces name."""
    return {"id": activity_id(mbox), "name": f"{PREVIEW_PREFIX if preview else ''}{mbox} activity",
            "experienceId": EXPERIENCE_ID, "experienceName": EXPERIENCE_NAME}


def offer_id(mbox: str, index: int) -> str:
    return _number("offer", mbox, str(index))


def default_response_tokens(mbox: str, index: int, preview: bool = False) -> dict:
    """The response tokens Target sends by default for option `index` of `mbox` (values are strings)."""
    served = activity(mbox, preview)
    return {
        "activity.id": served["id"],
        "activity.name": served["name"],
        "experience.id": served["experienceId"],
        "experience.name": served["experienceName"],
        "offer.id": offer_id(mbox, index),
        "offer.name": f"{mbox} offer {index + 1}",
        "option.id": str(index + 1),
        "option.name": f"Offer{index + 1}",
    }


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def click_token(mbox: str, offer: dict | None) -> str | None:
    """The click token the offer for `mbox` issues (None when it declares no click metric)."""
    declared = (offer or {}).get("clickMetric")
    if not declared or not (offer or {}).get("options"):
        return None
    if isinstance(declared, dict):
        return declared["eventToken"]
    digest = hashlib.sha256(f"click\x00{mbox}\x00{_canonical(offer)}".encode()).digest()
    return base64.b64encode(digest).decode("ascii")


def analytics(mbox: str, hit: int) -> dict:
    """An `AnalyticsResponse`: the A4T payload for a hit on the activity serving `mbox`."""
    return {"payload": {"pe": "tnt", "tnta": f"{activity_id(mbox)}:{EXPERIENCE_ID}:0|{hit}"}}


def click_metrics(mbox: str, offer: dict | None, a4t: bool) -> list[dict]:
    """The `metrics` of an mbox answer (empty when the offer declares no click metric)."""
    token = click_token(mbox, offer)
    if token is None:
        return []
    metric: dict[str, Any] = {"type": "click", "eventToken": token}
    if a4t:
        metric["analytics"] = analytics(mbox, A4T_CLICK)
    return [metric]


def client_side_logging(body: dict) -> bool:
    """Whether the request asks for A4T payloads in the response (`logging: client_side`)."""
    cloud = body.get("experienceCloud")
    analytics_request = cloud.get("analytics") if isinstance(cloud, dict) else None
    return isinstance(analytics_request, dict) and analytics_request.get("logging") == "client_side"


def analytics_violations(body: dict) -> tuple[list[str], list[str]]:
    """Rules for `experienceCloud.analytics` the spec and the API description state in prose: (errors, advisories).
    The schema (types, the `logging` enum, the 33 characters of `supplementalDataId`) is checked elsewhere."""
    errors: list[str] = []
    advisories: list[str] = []
    cloud = body.get("experienceCloud")
    request = cloud.get("analytics") if isinstance(cloud, dict) else None
    if not isinstance(request, dict):
        return errors, advisories
    where = "$.experienceCloud.analytics"
    sdid = request.get("supplementalDataId")
    if isinstance(sdid, str) and len(sdid) == 33 and not SUPPLEMENTAL_DATA_ID.match(sdid):
        errors.append(f"{where}.supplementalDataId: must be <16 hexadecimal digits>-<16 hexadecimal digits> "
                      "(AnalyticsRequest description)")
    for key, scheme in (("trackingServer", "http://"), ("trackingServerSecure", "https://")):
        value = request.get(key)
        if isinstance(value, str) and value.lower().startswith(("http://", "https://")):
            advisories.append(f"advisory: {where}.{key}: should not include {scheme} (AnalyticsRequest description)")
    logging = request.get("logging")
    if logging == "client_side" and sdid is not None:
        advisories.append(f"advisory: {where}.supplementalDataId is used for server side integrations; "
                          "with logging client_side the client forwards the payload (AnalyticsRequest description)")
    if logging == "server_side":
        visitor = body.get("id") if isinstance(body.get("id"), dict) else {}
        missing = [key for key, present in (("supplementalDataId", sdid is not None),
                                            ("trackingServer", request.get("trackingServer") is not None),
                                            ("id.marketingCloudVisitorId",
                                             visitor.get("marketingCloudVisitorId") is not None)) if not present]
        if missing:
            advisories.append(f"docs: {where}: logging server_side without {', '.join(missing)}: Target cannot "
                              "forward the payload to Analytics (API description, A4T)")
    return errors, advisories

"""Adobe Target Delivery API: `POST /rest/v1/delivery`.

Offers are configured per mbox name. Event tokens, click tokens and mbox states are deterministic
functions of (mbox name, offer), so a test can predict them (and read them from `GET /_sim/target/offers`)
and check that the agent sent back exactly what it was given.

Beside this module: target_metrics (click metrics, response tokens, A4T payloads), target_workspaces
(property tokens, QA mode previews), target_visitors (visitor ids, the visitors log, trace).
"""

from __future__ import annotations

import base64
import binascii
import copy
import hashlib
import json
import re
import threading
import uuid
from collections import Counter, deque
from dataclasses import dataclass
from typing import Any

from preflight_sim import target_artifacts, target_geo
from preflight_sim import target_metrics as metrics
from preflight_sim import target_visitors as visitors
from preflight_sim import target_workspaces as workspaces
from preflight_sim.exchange import Request, Response
from preflight_sim.outcome import Outcome

OPERATION_TEMPLATE = "/rest/v1/delivery"
EDGE_HOST = "mboxedge35.tt.omtrdc.net"
LOCATION_HINT = "35_0"
NOTIFICATION_LOG_SIZE = 20_000  # notifications kept for GET /_sim/target/notifications; every one is counted

DEFAULT_OFFERS: dict[str, dict] = {
    "logo": {"options": [{"type": "html", "content": '<img src="https://example.com/logo-platinum.png">'}]},
    "buttonColor": {"options": [{"type": "json", "content": {"color": "blue"}}]},
    "hero": {"options": [{"type": "html",
                          "content": '<div class="hero"><h1>Welcome back</h1><p>Your picks are ready.</p></div>'}]},
}

# A notification whose timestamp is further than this from the server's time invalidates its whole request.
NOTIFICATION_MAX_AGE_MS = 24 * 3600 * 1000
NOTIFICATION_MAX_FUTURE_MS = 60 * 1000
# The simulator's event tokens are base64 of a SHA-256 digest.
EVENT_TOKEN_BYTES = 32

OPTION_TYPES = ("html", "json", "redirect", "dynamic", "actions")
OFFER_FIELDS = ("clickMetric", "responseTokens")
RESERVED_MBOX_PARAMETERS = ("orderId", "orderTotal", "productPurchasedIds")
SESSION_ID = re.compile(r"^[\x21-\x7e]{1,128}$")


class OfferError(ValueError):
    pass


# offers ---------------------------------------------------------------------------------------

def normalize_offer(name: str, value: Any) -> dict:
    """One mbox's offer as `{"options": [...]}` plus `clickMetric` and `responseTokens` when declared; a bare
    option object is accepted too (its `clickMetric` is the offer's)."""
    if not isinstance(name, str) or not name:
        raise OfferError("mbox name must be a non-empty string")
    declared: dict[str, Any] = {}
    if isinstance(value, dict) and "options" in value:
        options = value["options"]
        declared = {key: value[key] for key in OFFER_FIELDS if key in value}
        unknown = set(value) - {"options", *OFFER_FIELDS}
        if unknown:
            raise OfferError(f"unknown fields in the offer for {name!r}: {', '.join(sorted(unknown))} "
                             f"(use options, {', '.join(OFFER_FIELDS)})")
    elif isinstance(value, dict) and "type" in value:
        options = [{k: v for k, v in value.items() if k != "clickMetric"}]
        declared = {"clickMetric": value["clickMetric"]} if "clickMetric" in value else {}
    elif isinstance(value, list):
        options = value
    else:
        raise OfferError(f"offer for {name!r} must be {{'options': [...]}} or one option object")
    if not isinstance(options, list):
        raise OfferError(f"options for {name!r} must be a list")
    clean = []
    for i, option in enumerate(options):
        if not isinstance(option, dict) or "content" not in option:
            raise OfferError(f"{name}.options[{i}] must be an object with type and content")
        kind = option.get("type")
        if kind not in OPTION_TYPES:
            raise OfferError(f"{name}.options[{i}].type must be one of {', '.join(OPTION_TYPES)}")
        content = option["content"]
        if kind in ("html", "redirect", "dynamic") and not isinstance(content, str):
            raise OfferError(f"{name}.options[{i}].content must be a string for type {kind}")
        if kind == "json" and not isinstance(content, (dict, list)):
            raise OfferError(f"{name}.options[{i}].content must be an object for type json")
        item = {"type": kind, "content": copy.deepcopy(content)}
        if option.get("responseTokens") is not None:
            # An object: served as given; true: the default set (target_metrics.default_response_tokens);
            # false: none, whatever the offer says.
            item["responseTokens"] = copy.deepcopy(option["responseTokens"])
        clean.append(item)
    offer: dict[str, Any] = {"options": clean}
    click = _click_metric(name, declared.get("clickMetric"))
    if click is not None:
        offer["clickMetric"] = click
    tokens = declared.get("responseTokens")
    if tokens is not None and not isinstance(tokens, bool):
        raise OfferError(f"responseTokens of the offer for {name!r} must be a boolean (true: the default set "
                         "for every option without its own)")
    if tokens:
        offer["responseTokens"] = True
    return offer


def _click_metric(name: str, value: Any) -> Any:
    """`true` (a click token made by the simulator), an explicit token (`"..."` or `{"eventToken": "..."}`),
    or nothing (None, false)."""
    if value is None or value is False:
        return None
    if value is True:
        return True
    if isinstance(value, str):
        value = {"eventToken": value}
    if isinstance(value, dict) and set(value) == {"eventToken"} and isinstance(value["eventToken"], str) \
            and value["eventToken"].strip():
        return {"eventToken": value["eventToken"]}
    raise OfferError(f"clickMetric of the offer for {name!r} must be true, false, a click token string or "
                     "{'eventToken': '<token>'}")


def normalize_offers(document: Any) -> dict[str, dict]:
    if not isinstance(document, dict):
        raise OfferError("offers must be a JSON object keyed by mbox name")
    return {name: normalize_offer(name, value) for name, value in document.items()}


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def event_token(mbox: str, index: int, option: dict) -> str:
    digest = hashlib.sha256(f"event\x00{mbox}\x00{index}\x00{_canonical(option)}".encode()).digest()
    return base64.b64encode(digest).decode("ascii")


def mbox_state(mbox: str, offer: dict | None) -> str:
    digest = hashlib.sha256(f"state\x00{mbox}\x00{_canonical(offer)}".encode()).digest()
    return base64.b64encode(digest).decode("ascii")


def rendered_options(name: str, offer: dict | None, preview: bool = False) -> list[dict]:
    options = []
    defaults = bool((offer or {}).get("responseTokens"))
    for i, option in enumerate((offer or {}).get("options", [])):
        item = {"type": option["type"], "content": copy.deepcopy(option["content"]),
                "eventToken": event_token(name, i, option)}
        tokens = option.get("responseTokens", defaults)
        if tokens is True:
            item["responseTokens"] = metrics.default_response_tokens(name, i, preview)
        elif tokens is not False:
            item["responseTokens"] = copy.deepcopy(tokens)
        options.append(item)
    return options


def describe_offer(name: str, offer: dict | None, preview: bool = False) -> dict:
    """An offer as control shows it: what a prefetch of the mbox gets (without A4T payloads)."""
    described = {"options": rendered_options(name, offer, preview), "state": mbox_state(name, offer)}
    click = metrics.click_metrics(name, offer, a4t=False)
    if click:
        described["metrics"] = click
    return described


def offer_problems(specs, offers: dict[str, dict]) -> list[str]:
    """Options and metrics that would not be valid Target objects in a response (empty when validating is off)."""
    option_ref = specs.file_ref("delivery/components/Option.yaml#/Option")
    metric_ref = specs.file_ref("delivery/components/Metric.yaml#/Metric")
    problems = []
    for name, offer in offers.items():
        for i, option in enumerate(rendered_options(name, offer)):
            problems += [f"{name}.options[{i}] is not a valid Target Option: {p}"
                         for p in specs.validate(option_ref, option)]
        for metric in metrics.click_metrics(name, offer, a4t=True):
            problems += [f"{name}.clickMetric is not a valid Target Metric: {p}"
                         for p in specs.validate(metric_ref, metric)]
    return problems


class TargetState:
    def __init__(self, offers: dict[str, dict], notification_log_size: int = NOTIFICATION_LOG_SIZE):
        self.lock = threading.RLock()
        self.offers = copy.deepcopy(offers)  # the default workspace: requests without property.token
        self.workspaces: dict[str, dict[str, dict]] = {}  # property token -> offers
        self.previews: dict[str, dict[str, dict]] = {}  # QA mode token -> preview offers
        self.trace_token: str | None = None
        self.artifacts: dict[str | None, bytes] = target_artifacts.default_artifacts()  # property token -> rules.json
        self.artifact_organization = target_artifacts.DEFAULT_ORGANIZATION  # the key of rules.bin
        self.geo: dict | None = target_geo.default_location()  # where the geo service places callers
        self.geo_lookups = 0
        self.prefetched: Counter[str] = Counter()
        self.executed: Counter[str] = Counter()
        # The newest ones, and exact counts of all by type: a list of every one grew without bound (about 800 MB
        # in one of tools/bench's throughput sections) and made `stats` walk it under the lock.
        self.notifications: deque[dict] = deque(maxlen=notification_log_size)
        self.notification_counts: Counter[str] = Counter()
        self.issued_tokens: dict[str, set[str]] = {}
        self.issued_click_tokens: dict[str, set[str]] = {}
        self.issued_states: dict[str, set[str]] = {}
        self.token_properties: dict[str, set[str | None]] = {}  # event/click token -> properties it was issued in
        self.revoked_tokens: set[str] = set()
        self.visitors: deque[dict] = deque(maxlen=visitors.VISITOR_LOG_SIZE)
        self.max_age_ms = NOTIFICATION_MAX_AGE_MS
        self.max_future_ms = NOTIFICATION_MAX_FUTURE_MS
        self.refused_requests = 0
        self.qa_refusals = 0

    def artifact_event_tokens(self) -> set[str]:
        """The event tokens of the artifacts served (on-device decisions notify with them). Caller holds the lock."""
        return {token for body in self.artifacts.values() for token in target_artifacts.event_tokens(body)}

    def workspace(self, property_token: str | None) -> dict[str, dict]:
        """The offers of a workspace (the default one for None); an unknown token's is empty."""
        return self.offers if property_token is None else self.workspaces.get(property_token, {})

    def describe_offers(self, property_token: str | None = None) -> dict:
        with self.lock:
            return {name: describe_offer(name, offer) for name, offer in self.workspace(property_token).items()}

    def offer_sets(self) -> list[tuple[dict[str, dict], bool]]:
        """Every set of offers a request can be answered from: (offers, preview)."""
        return [(self.offers, False), *((o, False) for o in self.workspaces.values()),
                *((o, True) for o in self.previews.values())]

    def issue(self, name: str, options: list[dict], state: str | None, click: list[dict],
              property_token: str | None = None) -> None:
        tokens = self.issued_tokens.setdefault(name, set())
        tokens.update(o["eventToken"] for o in options)
        if click:
            self.issued_click_tokens.setdefault(name, set()).update(m["eventToken"] for m in click)
        for token in [o["eventToken"] for o in options] + [m["eventToken"] for m in click]:
            self.token_properties.setdefault(token, set()).add(property_token)
        if state is not None:
            self.issued_states.setdefault(name, set()).add(state)

    def click_tokens_for(self, name: str) -> set[str]:
        """Every click token issued for mbox `name`, and those its current offers (any workspace or preview)
        would issue."""
        current = {metrics.click_token(name, offers.get(name)) for offers, _ in self.offer_sets()}
        return set(self.issued_click_tokens.get(name, set())) | (current - {None})

    def tokens_for(self, name: str) -> set[str]:
        """Every event and click token issued for mbox `name`, and those its current offers would issue."""
        current = {o["eventToken"] for offers, preview in self.offer_sets()
                   for o in rendered_options(name, offers.get(name), preview)}
        return set(self.issued_tokens.get(name, set())) | current | self.click_tokens_for(name)

    def is_click_token(self, token: Any) -> bool:
        """Whether `token` is a click token of some mbox (issued, or one a current offer would issue)."""
        return token in self.all_click_tokens()

    def all_click_tokens(self) -> set[str]:
        """Every click token issued, and every one a current offer (any workspace or preview) would issue: one
        pass over the offers, so that a request of many notifications checks each token against a set (asked
        per token and per mbox, this took about 1 s for 50 notifications against 10,000 offers)."""
        issued = {token for tokens in self.issued_click_tokens.values() for token in tokens}
        current = {metrics.click_token(name, offer)
                   for offers, _ in self.offer_sets() for name, offer in offers.items()}
        return issued | (current - {None})

    def notification_rules(self) -> dict:
        with self.lock:
            return {"maxAgeMs": self.max_age_ms, "maxFutureMs": self.max_future_ms}

    def stats(self) -> dict:
        with self.lock:
            total = sum(self.notification_counts.values())
            clicks = self.notification_counts["click"]
            return {"prefetched": dict(self.prefetched), "executed": dict(self.executed),
                    "notifications": total, "clickNotifications": clicks,
                    "displayNotifications": total - clicks,
                    "refusedRequests": self.refused_requests, "qaModeRefusals": self.qa_refusals}


# request checks -------------------------------------------------------------------------------

def _check_parameters(params: Any, where: str, mbox_parameters: bool, out: list[str]) -> None:
    if not isinstance(params, dict):
        return
    for key, value in params.items():
        if not key.strip():
            out.append(f"{where}: parameter name must not be blank (Parameters validation)")
        if len(key) > 128:
            out.append(f"{where}.{key[:40]}...: parameter name longer than 128 (Parameters validation)")
        if key.startswith("profile."):
            out.append(f"{where}.{key}: parameter name must not start with 'profile.' (Parameters validation)")
        if isinstance(value, str) and len(value) > 5000:
            out.append(f"{where}.{key}: parameter value longer than 5000 (Parameters validation)")
        if mbox_parameters and key in RESERVED_MBOX_PARAMETERS:
            out.append(f"{where}.{key}: '{key}' is not allowed as an mbox parameter (Parameters description)")


def _check_request_details(details: Any, where: str, out: list[str]) -> None:
    if not isinstance(details, dict):
        return
    _check_parameters(details.get("parameters"), f"{where}.parameters", True, out)
    _check_parameters(details.get("profileParameters"), f"{where}.profileParameters", False, out)
    order = details.get("order")
    if isinstance(order, dict) and isinstance(order.get("purchasedProductIds"), list):
        ids = order["purchasedProductIds"]
        strings = [i for i in ids if isinstance(i, str)]
        if any(not i.strip() for i in strings):
            out.append(f"{where}.order.purchasedProductIds: blank product id (Order validation)")
        if any(len(i) > 50 for i in strings):
            out.append(f"{where}.order.purchasedProductIds: product id longer than 50 (Order validation)")
        if len(",".join(strings)) > 250:
            out.append(f"{where}.order.purchasedProductIds: joined ids longer than 250 (Order validation)")
    product = details.get("product")
    if isinstance(product, dict):
        for key in ("id", "categoryId"):
            if isinstance(product.get(key), str) and not product[key].strip():
                out.append(f"{where}.product.{key}: must not be blank (Product description)")


def _check_mbox_list(mboxes: Any, where: str, out: list[str]) -> None:
    if not isinstance(mboxes, list):
        return
    seen: set[int] = set()
    for i, mbox in enumerate(mboxes):
        if not isinstance(mbox, dict):
            continue
        _check_request_details(mbox, f"{where}[{i}]", out)
        index = mbox.get("index")
        if isinstance(index, int):
            if index in seen:
                out.append(f"{where}[{i}].index: {index} repeated; index should be unique in the mbox list")
            seen.add(index)
        name = mbox.get("name")
        if isinstance(name, str) and not name.strip():
            out.append(f"{where}[{i}].name: must not be blank")


def described_violations(body: dict) -> tuple[list[str], list[str]]:
    """Rules the spec states in prose ("Validation" sections): (errors, advisories)."""
    errors: list[str] = []
    advisories: list[str] = []
    for check in (visitors.visitor_violations, metrics.analytics_violations, workspaces.qa_mode_violations):
        found, advised = check(body)
        errors.extend(found)
        advisories.extend(advised)
    execute = body.get("execute")
    if isinstance(execute, dict):
        _check_request_details(execute.get("pageLoad"), "$.execute.pageLoad", errors)
        _check_mbox_list(execute.get("mboxes"), "$.execute.mboxes", errors)
    prefetch = body.get("prefetch")
    if isinstance(prefetch, dict):
        _check_request_details(prefetch.get("pageLoad"), "$.prefetch.pageLoad", errors)
        _check_mbox_list(prefetch.get("mboxes"), "$.prefetch.mboxes", errors)
        if isinstance(prefetch.get("views"), list):
            for i, view in enumerate(prefetch["views"]):
                _check_request_details(view, f"$.prefetch.views[{i}]", errors)
    notifications = body.get("notifications")
    if isinstance(notifications, list):
        for i, note in enumerate(notifications):
            if not isinstance(note, dict):
                continue
            where = f"$.notifications[{i}]"
            _check_request_details(note, where, errors)
            if note.get("mbox") is not None and note.get("view") is not None:
                errors.append(f"{where}: mbox and view are mutually exclusive (Notification description)")
            mbox = note.get("mbox")
            if isinstance(mbox, dict) and isinstance(mbox.get("name"), str):
                name = mbox["name"]
                if not name.strip():
                    errors.append(f"{where}.mbox.name: must not be blank (NotificationMbox validation)")
                elif name.endswith("-clicked"):
                    errors.append(f"{where}.mbox.name: '-clicked' suffix is not allowed (NotificationMbox validation)")
    context = body.get("context")
    if isinstance(context, dict):
        channel = context.get("channel")
        if channel == "mobile" and "mobilePlatform" not in context:
            advisories.append("advisory: $.context.mobilePlatform should be specified when the channel is mobile "
                              "(MobilePlatform description)")
        if channel != "web" and "browser" in context:
            advisories.append("advisory: $.context.browser may be specified only when the channel is web "
                              "(Browser description)")
    return errors, advisories


def _first(value: Any) -> Any:
    return value[0] if isinstance(value, list) else value


def check_request(sim, req: Request) -> tuple[list[str], list[str], Any]:
    """(errors, advisories, parsed body or None)."""
    errors: list[str] = []
    advisories: list[str] = []
    specs = sim.specs
    op = specs.operation("target", "POST", OPERATION_TEMPLATE)

    # Query parameters. The spec requires imsOrgId; real clients send client= instead: either will do.
    required = [p["name"] for p in specs.parameters(op) if p.get("in") == "query" and p.get("required")] if op \
        else ["imsOrgId", "sessionId"]
    for name in required:
        if name == "imsOrgId":
            if not req.query.get("imsOrgId") and not req.query.get("client"):
                errors.append("query: client (or imsOrgId, as the spec words it) is required")
        elif not req.query.get(name):
            errors.append(f"query: {name} is required")
    session = _first(req.query.get("sessionId"))
    if isinstance(session, str) and session and (not SESSION_ID.match(session) or any(c in session for c in "?/")):
        errors.append("query.sessionId: must be 1 to 128 printable characters, no space, '?' or '/' "
                      "(sessionId description)")

    if req.content_type != "application/json":
        errors.append(f"header Content-Type: must be application/json (requestBody content), got "
                      f"{req.header('content-type')!r}")
    if not req.raw_body:
        errors.append("body: a DeliveryRequest is required")
        return errors, advisories, None
    ok, body = req.json()
    if not ok:
        errors.append("body: not valid JSON")
        return errors, advisories, None
    if op is not None:
        errors.extend(specs.validate(specs.request_body_ref(op, "application/json"), body))
    elif not isinstance(body, dict) or not isinstance(body.get("context"), dict):
        errors.append("$: context is required")
    if isinstance(body, dict):
        described, advised = described_violations(body)
        errors.extend(described)
        advisories.extend(advised)
    return errors, advisories, body


# handling -------------------------------------------------------------------------------------

def _error(status: int, message: str) -> Response:
    return Response.json(status, {"status": status, "message": message})


@dataclass
class Delivery:
    """What shapes every mbox answer of one request."""
    scope: workspaces.Scope
    a4t: bool  # experienceCloud.analytics.logging is client_side
    visitor: dict  # the response's `id`
    trace: dict | None  # the request part of each mbox trace; None: not traced


def _mbox_entries(state: TargetState, delivery: Delivery, mboxes: Any, prefetch: bool) -> list[dict]:
    out = []
    for mbox in mboxes if isinstance(mboxes, list) else []:
        name = mbox.get("name")
        offer, preview = delivery.scope.lookup(name)
        entry: dict[str, Any] = {"index": mbox.get("index"), "name": name}
        options = rendered_options(name, offer, preview)
        click: list[dict] = []
        if prefetch:
            state.prefetched[name] += 1
            entry["state"] = mbox_state(name, offer)
        else:
            state.executed[name] += 1
        if options:
            entry["options"] = options
            click = metrics.click_metrics(name, offer, delivery.a4t)
            if click:
                entry["metrics"] = click
            if delivery.a4t:
                entry["analytics"] = metrics.analytics(name, metrics.A4T_DISPLAY)
        if delivery.trace is not None:
            entry["trace"] = visitors.mbox_trace(mbox=mbox, kind="prefetch" if prefetch else "execute",
                                                 request=delivery.trace, visitor=delivery.visitor, offer=offer,
                                                 preview=preview, property_token=delivery.scope.property_token)
        state.issue(name, options, entry.get("state"), click, delivery.scope.property_token)
        out.append(entry)
    return out


def _record_notifications(state: TargetState, seq: int, notifications: list, now: float,
                          property_token: str | None = None) -> list[dict]:
    """Records each notification with the request's `property.token`: `tokensIssuedUnderProperty` says whether
    Target issued every one of its tokens in that property's workspace (a notification sent under another
    property would count for activities of the wrong workspace)."""
    acknowledged = []
    for note in notifications:
        mbox = note.get("mbox") if isinstance(note.get("mbox"), dict) else {}
        name = mbox.get("name")
        tokens = note.get("tokens") or []
        issued_tokens = state.issued_click_tokens if note.get("type") == "click" else state.issued_tokens
        issued = issued_tokens.get(name, set()) if name is not None else set()
        record = {
            "seq": seq,
            "id": note.get("id"),
            "type": note.get("type"),
            "timestamp": note.get("timestamp"),
            "mbox": name,
            "state": mbox.get("state"),
            "tokens": list(tokens),
            "tokensIssued": bool(tokens) and all(t in issued for t in tokens),
            "stateIssued": mbox.get("state") in state.issued_states.get(name, set()) if name is not None else False,
            "propertyToken": property_token,
            "tokensIssuedUnderProperty": bool(tokens) and all(
                property_token in state.token_properties.get(t, set()) for t in tokens if isinstance(t, str)),
            "impressionId": note.get("impressionId"),
            "parameters": note.get("parameters"),
            "profileParameters": note.get("profileParameters"),
            "order": note.get("order"),
            "product": note.get("product"),
            "address": note.get("address"),
            "view": note.get("view"),
            "pageLoad": note.get("pageLoad"),
            "receivedAt": now,
        }
        state.notifications.append(record)
        state.notification_counts[record["type"]] += 1
        acknowledged.append({"id": note.get("id")})
    return acknowledged


def _span(ms: int) -> str:
    for unit, size in (("hours", 3600_000), ("minutes", 60_000), ("seconds", 1000)):
        if ms and ms % size == 0:
            value = ms // size
            return f"{value} {unit[:-1] if value == 1 else unit}"
    return f"{ms} ms"


def _is_event_token(token: Any) -> bool:
    """Whether this simulator could have issued `token` (in this process or an earlier one): base64 of 32 bytes."""
    if not isinstance(token, str):
        return False
    try:
        return len(base64.b64decode(token, validate=True)) == EVENT_TOKEN_BYTES
    except (binascii.Error, ValueError):
        return False


def _timestamp_problem(state: TargetState, timestamp: Any, now: float) -> str | None:
    if isinstance(timestamp, bool) or not isinstance(timestamp, int):
        return None  # the schema check names a timestamp that is not an integer
    if timestamp < now - state.max_age_ms:
        return f"{timestamp} is more than {_span(state.max_age_ms)} before the server time, {int(now)}"
    if timestamp > now + state.max_future_ms:
        return f"{timestamp} is more than {_span(state.max_future_ms)} after the server time, {int(now)}"
    return None


def _token_problem(state: TargetState, token: Any, artifact_tokens: set[str]) -> str | None:
    if token in artifact_tokens:
        return f"{token} is revoked" if token in state.revoked_tokens else None
    if not _is_event_token(token):
        return f"{json.dumps(token)[:60]} is not an event token"
    if token in state.revoked_tokens:
        return f"{token} is revoked"
    return None


def _click_token_problem(state: TargetState, name: Any, token: Any) -> str | None:
    """A click notification's token must be a click token issued for its mbox (or that the mbox's current
    offer would issue: an agent replays its journal across simulator restarts)."""
    if not isinstance(name, str):
        return f"{json.dumps(token)[:60]} is not a click token: click metrics are issued for mboxes only"
    if token in state.click_tokens_for(name):
        return f"{token} is revoked" if token in state.revoked_tokens else None
    shown = json.dumps(token)[:60]
    if token in state.tokens_for(name):
        return f"{shown} is a display token of mbox {name!r}, not its click token"
    if state.is_click_token(token):
        return f"{shown} is the click token of another mbox, not of {name!r}"
    return f"{shown} is not a click token issued for mbox {name!r}"


def notification_problems(state: TargetState, notifications: Any, now: float) -> tuple[list[str], list[str]]:
    """(problems, advisories). Problems: why Target would invalidate the whole request, any notification with a
    timestamp too far from the server time, or a token it did not issue or no longer honours (Notification
    description); a click notification needs the click token issued for its mbox."""
    problems: list[str] = []
    advisories: list[str] = []
    click_tokens: set[str] | None = None  # made once per request, at the first token that needs it
    artifact_tokens: set[str] | None = None  # likewise: the served artifacts' tokens, parsed from their JSON
    for i, note in enumerate(notifications if isinstance(notifications, list) else []):
        if not isinstance(note, dict):
            continue
        named = f" (notification id {json.dumps(note.get('id'))})"
        problem = _timestamp_problem(state, note.get("timestamp"), now)
        if problem:
            problems.append(f"notifications[{i}].timestamp: {problem}{named}")
        tokens = note.get("tokens")
        tokens = tokens if isinstance(tokens, list) else []
        mbox = note.get("mbox")
        name = mbox.get("name") if isinstance(mbox, dict) else None
        if note.get("type") == "click":
            if not tokens:
                problems.append(f"notifications[{i}].tokens: a click notification must carry the click token of "
                                f"its mbox (its metrics' eventToken){named}")
            for j, token in enumerate(tokens):
                problem = _click_token_problem(state, name, token)
                if problem:
                    problems.append(f"notifications[{i}].tokens[{j}]: {problem}{named}")
            continue
        for j, token in enumerate(tokens):
            if artifact_tokens is None:
                artifact_tokens = state.artifact_event_tokens()
            problem = _token_problem(state, token, artifact_tokens)
            if problem:
                problems.append(f"notifications[{i}].tokens[{j}]: {problem}{named}")
                continue
            if click_tokens is None:
                click_tokens = state.all_click_tokens()
            if token in click_tokens:
                advisories.append(f"advisory: $.notifications[{i}].tokens[{j}]: a click token in a "
                                  f"{note.get('type')} notification{named}")
    return problems, advisories


def _invalid_request(problems: list[str], note: str | None = None) -> Response:
    shown = "; ".join(problems[:5]) + (f"; and {len(problems) - 5} more" if len(problems) > 5 else "")
    response = _error(400, f"Invalid request: {shown}")
    response.note = note
    return response


def delivery_checks(sim, req: Request, params: dict | None = None) -> list[str]:
    errors, advisories, _ = check_request(sim, req)
    return errors + advisories


def handle_delivery(sim, req: Request, params: dict, seq: int) -> Outcome:
    errors, advisories, body = check_request(sim, req)
    if errors:
        return Outcome(_invalid_request(errors), errors + advisories)

    state: TargetState = sim.target
    with state.lock:
        # Checked and carried out under one hold of the lock: a refused request changes nothing.
        # Not contract violations: the request is well formed, Target's state or clock refuses it.
        scope, scoped = workspaces.resolve(state, body)
        advisories += scoped
        if scope is None:
            state.qa_refusals += 1
            response = _error(400, workspaces.INVALID_QA_TOKEN)
            response.note = f"refused: {workspaces.INVALID_QA_TOKEN} (no preview registered for this token)"
            return Outcome(response, advisories)
        problems, advised = notification_problems(state, body.get("notifications"), sim.clock.now_ms())
        advisories += advised
        if problems:
            state.refused_requests += 1
            return Outcome(_invalid_request(problems, note=f"refused: {problems[0]}"), advisories)
        return _deliver(sim, state, req, body, seq, scope, advisories)


def _deliver(sim, state: TargetState, req: Request, body: dict, seq: int, scope: workspaces.Scope,
             advisories: list[str]) -> Outcome:
    """The request carried out (the caller holds `state.lock`)."""
    client = _first(req.query.get("client")) or _first(req.query.get("imsOrgId")) or "unknown"
    session = _first(req.query.get("sessionId"))
    visitor = copy.deepcopy(body.get("id")) if isinstance(body.get("id"), dict) else {}
    context = body.get("context", {})
    if isinstance(context, dict) and context.get("beacon") is True:
        state.visitors.append(visitors.visitor_record(seq, session, body, {}, scope.property_token))
        return Outcome(Response.empty(204), advisories)

    if not visitor.get("tntId"):
        visitor["tntId"] = f"{uuid.uuid4().hex}.{LOCATION_HINT}"
    state.visitors.append(visitors.visitor_record(seq, session, body, visitor, scope.property_token))
    request_id = body.get("requestId") or str(uuid.uuid4())
    trace = None
    problem = visitors.trace_problem(state, body)
    if problem:
        advisories.append(problem)
    elif visitors.traced(state, body):
        usage = body["trace"].get("usage")
        trace = {"client": client, "sessionId": session, "requestId": request_id,
                 "qaMode": scope.qa_token is not None, "usage": usage if isinstance(usage, dict) else {}}
    delivery = Delivery(scope, metrics.client_side_logging(body), visitor, trace)
    document: dict[str, Any] = {
        "status": 200,
        "requestId": request_id,
        "client": client,
        "id": visitor,
    }
    if sim.edge_host is not None:
        document["edgeHost"] = sim.edge_host
    execute = body.get("execute")
    if isinstance(execute, dict):
        out: dict[str, Any] = {}
        if "pageLoad" in execute:
            out["pageLoad"] = {}
        if "mboxes" in execute:
            out["mboxes"] = _mbox_entries(state, delivery, execute["mboxes"], prefetch=False)
        document["execute"] = out
    prefetch = body.get("prefetch")
    if isinstance(prefetch, dict):
        out = {}
        if "views" in prefetch:
            out["views"] = []
        if "pageLoad" in prefetch:
            out["pageLoad"] = {}
        if "mboxes" in prefetch:
            out["mboxes"] = _mbox_entries(state, delivery, prefetch["mboxes"], prefetch=True)
        document["prefetch"] = out
    if isinstance(body.get("notifications"), list):
        document["notifications"] = _record_notifications(state, seq, body["notifications"],
                                                           sim.clock.now_ms(), scope.property_token)
    return Outcome(Response.json(200, document), advisories)


def fault_body(status: int, message: str | None) -> Response:
    return _error(status, message or ("Internal server error" if status >= 500 else "Simulated error"))

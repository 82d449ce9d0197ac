"""A small Python client for preflightd, the on-device agent for Adobe Target offers and Adobe Pass.

It speaks the Preflight IPC protocol (docs/PROTOCOL.md) over ZeroMQ with pyzmq, its only dependency,
and reads like the Adobe SDKs it replaces, in Python's naming:

    Target iOS SDK                                   this module
    targetPrefetchObjectWithName:mboxParameters:     TargetPrefetch(name, mbox_parameters=...)
    targetPrefetchContent:withProfileParameters:     client.prefetch(mboxes, profile_parameters) -> bool
    targetRequestObjectWithName:defaultContent:...   TargetRequest(name, default_content, ..., callback=...)
    targetLoadRequests:withProfileParameters:        client.load_requests(requests, profile_parameters)
    targetPrefetchClearCache                         client.clear_prefetch_cache()

    AEP Target extension                             this module
    Target.prefetchContent(..., timeout)             client.prefetch(mboxes, timeout=0.5)
    Target.retrieveLocationContent(...)              client.load_requests(requests, notify_display=False,
                                                                          with_data=True, timeout=0.5)
    TargetRequest(..., contentWithDataCallback:)     TargetRequest(..., content_with_data=fn(content, data))
    Target.clickedLocation(name, targetParameters)   client.clicked_location(name, mbox_parameters=...) -> bool
    Target.displayedLocations(names, parameters)     client.displayed_locations(names, ...) -> notified names
    Target.getThirdPartyId { id, error in ... }      client.get_third_party_id() -> str or None
    Target.setThirdPartyId(id)                       client.set_third_party_id(id) (None clears) -> bool
    Target.getTntId { id, error in ... }             client.get_tnt_id() -> str or None
    Target.setTntId(id)                              client.set_tnt_id(id) (None clears) -> bool
    Target.getSessionId { id, error in ... }         client.get_session_id() -> str or None
    Target.setSessionId(id)                          client.set_session_id(id) -> bool
    Target.resetExperience()                         client.reset_experience() -> offers dropped, or None
    (every id at once)                               client.get_visitor_ids() -> VisitorIds or None
    Identity's Experience Cloud id (ECID)            client.set_marketing_cloud_visitor_id(id) (None clears) -> bool
    Identity.syncIdentifiers(...)                    client.set_customer_ids([CustomerId(id, code, state)]) -> bool

    AccessEnabler                                    this module
    setRequestor(requestor)                          PreflightClient(requestor=...) / client.set_requestor(...)
    preauthorize(PreauthorizeRequest, callback)      client.preauthorize(resources, disable_features=...)
    PreauthorizeResponse.getStatus/getDecisions      response.status / response.decisions
    Decision.getId/isAuthorized/getError             decision.id / .authorized / .error
    checkAuthentication()                            client.check_authentication(mvpd=None, fresh=False)
    getAuthentication()                              client.get_authentication(mvpd=None, redirect_url=None,
                                                                               domain_name=None)
    (setAuthenticationStatus, sign-in callbacks)     client.authentication_events(): AuthenticationEvents
    setSelectedProvider(None) (cancels the flow)     client.cancel_authentication()
    getAuthorization(resource)                       client.get_authorization(resource)
    checkAuthorization(resource)                     client.check_authorization(resource)
    setToken(token, resource)                        response.media_token.serialized_token
    tokenRequestFailed(resource, code, description)  response.error / response.status
    logout()                                         client.logout(mvpd=None)
    navigateToUrl(url) (logout's browser step)       result.url
    getMetadata(key)                                 client.get_metadata(key=None)
    getSelectedProvider()                            client.get_selected_provider()
    setSelectedProvider(mvpd)                        client.set_selected_provider(mvpd)
    MVPD.ID/displayName/logoURL                      mvpd.id / .display_name / .logo_url

Like the SDKs, it keeps the app working when the agent cannot be reached: `load_requests` answers each
request's default content, `prefetch` answers False, `clicked_location` False and `displayed_locations` None,
the visitor id getters answer None (as AEP's call back with nil), their setters False and `reset_experience` None
(nothing changed), `preauthorize`
answers a failure with status code `network_error`, and so does every entitlement call in its result's
`status` (`cancel_authentication`, whose result is a bool, answers None). A MediaToken prints only its last 4
characters: the token is the app's secret. Every command it sends is safe to repeat, so a request that
gets no reply in time is sent again on a new socket (the "Lazy Pirate" pattern of the ZeroMQ guide), a
bounded number of times. A client may be shared by threads: each request borrows a socket of its own.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import socket as pysocket
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Union

import zmq

__all__ = [
    "AUTH_TOPICS",
    "DEFAULT_CONFIG",
    "AuthenticationEvent",
    "AuthenticationEvents",
    "AuthenticationResult",
    "AuthenticationStatus",
    "AuthorizationResponse",
    "CustomerId",
    "Decision",
    "Event",
    "EventStream",
    "Feature",
    "LogoutResult",
    "MVPD",
    "MediaToken",
    "Metadata",
    "PreauthorizeResponse",
    "ProviderSelection",
    "SignInCode",
    "PreflightClient",
    "PreflightError",
    "AgentError",
    "AgentUnavailable",
    "Status",
    "TargetContent",
    "TargetPrefetch",
    "TargetRequest",
    "VisitorIds",
]

DEFAULT_CONFIG = "/etc/preflight/preflight.json"
DEFAULT_APP_ENDPOINT = "ipc:///run/preflight/app.sock"
DEFAULT_EVENTS_ENDPOINT = "ipc:///run/preflight/events.sock"

# Seconds each attempt may take. The agent bounds its own answers: Target calls by
# `target.timeout` (5 s by default), Adobe Pass by `pass.answerDeadline` (15 s); a little is added for
# scheduling, so a slow but working agent is not asked twice.
# The entitlement commands are bound by `pass.answerDeadline` too. `resetExperience` first sends the queued
# display notifications to Target (up to `target.timeout` per batch): it gets the long timeout.
COMMAND_TIMEOUTS = {"prefetch": 7.0, "loadRequests": 7.0, "preauthorize": 17.0, "resetExperience": 17.0,
                    **{cmd: 17.0 for cmd in ("checkAuthentication", "getAuthentication", "cancelAuthentication",
                                             "getAuthorization", "checkAuthorization", "logout", "getMetadata",
                                             "getSelectedProvider", "setSelectedProvider")}}
QUICK_TIMEOUT = 2.0
# How long a socket may take to be connected before the client probes whether anything listens
# (a ZMTP handshake over a local socket takes well under a millisecond on an idle box).
CONNECTED_GRACE_MS = 20

log = logging.getLogger("preflight_client")


class Feature:
    """The AccessEnabler's `PreauthorizeRequest.Feature` values, for `disable_features`."""

    LOCAL_CACHE = "LOCAL_CACHE"
    REMOTE_CACHE = "REMOTE_CACHE"


class PreflightError(Exception):
    """Base of the errors this module raises."""


class AgentError(PreflightError):
    """The agent answered with an error reply: the command was not carried out.

    `code` is the protocol's error code (`invalid_argument`, `not_permitted`, ...), `field` the path of
    the offending argument for `invalid_argument` (`mboxes[0].mboxParameters.orderId`), `action` what to
    do about it (`none`, `retry`, `retry-after`, ...).
    """

    def __init__(self, code: str, message: str, field: Optional[str] = None, action: str = "none",
                 retry_after_ms: Optional[int] = None):
        super().__init__(f"{code}: {message}" + (f" (field {field})" if field else ""))
        self.code = code
        self.message = message
        self.field = field
        self.action = action
        self.retry_after_ms = retry_after_ms


class AgentUnavailable(PreflightError):
    """No reply from the agent after every attempt: not running, not reachable, or not answering."""

    def __init__(self, endpoint: str, reason: str):
        super().__init__(f"preflightd not reachable at {endpoint}: {reason}")
        self.endpoint = endpoint
        self.reason = reason


# --- Target --------------------------------------------------------------------------------------------

Parameters = Dict[str, str]


@dataclass
class TargetPrefetch:
    """One mbox to prefetch (the SDK's TargetPrefetchObject)."""

    name: str
    mbox_parameters: Optional[Parameters] = None
    product_parameters: Optional[Dict[str, str]] = None
    order_parameters: Optional[Dict[str, Any]] = None

    def to_wire(self) -> Dict[str, Any]:
        return _mbox_wire(self.name, self.mbox_parameters, self.product_parameters, self.order_parameters)


@dataclass
class TargetRequest:
    """One mbox to load (the SDK's TargetRequestObject).

    `callback`, when given, is called with the mbox's content (a string) once it is known, as the SDK
    calls the request object's callback; `default_content` is what it gets when nothing better can be had.
    `content_with_data`, when given, is called with the content and its data dict (AEP's
    `contentWithDataCallback`: `responseTokens`, `analyticsPayload`, `clickMetricAnalyticsPayload` as Target
    sent them, `{}` for default content); a load with such a request asks the agent for the data.
    """

    name: str
    default_content: str
    mbox_parameters: Optional[Parameters] = None
    callback: Optional[Callable[[str], Any]] = None
    product_parameters: Optional[Dict[str, str]] = None
    order_parameters: Optional[Dict[str, Any]] = None
    content_with_data: Optional[Callable[[str, Dict[str, Any]], Any]] = None

    def __post_init__(self):
        if not isinstance(self.default_content, str):
            raise TypeError(f"default_content of {self.name!r} must be a string (it may be empty)")

    def to_wire(self) -> Dict[str, Any]:
        wire = _mbox_wire(self.name, self.mbox_parameters, self.product_parameters, self.order_parameters)
        # defaultContent right after name, as in docs/PROTOCOL.md (key order is cosmetic on the wire).
        return {"name": wire.pop("name"), "defaultContent": self.default_content, **wire}


@dataclass(frozen=True)
class TargetContent:
    """What `load_requests` answers for one request.

    `source` is `cache` (from the agent's prefetch cache), `network` (fetched from Target now) or
    `default` (the request's default content: Target had nothing, failed, or the agent was unreachable).
    `data` is what Target sent with the offer (`responseTokens`, `analyticsPayload`,
    `clickMetricAnalyticsPayload`) when the load asked for it (`with_data`), `{}` for default content; None
    when it was not asked for.
    """

    name: str
    content: str
    source: str
    data: Optional[Dict[str, Any]] = field(default=None, hash=False)


@dataclass(frozen=True)
class CustomerId:
    """One customer id of the visitor (AEP Identity's synced identifiers): `authenticated_state` is
    `unknown`, `authenticated` or `logged_out`."""

    id: str
    integration_code: str
    authenticated_state: str = "unknown"

    def to_wire(self) -> Dict[str, str]:
        return {"id": self.id, "integrationCode": self.integration_code,
                "authenticatedState": self.authenticated_state}

    @classmethod
    def from_wire(cls, wire: Any) -> Optional["CustomerId"]:
        if not isinstance(wire, dict) or not isinstance(wire.get("id"), str):
            return None
        return cls(id=wire["id"], integration_code=str(wire.get("integrationCode", "")),
                   authenticated_state=str(wire.get("authenticatedState", "unknown")))


@dataclass(frozen=True)
class VisitorIds:
    """Every id of the box's Target visitor at once (`get_visitor_ids`); None where none is set."""

    tnt_id: Optional[str] = None
    third_party_id: Optional[str] = None
    session_id: Optional[str] = None
    marketing_cloud_visitor_id: Optional[str] = None
    customer_ids: List[CustomerId] = field(default_factory=list, hash=False)

    @classmethod
    def from_wire(cls, result: Dict[str, Any]) -> "VisitorIds":
        def text(key):
            value = result.get(key)
            return value if isinstance(value, str) else None

        customer_ids = [CustomerId.from_wire(item) for item in result.get("customerIds") or []]
        return cls(tnt_id=text("tntId"), third_party_id=text("thirdPartyId"), session_id=text("sessionId"),
                   marketing_cloud_visitor_id=text("marketingCloudVisitorId"),
                   customer_ids=[item for item in customer_ids if item is not None])


def _target_parameters(mbox_parameters, profile_parameters, product_parameters, order_parameters) -> Dict[str, Any]:
    """The parameters of `clickedLocation` and `displayedLocations` (AEP's TargetParameters), those given."""
    wire = _mbox_wire("", mbox_parameters, product_parameters, order_parameters)
    del wire["name"]
    if profile_parameters is not None:
        wire["profileParameters"] = dict(profile_parameters)
    return wire


def _attempt_timeout(command_timeout: Optional[float], cmd: str) -> Optional[float]:
    """How long an attempt waits when the command carries its own `timeout`: that, plus scheduling, when it is
    longer than the usual wait (a shorter one needs no change: the agent answers sooner)."""
    if command_timeout is None:
        return None
    return max(COMMAND_TIMEOUTS.get(cmd, QUICK_TIMEOUT), float(command_timeout) + 2.0)


def _mbox_wire(name, mbox_parameters, product_parameters, order_parameters) -> Dict[str, Any]:
    wire: Dict[str, Any] = {"name": name}
    if mbox_parameters is not None:
        wire["mboxParameters"] = dict(mbox_parameters)
    if product_parameters is not None:
        wire["productParameters"] = dict(product_parameters)
    if order_parameters is not None:
        wire["orderParameters"] = dict(order_parameters)
    return wire


# --- Adobe Pass ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Status:
    """The AccessEnabler's Status: `status` is the HTTP status (0 when the agent could not serve the
    request), `code` the error code, `action` what to do (`none`, `authentication`, `retry`, ...)."""

    status: int = 0
    code: Optional[str] = None
    message: Optional[str] = None
    details: Optional[str] = None
    help_url: Optional[str] = None
    trace: Optional[str] = None
    action: Optional[str] = None

    @classmethod
    def from_wire(cls, wire: Optional[Dict[str, Any]]) -> Optional["Status"]:
        if not isinstance(wire, dict):
            return None
        status = wire.get("status")
        return cls(
            status=status if isinstance(status, int) else 0,
            code=wire.get("code"),
            message=wire.get("message"),
            details=wire.get("details"),
            help_url=wire.get("helpUrl"),
            trace=wire.get("trace"),
            action=wire.get("action"),
        )


@dataclass(frozen=True)
class Decision:
    """One resource's preauthorization decision; `error` (a Status) may explain a denial; `source` is where
    Adobe's decision came from (`mvpd`, `degradation`, `temppass`, `dummy`)."""

    id: str
    authorized: bool
    error: Optional[Status] = None
    source: Optional[str] = None


@dataclass(frozen=True)
class PreauthorizeResponse:
    """The AccessEnabler's PreauthorizeResponse.

    `outcome` is `response` (the AccessEnabler's onResponse: `decisions`, one per requested resource,
    possibly a `status` from Adobe Pass) or `failure` (onFailure: no decisions, `status.status` 0 and a
    `status.code` such as `authentication_session_missing` or `network_error`).
    """

    outcome: str
    decisions: List[Decision] = field(default_factory=list)
    status: Optional[Status] = None

    @property
    def failed(self) -> bool:
        return self.outcome == "failure"

    @classmethod
    def from_wire(cls, result: Dict[str, Any]) -> "PreauthorizeResponse":
        decisions = [
            Decision(id=item["id"], authorized=bool(item.get("authorized")), error=Status.from_wire(item.get("error")),
                     source=item.get("source"))
            for item in result.get("resources") or []
        ]
        return cls(outcome=result.get("outcome", "response"), decisions=decisions,
                   status=Status.from_wire(result.get("status")))


def _network_error(error: Exception) -> Status:
    """The status an AccessEnabler call answers when the agent cannot be reached."""
    return Status(status=0, code="network_error", message=str(error), action="none")


def _millis(value: Any) -> Optional[int]:
    """An epoch-milliseconds field; None when absent, null or not a number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return int(value)


# Entitlement: sign-in, authorization, logout (docs/PROTOCOL.md, "Entitlement"). Times are milliseconds since
# the Unix epoch, as on the wire.


@dataclass(frozen=True)
class SignInCode:
    """A registration code for the second-screen sign-in: show `url` and `code` to the user.

    `not_before` is None in an `auth.code` event (it does not say); `mvpd` is None when the user picks the
    provider on the second screen."""

    code: str
    url: str
    not_after: Optional[int] = None
    not_before: Optional[int] = None
    mvpd: Optional[str] = None

    @classmethod
    def from_wire(cls, wire: Any) -> Optional["SignInCode"]:
        if not isinstance(wire, dict) or not isinstance(wire.get("code"), str) or not isinstance(wire.get("url"), str):
            return None
        return cls(code=wire["code"], url=wire["url"], not_after=_millis(wire.get("notAfter")),
                   not_before=_millis(wire.get("notBefore")), mvpd=wire.get("mvpd"))


@dataclass(frozen=True)
class AuthenticationStatus:
    """What `check_authentication` answers. Not signed in: `authenticated` False and a `status` whose action
    is `authentication` (`authentication_session_missing`, `_expired`); any other status means the agent
    could not tell (`network_error`, `requestor_not_configured`, ...). `pending` is a sign-in under way."""

    authenticated: bool
    mvpd: Optional[str] = None
    not_before: Optional[int] = None
    not_after: Optional[int] = None
    type: Optional[str] = None
    status: Optional[Status] = None
    pending: Optional[SignInCode] = None

    @classmethod
    def from_wire(cls, result: Dict[str, Any]) -> "AuthenticationStatus":
        return cls(authenticated=result.get("authenticated") is True, mvpd=result.get("mvpd"),
                   not_before=_millis(result.get("notBefore")), not_after=_millis(result.get("notAfter")),
                   type=result.get("type"), status=Status.from_wire(result.get("status")),
                   pending=SignInCode.from_wire(result.get("pending")))


@dataclass(frozen=True)
class AuthenticationResult:
    """What `get_authentication` answers: signed in already (`authenticated`, `mvpd`, `not_after`), a sign-in
    under way (`pending`: the code to show), or neither (`failed`: `status` says why)."""

    authenticated: bool
    mvpd: Optional[str] = None
    not_after: Optional[int] = None
    pending: Optional[SignInCode] = None
    status: Optional[Status] = None

    @property
    def failed(self) -> bool:
        return self.status is not None

    @classmethod
    def from_wire(cls, result: Dict[str, Any]) -> "AuthenticationResult":
        status = Status.from_wire(result.get("status"))
        if status is not None:
            return cls(authenticated=False, status=status)
        if result.get("authenticated") is True:
            return cls(authenticated=True, mvpd=result.get("mvpd"), not_after=_millis(result.get("notAfter")))
        pending = SignInCode.from_wire(result)
        if pending is None:
            return cls(authenticated=False, status=_unreadable("getAuthentication"))
        return cls(authenticated=False, mvpd=pending.mvpd, pending=pending)


@dataclass(frozen=True, repr=False)
class MediaToken:
    """The token for the player (the AccessEnabler's setToken): a secret of the app, for the player only.
    Its repr (and str) shows only the last 4 characters of `serialized_token`."""

    serialized_token: str
    not_before: Optional[int] = None
    not_after: Optional[int] = None

    @property
    def masked(self) -> str:
        """An ellipsis and the token's last 4 characters (the ellipsis alone under 16 characters)."""
        return "\u2026" if len(self.serialized_token) < 16 else "\u2026" + self.serialized_token[-4:]

    def __repr__(self) -> str:
        return (f"MediaToken(serialized_token={self.masked!r} ({len(self.serialized_token)} characters), "
                f"not_before={self.not_before!r}, not_after={self.not_after!r})")


@dataclass(frozen=True)
class AuthorizationResponse:
    """A playback decision (`get_authorization`, `check_authorization`).

    A permit has `authorized` True and, from `get_authorization`, the `media_token`; a denial has Adobe's
    `error`; `status` says why there is no decision (not signed in: action `authentication`; `network_error`
    when the agent cannot be reached). `from_cache`: `check_authorization` answered from a held permit."""

    resource: str
    authorized: bool
    source: Optional[str] = None
    mvpd: Optional[str] = None
    not_after: Optional[int] = None
    media_token: Optional[MediaToken] = None
    error: Optional[Status] = None
    status: Optional[Status] = None
    from_cache: bool = False

    @classmethod
    def from_wire(cls, result: Dict[str, Any], resource: str) -> "AuthorizationResponse":
        if not isinstance(result.get("authorized"), bool):
            return cls(resource=resource, authorized=False, status=_unreadable("authorization"))
        token = result.get("mediaToken")
        media_token = None
        if isinstance(token, dict) and isinstance(token.get("serializedToken"), str):
            media_token = MediaToken(token["serializedToken"], _millis(token.get("notBefore")),
                                     _millis(token.get("notAfter")))
        return cls(resource=result.get("resource", resource), authorized=result["authorized"],
                   source=result.get("source"), mvpd=result.get("mvpd"), not_after=_millis(result.get("notAfter")),
                   media_token=media_token, error=Status.from_wire(result.get("error")),
                   status=Status.from_wire(result.get("status")), from_cache=result.get("fromCache") is True)


@dataclass(frozen=True)
class LogoutResult:
    """What `logout` answers. A `url` is a browser step Adobe asks for (the AccessEnabler's navigateToUrl);
    `status` says Adobe could not be told (the box is signed out all the same) or the agent was unreachable."""

    logged_out: bool
    mvpd: Optional[str] = None
    action_name: Optional[str] = None
    action_type: Optional[str] = None
    url: Optional[str] = None
    status: Optional[Status] = None

    @classmethod
    def from_wire(cls, result: Dict[str, Any]) -> "LogoutResult":
        if not isinstance(result.get("loggedOut"), bool):
            return cls(logged_out=False, status=_unreadable("logout"))
        return cls(logged_out=result["loggedOut"], mvpd=result.get("mvpd"), action_name=result.get("actionName"),
                   action_type=result.get("actionType"), url=result.get("url"),
                   status=Status.from_wire(result.get("status")))


@dataclass(frozen=True)
class Metadata:
    """What `get_metadata` answers: every attribute (`attributes`, name to Adobe's value: mostly strings), or
    for a `key`, its `value` (None when the profile lacks it). `status` says why there are none."""

    key: Optional[str] = None
    attributes: Optional[Dict[str, Any]] = None
    value: Any = None
    status: Optional[Status] = None

    @classmethod
    def from_wire(cls, result: Dict[str, Any]) -> "Metadata":
        status = Status.from_wire(result.get("status"))
        if isinstance(result.get("key"), str):
            return cls(key=result["key"], value=result.get("value"), status=status)
        if isinstance(result.get("attributes"), dict):
            return cls(attributes=dict(result["attributes"]), status=status)
        return cls(status=status or _unreadable("getMetadata"))


@dataclass(frozen=True)
class MVPD:
    """A TV provider of the requestor, for a picker (the AccessEnabler's MVPD)."""

    id: str
    display_name: Optional[str] = None
    logo_url: Optional[str] = None


@dataclass(frozen=True)
class ProviderSelection:
    """The requestor's providers and the one chosen for the next sign-in; `status` says why `mvpds` is empty."""

    selected: Optional[str] = None
    mvpds: List[MVPD] = field(default_factory=list)
    status: Optional[Status] = None

    @classmethod
    def from_wire(cls, result: Dict[str, Any]) -> "ProviderSelection":
        status = Status.from_wire(result.get("status"))
        if not isinstance(result.get("mvpds"), list):
            return cls(status=status or _unreadable("provider"))
        mvpds = [MVPD(item["id"], item.get("displayName"), item.get("logoUrl"))
                 for item in result["mvpds"] if isinstance(item, dict) and isinstance(item.get("id"), str)]
        return cls(selected=result.get("selected"), mvpds=mvpds, status=status)


def _unreadable(what: str) -> Status:
    return Status(status=0, code="server_response_format_unknown",
                  message=f"preflightd sent a {what} result in an unknown format.", action="none")


# --- Events --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Event:
    """One message of the agent's event endpoint: `topic` (`offers.prefetched`, ...) and its JSON body."""

    topic: str
    body: Dict[str, Any]


# The sign-in topics (`auth.decisions`, preauthorize's, is not one of them).
AUTH_TOPICS = ("auth.code", "auth.authenticated", "auth.failed", "auth.logout", "auth.session")


@dataclass(frozen=True)
class AuthenticationEvent:
    """A sign-in event of the agent, typed: `kind` is the topic without `auth.`:

    - `code`: a code was issued (or resumed after a restart): `sign_in` (a SignInCode) to show;
    - `authenticated`: the user signed in on the second screen: `mvpd`, `not_after`;
    - `failed`: the sign-in under way ended: `reason` (`expired`, `cancelled`, `error`), and for `error`
      Adobe's `code` and `message`;
    - `logout`: the user was signed out: `mvpd`;
    - `session`: the sign-in state changed: `state` (`authenticated`, `missing`, `expired`), `mvpd`,
      `not_after`."""

    kind: str
    requestor: str
    mvpd: Optional[str] = None
    not_after: Optional[int] = None
    sign_in: Optional[SignInCode] = None
    reason: Optional[str] = None
    code: Optional[str] = None
    message: Optional[str] = None
    state: Optional[str] = None

    @classmethod
    def from_event(cls, event: Event) -> Optional["AuthenticationEvent"]:
        """The typed event of an `auth.*` Event; None for any other topic or a body without a requestor."""
        if event.topic not in AUTH_TOPICS or not isinstance(event.body.get("requestor"), str):
            return None
        body = event.body
        return cls(kind=event.topic[len("auth."):], requestor=body["requestor"], mvpd=body.get("mvpd"),
                   not_after=_millis(body.get("notAfter")),
                   sign_in=SignInCode.from_wire(body) if event.topic == "auth.code" else None,
                   reason=body.get("reason"), code=body.get("code") if event.topic == "auth.failed" else None,
                   message=body.get("message"), state=body.get("state"))


# --- The client ----------------------------------------------------------------------------------------


def read_config(path: Optional[str] = None) -> Dict[str, Any]:
    """The agent's configuration file as a dict; {} when the default file is absent or unreadable.

    An explicitly named file that cannot be read raises (OSError or ValueError)."""
    if path is not None:
        with open(path) as handle:
            return json.load(handle)
    try:
        with open(DEFAULT_CONFIG) as handle:
            config = json.load(handle)
        return config if isinstance(config, dict) else {}
    except (OSError, ValueError) as error:
        log.debug("not using %s: %s", DEFAULT_CONFIG, error)
        return {}


class PreflightClient:
    """A connection to preflightd's app endpoint (and, for `events`, its event endpoint).

    endpoint: the app endpoint; default `agent.appEndpoint` of the configuration file, else
        ipc:///run/preflight/app.sock.
    events_endpoint: the event endpoint; default `agent.eventsEndpoint` of the configuration file, else
        ipc:///run/preflight/events.sock.
    config: the agent's configuration file to read those from (default /etc/preflight/preflight.json).
    requestor: the Adobe Pass requestor (the AccessEnabler's setRequestor); default the only one the
        configuration file lists in `pass.requestors`.
    timeout: seconds each attempt may take (connection and reply), for every command (default per
        command: 2 s, 7 s for prefetch and loads, 17 s for preauthorize, the entitlement calls and
        reset_experience: the agent's own bounds plus a margin).
    retries: how many times a command that got no reply is sent again, each time on a new socket.
    """

    def __init__(self, endpoint: Optional[str] = None, *, events_endpoint: Optional[str] = None,
                 config: Optional[str] = None, requestor: Optional[str] = None,
                 timeout: Optional[float] = None, retries: int = 2, context: Optional[zmq.Context] = None,
                 property_token: Optional[str] = None):
        settings = read_config(config) if (config is not None or endpoint is None or events_endpoint is None
                                           or requestor is None) else {}
        agent = settings.get("agent") if isinstance(settings.get("agent"), dict) else {}
        self.endpoint = endpoint or agent.get("appEndpoint") or DEFAULT_APP_ENDPOINT
        self.events_endpoint = events_endpoint or agent.get("eventsEndpoint") or DEFAULT_EVENTS_ENDPOINT
        if requestor is None:
            pass_ = settings.get("pass") if isinstance(settings.get("pass"), dict) else {}
            requestors = pass_.get("requestors")
            if isinstance(requestors, list) and len(requestors) == 1 and isinstance(requestors[0], str):
                requestor = requestors[0]
        self.requestor = requestor
        # The Target property (workspace) of this app's publisher: AEP's `target.propertyToken` setting.
        self.property_token = property_token
        self.timeout = timeout
        self.retries = max(0, int(retries))
        self._own_context = context is None
        self._context = context or zmq.Context()
        self._idle: List[zmq.Socket] = []
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._id_prefix = f"py{os.getpid()}-{id(self) & 0xFFFF:x}-"
        self._closed = False

    # Context manager and cleanup.

    def __enter__(self) -> "PreflightClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Closes the client's sockets (and its ZeroMQ context, unless one was passed in)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            idle, self._idle = self._idle, []
        for socket in idle:
            socket.close(linger=0)
        if self._own_context:
            # destroy, not term: an EventStream left open must not make close() wait forever.
            self._context.destroy(linger=0)

    def set_requestor(self, requestor: str) -> None:
        """The Adobe Pass requestor used by `preauthorize` (the AccessEnabler's setRequestor)."""
        self.requestor = requestor

    # Target.

    def _in_property(self, args: Dict[str, Any], property_token: Optional[str] = None) -> Dict[str, Any]:
        """A Target command's args with the call's property token, else the client's, when there is one."""
        token = property_token if property_token is not None else self.property_token
        if token is not None:
            args["propertyToken"] = token
        return args

    def prefetch(self, mboxes: Sequence[Union[TargetPrefetch, str]],
                 profile_parameters: Optional[Parameters] = None, timeout: Optional[float] = None,
                 property_token: Optional[str] = None) -> bool:
        """Prefetches mboxes into the agent's cache (targetPrefetchContent); True when Target answered.

        `mboxes` are TargetPrefetch objects or plain mbox names. `timeout` (seconds, above 0, at most 60)
        bounds the wait for Target for this call instead of the agent's `target.timeout`. `property_token`
        (AEP's `at_property`) names the Target property of this call, else the client's `property_token`, else
        the agent's `target.propertyToken`. False when Target
        failed or did not answer in time, or the agent was unreachable; an argument the agent refuses raises
        AgentError (code `invalid_argument`)."""
        args: Dict[str, Any] = {"mboxes": [_prefetch_object(mbox).to_wire() for mbox in mboxes]}
        if profile_parameters is not None:
            args["profileParameters"] = dict(profile_parameters)
        if timeout is not None:
            args["timeout"] = timeout
        self._in_property(args, property_token)
        try:
            result = self.request("prefetch", args, attempt_timeout=_attempt_timeout(timeout, "prefetch"))
        except AgentUnavailable as error:
            log.warning("prefetch not done: %s", error)
            return False
        return bool(result.get("success"))

    def load_requests(self, requests: Sequence[TargetRequest],
                      profile_parameters: Optional[Parameters] = None, *, notify_display: bool = True,
                      with_data: bool = False, timeout: Optional[float] = None,
                      property_token: Optional[str] = None) -> List[TargetContent]:
        """Loads mbox contents (targetLoadRequests), from the prefetch cache where it holds them.

        Calls each request's callback with its content (and `content_with_data` with the content and its
        data), in request order, and returns one TargetContent per request. When the agent is unreachable
        every request gets its default content (source `default`, data `{}` when asked for); an argument the
        agent refuses raises AgentError before any callback runs.

        notify_display: False defers the display notification of what comes from the cache until the app
            reports it shown with `displayed_locations` (AEP's way); True (default) counts it at once.
        with_data: each TargetContent gets `data` (also implied by a request with `content_with_data`).
        timeout: seconds (above 0, at most 60) to wait for Target for this call instead of `target.timeout`;
            what it cuts short answers its default content.
        property_token: the Target property of this call (AEP's `at_property`), else the client's."""
        requests = list(requests)
        with_data = with_data or any(request.content_with_data is not None for request in requests)
        args: Dict[str, Any] = {"requests": [request.to_wire() for request in requests]}
        if profile_parameters is not None:
            args["profileParameters"] = dict(profile_parameters)
        if not notify_display:
            args["notifyDisplay"] = False
        if with_data:
            args["withData"] = True
        if timeout is not None:
            args["timeout"] = timeout
        self._in_property(args, property_token)
        try:
            result = self.request("loadRequests", args, attempt_timeout=_attempt_timeout(timeout, "loadRequests"))
            contents = [
                TargetContent(name=item["name"], content=item["content"], source=item["source"],
                              data=(dict(item.get("data") or {}) if with_data else None))
                for item in result["contents"]
            ]
            if len(contents) != len(requests):
                raise AgentUnavailable(self.endpoint, f"{len(contents)} contents for {len(requests)} requests")
        except AgentUnavailable as error:
            log.warning("loadRequests answered with default content: %s", error)
            contents = [TargetContent(request.name, request.default_content, "default", {} if with_data else None)
                        for request in requests]
        for request, content in zip(requests, contents):
            if request.callback is not None:
                request.callback(content.content)
            if request.content_with_data is not None:
                request.content_with_data(content.content, dict(content.data or {}))
        return contents

    def clicked_location(self, name: str, mbox_parameters: Optional[Parameters] = None,
                         profile_parameters: Optional[Parameters] = None,
                         product_parameters: Optional[Dict[str, str]] = None,
                         order_parameters: Optional[Dict[str, Any]] = None,
                         property_token: Optional[str] = None) -> bool:
        """Tells Target the user clicked the offer of mbox `name` (AEP's clickedLocation): the agent queues a
        click notification with the click metric Target sent with the offer, and delivers it as display
        notifications are. True once queued, False when the agent was unreachable (logged; nothing sent).
        An mbox neither prefetched nor loaded, or whose offer has no click metric, raises AgentError
        (`invalid_argument`, field `name`), as does a parameter the agent refuses."""
        args = self._in_property({"name": name, **_target_parameters(mbox_parameters, profile_parameters,
                                                                     product_parameters, order_parameters)},
                                 property_token)
        try:
            return self.request("clickedLocation", args).get("queued") is True
        except AgentUnavailable as error:
            log.warning("clickedLocation not sent: %s", error)
            return False

    def displayed_locations(self, names: Sequence[str], mbox_parameters: Optional[Parameters] = None,
                            profile_parameters: Optional[Parameters] = None,
                            product_parameters: Optional[Dict[str, str]] = None,
                            order_parameters: Optional[Dict[str, Any]] = None,
                            property_token: Optional[str] = None) -> Optional[List[str]]:
        """Reports the mboxes the app showed (AEP's displayedLocations), after a load with
        `notify_display=False`: each gets one display notification, with these parameters when any are given,
        else those of the load. Returns the names notified; the others were not loaded that way or already
        counted (the agent skips them so nothing is counted twice). None when the agent was unreachable
        (logged; nothing sent)."""
        args = self._in_property({"names": list(names), **_target_parameters(mbox_parameters, profile_parameters,
                                                                             product_parameters, order_parameters)},
                                 property_token)
        try:
            notified = self.request("displayedLocations", args).get("notified")
        except AgentUnavailable as error:
            log.warning("displayedLocations not sent: %s", error)
            return None
        return [name for name in notified if isinstance(name, str)] if isinstance(notified, list) else []

    def clear_prefetch_cache(self) -> Optional[int]:
        """Empties the agent's prefetch cache (targetPrefetchClearCache); the number of entries removed,
        or None when the agent was unreachable."""
        try:
            return int(self.request("clearPrefetchCache").get("cleared", 0))
        except AgentUnavailable as error:
            log.warning("clearPrefetchCache not done: %s", error)
            return None

    # The Target visitor, with AEP's Target extension's calls. The agent is one visitor per box: every app
    # reads and sets the same ids, and a reset by one app starts a new visitor for all (docs/PROTOCOL.md,
    # "Visitor identity"). An id the agent refuses raises AgentError (`invalid_argument`, its `field`).

    def get_third_party_id(self) -> Optional[str]:
        """The box's third-party id, sent to Target on every call (AEP's getThirdPartyId); None when none is
        set (never, cleared, or forgotten by a reset), and when the agent was unreachable (logged)."""
        return self._visitor_id("getThirdPartyId", "thirdPartyId")

    def set_third_party_id(self, third_party_id: Optional[str]) -> bool:
        """Sets the box's third-party id for every app (AEP's setThirdPartyId); None, or "" as AEP takes it,
        clears it. The agent keeps it across restarts. True when the agent took it, False when it was
        unreachable (logged; nothing changed). More than 128 characters raises AgentError."""
        return self._set_visitor_id("setThirdPartyId", "thirdPartyId", third_party_id or None)

    def get_tnt_id(self) -> Optional[str]:
        """The box's Target visitor id, the tntId Target handed out or an app set (AEP's getTntId); None before
        Target's first answer, after a reset or a clear, and when the agent was unreachable (logged)."""
        return self._visitor_id("getTntId", "tntId")

    def set_tnt_id(self, tnt_id: Optional[str]) -> bool:
        """Sets the box's tntId for every app, e.g. for a visitor migrated from another channel (AEP's
        setTntId); None, or "", clears it: Target hands out a new one on the next call. True when the agent
        took it, False when it was unreachable (logged; nothing changed). More than 128 characters raises
        AgentError."""
        return self._set_visitor_id("setTntId", "tntId", tnt_id or None)

    def get_session_id(self) -> Optional[str]:
        """The session id the box's next Target call carries, a new one once the session timed out (AEP's
        getSessionId); None only when the agent was unreachable (logged)."""
        return self._visitor_id("getSessionId", "sessionId")

    def set_session_id(self, session_id: str) -> bool:
        """Makes every app's Target calls carry `session_id` from now on, renewed after `target.sessionTimeout`
        without calls (AEP's setSessionId). The Delivery API takes 1 to 128 printable characters other than a
        space, `?` and `/`; anything else (None or "" too: AEP's "forget the session" has no counterpart, the
        agent always has one) raises AgentError. True when the agent took it, False when it was unreachable
        (logged; nothing changed)."""
        return self._set_visitor_id("setSessionId", "sessionId", session_id)

    def reset_experience(self) -> Optional[int]:
        """Starts a new Target visitor for every app of the box (AEP's resetExperience): the agent first sends
        the display notifications already queued, under the old visitor, then forgets the tntId, third-party
        id, session and edge host, and drops the cached offers (decided for the old visitor; AEP keeps them).
        Returns how many cached offers went, once done, or None when the agent was unreachable (logged;
        nothing changed, unless the agent got the request and only its answer was lost)."""
        try:
            return int(self.request("resetExperience").get("cleared", 0))
        except AgentUnavailable as error:
            log.warning("resetExperience not done: %s", error)
            return None

    def get_visitor_ids(self) -> Optional[VisitorIds]:
        """Every id of the box's visitor at once: tntId, third-party id, session id, Experience Cloud visitor
        id and customer ids; None when the agent was unreachable (logged)."""
        try:
            return VisitorIds.from_wire(self.request("getVisitorIds"))
        except AgentUnavailable as error:
            log.warning("getVisitorIds not answered: %s", error)
            return None

    def set_marketing_cloud_visitor_id(self, marketing_cloud_visitor_id: Optional[str]) -> bool:
        """Sets the Experience Cloud visitor id (ECID) the app has, sent to Target as
        `id.marketingCloudVisitorId` for every app; None, or "", clears it, and the customer ids with it.
        True when the agent took it, False when it was unreachable (logged; nothing changed). More than 128
        characters raises AgentError."""
        return self._set_visitor_id("setMarketingCloudVisitorId", "marketingCloudVisitorId",
                                    marketing_cloud_visitor_id or None)

    def set_customer_ids(self, customer_ids: Sequence[Union[CustomerId, Dict[str, str]]]) -> bool:
        """Sets the visitor's customer ids (AEP Identity's syncIdentifiers), sent to Target as `id.customerIds`;
        `[]` clears them. Each is a CustomerId or its wire dict (`id`, `integrationCode`,
        `authenticatedState`). Target takes them only along with an Experience Cloud visitor id: without one
        set, AgentError (`invalid_argument`, field `customerIds`). True when the agent took them, False when
        it was unreachable (logged; nothing changed)."""
        wire = [item.to_wire() if isinstance(item, CustomerId) else dict(item) for item in customer_ids]
        return self._set_visitor_id("setCustomerIds", "customerIds", wire)

    def _visitor_id(self, cmd: str, key: str) -> Optional[str]:
        try:
            value = self.request(cmd).get(key)
        except AgentUnavailable as error:
            log.warning("%s not answered: %s", cmd, error)
            return None
        return value if isinstance(value, str) else None

    def _set_visitor_id(self, cmd: str, key: str, value: Any) -> bool:
        try:
            self.request(cmd, {key: value})
        except AgentUnavailable as error:
            log.warning("%s not done: %s", cmd, error)
            return False
        return True

    # Adobe Pass.

    def preauthorize(self, resources: Sequence[str], disable_features: Iterable[str] = (),
                     requestor: Optional[str] = None) -> PreauthorizeResponse:
        """Preauthorizes resources with Adobe Pass (the AccessEnabler's preauthorize).

        `disable_features`: Feature.LOCAL_CACHE (skip the agent's decision cache) and/or
        Feature.REMOTE_CACHE. One decision per resource, in order. When the agent is unreachable the
        response is a failure with status code `network_error`, as the AccessEnabler answers when Adobe
        cannot be reached."""
        requestor = requestor or self.requestor
        if not requestor:
            raise ValueError("no Adobe Pass requestor: pass requestor=..., call set_requestor(), or list exactly "
                             "one in the configuration file's pass.requestors")
        args: Dict[str, Any] = {"requestor": requestor, "resources": list(resources)}
        disabled = [str(feature) for feature in disable_features]
        if disabled:
            args["disabledFeatures"] = disabled
        try:
            return PreauthorizeResponse.from_wire(self.request("preauthorize", args))
        except AgentUnavailable as error:
            log.warning("preauthorize failed: %s", error)
            return PreauthorizeResponse(
                outcome="failure",
                status=Status(status=0, code="network_error", message=str(error), action="none"),
            )

    # Adobe Pass entitlement: sign-in on a second screen, playback authorization, logout. Each answers a
    # `status` where the AccessEnabler would report an error, `network_error` when the agent cannot be reached;
    # an argument the agent refuses raises AgentError (code `invalid_argument`).

    def check_authentication(self, mvpd: Optional[str] = None, fresh: bool = False) -> AuthenticationStatus:
        """Whether the user is signed in with a TV provider, and until when (checkAuthentication).

        `mvpd`: count only a sign-in with that provider; `fresh`: ask Adobe Pass rather than trust the
        sign-in the agent holds."""
        args: Dict[str, Any] = {}
        if mvpd is not None:
            args["mvpd"] = mvpd
        if fresh:
            args["fresh"] = True
        try:
            return AuthenticationStatus.from_wire(self._entitlement("checkAuthentication", args))
        except AgentUnavailable as error:
            log.warning("checkAuthentication not answered: %s", error)
            return AuthenticationStatus(authenticated=False, status=_network_error(error))

    def get_authentication(self, mvpd: Optional[str] = None, redirect_url: Optional[str] = None,
                           domain_name: Optional[str] = None) -> AuthenticationResult:
        """Starts the second-screen sign-in, or joins the one under way (getAuthentication).

        Show `result.pending.url` and `.code` to the user; subscribe to `authentication_events()` first:
        `authenticated` arrives when the user has signed in, `failed` when the code expired or was cancelled.
        `mvpd`: the provider (default the selected one, else the user picks on the second screen)."""
        args: Dict[str, Any] = {}
        for key, value in (("mvpd", mvpd), ("redirectUrl", redirect_url), ("domainName", domain_name)):
            if value is not None:
                args[key] = value
        try:
            return AuthenticationResult.from_wire(self._entitlement("getAuthentication", args))
        except AgentUnavailable as error:
            log.warning("getAuthentication not answered: %s", error)
            return AuthenticationResult(authenticated=False, status=_network_error(error))

    def cancel_authentication(self) -> Optional[bool]:
        """Gives up the sign-in under way and its code; True when one was pending, None when the agent was
        unreachable."""
        try:
            return self._entitlement("cancelAuthentication", {}).get("cancelled") is True
        except AgentUnavailable as error:
            log.warning("cancelAuthentication not done: %s", error)
            return None

    def get_authorization(self, resource: str) -> AuthorizationResponse:
        """A playback decision with the media token for the player (getAuthorization)."""
        return self._authorization("getAuthorization", resource)

    def check_authorization(self, resource: str) -> AuthorizationResponse:
        """A playback decision without a token, from a permit the agent holds when it has one
        (checkAuthorization)."""
        return self._authorization("checkAuthorization", resource)

    def logout(self, mvpd: Optional[str] = None) -> LogoutResult:
        """Signs the user out of the TV provider for every app of the requestor (logout); a `url` in the
        result is a browser step Adobe asks for."""
        try:
            return LogoutResult.from_wire(self._entitlement("logout", {} if mvpd is None else {"mvpd": mvpd}))
        except AgentUnavailable as error:
            log.warning("logout not done: %s", error)
            return LogoutResult(logged_out=False, status=_network_error(error))

    def get_metadata(self, key: Optional[str] = None) -> Metadata:
        """The signed-in user's metadata: every attribute, or the one named `key` (getMetadata)."""
        try:
            return Metadata.from_wire(self._entitlement("getMetadata", {} if key is None else {"key": key}))
        except AgentUnavailable as error:
            log.warning("getMetadata not answered: %s", error)
            return Metadata(key=key, status=_network_error(error))

    def get_selected_provider(self) -> ProviderSelection:
        """The requestor's TV providers for a picker, and the one chosen (getSelectedProvider)."""
        try:
            return ProviderSelection.from_wire(self._entitlement("getSelectedProvider", {}))
        except AgentUnavailable as error:
            log.warning("getSelectedProvider not answered: %s", error)
            return ProviderSelection(status=_network_error(error))

    def set_selected_provider(self, mvpd: Optional[str]) -> ProviderSelection:
        """Chooses the provider the next sign-in uses (None clears the choice), kept across agent restarts
        (setSelectedProvider). A provider the requestor does not integrate with raises AgentError
        (`invalid_argument`, field `mvpd`) and changes nothing; an unreachable agent gives `network_error`."""
        try:
            return ProviderSelection.from_wire(self._entitlement("setSelectedProvider", {"mvpd": mvpd}))
        except AgentUnavailable as error:
            log.warning("setSelectedProvider not done: %s", error)
            return ProviderSelection(status=_network_error(error))

    def authentication_events(self, timeout: Optional[float] = None) -> "AuthenticationEvents":
        """Subscribes to the sign-in events of this client's requestor (of every requestor when it has none):
        iterate for AuthenticationEvents, close when done (or use a `with`).

        Subscribe before `get_authentication`: the agent does not replay events. With `timeout`, iteration
        stops when no event arrived for that many seconds."""
        return AuthenticationEvents(self.events(AUTH_TOPICS, timeout), self.requestor)

    def _entitlement(self, cmd: str, args: Dict[str, Any]) -> Dict[str, Any]:
        if not self.requestor:
            raise ValueError("no Adobe Pass requestor: pass requestor=..., call set_requestor(), or list exactly "
                             "one in the configuration file's pass.requestors")
        return self.request(cmd, {**args, "requestor": self.requestor})

    def _authorization(self, cmd: str, resource: str) -> AuthorizationResponse:
        try:
            return AuthorizationResponse.from_wire(self._entitlement(cmd, {"resource": resource}), resource)
        except AgentUnavailable as error:
            log.warning("%s not answered: %s", cmd, error)
            return AuthorizationResponse(resource=resource, authorized=False, status=_network_error(error))

    # Other commands.

    def ping(self) -> Dict[str, Any]:
        """The agent's version and uptime; raises AgentUnavailable when it does not answer."""
        return self.request("ping")

    def events(self, topics: Iterable[str] = (), timeout: Optional[float] = None) -> "EventStream":
        """Subscribes to the agent's events (PUB messages) whose topic starts with one of `topics` (all
        when empty); iterate over the returned EventStream to get them, close it when done.

        The subscription starts here, before the first event is asked for. Iteration runs until the caller
        stops, or, with `timeout`, until no event arrived for that many seconds. Events published before
        the subscription reached the agent are not seen: PUB does not replay."""
        return EventStream(self._context, self.events_endpoint, topics, timeout)

    def request(self, cmd: str, args: Optional[Dict[str, Any]] = None, *,
                attempt_timeout: Optional[float] = None) -> Dict[str, Any]:
        """Sends one command and returns its `result`.

        `attempt_timeout` (seconds) overrides how long each attempt waits, for a command that carries a longer
        `timeout` of its own; the client's `timeout` still wins when it was given.

        Retries on a new socket when no reply came in time, and when the agent answered `shutting_down`
        or `overloaded`. Raises AgentUnavailable when every attempt failed and AgentError for any other
        error reply."""
        request_id = self._id_prefix + str(next(self._ids))
        body: Dict[str, Any] = {"v": 1, "id": request_id, "cmd": cmd}
        if args is not None:
            body["args"] = args
        payload = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
        timeout = (self.timeout if self.timeout is not None else attempt_timeout if attempt_timeout is not None
                   else COMMAND_TIMEOUTS.get(cmd, QUICK_TIMEOUT))
        reason = "no attempt made"
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(min(0.1 * 2 ** (attempt - 1), 1.0))
            try:
                reply = self._exchange(payload, request_id, timeout)
            except _AttemptFailed as failure:
                reason = failure.reason
                log.debug("%s attempt %d failed: %s", cmd, attempt + 1, reason)
                continue
            if reply.get("ok") is True:
                result = reply.get("result")
                return result if isinstance(result, dict) else {}
            error = reply.get("error") if isinstance(reply.get("error"), dict) else {}
            agent_error = AgentError(
                code=str(error.get("code", "internal_error")),
                message=str(error.get("message", "")),
                field=error.get("field"),
                action=str(error.get("action", "none")),
                retry_after_ms=error.get("retryAfterMs"),
            )
            if agent_error.code in ("shutting_down", "overloaded"):
                reason = str(agent_error)
                if agent_error.retry_after_ms:
                    time.sleep(min(agent_error.retry_after_ms / 1000.0, 5.0))
                continue
            raise agent_error
        raise AgentUnavailable(self.endpoint, reason)

    # One attempt: a pooled socket (or a new one), the request, its reply. A socket is returned to the
    # pool only after a clean exchange, so no pooled socket ever has a reply outstanding.

    def _exchange(self, payload: bytes, request_id: str, timeout: float) -> Dict[str, Any]:
        deadline = time.monotonic() + timeout
        socket = self._borrow()
        clean = False
        try:
            # ZMQ_IMMEDIATE: writable only once a connection to the agent is up, so a request is never
            # queued for an agent that is gone. If a pooled socket is not connected at once, its agent
            # may have exited: the probe says so without waiting for the timeout.
            if not socket.poll(CONNECTED_GRACE_MS, zmq.POLLOUT):
                path = _ipc_path(self.endpoint)
                if path is not None:
                    _probe_ipc(path)
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not socket.poll(max(1, int(remaining * 1000)), zmq.POLLOUT):
                    raise _AttemptFailed(f"not connected within {timeout:g} s")
            socket.send_multipart([b"", payload])
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not socket.poll(max(1, int(remaining * 1000)), zmq.POLLIN):
                    raise _AttemptFailed(f"no reply within {timeout:g} s")
                frames = socket.recv_multipart()
                if len(frames) != 2 or frames[0] != b"":
                    raise _AttemptFailed(f"expected [delimiter][body], got {len(frames)} frames")
                try:
                    reply = json.loads(frames[1])
                except ValueError:
                    raise _AttemptFailed("a reply that is not JSON") from None
                if not isinstance(reply, dict):
                    raise _AttemptFailed("a reply that is not a JSON object")
                if reply.get("id") == request_id:
                    clean = True
                    return reply
                if reply.get("id") is None and reply.get("ok") is False:
                    # The agent could not read the request at all: not worth repeating.
                    clean = True
                    return reply
                # A reply for another id cannot be ours; keep waiting for ours.
        finally:
            if clean:
                self._give_back(socket)
            else:
                socket.close(linger=0)

    def _borrow(self) -> zmq.Socket:
        with self._lock:
            if self._closed:
                raise PreflightError("the client is closed")
            if self._idle:
                return self._idle.pop()
        path = _ipc_path(self.endpoint)
        if path is not None:
            _probe_ipc(path)
        socket = self._context.socket(zmq.DEALER)
        socket.setsockopt(zmq.LINGER, 0)
        socket.setsockopt(zmq.IMMEDIATE, 1)
        socket.connect(self.endpoint)
        return socket

    def _give_back(self, socket: zmq.Socket) -> None:
        with self._lock:
            if not self._closed:
                self._idle.append(socket)
                return
        socket.close(linger=0)


class _AttemptFailed(Exception):
    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def _prefetch_object(mbox: Union[TargetPrefetch, str]) -> TargetPrefetch:
    return mbox if isinstance(mbox, TargetPrefetch) else TargetPrefetch(name=mbox)


def _ipc_path(endpoint: str) -> Optional[str]:
    if not endpoint.startswith("ipc://"):
        return None
    path = endpoint[len("ipc://"):]
    if not path or path == "*" or path.startswith("@"):
        return None
    return path


def _probe_ipc(path: str) -> None:
    """Fails the attempt at once when no agent can be listening at an ipc path: no socket file, a file
    a crashed agent left that nobody accepts connections on, or one this user may not open. Anything
    else is left to ZeroMQ (a plain non-blocking Unix-domain connect, closed at once)."""
    if not os.path.exists(path):
        raise _AttemptFailed(f"no socket file at {path}; is preflightd running?")
    probe = pysocket.socket(pysocket.AF_UNIX, pysocket.SOCK_STREAM)
    probe.setblocking(False)
    try:
        probe.connect(path)
    except ConnectionRefusedError:
        raise _AttemptFailed(f"nothing accepts connections on {path}; is preflightd running?") from None
    except PermissionError:
        raise _AttemptFailed(f"not permitted to connect to {path} (the app socket is for group preflight)") from None
    except OSError:
        pass  # EAGAIN (a full backlog: someone listens), a path too long for sockaddr_un, ...: let ZeroMQ try.
    finally:
        probe.close()


class EventStream:
    """A subscription to the agent's event endpoint: iterate for Events, or `receive` one at a time.

    Use it from one thread (a ZeroMQ socket belongs to one thread); close it, or use it in a `with`."""

    def __init__(self, context: zmq.Context, endpoint: str, topics: Iterable[str] = (),
                 timeout: Optional[float] = None):
        self.endpoint = endpoint
        self.timeout = timeout
        self._socket = context.socket(zmq.SUB)
        self._socket.setsockopt(zmq.LINGER, 0)
        for topic in list(topics) or [""]:
            self._socket.setsockopt(zmq.SUBSCRIBE, topic.encode())
        self._socket.connect(endpoint)

    def __enter__(self) -> "EventStream":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __iter__(self) -> Iterator[Event]:
        while True:
            event = self.receive(self.timeout)
            if event is None:
                return
            yield event

    def receive(self, timeout: Optional[float] = None) -> Optional[Event]:
        """The next event, or None when none arrived within `timeout` seconds (None: wait as long as it
        takes). Messages that are not `[topic][JSON object]` are skipped."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            remaining = 0.2 if deadline is None else min(0.2, deadline - time.monotonic())
            # Short polls keep Ctrl-C prompt.
            if remaining < 0 or not self._socket.poll(max(0, int(remaining * 1000))):
                if deadline is not None and time.monotonic() >= deadline:
                    return None
                continue
            frames = self._socket.recv_multipart()
            if len(frames) != 2:
                continue
            try:
                topic = frames[0].decode()
                body = json.loads(frames[1])
            except (ValueError, UnicodeDecodeError):
                continue
            if isinstance(body, dict):
                return Event(topic=topic, body=body)

    def close(self) -> None:
        self._socket.close(linger=0)


class AuthenticationEvents:
    """The sign-in events of one requestor, typed (`client.authentication_events()`): iterate for
    AuthenticationEvents, or `receive` one at a time. Belongs to one thread, like an EventStream."""

    def __init__(self, stream: EventStream, requestor: Optional[str]):
        self.stream = stream
        self.requestor = requestor

    def __enter__(self) -> "AuthenticationEvents":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __iter__(self) -> Iterator[AuthenticationEvent]:
        for event in self.stream:
            typed = self._typed(event)
            if typed is not None:
                yield typed

    def receive(self, timeout: Optional[float] = None) -> Optional[AuthenticationEvent]:
        """The next sign-in event of the requestor, or None when none arrived within `timeout` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            event = self.stream.receive(remaining)
            if event is None:
                return None
            typed = self._typed(event)
            if typed is not None:
                return typed

    def _typed(self, event: Event) -> Optional[AuthenticationEvent]:
        typed = AuthenticationEvent.from_event(event)
        if typed is None or (self.requestor and typed.requestor != self.requestor):
            return None
        return typed

    def close(self) -> None:
        self.stream.close()

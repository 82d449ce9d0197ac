"""Adobe Pass: Dynamic Client Registration (`/o/client/...`) and REST API v2 (`/api/v2/...`).

Error shapes follow the published documentation:
- DCR errors: HTTP 400 `{"error": "<code>"}` with codes invalid_request, invalid_redirect_uri,
  invalid_software_statement (register) and invalid_request, invalid_client, unsupported_grant_type
  (token);
- REST API v2 errors: the Enhanced Error Codes object (status, code, message, details?, helpUrl,
  trace, action), top level for request-level failures, item level inside `decisions`;
- throttling: HTTP 429 with an HTML page (as the real edge sends it) plus `Retry-After`.
"""

from __future__ import annotations

import base64
import binascii
import copy
import hashlib
import json
import math
import re
import secrets
import threading
import time
import uuid
from collections import Counter
from typing import Any
from urllib.parse import quote

from preflight_sim.exchange import Request, Response
from preflight_sim.outcome import Outcome

HELP_URL = ("https://experienceleague.adobe.com/docs/pass/authentication/auth-features/error-reportn/"
            "enhanced-error-codes.html")

# code -> (status, action, message), from the Enhanced Error Codes list for REST API v2.
ENHANCED_ERRORS: dict[str, tuple[int, str, str]] = {
    "invalid_parameter_service_provider": (400, "none", "The service provider parameter value is missing or invalid."),
    "invalid_parameter_mvpd": (400, "none", "The mvpd parameter value is missing or invalid."),
    "invalid_parameter_resources": (400, "none", "The resources parameter value is missing or invalid."),
    "invalid_parameter_redirect_url": (400, "none", "The redirect URL parameter value is missing or invalid."),
    "invalid_header_device_info": (400, "none", "The device information header value is missing or invalid."),
    "invalid_header_device_identifier": (400, "none", "The device identifier header value is missing or invalid."),
    "invalid_integration": (400, "none", "The integration between the specified service provider and mvpd does "
                                         "not exist or is disabled."),
    "preauthorization_denied_by_mvpd": (403, "none", "The MVPD has returned a \"Deny\" decision when requesting "
                                                     "pre-authorization for the specified resource."),
    "authorization_denied_by_mvpd": (403, "none", "The MVPD has returned a \"Deny\" decision when requesting "
                                                  "authorization for the specified resource."),
    "authorization_denied_by_parental_controls": (403, "none", "The MVPD has returned a \"Deny\" decision due "
                                                               "parental controls settings for the specified "
                                                               "resource."),
    "internal_server_error": (500, "none", "The request failed due to an internal server error."),
    "too_many_resources": (403, "configuration", "The authorization or preauthorization request failed because "
                                                 "too many resources were queried."),
    "invalid_access_token_service_provider": (401, "application-registration",
                                              "The access token is invalid due to invalid service provider."),
    "invalid_access_token_client_application": (401, "application-registration",
                                                "The access token is invalid due to invalid client application."),
    "authenticated_profile_missing": (403, "authentication",
                                      "The authenticated profile associated with this request is missing."),
    "authenticated_profile_expired": (403, "authentication",
                                      "The authenticated profile associated with this request has expired."),
    "authenticated_profile_invalidated": (403, "authentication",
                                          "The authenticated profile associated with this request has been "
                                          "invalidated."),
    "network_received_error": (403, "retry", "There was a read error while retrieving the response from the "
                                             "associated partner service. Retrying the request might solve the "
                                             "issue."),
    "network_connection_timeout": (403, "retry", "There was a connection timeout with the associated partner "
                                                 "service. Retrying the request might solve the issue."),
    "maximum_execution_time_exceeded": (403, "retry", "The request did not complete in the maximum allowed time. "
                                                      "Retrying the request might solve the issue."),
    # Second-screen authentication sessions (the registration code flow).
    "invalid_parameter_code": (400, "none", "The code parameter value is missing or invalid."),
    "invalid_parameter_domain_name": (400, "none", "The domain name parameter value is missing or invalid."),
    "authentication_session_expired": (400, "authentication",
                                       "The authentication session associated with this request has expired."),
    "authentication_session_missing": (400, "authentication",
                                       "The authentication session associated with this request is missing."),
    "authentication_session_invalidated": (400, "authentication",
                                           "The authentication session associated with this request has been "
                                           "invalidated."),
}

THROTTLE_PAGE = ("<html>\r\n<head><title>429 Too Many Requests</title></head>\r\n<body>\r\n"
                 "<center><h1>429 Too Many Requests</h1></center>\r\n<hr><center>openresty</center>\r\n"
                 "</body>\r\n</html>\r\n")

DEFAULT_MVPDS = [
    {"id": "Cablevision", "displayName": "Optimum", "logoUrl": "https://example.com/mvpd/optimum.png",
     "isTempPass": False, "isProxy": False, "authPerAggregator": False},
    {"id": "Comcast_SSO", "displayName": "Xfinity", "logoUrl": "https://example.com/mvpd/xfinity.png",
     "isTempPass": False, "isProxy": False, "authPerAggregator": True},
]

# Decision `source` values the DecisionResponse schema describes.
DECISION_SOURCES = ("mvpd", "degradation", "temppass", "dummy")

DEVICE_IDENTIFIER = re.compile(r"^fingerprint ([A-Za-z0-9+/]+={0,2})$")
# X-Device-Info keys the header documentation marks as required.
DEVICE_INFO_REQUIRED = ("model", "version", "osName", "osVersion", "connectionType")
JWT_SEGMENT = re.compile(r"^[A-Za-z0-9_-]+={0,2}$")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def enhanced_error(code: str, *, status: int | None = None, message: str | None = None,
                   details: str | None = None, action: str | None = None) -> dict:
    known_status, known_action, known_message = ENHANCED_ERRORS.get(code, (500, "none", "Unexpected error."))
    error = {"status": status if status is not None else known_status, "code": code,
             "message": message or known_message}
    if details:
        error["details"] = details
    error["helpUrl"] = HELP_URL
    error["trace"] = str(uuid.uuid4())
    error["action"] = action or known_action
    return error


def complete_error(error: Any) -> dict:
    """A decision error as configured by control: a code string, or a (partial) error object."""
    if isinstance(error, str):
        return enhanced_error(error)
    out = copy.deepcopy(error)
    code = out.get("code")
    if isinstance(code, str) and code in ENHANCED_ERRORS:
        status, action, message = ENHANCED_ERRORS[code]
        out.setdefault("status", status)
        out.setdefault("message", message)
        out.setdefault("action", action)
        out.setdefault("helpUrl", HELP_URL)
    return out


def error_response(code: str, **kwargs: Any) -> Response:
    body = enhanced_error(code, **kwargs)
    return Response.json(body["status"], body)


def throttled(retry_after: int) -> Response:
    return Response.text(429, THROTTLE_PAGE, "text/html", {"Retry-After": str(retry_after)})


# state ----------------------------------------------------------------------------------------

class RateLimiter:
    """Token allowance per client: `per_second` requests in each one-second window counted from the
    client's first request, plus a one-time burst of `burst` extra requests (Adobe's throttling
    documentation: 1 request per second with an initial burst of 10)."""

    def __init__(self) -> None:
        self.enabled = False
        self.per_second = 1
        self.burst = 10
        self._clients: dict[str, dict] = {}
        self.limited = 0
        self.limited_by_client: Counter[str] = Counter()

    def configure(self, enabled: bool, per_second: int, burst: int) -> None:
        self.enabled, self.per_second, self.burst = enabled, per_second, burst
        self._clients.clear()

    def check(self, key: str) -> tuple[bool, int]:
        if not self.enabled:
            return True, 0
        now = time.monotonic()
        client = self._clients.setdefault(key, {"start": now, "window": 0, "used": 0, "burst": 0})
        window = int(now - client["start"])
        if window != client["window"]:
            client["window"], client["used"] = window, 0
        if client["used"] < self.per_second:
            client["used"] += 1
            return True, 0
        if client["burst"] < self.burst:
            client["burst"] += 1
            return True, 0
        self.limited += 1
        self.limited_by_client[key] += 1
        return False, max(1, math.ceil(client["start"] + window + 1 - now))

    def describe(self) -> dict:
        return {"enabled": self.enabled, "perSecond": self.per_second, "burst": self.burst,
                "limited": self.limited, "limitedByClient": dict(self.limited_by_client),
                "clients": {k: {"window": v["window"], "usedInWindow": v["used"], "burstUsed": v["burst"]}
                            for k, v in self._clients.items()}}


class PassState:
    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.registrations: dict[str, dict] = {}
        self.registration_count = 0
        self.tokens: dict[str, dict] = {}
        self.tokens_issued = 0
        self.token_lifetime = 3600
        self.service_providers: dict[str, dict] = {}
        self.logins: list[dict] = []
        self.decisions: dict[str, dict[str, dict]] = {}
        self.missing_profile = "top-level"
        self.ratelimit = RateLimiter()
        self.operations: Counter[str] = Counter()
        # Lifetimes in seconds, settable by control (`/_sim/pass/sessionSettings`): registration codes
        # (30 minutes by default), decisions and media tokens.
        self.code_ttl = 1800
        self.decision_ttl = 600
        self.media_token_ttl = 420
        # Second-screen authentication sessions by code (see pass_sessions), expired ones included.
        self.sessions: dict[str, dict] = {}
        # mvpd -> whether its logout sends the user agent to the MVPD (default: yes).
        self.logout_browser_step: dict[str, bool] = {}

    # service providers
    def provider(self, name: str) -> dict:
        return self.service_providers.get(name, {"known": True, "mvpds": None, "name": None})

    def mvpds(self, name: str) -> list[dict]:
        configured = self.provider(name).get("mvpds")
        return copy.deepcopy(configured if configured is not None else DEFAULT_MVPDS)

    # logins
    def login(self, sp: str, mvpd: str, not_after: int, not_before: int, device: str | None,
              attributes: dict | None) -> dict:
        self.logins = [l for l in self.logins if not (l["serviceProvider"] == sp and l["mvpd"] == mvpd
                                                       and l["device"] == device)]
        record = {"serviceProvider": sp, "mvpd": mvpd, "notBefore": not_before, "notAfter": not_after,
                  "device": device, "attributes": attributes}
        self.logins.append(record)
        return record

    def logout(self, sp: str | None, mvpd: str | None, device: str | None = None) -> int:
        before = len(self.logins)
        self.logins = [l for l in self.logins
                       if not ((sp is None or l["serviceProvider"] == sp) and (mvpd is None or l["mvpd"] == mvpd)
                               and (device is None or l["device"] in (None, device)))]
        return before - len(self.logins)

    def logins_for(self, sp: str, device: str | None, mvpd: str | None = None) -> list[dict]:
        return [l for l in self.logins
                if l["serviceProvider"] == sp and (mvpd is None or l["mvpd"] == mvpd)
                and (l["device"] is None or l["device"] == device)]

    def end_pending_sessions(self, sp: str, mvpd: str, device: str | None, now: float) -> int:
        """A logout on a device abandons its sign-ins in progress with that mvpd: the code stops working.
        (Adobe does not document what a logout does to a pending authentication session; a code that
        could still complete a login the user just left would be surprising, so it ends.)"""
        ended = 0
        for session in self.sessions.values():
            if (session["serviceProvider"] == sp and session["device"] == device
                    and session["parameters"].get("mvpd") == mvpd and session["signedInAt"] is None
                    and session["endedBy"] is None and now < session["notAfter"]):
                session["endedBy"] = "logout"
                ended += 1
        return ended

    def settings(self) -> dict:
        return {"codeTtlSeconds": self.code_ttl, "decisionTtlSeconds": self.decision_ttl,
                "mediaTokenTtlSeconds": self.media_token_ttl}

    def logout_flow(self) -> dict:
        return {"defaultBrowserStep": True,
                "mvpds": {m: {"browserStep": step} for m, step in sorted(self.logout_browser_step.items())}}

    def decision_for(self, sp: str, resource: str) -> dict | None:
        for scope in (sp, "*"):
            found = self.decisions.get(scope, {}).get(resource)
            if found is not None:
                return found
        return None

    def describe(self, now: float) -> dict:
        """`now`: the simulator's clock, epoch ms (tokens and logins valid at that time)."""
        with self.lock:
            return {
                "registrations": [{"client_id": r["client_id"], "client_id_issued_at": r["client_id_issued_at"],
                                   "redirect_uri": r["redirect_uri"]} for r in self.registrations.values()],
                "registrationCount": self.registration_count,
                "tokensIssued": self.tokens_issued,
                "tokensValid": sum(1 for t in self.tokens.values() if token_problem(t, now) is None),
                "tokenLifetimeSeconds": self.token_lifetime,
                "logins": [dict(l, valid=l["notBefore"] <= now < l["notAfter"]) for l in self.logins],
                "decisions": copy.deepcopy(self.decisions),
                "missingProfile": self.missing_profile,
                "serviceProviders": copy.deepcopy(self.service_providers),
                "rateLimit": self.ratelimit.describe(),
                "sessionSettings": self.settings(),
                "logoutFlow": self.logout_flow(),
            }


def token_problem(token: dict | None, now: float) -> str | None:
    if token is None:
        return "unknown access token"
    if token["revoked"]:
        return "revoked access token"
    if now >= token["created_at"] + token["expires_in"] * 1000:
        return "expired access token"
    return None


# shared checks --------------------------------------------------------------------------------

def _b64decode(text: str) -> bytes | None:
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        return None


def check_device_identifier(value: str | None) -> str | None:
    if value is None:
        return None
    match = DEVICE_IDENTIFIER.match(value.strip())
    if not match or not _b64decode(match.group(1)):
        return "header AP-Device-Identifier: must be 'fingerprint <base64 identifier>'"
    return None


def check_device_info(value: str | None) -> tuple[str | None, list[str], dict | None]:
    """(hard error, advisories, decoded info) for an X-Device-Info header value."""
    if value is None:
        return None, [], None
    raw = _b64decode(value.strip())
    if raw is None:
        return "header X-Device-Info: must be the Base64 encoding of a JSON object", [], None
    try:
        info = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return "header X-Device-Info: the decoded value is not JSON", [], None
    if not isinstance(info, dict):
        return "header X-Device-Info: the decoded value must be a JSON object", [], None
    missing = [k for k in DEVICE_INFO_REQUIRED if k not in info]
    advisories = [f"docs: header X-Device-Info lacks required attribute(s) {', '.join(missing)} "
                  "(X-Device-Info header documentation)"] if missing else []
    return None, advisories, info


def required_parameter_violations(sim, service: str, method: str, template: str, req: Request,
                                  satisfied: dict[str, Any] | None = None) -> list[str]:
    """Parameters the operation declares required (headers, query) that the request lacks."""
    op = sim.specs.operation(service, method, template)
    if op is None:
        return []
    out = []
    satisfied = satisfied or {}
    for param in sim.specs.parameters(op):
        if not param.get("required") or param.get("in") not in ("header", "query"):
            continue
        name = param["name"]
        if name in satisfied:
            if satisfied[name] in (None, ""):
                out.append(f"{param['in']} {name}: required by the spec")
            continue
        present = req.header(name) if param["in"] == "header" else req.query.get(name)
        if present in (None, ""):
            out.append(f"{param['in']} {name}: required by the spec")
    return out


# DCR ------------------------------------------------------------------------------------------

def _dcr_error(code: str, note: str | None = None) -> Response:
    return Response.json(400, {"error": code}, note=note)


def _rate_limited(state: PassState, key: str) -> Response | None:
    with state.lock:
        allowed, retry_after = state.ratelimit.check(key)
    return None if allowed else throttled(retry_after)


def _hard(violations: list[str]) -> list[str]:
    return [v for v in violations if not v.startswith(("docs:", "advisory:"))]


def register_checks(sim, req: Request, params: dict | None = None) -> list[str]:
    return _register_checks(sim, req)[0]


def _register_checks(sim, req: Request) -> tuple[list[str], Any]:
    violations = required_parameter_violations(sim, "dcr", "POST", "/client/register", req)
    error, advisories, _ = check_device_info(req.header("x-device-info"))
    violations += ([error] if error else []) + advisories
    if req.content_type != "application/json":
        violations.append(f"header Content-Type: must be application/json, got {req.header('content-type')!r}")
    ok, body = req.json()
    if not ok:
        violations.append("body: not valid JSON")
        return violations, None
    op = sim.specs.operation("dcr", "POST", "/client/register")
    if op is not None:
        violations += sim.specs.validate(sim.specs.request_body_ref(op, "application/json"), body)
    elif not isinstance(body, dict) or not body.get("software_statement") or not body.get("redirect_uri"):
        violations.append("$: software_statement and redirect_uri are required")
    return violations, body


def handle_register(sim, req: Request, params: dict, seq: int) -> Outcome:
    state: PassState = sim.pass_
    violations, body = _register_checks(sim, req)
    limited = _rate_limited(state, f"ip:{req.client}")
    if limited:
        return Outcome(limited, violations, validate_response=False)
    if _hard(violations) or not isinstance(body.get("software_statement"), str) \
            or not isinstance(body.get("redirect_uri"), str):
        return Outcome(_dcr_error("invalid_request"), violations)

    statement = body["software_statement"]
    segments = statement.split(".")
    if len(segments) != 3 or not all(JWT_SEGMENT.match(s) for s in segments[:2]):
        return Outcome(_dcr_error("invalid_software_statement", "software_statement is not a JWS (JWT)"),
                       violations)
    redirect_uri = body["redirect_uri"]
    if not SCHEME.match(redirect_uri):
        return Outcome(_dcr_error("invalid_redirect_uri", "redirect_uri is not an absolute URI"), violations)

    client = {
        "client_id": secrets.token_urlsafe(12),
        "client_secret": secrets.token_urlsafe(24),
        "client_id_issued_at": int(sim.clock.now_ms() // 1000),
        "redirect_uris": [redirect_uri],
        "grant_types": ["client_credentials"],
        "scopes": ["api:client:v2"],
    }
    with state.lock:
        state.registrations[client["client_id"]] = dict(client, software_statement=statement,
                                                        redirect_uri=redirect_uri)
        state.registration_count += 1
    return Outcome(Response.json(201, client), violations)


TOKEN_PARAMETERS = ("client_id", "client_secret", "grant_type")


def _token_checks(sim, req: Request) -> tuple[list[str], dict]:
    # The spec models these as query parameters, the documentation as a form body: accept both.
    form = req.form() if req.content_type == "application/x-www-form-urlencoded" else {}
    values = {**req.query, **form}
    violations = required_parameter_violations(sim, "dcr", "POST", "/client/token", req,
                                               satisfied={k: values.get(k) for k in TOKEN_PARAMETERS})
    if not sim.specs.validating:
        violations += [f"{k}: required" for k in TOKEN_PARAMETERS if not values.get(k)]
    violations += [f"{k}: given more than once" for k in TOKEN_PARAMETERS if isinstance(values.get(k), list)]
    if req.raw_body and req.content_type != "application/x-www-form-urlencoded":
        violations.append("header Content-Type: the body must be application/x-www-form-urlencoded, got "
                          f"{req.header('content-type')!r}")
    if req.header("x-device-info") is None:
        violations.append("docs: header X-Device-Info is required (Retrieve access token documentation)")
    error, advisories, _ = check_device_info(req.header("x-device-info"))
    violations += ([error] if error else []) + advisories
    grant_type = values.get("grant_type")
    if grant_type not in (None, "", "client_credentials") and not isinstance(grant_type, list):
        violations.append(f"grant_type: the accepted value is client_credentials, got {grant_type!r}")
    return violations, values


def token_checks(sim, req: Request, params: dict | None = None) -> list[str]:
    return _token_checks(sim, req)[0]


def handle_token(sim, req: Request, params: dict, seq: int) -> Outcome:
    state: PassState = sim.pass_
    violations, values = _token_checks(sim, req)
    limited = _rate_limited(state, f"ip:{req.client}")
    if limited:
        return Outcome(limited, violations, validate_response=False)
    if any(not values.get(k) or isinstance(values.get(k), list) for k in TOKEN_PARAMETERS):
        return Outcome(_dcr_error("invalid_request"), violations)
    if values["grant_type"] != "client_credentials":
        return Outcome(_dcr_error("unsupported_grant_type"), violations)
    with state.lock:
        registration = state.registrations.get(values["client_id"])
        if registration is None or not secrets.compare_digest(registration["client_secret"],
                                                              str(values["client_secret"])):
            note = "unknown client_id" if registration is None else "wrong client_secret"
            return Outcome(_dcr_error("invalid_client", note), violations)
        token = {"id": str(uuid.uuid4()), "access_token": secrets.token_urlsafe(32),
                 "created_at": int(sim.clock.now_ms()), "expires_in": state.token_lifetime, "token_type": "bearer"}
        state.tokens[token["access_token"]] = {"client_id": values["client_id"], "created_at": token["created_at"],
                                               "expires_in": token["expires_in"], "revoked": False}
        state.tokens_issued += 1
    return Outcome(Response.json(201, token), violations)


# REST API v2 ----------------------------------------------------------------------------------

CONFIGURATION = "/{serviceProvider}/configuration"
# Operations whose device headers the spec does not require (used when running without the spec):
# a code identifies the session's device.
NO_DEVICE_HEADERS = {CONFIGURATION, "/{serviceProvider}/sessions/{code}", "/{serviceProvider}/profiles/code/{code}"}
DECISION_DOCS = {"preauthorize": "preauthorization", "authorize": "authorization"}


def _rest_checks(sim, req: Request, template: str, method: str, json_body: bool) -> tuple[list[str], dict]:
    """Contract checks every REST v2 operation shares: (violations, context for the handler)."""
    violations = required_parameter_violations(sim, "pass", method, template, req)
    if template == CONFIGURATION and req.header("x-device-info") is None:
        violations.append("docs: header X-Device-Info is required (Retrieve configuration documentation)")
    accept = req.header("accept")
    if accept is not None and not any(t.split(";")[0].strip() in ("application/json", "*/*", "application/*")
                                       for t in accept.split(",")):
        violations.append(f"docs: header Accept: if specified it must be application/json, got {accept!r}")
    device = req.header("ap-device-identifier")
    device_error = check_device_identifier(device)
    info_error, advisories, info = check_device_info(req.header("x-device-info"))
    violations += [e for e in (device_error, info_error) if e] + advisories

    body: Any = None
    if json_body:
        if req.content_type != "application/json":
            violations.append(f"header Content-Type: must be application/json, got {req.header('content-type')!r}")
        ok, body = req.json()
        if not ok:
            violations.append("body: not valid JSON")
        else:
            op = sim.specs.operation("pass", method, template)
            if op is not None:
                violations += sim.specs.validate(sim.specs.request_body_ref(op, "application/json"), body)
        kind = template.split("/")[3] if template.startswith("/{serviceProvider}/decisions/") else None
        if kind in DECISION_DOCS:
            resources = body.get("resources") if isinstance(body, dict) else None
            if not (isinstance(resources, list) and resources and all(isinstance(r, str) and r for r in resources)) \
                    and not any(v.startswith("$.resources") for v in violations):
                violations.append("$.resources: a non-empty list of resource ids is required "
                                  f"(Retrieve {DECISION_DOCS[kind]} decisions documentation)")
    context = {"device": device, "device_error": device_error, "info": info, "info_error": info_error,
               "body": body}
    return violations, context


def _rest_gate(sim, req: Request, template: str, method: str, context: dict) -> Response | None:
    """What answers before the operation itself: throttling, the access token, the device headers."""
    state: PassState = sim.pass_
    limited = _rate_limited(state, context["device"] or f"ip:{req.client}")
    if limited:
        return limited

    authorization = req.header("authorization") or ""
    scheme, _, token_value = authorization.partition(" ")
    now = sim.clock.now_ms()
    with state.lock:
        problem = ("missing Authorization header" if not authorization else
                   "Authorization is not a Bearer token" if scheme.lower() != "bearer" else
                   token_problem(state.tokens.get(token_value.strip()), now))
    if problem:
        response = error_response("invalid_access_token_client_application", status=401)
        response.note = problem
        return response

    op = sim.specs.operation("pass", method, template)
    if op is not None:
        declared = {p["name"].lower() for p in sim.specs.parameters(op) if p.get("required")}
    else:
        declared = {"authorization"} | ({"ap-device-identifier", "x-device-info"} if template not in NO_DEVICE_HEADERS
                                        else set())
    if context["device_error"] or (context["device"] is None and "ap-device-identifier" in declared):
        return error_response("invalid_header_device_identifier")
    if context["info_error"] or (req.header("x-device-info") is None and "x-device-info" in declared):
        return error_response("invalid_header_device_info")
    return None


def rest_checks(template: str, method: str, json_body: bool = False):
    def check(sim, req: Request, params: dict | None = None) -> list[str]:
        return _rest_checks(sim, req, template, method, json_body)[0]
    return check


def _begin(sim, req: Request, template: str, method: str, json_body: bool = False
           ) -> tuple[list[str], dict, Outcome | None]:
    violations, context = _rest_checks(sim, req, template, method, json_body)
    early = _rest_gate(sim, req, template, method, context)
    if early is not None:
        return violations, context, Outcome(early, violations, validate_response=early.status != 429)
    return violations, context, None


def _check_provider(state: PassState, sp: str) -> Response | None:
    if not sp or not state.provider(sp).get("known", True):
        return error_response("invalid_parameter_service_provider")
    return None


def _check_mvpd(state: PassState, sp: str, mvpd: str) -> Response | None:
    if not mvpd:
        return error_response("invalid_parameter_mvpd")
    if mvpd not in {m.get("id") for m in state.mvpds(sp)}:
        return error_response("invalid_integration")
    return None


def _profile(login: dict) -> dict:
    user = hashlib.sha256(f"{login['serviceProvider']}:{login['mvpd']}".encode()).hexdigest()[:20]
    attributes = {"userID": {"value": f"sim-{user}", "state": "plain"},
                  "householdID": {"value": f"hh-{user[:10]}", "state": "plain"}}
    for name, value in (login.get("attributes") or {}).items():
        attributes[name] = value if isinstance(value, dict) and "value" in value else {"value": value,
                                                                                      "state": "plain"}
    return {"notBefore": login["notBefore"], "notAfter": login["notAfter"], "issuer": login["mvpd"],
            "type": "regular", "attributes": attributes}


def _valid(login: dict, now: float) -> bool:
    return login["notBefore"] <= now < login["notAfter"]


def handle_configuration(sim, req: Request, params: dict, seq: int) -> Outcome:
    state: PassState = sim.pass_
    violations, context, early = _begin(sim, req, CONFIGURATION, "GET")
    if early:
        return early
    sp = params["serviceProvider"]
    with state.lock:
        bad = _check_provider(state, sp)
        if bad:
            return Outcome(bad, violations)
        provider = state.provider(sp)
        mvpds = state.mvpds(sp)
    info = context.get("info") or {}
    document = {
        "os": str(info.get("osName", "Unknown")),
        "platform": str(info.get("primaryHardwareType", "Unknown")),
        "requestor": {
            "id": sp,
            "name": provider.get("name") or sp,
            "domains": [{"name": "example.com", "mvpdInitiated": False}],
            "mvpds": mvpds,
        },
    }
    return Outcome(Response.json(200, document), violations)


def handle_profiles(sim, req: Request, params: dict, seq: int) -> Outcome:
    state: PassState = sim.pass_
    mvpd = params.get("mvpd")
    template = "/{serviceProvider}/profiles/{mvpd}" if mvpd is not None else "/{serviceProvider}/profiles"
    violations, context, early = _begin(sim, req, template, "GET")
    if early:
        return early
    sp = params["serviceProvider"]
    now = sim.clock.now_ms()
    with state.lock:
        bad = _check_provider(state, sp) or (_check_mvpd(state, sp, mvpd) if mvpd is not None else None)
        if bad:
            return Outcome(bad, violations)
        profiles = {l["mvpd"]: _profile(l) for l in state.logins_for(sp, context["device"], mvpd) if _valid(l, now)}
    return Outcome(Response.json(200, {"profiles": profiles}), violations)


def _decision(state: PassState, sp: str, mvpd: str, resource: str, kind: str, now: float) -> dict:
    configured = state.decision_for(sp, resource)
    decision: dict[str, Any] = {"resource": resource, "serviceProvider": sp, "mvpd": mvpd, "source": "mvpd",
                                "authorized": True}
    if configured is not None:
        decision["source"] = configured.get("source", "mvpd")
        decision["authorized"] = bool(configured.get("authorized"))
        if configured.get("error") is not None:
            decision["error"] = complete_error(configured["error"])
            decision["error"].setdefault("trace", str(uuid.uuid4()))
    if kind == "authorize":
        issued = int(now)
        decision["notBefore"], decision["notAfter"] = issued, issued + state.decision_ttl * 1000
        if decision["authorized"]:
            token = f"<signatureInfo>{resource}|{sp}|{mvpd}|{issued}</signatureInfo>"
            decision["token"] = {"notBefore": issued, "notAfter": issued + state.media_token_ttl * 1000,
                                 "serializedToken": base64.b64encode(token.encode()).decode("ascii")}
    return decision


def decisions_handler(kind: str):
    template = f"/{{serviceProvider}}/decisions/{kind}/{{mvpd}}"

    def handle(sim, req: Request, params: dict, seq: int) -> Outcome:
        state: PassState = sim.pass_
        violations, context, early = _begin(sim, req, template, "POST", json_body=True)
        if early:
            return early
        sp, mvpd = params["serviceProvider"], params["mvpd"]
        body = context["body"]
        resources = body.get("resources") if isinstance(body, dict) else None
        now = sim.clock.now_ms()
        with state.lock:
            bad = _check_provider(state, sp)
            if bad:
                return Outcome(bad, violations)
            if any(v.startswith("$") or v.startswith("body") for v in _hard(violations)):
                return Outcome(error_response("invalid_parameter_resources"), violations)
            bad = _check_mvpd(state, sp, mvpd)
            if bad:
                return Outcome(bad, violations)
            logins = state.logins_for(sp, context["device"], mvpd)
            if not any(_valid(l, now) for l in logins):
                code = "authenticated_profile_expired" if logins else "authenticated_profile_missing"
                if state.missing_profile == "item-level":
                    decisions = [{"resource": r, "serviceProvider": sp, "mvpd": mvpd, "source": "mvpd",
                                  "authorized": False, "error": enhanced_error(code)} for r in resources]
                    return Outcome(Response.json(200, {"decisions": decisions}, note=code), violations)
                return Outcome(Response.json(403, enhanced_error(code), note=code), violations)
            decisions = [_decision(state, sp, mvpd, r, kind, now) for r in resources]
        return Outcome(Response.json(200, {"decisions": decisions}), violations)

    return handle


def handle_logout(sim, req: Request, params: dict, seq: int) -> Outcome:
    state: PassState = sim.pass_
    violations, context, early = _begin(sim, req, "/{serviceProvider}/logout/{mvpd}", "GET")
    if early:
        return early
    sp, mvpd = params["serviceProvider"], params["mvpd"]
    now = sim.clock.now_ms()
    with state.lock:
        bad = _check_provider(state, sp) or _check_mvpd(state, sp, mvpd)
        if bad:
            return Outcome(bad, violations)
        had_valid = any(_valid(l, now) for l in state.logins_for(sp, context["device"], mvpd))
        state.logout(sp, mvpd, context["device"])
        state.end_pending_sessions(sp, mvpd, context["device"], now)
        browser_step = state.logout_browser_step.get(mvpd, True)
    if had_valid and not browser_step:
        # An MVPD whose logout needs no user agent: Adobe ends the profile itself ("complete", no url).
        entry = {"actionName": "complete", "actionType": "none", "mvpd": mvpd}
    elif had_valid:
        redirect = req.query.get("redirectUrl")
        url = (f"https://sp.auth.adobe.com/adobe-services/logout?noflash=true&mso_id={quote(mvpd)}"
               f"&requestor_id={quote(sp)}" + (f"&redirect_url={quote(str(redirect), safe='')}" if redirect else ""))
        entry = {"actionName": "logout", "actionType": "interactive", "mvpd": mvpd, "url": url}
    else:
        entry = {"actionName": "invalid", "actionType": "none", "mvpd": mvpd}
    return Outcome(Response.json(200, {"logouts": {mvpd: entry}}), violations)


def not_simulated_handler(template: str, method: str):
    def handle(sim, req: Request, params: dict, seq: int) -> Outcome:
        violations, _, early = _begin(sim, req, template, method)
        if early:
            return early
        error = enhanced_error("internal_server_error", status=501,
                               details="This operation is not simulated by preflight-sim.")
        return Outcome(Response.json(501, error), violations)

    return handle


def fault_body(service: str, status: int) -> Response:
    """Default body of a `status` fault that gives none."""
    if status == 429:
        return throttled(1)
    if service == "dcr":
        return Response.json(status, {"error": "invalid_request" if status < 500 else "server_error"})
    if status == 401:
        return error_response("invalid_access_token_client_application", status=401)
    return Response.json(status, enhanced_error("internal_server_error", status=status))

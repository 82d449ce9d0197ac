"""Adobe Pass REST API v2 second-screen authentication: sessions and their registration codes.

The primary device (a TV box) creates an authentication session and shows its code; the user opens
`/api/v2/authenticate/{serviceProvider}/{code}` on a phone or computer and signs in with the MVPD;
the box polls `GET /{serviceProvider}/profiles/code/{code}` until the profile appears. There is no
MVPD here: the person signing in is played by the control endpoint
`POST /_sim/pass/sessions/{code}/signin` (or the form of the page above, which posts to it).

A session lives until its code's `notAfter` (creation + `PassState.code_ttl`), or until a logout of
its device, service provider and mvpd ends it while pending (see `PassState.end_pending_sessions`).
Sessions are kept after they expire so that a late poll gets `authentication_session_expired`
rather than `invalid_parameter_code`, and so that control can still show their poll counts.
"""

from __future__ import annotations

import html
import secrets
import string
import uuid
from typing import Any
from urllib.parse import quote

from preflight_sim.exchange import Request, Response
from preflight_sim.outcome import Outcome
from preflight_sim.pass_ import (SCHEME, PassState, _begin, _check_mvpd, _check_provider, _hard, _profile,
                                 _rest_checks, _valid, enhanced_error, error_response,
                                 required_parameter_violations)

SESSIONS = "/{serviceProvider}/sessions"
SESSION = "/{serviceProvider}/sessions/{code}"
PROFILES_CODE = "/{serviceProvider}/profiles/code/{code}"
AUTHENTICATE = "/authenticate/{serviceProvider}/{code}"

FORM = "application/x-www-form-urlencoded"
# createSessionUsingPOST_request: every one optional in the spec. The simulator asks only for `mvpd`:
# a TV box has no browser to return to, and Adobe lets the second screen supply the other two.
SESSION_PARAMETERS = ("mvpd", "domainName", "redirectUrl")
REQUIRED_PARAMETERS = ("mvpd",)
PARAMETER_ERRORS = {"mvpd": "invalid_parameter_mvpd", "domainName": "invalid_parameter_domain_name",
                    "redirectUrl": "invalid_parameter_redirect_url"}

CODE_ALPHABET = string.ascii_uppercase + string.digits
CODE_LENGTH = 7
DEFAULT_LOGIN_TTL_SECONDS = 3600  # as POST /_sim/pass/login

# X-Device-Info attributes that read as numbers in the Device schema's Display.
DISPLAY_NUMBERS = {"displayWidth": "width", "displayHeight": "height", "displayPpi": "ppi"}


# request checks -------------------------------------------------------------------------------

def _form_checks(sim, req: Request, template: str) -> tuple[list[str], dict]:
    """(violations, form) for a sessions body. A body that is not a form is not read."""
    violations: list[str] = []
    if req.raw_body and req.content_type != FORM:
        violations.append(f"header Content-Type: must be {FORM}, got {req.header('content-type')!r}")
        return violations, {}
    form = req.form()
    repeated = sorted(k for k, v in form.items() if isinstance(v, list))
    violations += [f"body {k}: given more than once" for k in repeated]
    op = sim.specs.operation("pass", "POST", template)
    if op is not None:
        violations += sim.specs.validate(sim.specs.request_body_ref(op, FORM),
                                         {k: v for k, v in form.items() if k not in repeated})
    unknown = sorted(set(form) - set(SESSION_PARAMETERS))
    if unknown:
        # The schema allows other keys; a client that sends them has misspelt one it meant.
        violations.append(f"advisory: body: unknown parameter(s) {', '.join(unknown)} "
                          f"(the spec defines {', '.join(SESSION_PARAMETERS)})")
    return violations, form


def session_checks(template: str, method: str):
    """A route's side-effect-free check (used when a fault answers instead of the handler)."""
    def check(sim, req: Request, params: dict | None = None) -> list[str]:
        violations = _rest_checks(sim, req, template, method, False)[0]
        if method == "POST":
            violations += _form_checks(sim, req, template)[0]
        return violations
    return check


def authenticate_checks(sim, req: Request, params: dict | None = None) -> list[str]:
    return required_parameter_violations(sim, "pass", "GET", AUTHENTICATE, req)


def _absolute_url(value: str) -> bool:
    match = SCHEME.match(value)
    return bool(match) and len(value) > match.end() and not any(c.isspace() for c in value)


def _check_parameters(state: PassState, sp: str, req: Request, form: dict,
                      violations: list[str]) -> Response | None:
    """The error a request's body earns, if any: an unreadable body, then each given parameter."""
    hard = _hard(violations)
    if req.raw_body and req.content_type != FORM:
        return Response.json(415, enhanced_error("internal_server_error", status=415,
                                                 message=f"Unsupported Media Type: the body must be {FORM}."))
    for name in SESSION_PARAMETERS:
        if any(v.startswith((f"$.{name}", f"body {name}:")) for v in hard):
            return error_response(PARAMETER_ERRORS[name])
    if "mvpd" in form:
        bad = _check_mvpd(state, sp, form["mvpd"])
        if bad:
            return bad
    if "redirectUrl" in form and not _absolute_url(form["redirectUrl"]):
        return error_response("invalid_parameter_redirect_url", details="redirectUrl must be an absolute URL.")
    if "domainName" in form and not form["domainName"].strip():
        return error_response("invalid_parameter_domain_name")
    return None


def _given(form: dict) -> dict[str, str]:
    return {k: form[k] for k in SESSION_PARAMETERS if isinstance(form.get(k), str)}


# sessions -------------------------------------------------------------------------------------

def _new_code(state: PassState) -> str:
    while True:
        code = "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))
        if code not in state.sessions:
            return code


def _create_session(state: PassState, sp: str, device: str, info: dict | None, given: dict, now: int) -> dict:
    session = {"code": _new_code(state), "sessionId": str(uuid.uuid4()), "serviceProvider": sp, "device": device,
               "deviceInfo": info, "parameters": dict(given), "notBefore": now,
               "notAfter": now + state.code_ttl * 1000, "createdAt": now, "signedInAt": None, "endedBy": None,
               "statusPolls": 0, "profilePolls": 0, "resumes": 0}
    state.sessions[session["code"]] = session
    return session


def _expired(session: dict, now: float) -> bool:
    return now >= session["notAfter"] or session["endedBy"] is not None


def session_state(session: dict, now: float) -> str:
    if _expired(session, now):
        return "expired"
    return "authenticated" if session["signedInAt"] is not None else "pending"


def _missing(session: dict) -> list[str]:
    return [k for k in REQUIRED_PARAMETERS if k not in session["parameters"]]


def _find(state: PassState, sp: str, code: str, counter: str) -> tuple[dict | None, Response | None]:
    """The session a request names, its counter bumped; or the error for a code this provider never issued."""
    session = state.sessions.get(code)
    if session is None or session["serviceProvider"] != sp:
        response = error_response("invalid_parameter_code")
        response.note = "unknown code" if session is None else f"code of service provider {session['serviceProvider']}"
        return None, response
    session[counter] += 1
    return session, None


def _live(state: PassState, sp: str, code: str, counter: str, now: int) -> tuple[dict | None, Response | None]:
    """The unexpired session of `sp` a request names, its counter bumped; or the error to answer (an
    unknown provider, a code it never issued, an expired code). Called under `state.lock`."""
    bad = _check_provider(state, sp)
    if bad:
        return None, bad
    session, bad = _find(state, sp, code, counter)
    if bad:
        return None, bad
    if _expired(session, now):
        return None, _expired_response(session)
    return session, None


def _expired_response(session: dict) -> Response:
    response = error_response("authentication_session_expired")
    response.note = "session ended by logout" if session["endedBy"] == "logout" else "code expired"
    return response


def _valid_logins(state: PassState, sp: str, device: str | None, mvpd: str | None, now: float) -> list[dict]:
    return [l for l in state.logins_for(sp, device, mvpd) if _valid(l, now)]


def _session_response(session: dict) -> dict:
    sp, code = session["serviceProvider"], session["code"]
    missing = _missing(session)
    if missing:
        body: dict[str, Any] = {"actionName": "resume", "actionType": "direct", "reasonType": "none",
                                "missingParameters": missing}
        url = f"/api/v2/{quote(sp, safe='')}/sessions/{quote(code, safe='')}"
    else:
        body = {"actionName": "authenticate", "actionType": "interactive", "reasonType": "none"}
        url = f"/api/v2/authenticate/{quote(sp, safe='')}/{quote(code, safe='')}"
    body.update(code=code, sessionId=session["sessionId"], serviceProvider=sp)
    if not missing:
        body["mvpd"] = session["parameters"]["mvpd"]
    # notBefore/notAfter: epoch milliseconds, as strings (SessionResponse types them so).
    body.update(url=url, notBefore=str(session["notBefore"]), notAfter=str(session["notAfter"]))
    return body


def _authorize_response(sp: str, mvpd: str, session_id: str) -> dict:
    """The device is already authenticated: no code, go straight to authorization."""
    return {"actionName": "authorize", "actionType": "direct", "reasonType": "authenticated", "serviceProvider": sp,
            "mvpd": mvpd, "sessionId": session_id,
            "url": f"/api/v2/{quote(sp, safe='')}/decisions/authorize/{quote(mvpd, safe='')}"}


# REST API v2 handlers -------------------------------------------------------------------------

def handle_create(sim, req: Request, params: dict, seq: int) -> Outcome:
    state: PassState = sim.pass_
    violations, context, early = _begin(sim, req, SESSIONS, "POST")
    form_violations, form = _form_checks(sim, req, SESSIONS)
    violations.extend(form_violations)  # an early outcome holds this same list: its record gets them too
    if early:
        return early
    sp = params["serviceProvider"]
    now = int(sim.clock.now_ms())
    with state.lock:
        bad = _check_provider(state, sp) or _check_parameters(state, sp, req, form, violations)
        if bad:
            return Outcome(bad, violations)
        given = _given(form)
        logins = _valid_logins(state, sp, context["device"], given.get("mvpd"), now)
        if logins:
            body = _authorize_response(sp, logins[-1]["mvpd"], str(uuid.uuid4()))
            return Outcome(Response.json(200, body, note="already authenticated"), violations)
        session = _create_session(state, sp, context["device"], context["info"], given, now)
        body = _session_response(session)
    return Outcome(Response.json(200, body), violations)


def handle_resume(sim, req: Request, params: dict, seq: int) -> Outcome:
    state: PassState = sim.pass_
    violations, _, early = _begin(sim, req, SESSION, "POST")
    form_violations, form = _form_checks(sim, req, SESSION)
    violations.extend(form_violations)
    if early:
        return early
    sp, code = params["serviceProvider"], params["code"]
    now = int(sim.clock.now_ms())
    with state.lock:
        session, bad = _live(state, sp, code, "resumes", now)
        if bad:
            return Outcome(bad, violations)
        bad = _check_parameters(state, sp, req, form, violations)
        if bad:
            return Outcome(bad, violations)
        session["parameters"].update(_given(form))
        if session["signedInAt"] is not None:
            # Signed in on the second screen already: as a new session for that device would answer.
            logins = _valid_logins(state, sp, session["device"], session["parameters"]["mvpd"], now)
            if logins:
                body = _authorize_response(sp, logins[-1]["mvpd"], session["sessionId"])
                return Outcome(Response.json(200, body, note="already authenticated"), violations)
        body = _session_response(session)
    return Outcome(Response.json(200, body), violations)


def handle_status(sim, req: Request, params: dict, seq: int) -> Outcome:
    state: PassState = sim.pass_
    violations, _, early = _begin(sim, req, SESSION, "GET")
    if early:
        return early
    sp, code = params["serviceProvider"], params["code"]
    now = int(sim.clock.now_ms())
    with state.lock:
        session, bad = _live(state, sp, code, "statusPolls", now)
        if bad:
            return Outcome(bad, violations)
        body: dict[str, Any] = {"notBefore": str(session["notBefore"]), "notAfter": str(session["notAfter"]),
                                "existingParameters": dict(session["parameters"]),
                                "missingParameters": _missing(session)}
        info = session["deviceInfo"]
    device = _device(sim, info)
    if device:
        body["device"] = device
    return Outcome(Response.json(200, body), violations)


def handle_profiles_code(sim, req: Request, params: dict, seq: int) -> Outcome:
    state: PassState = sim.pass_
    violations, _, early = _begin(sim, req, PROFILES_CODE, "GET")
    if early:
        return early
    sp, code = params["serviceProvider"], params["code"]
    now = int(sim.clock.now_ms())
    with state.lock:
        session, bad = _live(state, sp, code, "profilePolls", now)
        if bad:
            return Outcome(bad, violations)
        profiles = {}
        if session["signedInAt"] is not None:
            mvpd = session["parameters"]["mvpd"]
            # The login this code made, until its own notAfter (or a logout) ends it.
            profiles = {l["mvpd"]: _profile(l) for l in _valid_logins(state, sp, session["device"], mvpd, now)}
    return Outcome(Response.json(200, {"profiles": profiles}), violations)


def handle_authenticate(sim, req: Request, params: dict, seq: int) -> Outcome:
    """What the user's browser opens: no token and no throttling (it is not the application calling)."""
    state: PassState = sim.pass_
    violations = authenticate_checks(sim, req)
    sp, code = params["serviceProvider"], params["code"]
    now = int(sim.clock.now_ms())
    with state.lock:
        session = state.sessions.get(code)
        if session is None or session["serviceProvider"] != sp:
            page = problem_page(400, "Unknown code", f"There is no sign-in with code {code} for {sp}. "
                                                     "Check the code shown on your TV.")
        elif _expired(session, now):
            page = problem_page(410, "Code expired", f"Code {code} has expired. Start again on your TV "
                                                     "to get a new code.")
        else:
            page = Response.text(200, authenticate_page(session, state.mvpds(sp)), "text/html; charset=utf-8")
    return Outcome(page, violations)


# the Device object of a session status ---------------------------------------------------------

def _version(value: Any) -> dict | None:
    """'6.1.2' -> {"major": 6, "minor": 1, "patch": 2}; anything else is kept as the version's profile."""
    if not isinstance(value, (str, int, float)) or isinstance(value, bool) or str(value) == "":
        return None
    parts = str(value).split(".")
    if len(parts) <= 3 and all(p.isdigit() for p in parts):
        return dict(zip(("major", "minor", "patch"), (int(p) for p in parts)))
    return {"profile": str(value)}


def _strings(info: dict, mapping: dict[str, str]) -> dict:
    return {out: info[key] for key, out in mapping.items() if isinstance(info.get(key), str) and info[key]}


def _device_candidate(info: dict) -> dict:
    device: dict[str, Any] = _strings(info, {"model": "model", "applicationId": "applicationId",
                                             "primaryHardwareType": "type"})
    parts = {
        "version": _version(info.get("version")),
        "hardware": _strings(info, {"manufacturer": "manufacturer", "vendor": "vendor"}),
        "operatingSystem": dict(_strings(info, {"osName": "name", "osFamily": "family", "osVendor": "vendor"}),
                                **({"version": _version(info["osVersion"])} if _version(info.get("osVersion"))
                                   else {})),
        "browser": dict(_strings(info, {"browserName": "name", "browserVendor": "vendor", "userAgent": "userAgent"}),
                        **({"version": _version(info["browserVersion"])} if _version(info.get("browserVersion"))
                           else {})),
        "display": dict(_strings(info, {"diagonalScreenSize": "diagonalSize"}),
                        **{out: int(info[key]) for key, out in DISPLAY_NUMBERS.items()
                           if isinstance(info.get(key), int) and not isinstance(info[key], bool)}),
        "connection": dict(_strings(info, {"connectionType": "type"}),
                           **({"secure": info["connectionSecure"]} if isinstance(info.get("connectionSecure"), bool)
                              else {})),
    }
    device.update({k: v for k, v in parts.items() if v})
    return device


def _device(sim, info: dict | None) -> dict | None:
    """The session creator's X-Device-Info as a `Device`, without any part that would not validate."""
    if not info:
        return None
    device = _device_candidate(info)
    ref = sim.specs.schema_ref("pass", "Device")
    for _ in range(2):
        problems = sim.specs.validate(ref, device)
        if not problems:
            return device or None
        # "$.type: 'Box' is not one of [...]": drop that top-level part and try once more.
        bad = {p[2:].split(":")[0].split(".")[0].split("[")[0] for p in problems if p.startswith("$.")}
        device = {k: v for k, v in device.items() if k not in bad}
    return None


# control: the person signing in ---------------------------------------------------------------

class SignInError(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def sign_in(state: PassState, code: str, now: int, mvpd: str | None = None, not_after: int | None = None,
            ttl_seconds: int | None = None, attributes: dict | None = None) -> tuple[dict, dict]:
    """The user completes the MVPD login for `code`: (login, session as control describes it). Call with
    the state's lock held."""
    session = state.sessions.get(code)
    if session is None:
        raise SignInError(404, f"no authentication session with code {code}")
    if _expired(session, now):
        why = "was ended by a logout" if session["endedBy"] == "logout" else f"expired at {session['notAfter']}"
        raise SignInError(410, f"code {code} {why}")
    if session["signedInAt"] is not None:
        raise SignInError(409, f"code {code} is already signed in")
    sp, wanted = session["serviceProvider"], session["parameters"].get("mvpd")
    if mvpd is not None and wanted is not None and mvpd != wanted:
        raise SignInError(400, f"code {code} is a sign-in with {wanted}, not {mvpd}")
    chosen = mvpd or wanted
    if chosen is None:
        raise SignInError(400, "mvpd is required: the session does not name one yet")
    if chosen not in {m.get("id") for m in state.mvpds(sp)}:
        raise SignInError(400, f"mvpd {chosen} is not integrated with service provider {sp}")
    if not_after is None:
        not_after = now + (ttl_seconds or DEFAULT_LOGIN_TTL_SECONDS) * 1000
    login = state.login(sp, chosen, not_after, now, session["device"], attributes)
    session["parameters"]["mvpd"] = chosen
    session["signedInAt"] = now
    return login, describe_session(session, now)


def describe_session(session: dict, now: float) -> dict:
    return {"code": session["code"], "serviceProvider": session["serviceProvider"],
            "mvpd": session["parameters"].get("mvpd"), "device": session["device"],
            "state": session_state(session, now), "notBefore": session["notBefore"],
            "notAfter": session["notAfter"], "createdAt": session["createdAt"],
            "statusPolls": session["statusPolls"], "profilePolls": session["profilePolls"],
            "resumes": session["resumes"], "sessionId": session["sessionId"],
            "parameters": dict(session["parameters"]), "signedInAt": session["signedInAt"],
            "endedBy": session["endedBy"]}


def describe_sessions(state: PassState, now: float) -> list[dict]:
    return [describe_session(s, now) for s in sorted(state.sessions.values(), key=lambda s: s["createdAt"])]


# HTML pages (for a person with a browser) ------------------------------------------------------

PAGE = ("<!DOCTYPE html>\n<html lang=\"en\">\n<head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        "<title>{title}</title></head>\n<body>\n<h1>{title}</h1>\n{body}\n"
        "<p><small>preflight-sim: a stand-in for Adobe Pass; no MVPD is contacted.</small></p>\n</body>\n</html>\n")


def _page(title: str, body: str) -> str:
    return PAGE.format(title=html.escape(title), body=body)


def problem_page(status: int, title: str, text: str) -> Response:
    return Response.text(status, _page(title, f"<p>{html.escape(text)}</p>"), "text/html; charset=utf-8")


def authenticate_page(session: dict, mvpds: list[dict]) -> str:
    sp, code = session["serviceProvider"], session["code"]
    action = f"/_sim/pass/sessions/{quote(code, safe='')}/signin"
    intro = (f"<p>Service provider: <b>{html.escape(sp)}</b><br>Code: <b>{html.escape(code)}</b></p>")
    if session["signedInAt"] is not None:
        return _page("Already signed in", intro + "<p>This code is signed in already: your TV will continue.</p>")
    mvpd = session["parameters"].get("mvpd")
    if mvpd is not None:
        name = next((m.get("displayName") for m in mvpds if m.get("id") == mvpd), None) or mvpd
        choice = (f"<p>TV provider: <b>{html.escape(str(name))}</b> ({html.escape(mvpd)})</p>"
                  f"<input type=\"hidden\" name=\"mvpd\" value=\"{html.escape(mvpd, quote=True)}\">")
    else:
        options = "".join(f"<option value=\"{html.escape(m['id'], quote=True)}\">"
                          f"{html.escape(str(m.get('displayName') or m['id']))}</option>" for m in mvpds)
        choice = f"<p><label>TV provider: <select name=\"mvpd\">{options}</select></label></p>"
    form = (f"<form method=\"post\" action=\"{html.escape(action, quote=True)}\">{choice}"
            "<p><button type=\"submit\">Sign in</button></p></form>")
    return _page(f"Sign in to {sp}", intro + form)


def signed_in_page(session: dict) -> Response:
    text = (f"<p>Code <b>{html.escape(session['code'])}</b> is signed in with "
            f"<b>{html.escape(str(session['mvpd']))}</b> for {html.escape(session['serviceProvider'])}. "
            "You can return to your TV.</p>")
    return Response.text(200, _page("Signed in", text), "text/html; charset=utf-8")

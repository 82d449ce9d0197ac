"""Adobe Pass second-screen sign-in (REST API v2 sessions and profiles/code) over real HTTP."""

from __future__ import annotations

import base64
import re

from simharness import clean_sim, sim  # noqa: F401 - fixtures
from simharness import DEVICE_ID, SimProcess, access_token, pass_headers, requires_specs

pytestmark = requires_specs

SP = "REF30"
FORM = "application/x-www-form-urlencoded"
OTHER_DEVICE = "fingerprint " + base64.b64encode(b"another-box").decode()
CODE = re.compile(r"^[A-Z0-9]{7}$")


def assert_error(r, status: int, code: str, action: str) -> None:
    body = r.json()
    assert r.status_code == status and body["status"] == status, body
    assert body["code"] == code and body["action"] == action, body
    assert body["message"] and body["helpUrl"] and body["trace"]


def form_headers(token: str, **extra: str) -> dict:
    return pass_headers(token, **{"Content-Type": FORM, **extra})


def create(sim, token: str, sp: str = SP, **form: str):
    return sim.post(f"/api/v2/{sp}/sessions", data=form, headers=form_headers(token))


def resume(sim, token: str, code: str, sp: str = SP, **form: str):
    return sim.post(f"/api/v2/{sp}/sessions/{code}", data=form, headers=form_headers(token))


def status(sim, token: str, code: str, sp: str = SP):
    return sim.get(f"/api/v2/{sp}/sessions/{code}", headers=pass_headers(token))


def profiles_code(sim, token: str, code: str, sp: str = SP):
    # Only Authorization is required by the spec: no device headers.
    return sim.get(f"/api/v2/{sp}/profiles/code/{code}", headers={"Authorization": f"Bearer {token}"})


def sign_in(sim, code: str, **body):
    return sim.post(f"/_sim/pass/sessions/{code}/signin", json=body)


def sessions(sim) -> dict[str, dict]:
    return {s["code"]: s for s in sim.get("/_sim/pass/sessions").json()["sessions"]}


def advance_clock(sim, seconds: int) -> None:
    r = sim.put("/_sim/clock", json={"offsetMs": seconds * 1000})
    assert r.status_code == 200, r.text


# creating and resuming ------------------------------------------------------------------------

def test_create_without_mvpd_asks_to_resume(sim):
    token = access_token(sim)
    r = sim.post(f"/api/v2/{SP}/sessions", data="", headers=form_headers(token))
    assert r.status_code == 200, r.text
    body = r.json()
    code = body["code"]
    assert CODE.match(code)
    assert body == {"actionName": "resume", "actionType": "direct", "reasonType": "none",
                    "missingParameters": ["mvpd"], "code": code, "sessionId": body["sessionId"],
                    "serviceProvider": SP, "url": f"/api/v2/{SP}/sessions/{code}",
                    "notBefore": body["notBefore"], "notAfter": body["notAfter"]}
    assert int(body["notAfter"]) - int(body["notBefore"]) == 1800 * 1000
    assert sim.last_request()["operation"] == "createSession"
    listed = sessions(sim)[code]
    assert (listed["serviceProvider"], listed["mvpd"], listed["device"], listed["state"]) == \
        (SP, None, DEVICE_ID, "pending")
    assert sim.violations() == []


def test_create_with_mvpd_authenticates_and_status_shows_it(sim):
    token = access_token(sim)
    r = create(sim, token, mvpd="Cablevision", domainName="adobe.com", redirectUrl="https://adobe.com")
    assert r.status_code == 200, r.text
    body = r.json()
    code = body["code"]
    assert (body["actionName"], body["actionType"], body["reasonType"]) == ("authenticate", "interactive", "none")
    assert body["mvpd"] == "Cablevision" and body["url"] == f"/api/v2/authenticate/{SP}/{code}"
    assert "missingParameters" not in body

    r = status(sim, token, code)
    assert r.status_code == 200, r.text
    info = r.json()
    assert (info["notBefore"], info["notAfter"]) == (body["notBefore"], body["notAfter"])
    assert info["existingParameters"] == {"mvpd": "Cablevision", "domainName": "adobe.com",
                                          "redirectUrl": "https://adobe.com"}
    assert info["missingParameters"] == []
    # The creator's X-Device-Info (simharness.DEVICE_INFO), as a Device.
    assert info["device"]["type"] == "SetTopBox" and info["device"]["model"] == "PF-100"
    assert info["device"]["operatingSystem"] == {"name": "Linux", "version": {"major": 6, "minor": 1}}
    assert sim.last_request()["operation"] == "sessionStatus"
    assert sim.violations() == []


def test_resume_adds_the_mvpd(sim):
    token = access_token(sim)
    first = create(sim, token).json()
    code = first["code"]
    assert status(sim, token, code).json()["missingParameters"] == ["mvpd"]

    r = resume(sim, token, code, mvpd="Comcast_SSO")
    assert r.status_code == 200, r.text
    body = r.json()
    assert (body["actionName"], body["mvpd"], body["code"], body["sessionId"]) == \
        ("authenticate", "Comcast_SSO", code, first["sessionId"])
    assert body["notAfter"] == first["notAfter"]
    assert status(sim, token, code).json()["existingParameters"] == {"mvpd": "Comcast_SSO"}

    # Resuming without parameters changes nothing and still answers.
    assert resume(sim, token, code).json()["actionName"] == "authenticate"
    assert sessions(sim)[code]["resumes"] == 2
    assert sim.violations() == []


def test_create_and_resume_check_their_parameters(sim):
    token = access_token(sim)
    assert sim.post("/_sim/pass/serviceProviders/GONE", json={"known": False}).status_code == 200
    assert_error(create(sim, token, sp="GONE"), 400, "invalid_parameter_service_provider", "none")
    assert_error(create(sim, token, mvpd="NotAnMvpd"), 400, "invalid_integration", "none")
    assert_error(create(sim, token, mvpd=""), 400, "invalid_parameter_mvpd", "none")
    assert_error(create(sim, token, redirectUrl="adobe.com/back"), 400, "invalid_parameter_redirect_url", "none")
    r = sim.post(f"/api/v2/{SP}/sessions", data="mvpd=Cablevision&mvpd=Comcast_SSO", headers=form_headers(token))
    assert_error(r, 400, "invalid_parameter_mvpd", "none")
    assert sessions(sim) == {}

    code = create(sim, token).json()["code"]
    assert_error(resume(sim, token, code, mvpd="NotAnMvpd"), 400, "invalid_integration", "none")
    assert_error(resume(sim, token, code, redirectUrl="no scheme"), 400, "invalid_parameter_redirect_url", "none")
    assert status(sim, token, code).json()["existingParameters"] == {}
    sim.delete("/_sim/violations")

    # An unknown key is recorded but served.
    r = create(sim, token, mvpd="Cablevision", colour="blue")
    assert r.status_code == 200 and r.json()["actionName"] == "authenticate"
    assert any("colour" in m and m.startswith("advisory:") for m in sim.violations()[-1]["messages"])

    # A body that is not a form is a violation and is not read.
    r = sim.post(f"/api/v2/{SP}/sessions", json={"mvpd": "Cablevision"}, headers=pass_headers(token))
    assert r.status_code == 415
    assert any("Content-Type" in m for m in sim.violations()[-1]["messages"])


def test_unknown_code_and_a_code_of_another_provider(sim):
    token = access_token(sim)
    assert_error(status(sim, token, "NOPE123"), 400, "invalid_parameter_code", "none")
    assert_error(resume(sim, token, "NOPE123", mvpd="Cablevision"), 400, "invalid_parameter_code", "none")
    assert_error(profiles_code(sim, token, "NOPE123"), 400, "invalid_parameter_code", "none")
    assert sim.last_request()["note"] == "unknown code"

    code = create(sim, token, sp="OTHER").json()["code"]
    assert_error(status(sim, token, code), 400, "invalid_parameter_code", "none")
    assert_error(profiles_code(sim, token, code), 400, "invalid_parameter_code", "none")
    assert status(sim, token, code, sp="OTHER").status_code == 200
    assert sim.violations() == []


# signing in -----------------------------------------------------------------------------------

def test_sign_in_then_the_box_finds_the_profile(sim):
    token = access_token(sim)
    code = create(sim, token, mvpd="Cablevision").json()["code"]
    r = profiles_code(sim, token, code)
    assert (r.status_code, r.json()) == (200, {"profiles": {}})
    assert sim.last_request()["operation"] == "profileForCode"

    r = sign_in(sim, code, userID="alice", attributes={"zip": "10001"}, ttlSeconds=600)
    assert r.status_code == 200, r.text
    login, session = r.json()["login"], r.json()["session"]
    assert (login["serviceProvider"], login["mvpd"], login["device"]) == (SP, "Cablevision", DEVICE_ID)
    assert login["notAfter"] - login["notBefore"] == 600 * 1000
    assert (session["code"], session["state"]) == (code, "authenticated")

    profiles = profiles_code(sim, token, code).json()["profiles"]
    assert list(profiles) == ["Cablevision"]
    profile = profiles["Cablevision"]
    assert profile["issuer"] == "Cablevision" and profile["notAfter"] == login["notAfter"]
    assert profile["attributes"]["userID"] == {"value": "alice", "state": "plain"}
    assert profile["attributes"]["zip"] == {"value": "10001", "state": "plain"}

    # The login belongs to the device that created the session, and to no other.
    assert list(sim.get(f"/api/v2/{SP}/profiles", headers=pass_headers(token)).json()["profiles"]) == ["Cablevision"]
    other = pass_headers(token, **{"AP-Device-Identifier": OTHER_DEVICE})
    assert sim.get(f"/api/v2/{SP}/profiles", headers=other).json() == {"profiles": {}}

    assert sign_in(sim, code).status_code == 409

    # Already authenticated: a new session answers authorize, without a code.
    for r in (create(sim, token), create(sim, token, mvpd="Cablevision")):
        body = r.json()
        assert body == {"actionName": "authorize", "actionType": "direct", "reasonType": "authenticated",
                        "serviceProvider": SP, "mvpd": "Cablevision", "sessionId": body["sessionId"],
                        "url": f"/api/v2/{SP}/decisions/authorize/Cablevision"}
    assert create(sim, token, mvpd="Comcast_SSO").json()["actionName"] == "authenticate"
    r = sim.post(f"/api/v2/{SP}/sessions", data={},
                 headers=form_headers(token, **{"AP-Device-Identifier": OTHER_DEVICE}))
    assert r.json()["actionName"] == "resume"
    assert sim.violations() == []


def test_sign_in_errors(sim):
    token = access_token(sim)
    r = sign_in(sim, "NOPE123", mvpd="Cablevision")
    assert r.status_code == 404 and r.json()["error"]

    code = create(sim, token).json()["code"]
    assert sign_in(sim, code).status_code == 400  # the session names no mvpd and neither does the sign-in
    assert sign_in(sim, code, mvpd="NotAnMvpd").status_code == 400
    assert sign_in(sim, code, colour="blue").status_code == 400
    assert sessions(sim)[code]["state"] == "pending"

    # The second screen may supply the mvpd the box did not have.
    r = sign_in(sim, code, mvpd="Comcast_SSO")
    assert r.status_code == 200, r.text
    assert r.json()["session"]["mvpd"] == "Comcast_SSO"
    assert status(sim, token, code).json()["existingParameters"] == {"mvpd": "Comcast_SSO"}

    named = create(sim, token, mvpd="Cablevision").json()["code"]
    r = sign_in(sim, named, mvpd="Comcast_SSO")
    assert r.status_code == 400 and "Cablevision" in r.json()["error"]


def test_codes_expire_by_the_simulator_clock(sim):
    token = access_token(sim)
    assert sim.put("/_sim/pass/sessionSettings", json={"codeTtlSeconds": 60}).status_code == 200
    pending = create(sim, token, mvpd="Cablevision").json()
    assert int(pending["notAfter"]) - int(pending["notBefore"]) == 60 * 1000
    signed = create(sim, token, mvpd="Comcast_SSO").json()["code"]
    assert sign_in(sim, signed, ttlSeconds=3600).status_code == 200
    short = create(sim, token, sp="SHORT", mvpd="Cablevision").json()["code"]
    assert sign_in(sim, short, ttlSeconds=30).status_code == 200

    # Halfway: the code signed in with a 30 s login answers no profile, the code itself is still valid.
    advance_clock(sim, 31)
    assert profiles_code(sim, token, short, sp="SHORT").json() == {"profiles": {}}
    assert list(profiles_code(sim, token, signed).json()["profiles"]) == ["Comcast_SSO"]

    advance_clock(sim, 61)
    code = pending["code"]
    assert_error(status(sim, token, code), 400, "authentication_session_expired", "authentication")
    assert_error(resume(sim, token, code, mvpd="Cablevision"), 400, "authentication_session_expired",
                 "authentication")
    assert_error(profiles_code(sim, token, code), 400, "authentication_session_expired", "authentication")
    # A signed-in code answers until its own notAfter, then no more (the login lives on).
    assert_error(profiles_code(sim, token, signed), 400, "authentication_session_expired", "authentication")
    assert list(sim.get(f"/api/v2/{SP}/profiles", headers=pass_headers(token)).json()["profiles"]) == ["Comcast_SSO"]
    r = sign_in(sim, code)
    assert r.status_code == 410 and "expired" in r.json()["error"]
    assert sim.get(f"/api/v2/authenticate/{SP}/{code}").status_code == 410
    assert {s["state"] for s in sessions(sim).values()} == {"expired"}

    # A new session's code counts from the simulator's now.
    fresh = create(sim, token, mvpd="Cablevision").json()
    clock = sim.get("/_sim/clock").json()["nowMs"]
    assert abs(int(fresh["notBefore"]) - clock) < 5000
    assert sim.violations() == []


# the user's browser ---------------------------------------------------------------------------

def test_authenticate_page_and_its_form(sim):
    token = access_token(sim)
    code = create(sim, token, mvpd="Comcast_SSO").json()["code"]
    r = sim.get(f"/api/v2/authenticate/{SP}/{code}")  # a browser: no token, no device headers
    assert r.status_code == 200 and r.headers["Content-Type"].startswith("text/html")
    assert SP in r.text and code in r.text and "Xfinity" in r.text
    assert f'action="/_sim/pass/sessions/{code}/signin"' in r.text
    assert sim.last_request()["operation"] == "authenticate"

    picker = create(sim, token, sp="PICK").json()["code"]
    page = sim.get(f"/api/v2/authenticate/PICK/{picker}").text
    assert "<select" in page and 'value="Cablevision"' in page and 'value="Comcast_SSO"' in page

    r = sim.get(f"/api/v2/authenticate/{SP}/NOPE123")
    assert r.status_code == 400 and r.headers["Content-Type"].startswith("text/html") and "NOPE123" in r.text
    assert sim.get(f"/api/v2/authenticate/PICK/{code}").status_code == 400

    # The form, as a browser posts it.
    r = sim.post(f"/_sim/pass/sessions/{picker}/signin", data={"mvpd": "Cablevision"})
    assert r.status_code == 200 and r.headers["Content-Type"].startswith("text/html")
    assert "Signed in" in r.text and picker in r.text
    assert list(profiles_code(sim, token, picker, sp="PICK").json()["profiles"]) == ["Cablevision"]
    again = sim.post(f"/_sim/pass/sessions/{picker}/signin", data={"mvpd": "Cablevision"})
    assert again.status_code == 409 and again.headers["Content-Type"].startswith("text/html")
    assert "Already signed in" in sim.get(f"/api/v2/authenticate/PICK/{picker}").text
    assert sim.violations() == []


# control --------------------------------------------------------------------------------------

def test_session_listing_counts_polls(sim):
    token = access_token(sim)
    code = create(sim, token).json()["code"]
    resume(sim, token, code, mvpd="Cablevision")
    for _ in range(3):
        status(sim, token, code)
    for _ in range(2):
        profiles_code(sim, token, code)
    listed = sessions(sim)[code]
    assert (listed["statusPolls"], listed["profilePolls"], listed["resumes"]) == (3, 2, 1)
    assert listed["mvpd"] == "Cablevision" and listed["state"] == "pending"
    assert listed["createdAt"] == listed["notBefore"] and listed["notAfter"] == listed["notBefore"] + 1800 * 1000


def test_session_settings(sim):
    assert sim.get("/_sim/pass/sessionSettings").json() == {"codeTtlSeconds": 1800, "decisionTtlSeconds": 600,
                                                            "mediaTokenTtlSeconds": 420}
    r = sim.put("/_sim/pass/sessionSettings", json={"codeTtlSeconds": 90})
    assert r.status_code == 200 and r.json()["codeTtlSeconds"] == 90
    for bad in ({}, {"codeTtlSeconds": 0}, {"codeTtlSeconds": "9"}, {"codeTtlSeconds": True},
                {"codeTtlSeconds": 1.5}, {"codeTTL": 5}):
        assert sim.put("/_sim/pass/sessionSettings", json=bad).status_code == 400, bad
    assert sim.get("/_sim/pass/sessionSettings").json()["codeTtlSeconds"] == 90
    token = access_token(sim)
    body = create(sim, token).json()
    assert int(body["notAfter"]) - int(body["notBefore"]) == 90 * 1000


def test_logout_with_and_without_a_browser_step(sim):
    token = access_token(sim)
    assert sim.get("/_sim/pass/logoutFlow").json() == {"defaultBrowserStep": True, "mvpds": {}}
    for mvpd in ("Cablevision", "Comcast_SSO"):
        sim.post("/_sim/pass/login", json={"serviceProvider": SP, "mvpd": mvpd})
    r = sim.put("/_sim/pass/logoutFlow", json={"mvpd": "Cablevision", "browserStep": False})
    assert r.json() == {"defaultBrowserStep": True, "mvpds": {"Cablevision": {"browserStep": False}}}
    for bad in ({"mvpd": "Cablevision"}, {"browserStep": False}, {"mvpd": "X", "browserStep": "no"},
                {"mvpd": "X", "browserStep": True, "extra": 1}):
        assert sim.put("/_sim/pass/logoutFlow", json=bad).status_code == 400, bad

    r = sim.get(f"/api/v2/{SP}/logout/Cablevision", headers=pass_headers(token))
    assert r.json() == {"logouts": {"Cablevision": {"actionName": "complete", "actionType": "none",
                                                    "mvpd": "Cablevision"}}}
    logout = sim.get(f"/api/v2/{SP}/logout/Comcast_SSO", headers=pass_headers(token)).json()["logouts"]["Comcast_SSO"]
    assert (logout["actionName"], logout["actionType"]) == ("logout", "interactive") and logout["url"]
    again = sim.get(f"/api/v2/{SP}/logout/Cablevision", headers=pass_headers(token)).json()["logouts"]["Cablevision"]
    assert (again["actionName"], again["actionType"]) == ("invalid", "none") and "url" not in again
    assert sim.violations() == []


def test_logout_ends_pending_sessions_of_that_device_and_mvpd(sim):
    token = access_token(sim)
    ended = create(sim, token, mvpd="Cablevision").json()["code"]
    kept = create(sim, token, mvpd="Comcast_SSO").json()["code"]
    elsewhere = sim.post(f"/api/v2/{SP}/sessions", data={"mvpd": "Cablevision"},
                         headers=form_headers(token, **{"AP-Device-Identifier": OTHER_DEVICE})).json()["code"]
    sim.get(f"/api/v2/{SP}/logout/Cablevision", headers=pass_headers(token))

    assert_error(status(sim, token, ended), 400, "authentication_session_expired", "authentication")
    assert sim.last_request()["note"] == "session ended by logout"
    listed = sessions(sim)
    assert (listed[ended]["state"], listed[ended]["endedBy"]) == ("expired", "logout")
    assert listed[kept]["state"] == "pending" and listed[elsewhere]["state"] == "pending"
    assert sign_in(sim, ended).status_code == 410
    assert sim.violations() == []


def test_decision_sources_and_lifetimes(sim):
    token = access_token(sim)
    r = sim.put("/_sim/pass/decisions", json={"decisions": {"live": {"authorized": True, "source": "magic"}}})
    assert r.status_code == 400 and "source" in r.json()["error"]
    r = sim.put("/_sim/pass/decisions", json={"decisions": {"live": {"authorized": True, "source": "degradation"}}})
    assert r.status_code == 200, r.text
    assert sim.put("/_sim/pass/sessionSettings", json={"mediaTokenTtlSeconds": 60,
                                                       "decisionTtlSeconds": 120}).status_code == 200
    sim.post("/_sim/pass/login", json={"serviceProvider": SP, "mvpd": "Cablevision"})

    r = sim.post(f"/api/v2/{SP}/decisions/authorize/Cablevision", json={"resources": ["live"]},
                 headers=pass_headers(token))
    assert r.status_code == 200, r.text
    decision = r.json()["decisions"][0]
    assert (decision["authorized"], decision["source"]) == (True, "degradation")
    assert decision["notAfter"] - decision["notBefore"] == 120 * 1000
    media = decision["token"]
    assert media["notAfter"] - media["notBefore"] == 60 * 1000
    assert base64.b64decode(media["serializedToken"]).startswith(b"<signatureInfo>live|")
    assert sim.violations() == []


def test_throttling_applies_to_sessions_calls_but_not_to_the_browser(sim):
    token = access_token(sim)
    code = create(sim, token, mvpd="Cablevision").json()["code"]
    sim.post("/_sim/pass/ratelimit", json={"enabled": True, "perSecond": 1, "burst": 0})
    statuses = [create(sim, token).status_code for _ in range(3)]
    assert statuses[0] == 200 and 429 in statuses, statuses
    statuses = [status(sim, token, code).status_code for _ in range(2)]
    assert 429 in statuses, statuses
    assert sim.get(f"/api/v2/authenticate/{SP}/{code}").status_code == 200
    assert sim.get("/_sim/pass/state").json()["rateLimit"]["limitedByClient"][DEVICE_ID] >= 2


def test_reset_forgets_sessions_and_settings(sim):
    token = access_token(sim)
    code = create(sim, token).json()["code"]
    sim.put("/_sim/pass/sessionSettings", json={"codeTtlSeconds": 5, "mediaTokenTtlSeconds": 5})
    sim.put("/_sim/pass/logoutFlow", json={"mvpd": "Cablevision", "browserStep": False})
    sim.reset()
    assert sim.get("/_sim/pass/sessions").json() == {"sessions": []}
    assert sim.get("/_sim/pass/sessionSettings").json()["codeTtlSeconds"] == 1800
    assert sim.get("/_sim/pass/logoutFlow").json()["mvpds"] == {}
    assert sign_in(sim, code, mvpd="Cablevision").status_code == 404


def test_without_the_spec_the_code_still_stands_for_the_device(tmp_path):
    """Unvalidated, the simulator cannot read which headers the spec requires: it must still not ask a
    poll by code for device headers."""
    bare = SimProcess(tmp_path / "sim", "--specs", str(tmp_path / "no-such-specs"), "--quiet")
    try:
        token = access_token(bare)
        code = create(bare, token, mvpd="Cablevision").json()["code"]
        assert sign_in(bare, code).status_code == 200
        assert list(profiles_code(bare, token, code).json()["profiles"]) == ["Cablevision"]
        r = bare.get(f"/api/v2/{SP}/sessions/{code}", headers={"Authorization": f"Bearer {token}"})
        assert r.status_code == 200 and r.json()["existingParameters"] == {"mvpd": "Cablevision"}
    finally:
        bare.stop()


def test_no_response_violations_in_this_module(sim):
    sim.collect_response_violations()
    assert sim.response_violations == []

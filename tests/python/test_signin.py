"""Adobe Pass entitlement end to end: sign-in with a code on a second screen, playback authorization,
metadata, provider selection and logout. pyzmq apps, a real preflightd, preflight-sim as Adobe Pass."""

import concurrent.futures
import os
import shutil
import tempfile

import pytest

from agent_harness import (TEST_SOFTWARE_STATEMENT, Events, Simulator, ok, read_log, request, start_pass_agent, stop_agent,
                           wait_until)

REQUESTOR = "acme-requestor"
MVPD = "Cablevision"


class Box:
    """One box: a simulator, an agent configured for one requestor, and an events subscriber."""

    def __init__(self, folder):
        self.folder = folder
        self.sim = Simulator(folder)
        self.agent = None
        self.events = None
        self.secrets = set()

    def start(self, **pass_extra):
        # Debug lines too: not even they may carry a code or a media token.
        self.agent = start_pass_agent(self.folder, self.sim, agent_extra={"logLevel": "debug"}, signInPollInterval=1,
                                      **pass_extra)
        self.events = Events(self.agent, b"auth.", confirm=True)
        return self.agent

    def restart(self):
        self.events.close()
        assert stop_agent(self.agent) == 0
        return self.start()

    def call(self, cmd, args=None, timeout_ms=30000):
        return ok(request(self.agent.app, cmd, {"requestor": REQUESTOR, **(args or {})}, timeout_ms=timeout_ms))

    def sessions(self):
        return self.sim.call("GET", "/_sim/pass/sessions")["sessions"]

    def sign_in(self, code, **extra):
        """What the user does on a phone: opens the page and signs in with their TV provider."""
        return self.sim.call("POST", f"/_sim/pass/sessions/{code}/signin", extra)

    def stop(self):
        log = read_log(self.folder)
        if self.events:
            self.events.close()
        if self.agent:
            stop_agent(self.agent)
        violations = self.sim.call("GET", "/_sim/violations")
        limits = self.sim.call("GET", "/_sim/pass/state")["rateLimit"]
        self.sim.stop()
        return log, violations, limits


@pytest.fixture
def box():
    folder = tempfile.mkdtemp(prefix="pf-si-", dir="/tmp")
    box = Box(folder)
    # Adobe's throttling is on for every test here: the agent must never exceed it.
    box.sim.call("POST", "/_sim/pass/ratelimit", {"enabled": True, "perSecond": 1, "burst": 10})
    yield box
    log, violations, limits = box.stop()
    shutil.rmtree(folder, ignore_errors=True)
    assert violations["count"] == 0, violations
    assert limits["limited"] == 0, limits
    # Codes and media tokens go to apps and events only; the journal never holds them.
    assert TEST_SOFTWARE_STATEMENT not in log
    for secret in box.secrets:
        assert secret not in log, f"{secret!r} is in the agent's log"


def test_sign_in_with_a_code_on_a_second_screen(box):
    box.start()
    before = box.call("checkAuthentication")
    assert before["authenticated"] is False and before["mvpd"] is None
    assert before["status"]["code"] == "authentication_session_missing"
    assert before["status"]["action"] == "authentication"

    pending = box.call("getAuthentication", {"mvpd": MVPD})
    assert pending["authenticated"] is False
    code = pending["code"]
    box.secrets.add(code)
    assert pending["url"] == f"{box.sim.url}/api/v2/authenticate/{REQUESTOR}/{code}"
    assert pending["mvpd"] == MVPD and pending["notAfter"] > pending["notBefore"] > 0
    announced = box.events.wait_for("auth.code")
    assert announced["code"] == code and announced["url"] == pending["url"] and announced["requestor"] == REQUESTOR
    # The page the user opens answers (a browser would show it).
    import requests

    assert requests.get(pending["url"], timeout=10).status_code == 200
    assert box.call("checkAuthentication")["pending"]["code"] == code

    box.sign_in(code, attributes={"zip": "10001"})
    done = box.events.wait_for("auth.authenticated")
    assert done["requestor"] == REQUESTOR and done["mvpd"] == MVPD
    status = box.call("checkAuthentication")
    assert status["authenticated"] is True and status["mvpd"] == MVPD and status["type"] == "regular"
    assert status["notAfter"] == done["notAfter"] and "status" not in status and "pending" not in status
    # Signed in already: getAuthentication says so, and no new code is issued.
    assert box.call("getAuthentication") == {"authenticated": True, "mvpd": MVPD, "notAfter": done["notAfter"]}
    assert len(box.sessions()) == 1
    # The session is the box's own: preauthorize works now.
    result = box.call("preauthorize", {"resources": ["r1"]})
    assert result["resources"] == [{"id": "r1", "authorized": True, "source": "mvpd"}]


def test_two_apps_asking_at_once_share_one_code(box):
    box.start()
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(lambda _: box.call("getAuthentication", {"mvpd": MVPD}), range(4)))
    codes = {answer["code"] for answer in answers}
    assert len(codes) == 1, answers
    assert len(box.sessions()) == 1
    box.secrets.update(codes)
    # A later app joins the same code rather than starting another.
    assert box.call("getAuthentication")["code"] in codes
    assert len(box.sessions()) == 1


def test_a_pending_code_survives_a_restart_and_is_resumed(box):
    box.start()
    code = box.call("getAuthentication", {"mvpd": MVPD})["code"]
    box.secrets.add(code)
    box.restart()
    # The same code, checked with Adobe rather than made anew.
    assert box.call("getAuthentication")["code"] == code
    wait_until("the resumed code checked", lambda: box.sessions()[0]["statusPolls"] >= 1)
    assert len(box.sessions()) == 1
    box.sign_in(code)
    box.events.wait_for("auth.authenticated")
    assert box.call("checkAuthentication")["authenticated"] is True
    assert os.stat(os.path.join(box.folder, "state", "pass-signin.json")).st_mode & 0o777 == 0o600


def test_an_expired_code_ends_the_sign_in_and_a_new_one_can_start(box):
    box.sim.call("PUT", "/_sim/pass/sessionSettings", {"codeTtlSeconds": 2})
    box.start()
    code = box.call("getAuthentication", {"mvpd": MVPD})["code"]
    box.secrets.add(code)
    failed = box.events.wait_for("auth.failed")
    assert failed["reason"] == "expired" and failed["requestor"] == REQUESTOR
    assert "pending" not in box.call("checkAuthentication")
    box.sim.call("PUT", "/_sim/pass/sessionSettings", {"codeTtlSeconds": 1800})
    fresh = box.call("getAuthentication", {"mvpd": MVPD})["code"]
    box.secrets.add(fresh)
    assert fresh != code


def test_cancel_ends_the_pending_code(box):
    box.start()
    code = box.call("getAuthentication", {"mvpd": MVPD})["code"]
    box.secrets.add(code)
    assert box.call("cancelAuthentication") == {"cancelled": True}
    assert box.events.wait_for("auth.failed")["reason"] == "cancelled"
    assert box.call("cancelAuthentication") == {"cancelled": False}
    assert "pending" not in box.call("checkAuthentication")
    # Polling stopped: at most the one poll already under way when the app cancelled reaches Adobe.
    polls = box.sessions()[0]["profilePolls"]
    # Signing in with the abandoned code afterwards does not finish the cancelled sign-in.
    box.sign_in(code)
    assert box.call("checkAuthentication", {"fresh": True})["authenticated"] is True  # Adobe lists it now
    assert box.sessions()[0]["profilePolls"] <= polls + 1
    assert box.events.bodies("auth.authenticated") == []


def test_authorize_gives_a_media_token_and_check_uses_the_held_permit(box):
    box.start()
    box.sim.call("POST", "/_sim/pass/login", {"serviceProvider": REQUESTOR, "mvpd": MVPD, "ttlSeconds": 3600})
    granted = box.call("getAuthorization", {"resource": "movie-1"})
    assert granted["authorized"] is True and granted["source"] == "mvpd" and granted["mvpd"] == MVPD
    token = granted["mediaToken"]
    assert token["serializedToken"] and token["notAfter"] > token["notBefore"]
    box.secrets.add(token["serializedToken"])
    calls = len(box.sim.requests("authorize"))
    checked = box.call("checkAuthorization", {"resource": "movie-1"})
    assert checked["authorized"] is True and checked["fromCache"] is True and "mediaToken" not in checked
    assert len(box.sim.requests("authorize")) == calls
    # Not held: asked of Adobe, answered without a token.
    other = box.call("checkAuthorization", {"resource": "movie-2"})
    assert other["authorized"] is True and "mediaToken" not in other and "fromCache" not in other
    # A denial passes Adobe's error through and drops a held permit.
    box.sim.call("PUT", "/_sim/pass/decisions", {"serviceProvider": REQUESTOR, "decisions": {
        "movie-1": {"authorized": False, "error": "authorization_denied_by_mvpd"}}})
    denied = box.call("getAuthorization", {"resource": "movie-1"})
    assert denied["authorized"] is False and "mediaToken" not in denied
    assert denied["error"]["code"] == "authorization_denied_by_mvpd" and denied["error"]["status"] == 403
    assert box.call("checkAuthorization", {"resource": "movie-1"})["authorized"] is False
    # Degradation keeps its source.
    box.sim.call("PUT", "/_sim/pass/decisions", {"serviceProvider": REQUESTOR, "decisions": {
        "movie-3": {"authorized": True, "source": "degradation"}}})
    degraded = box.call("getAuthorization", {"resource": "movie-3"})
    box.secrets.add(degraded["mediaToken"]["serializedToken"])
    assert degraded["source"] == "degradation" and degraded["authorized"] is True


def test_authorize_without_a_sign_in_says_so(box):
    box.start()
    answer = box.call("getAuthorization", {"resource": "movie-1"})
    assert answer == {"resource": "movie-1", "authorized": False, "status": answer["status"]}
    assert answer["status"]["code"] == "authentication_session_missing" and answer["status"]["status"] == 0


def test_metadata_of_the_signed_in_user(box):
    box.start()
    box.sim.call("POST", "/_sim/pass/login", {"serviceProvider": REQUESTOR, "mvpd": MVPD, "ttlSeconds": 3600,
                                              "attributes": {"zip": "10001", "upstreamUserID": "u-77"}})
    attributes = box.call("getMetadata")["attributes"]
    assert attributes["zip"] == "10001" and attributes["upstreamUserID"] == "u-77" and attributes["userID"]
    assert box.call("getMetadata", {"key": "zip"}) == {"key": "zip", "value": "10001"}
    assert box.call("getMetadata", {"key": "nothing"}) == {"key": "nothing", "value": None}


def test_provider_selection_is_kept_and_used_by_the_next_sign_in(box):
    box.start()
    listed = box.call("getSelectedProvider")
    assert listed["selected"] is None
    assert [m["id"] for m in listed["mvpds"]] == ["Cablevision", "Comcast_SSO"]
    assert listed["mvpds"][0]["displayName"] == "Optimum" and listed["mvpds"][0]["logoUrl"].startswith("https://")
    refused = request(box.agent.app, "setSelectedProvider", {"requestor": REQUESTOR, "mvpd": "NoSuchTV"})
    assert refused["ok"] is False and refused["error"]["code"] == "invalid_argument"
    assert refused["error"]["field"] == "mvpd"
    assert box.call("getSelectedProvider")["selected"] is None
    assert box.call("setSelectedProvider", {"mvpd": "Comcast_SSO"})["selected"] == "Comcast_SSO"
    box.restart()
    assert box.call("getSelectedProvider")["selected"] == "Comcast_SSO"
    pending = box.call("getAuthentication")
    box.secrets.add(pending["code"])
    assert pending["mvpd"] == "Comcast_SSO" and box.sessions()[0]["mvpd"] == "Comcast_SSO"


def test_sign_in_without_a_provider_lets_the_user_pick_it_on_the_second_screen(box):
    box.start()
    pending = box.call("getAuthentication")
    box.secrets.add(pending["code"])
    assert pending["mvpd"] is None
    box.sign_in(pending["code"], mvpd="Comcast_SSO")
    assert box.events.wait_for("auth.authenticated")["mvpd"] == "Comcast_SSO"


@pytest.mark.parametrize("browser_step", [True, False])
def test_logout_with_and_without_a_browser_step(box, browser_step):
    box.sim.call("PUT", "/_sim/pass/logoutFlow", {"mvpd": MVPD, "browserStep": browser_step})
    box.start()
    box.sim.call("POST", "/_sim/pass/login", {"serviceProvider": REQUESTOR, "mvpd": MVPD, "ttlSeconds": 3600})
    assert box.call("checkAuthentication")["authenticated"] is True
    token = box.call("getAuthorization", {"resource": "movie-1"})["mediaToken"]["serializedToken"]
    box.secrets.add(token)
    answer = box.call("logout")
    assert answer["loggedOut"] is True and answer["mvpd"] == MVPD and "status" not in answer
    if browser_step:
        assert answer["actionType"] == "interactive" and answer["url"].startswith("https://")
    else:
        assert answer["actionName"] == "complete" and "url" not in answer
    assert box.events.wait_for("auth.logout")["mvpd"] == MVPD
    after = box.call("checkAuthentication", {"fresh": True})
    assert after["authenticated"] is False and after["status"]["code"] == "authentication_session_missing"
    assert box.call("checkAuthorization", {"resource": "movie-1"})["authorized"] is False


def test_a_profile_expires_at_its_not_after_without_an_app_asking(box):
    box.start()
    box.sim.call("POST", "/_sim/pass/login", {"serviceProvider": REQUESTOR, "mvpd": MVPD, "ttlSeconds": 6})
    assert box.call("checkAuthentication")["authenticated"] is True
    expired = box.events.wait_for("auth.session", lambda body: body["state"] == "expired")
    assert expired["requestor"] == REQUESTOR and expired["mvpd"] == MVPD
    status = box.call("checkAuthentication")
    assert status["authenticated"] is False and status["status"]["code"] == "authentication_session_expired"


def test_bad_arguments_get_the_field_at_fault_and_change_nothing(box):
    box.start()
    for cmd, args, field in [
        ("getAuthorization", {"requestor": REQUESTOR}, "resource"),
        ("getAuthorization", {"requestor": REQUESTOR, "resource": ""}, "resource"),
        ("checkAuthentication", {"requestor": REQUESTOR, "fresh": "yes"}, "fresh"),
        ("getAuthentication", {"requestor": REQUESTOR, "mvpd": 7}, "mvpd"),
        ("setSelectedProvider", {"requestor": REQUESTOR}, "mvpd"),
        ("logout", {}, "requestor"),
    ]:
        reply = request(box.agent.app, cmd, args)
        assert reply["ok"] is False and reply["error"]["code"] == "invalid_argument", (cmd, reply)
        assert reply["error"]["field"] == field, (cmd, reply)
    assert box.sessions() == []
    unknown = box.call("getAuthentication", {"requestor": "someone-else"})
    assert unknown["status"]["code"] == "requestor_not_configured"

"""Adobe Pass DCR and REST API v2 as the simulator serves them, checked over real HTTP."""

from __future__ import annotations

import base64
import json
import time

from simharness import clean_sim, sim  # noqa: F401 - fixtures
from simharness import (DEVICE_ID, SOFTWARE_STATEMENT, X_DEVICE_INFO, access_token, pass_headers, register,
                        requires_specs)

# Without the shared specs the simulator cannot tell a conforming request from a broken one.
pytestmark = requires_specs

SP = "REF30"
HELP_URL_PREFIX = "https://experienceleague.adobe.com/"


def assert_enhanced_error(body: dict, status: int, code: str, action: str) -> None:
    assert body["status"] == status and body["code"] == code and body["action"] == action, body
    assert isinstance(body["message"], str) and body["message"]
    assert body["helpUrl"].startswith(HELP_URL_PREFIX) and body["trace"]


def preauthorize(sim, token: str, resources: list[str], mvpd: str = "Cablevision", sp: str = SP):
    return sim.post(f"/api/v2/{sp}/decisions/preauthorize/{mvpd}", json={"resources": resources},
                    headers=pass_headers(token))


# DCR ------------------------------------------------------------------------------------------

def test_register_returns_client_credentials_and_is_counted(sim):
    client = register(sim)
    assert set(client) == {"client_id", "client_secret", "client_id_issued_at", "redirect_uris", "grant_types",
                           "scopes"}
    assert client["redirect_uris"] == ["adobepass://tv.preflight"]
    assert client["grant_types"] == ["client_credentials"]
    assert isinstance(client["client_id_issued_at"], int)
    state = sim.get("/_sim/pass/state").json()
    assert [r["client_id"] for r in state["registrations"]] == [client["client_id"]]
    assert "client_secret" not in json.dumps(state["registrations"])
    assert sim.get("/_sim/stats").json()["registrations"] == 1
    assert sim.violations() == []


def test_register_errors_use_the_dcr_error_body(sim):
    r = sim.post("/o/client/register", json={"software_statement": SOFTWARE_STATEMENT,
                                             "redirect_uri": "adobepass://x"})  # no X-Device-Info
    assert (r.status_code, r.json()) == (400, {"error": "invalid_request"})
    assert "X-Device-Info" in " ".join(sim.violations()[-1]["messages"])

    r = sim.post("/o/client/register", json={"software_statement": SOFTWARE_STATEMENT},
                 headers={"X-Device-Info": X_DEVICE_INFO})
    assert (r.status_code, r.json()) == (400, {"error": "invalid_request"})
    assert "redirect_uri" in " ".join(sim.violations()[-1]["messages"])

    r = sim.post("/o/client/register", json={"software_statement": "not-a-jwt", "redirect_uri": "adobepass://x"},
                 headers={"X-Device-Info": X_DEVICE_INFO})
    assert (r.status_code, r.json()) == (400, {"error": "invalid_software_statement"})

    r = sim.post("/o/client/register", json={"software_statement": SOFTWARE_STATEMENT, "redirect_uri": "no scheme"},
                 headers={"X-Device-Info": X_DEVICE_INFO})
    assert (r.status_code, r.json()) == (400, {"error": "invalid_redirect_uri"})
    assert sim.get("/_sim/stats").json()["registrations"] == 0


def test_token_from_form_body_or_query_and_its_errors(sim):
    client = register(sim)
    r = sim.post("/o/client/token", data={"client_id": client["client_id"], "client_secret": client["client_secret"],
                                          "grant_type": "client_credentials"},
                 headers={"X-Device-Info": X_DEVICE_INFO})
    assert r.status_code == 201, r.text
    token = r.json()
    assert token["token_type"] == "bearer" and token["expires_in"] == 3600
    assert token["access_token"] and token["id"] and isinstance(token["created_at"], int)
    assert sim.last_request()["body"] == {"client_id": client["client_id"], "client_secret": client["client_secret"],
                                          "grant_type": "client_credentials"}

    r = sim.post("/o/client/token", params={"client_id": client["client_id"], "client_secret": client["client_secret"],
                                            "grant_type": "client_credentials"},
                 headers={"X-Device-Info": X_DEVICE_INFO})
    assert r.status_code == 201
    assert sim.violations() == []

    def token_error(data: dict) -> tuple[int, dict]:
        response = sim.post("/o/client/token", data=data, headers={"X-Device-Info": X_DEVICE_INFO})
        return response.status_code, response.json()

    good = {"client_id": client["client_id"], "client_secret": client["client_secret"],
            "grant_type": "client_credentials"}
    assert token_error(dict(good, client_secret="wrong")) == (400, {"error": "invalid_client"})
    assert token_error(dict(good, client_id="unknown")) == (400, {"error": "invalid_client"})
    assert token_error(dict(good, grant_type="password")) == (400, {"error": "unsupported_grant_type"})
    assert token_error({"client_id": client["client_id"], "grant_type": "client_credentials"}) == \
        (400, {"error": "invalid_request"})
    assert sim.get("/_sim/stats").json()["tokensIssued"] == 2


def test_token_lifetime_is_configurable(sim):
    assert sim.post("/_sim/pass/tokens", json={"expiresIn": 120}).json() == {"expiresIn": 120}
    client = register(sim)
    r = sim.post("/o/client/token", data={"client_id": client["client_id"], "client_secret": client["client_secret"],
                                          "grant_type": "client_credentials"}, headers={"X-Device-Info": X_DEVICE_INFO})
    assert r.json()["expires_in"] == 120


# REST API v2 ----------------------------------------------------------------------------------

def test_configuration_lists_mvpds(sim):
    token = access_token(sim)
    r = sim.get(f"/api/v2/{SP}/configuration", headers=pass_headers(token))
    assert r.status_code == 200, r.text
    requestor = r.json()["requestor"]
    assert requestor["id"] == SP
    assert [m["id"] for m in requestor["mvpds"]] == ["Cablevision", "Comcast_SSO"]
    assert all(m["displayName"] and m["logoUrl"] for m in requestor["mvpds"])
    assert sim.last_request()["operation"] == "configuration"
    assert sim.violations() == []


def test_unknown_service_provider(sim):
    token = access_token(sim)
    assert sim.post("/_sim/pass/serviceProviders/GONE", json={"known": False}).status_code == 200
    for path in ("/api/v2/GONE/configuration", "/api/v2/GONE/profiles"):
        r = sim.get(path, headers=pass_headers(token))
        assert r.status_code == 400
        assert_enhanced_error(r.json(), 400, "invalid_parameter_service_provider", "none")
    r = preauthorize(sim, token, ["a"], sp="GONE")
    assert_enhanced_error(r.json(), 400, "invalid_parameter_service_provider", "none")

    sim.post("/_sim/pass/serviceProviders/SMALL", json={"mvpds": ["OnlyOne"]})
    mvpds = sim.get("/api/v2/SMALL/configuration", headers=pass_headers(token)).json()["requestor"]["mvpds"]
    assert mvpds == [{"id": "OnlyOne", "displayName": "OnlyOne"}]


def test_profiles_logged_out_then_logged_in_through_control(sim):
    token = access_token(sim)
    r = sim.get(f"/api/v2/{SP}/profiles", headers=pass_headers(token))
    assert (r.status_code, r.json()) == (200, {"profiles": {}})
    assert sim.get(f"/api/v2/{SP}/profiles/Cablevision", headers=pass_headers(token)).json() == {"profiles": {}}

    not_after = int(time.time() * 1000) + 3_600_000
    r = sim.post("/_sim/pass/login", json={"serviceProvider": SP, "mvpd": "Cablevision", "notAfter": not_after,
                                           "attributes": {"zip": "10001"}})
    assert r.status_code == 200, r.text
    profiles = sim.get(f"/api/v2/{SP}/profiles", headers=pass_headers(token)).json()["profiles"]
    assert list(profiles) == ["Cablevision"]
    profile = profiles["Cablevision"]
    assert profile["notAfter"] == not_after and profile["notBefore"] <= time.time() * 1000
    assert profile["issuer"] == "Cablevision" and profile["type"] == "regular"
    assert profile["attributes"]["userID"]["state"] == "plain"
    assert profile["attributes"]["zip"] == {"value": "10001", "state": "plain"}
    assert list(sim.get(f"/api/v2/{SP}/profiles/Cablevision", headers=pass_headers(token)).json()["profiles"]) == \
        ["Cablevision"]
    assert sim.get(f"/api/v2/{SP}/profiles/Comcast_SSO", headers=pass_headers(token)).json() == {"profiles": {}}
    assert sim.get(f"/api/v2/OTHER/profiles", headers=pass_headers(token)).json() == {"profiles": {}}

    sim.post("/_sim/pass/login", json={"serviceProvider": SP, "mvpd": "Comcast_SSO",
                                       "notAfter": int(time.time() * 1000) - 1000})
    assert list(sim.get(f"/api/v2/{SP}/profiles", headers=pass_headers(token)).json()["profiles"]) == ["Cablevision"]

    assert sim.post("/_sim/pass/logout", json={"serviceProvider": SP}).json()["removed"] == 2
    assert sim.get(f"/api/v2/{SP}/profiles", headers=pass_headers(token)).json() == {"profiles": {}}

    r = sim.get(f"/api/v2/{SP}/profiles/NotAnMvpd", headers=pass_headers(token))
    assert_enhanced_error(r.json(), 400, "invalid_integration", "none")
    assert sim.violations() == []


def test_preauthorize_without_a_profile(sim):
    token = access_token(sim)
    r = preauthorize(sim, token, ["r1"])
    assert r.status_code == 403
    assert_enhanced_error(r.json(), 403, "authenticated_profile_missing", "authentication")

    sim.post("/_sim/pass/login", json={"serviceProvider": SP, "mvpd": "Cablevision",
                                       "notAfter": int(time.time() * 1000) - 1})
    assert_enhanced_error(preauthorize(sim, token, ["r1"]).json(), 403, "authenticated_profile_expired",
                          "authentication")

    sim.put("/_sim/pass/decisions", json={"decisions": {}, "missingProfile": "item-level"})
    sim.post("/_sim/pass/logout", json={})
    r = preauthorize(sim, token, ["r1", "r2"])
    assert r.status_code == 200
    decisions = r.json()["decisions"]
    assert [d["resource"] for d in decisions] == ["r1", "r2"]
    assert all(d["authorized"] is False for d in decisions)
    assert_enhanced_error(decisions[0]["error"], 403, "authenticated_profile_missing", "authentication")
    assert sim.violations() == []


def test_preauthorize_permit_deny_and_deny_with_error(sim):
    token = access_token(sim)
    sim.post("/_sim/pass/login", json={"serviceProvider": SP, "mvpd": "Cablevision", "ttlSeconds": 600})
    denial = {"status": 403, "code": "preauthorization_denied_by_mvpd",
              "message": "The MVPD has returned a \"Deny\" decision when requesting pre-authorization for the "
                         "specified resource.",
              "details": "Your subscription package does not include the \"Live\" channel",
              "helpUrl": "https://experienceleague.adobe.com/docs/pass/authentication/auth-features/error-reportn/"
                         "enhanced-error-codes.html",
              "trace": "12f6fef9-d2e0-422b-a9d7-60d799abe353", "action": "none"}
    r = sim.put("/_sim/pass/decisions", json={"serviceProvider": SP, "decisions": {
        "denied": {"authorized": False},
        "deniedWithError": {"authorized": False, "error": denial},
        "byCode": {"error": {"code": "network_connection_timeout"}},
    }})
    assert r.status_code == 200, r.text

    r = preauthorize(sim, token, ["free", "denied", "deniedWithError", "byCode"])
    assert r.status_code == 200, r.text
    free, denied, with_error, by_code = r.json()["decisions"]
    assert free == {"resource": "free", "serviceProvider": SP, "mvpd": "Cablevision", "source": "mvpd",
                    "authorized": True}
    assert denied == {"resource": "denied", "serviceProvider": SP, "mvpd": "Cablevision", "source": "mvpd",
                      "authorized": False}
    assert with_error["authorized"] is False and with_error["error"] == denial
    assert by_code["authorized"] is False
    assert_enhanced_error(by_code["error"], 403, "network_connection_timeout", "retry")

    entry = sim.last_request()
    assert entry["operation"] == "preauthorize" and entry["body"] == {
        "resources": ["free", "denied", "deniedWithError", "byCode"]}
    assert entry["headers"]["ap-device-identifier"] == DEVICE_ID
    assert sim.violations() == []


def test_authorize_and_logout(sim):
    token = access_token(sim)
    sim.post("/_sim/pass/login", json={"serviceProvider": SP, "mvpd": "Comcast_SSO", "ttlSeconds": 600})
    r = sim.post(f"/api/v2/{SP}/decisions/authorize/Comcast_SSO", json={"resources": ["live"]},
                 headers=pass_headers(token))
    assert r.status_code == 200, r.text
    decision = r.json()["decisions"][0]
    assert decision["authorized"] is True and base64.b64decode(decision["token"]["serializedToken"])
    assert decision["token"]["notBefore"] < decision["token"]["notAfter"]

    r = sim.get(f"/api/v2/{SP}/logout/Comcast_SSO", params={"redirectUrl": "https://adobe.com"},
                headers=pass_headers(token))
    logout = r.json()["logouts"]["Comcast_SSO"]
    assert (logout["actionName"], logout["actionType"], logout["mvpd"]) == ("logout", "interactive", "Comcast_SSO")
    assert "redirect_url=https%3A%2F%2Fadobe.com" in logout["url"]
    again = sim.get(f"/api/v2/{SP}/logout/Comcast_SSO", headers=pass_headers(token)).json()["logouts"]["Comcast_SSO"]
    assert (again["actionName"], again["actionType"]) == ("invalid", "none")
    assert sim.violations() == []


def test_access_token_problems_are_401(sim):
    token = access_token(sim)
    assert sim.get(f"/api/v2/{SP}/profiles", headers=pass_headers(token)).status_code == 200
    assert sim.post("/_sim/pass/tokens/revoke").json()["revoked"] == 1
    r = sim.get(f"/api/v2/{SP}/profiles", headers=pass_headers(token))
    assert r.status_code == 401
    assert_enhanced_error(r.json(), 401, "invalid_access_token_client_application", "application-registration")
    assert sim.last_request()["note"] == "revoked access token"

    r = preauthorize(sim, "never-issued", ["r1"])
    assert r.status_code == 401 and sim.last_request()["note"] == "unknown access token"

    r = sim.get(f"/api/v2/{SP}/profiles", headers=pass_headers(None))
    assert r.status_code == 401
    assert any("Authorization" in m for m in sim.violations()[-1]["messages"])

    sim.post("/_sim/pass/tokens", json={"expiresIn": 1})
    short = access_token(sim)
    assert sim.get(f"/api/v2/{SP}/profiles", headers=pass_headers(short)).status_code == 200
    time.sleep(1.1)
    r = sim.get(f"/api/v2/{SP}/profiles", headers=pass_headers(short))
    assert r.status_code == 401 and sim.last_request()["note"] == "expired access token"


def test_device_headers_are_required_and_checked(sim):
    token = access_token(sim)
    headers = pass_headers(token)
    del headers["AP-Device-Identifier"]
    r = sim.get(f"/api/v2/{SP}/profiles", headers=headers)
    assert_enhanced_error(r.json(), 400, "invalid_header_device_identifier", "none")
    assert any("AP-Device-Identifier" in m for m in sim.violations()[-1]["messages"])

    r = sim.get(f"/api/v2/{SP}/profiles", headers=pass_headers(token, **{"AP-Device-Identifier": "serial 123"}))
    assert_enhanced_error(r.json(), 400, "invalid_header_device_identifier", "none")

    r = sim.get(f"/api/v2/{SP}/profiles", headers=pass_headers(token, **{"X-Device-Info": "%%%"}))
    assert_enhanced_error(r.json(), 400, "invalid_header_device_info", "none")

    thin = base64.b64encode(json.dumps({"model": "PF-100"}).encode()).decode()
    r = sim.get(f"/api/v2/{SP}/profiles", headers=pass_headers(token, **{"X-Device-Info": thin}))
    assert r.status_code == 200
    assert any("osVersion" in m for m in sim.violations()[-1]["messages"])

    r = sim.post(f"/api/v2/{SP}/decisions/preauthorize/Cablevision", data="resources=a",
                 headers=pass_headers(token, **{"Content-Type": "application/x-www-form-urlencoded"}))
    assert_enhanced_error(r.json(), 400, "invalid_parameter_resources", "none")
    r = sim.post(f"/api/v2/{SP}/decisions/preauthorize/Cablevision", json={"resources": []},
                 headers=pass_headers(token))
    assert_enhanced_error(r.json(), 400, "invalid_parameter_resources", "none")


def test_rate_limit_answers_429_html_with_retry_after(sim):
    token = access_token(sim)
    limits = sim.post("/_sim/pass/ratelimit", json={"enabled": True, "perSecond": 1, "burst": 10}).json()
    assert limits["enabled"] is True
    statuses = [sim.get(f"/api/v2/{SP}/profiles", headers=pass_headers(token)).status_code for _ in range(11)]
    assert statuses == [200] * 11
    r = sim.get(f"/api/v2/{SP}/profiles", headers=pass_headers(token))
    assert r.status_code == 429
    assert r.headers["Content-Type"] == "text/html"
    assert "<title>429 Too Many Requests</title>" in r.text
    assert 1 <= int(r.headers["Retry-After"]) <= 1
    other_device = pass_headers(token, **{"AP-Device-Identifier": "fingerprint " + base64.b64encode(b"x").decode()})
    assert sim.get(f"/api/v2/{SP}/profiles", headers=other_device).status_code == 200
    assert sim.get("/_sim/stats").json()["rateLimited"] == 1
    assert sim.get("/_sim/pass/state").json()["rateLimit"]["limitedByClient"] == {DEVICE_ID: 1}
    sim.post("/_sim/pass/ratelimit", json={"enabled": False})
    assert sim.get(f"/api/v2/{SP}/profiles", headers=pass_headers(token)).status_code == 200


def test_spec_operations_not_simulated_still_route(sim):
    token = access_token(sim)
    r = sim.post(f"/api/v2/{SP}/sessions/sso/Apple", data={},
                 headers=pass_headers(token, **{"Content-Type": "application/x-www-form-urlencoded"}))
    assert r.status_code == 501 and r.json()["details"]
    assert sim.last_request()["operation"] == "retrieveVerificationTokenUsingPOST"
    r = sim.get("/api/v2/a/b/c/d/e", headers=pass_headers(token))
    assert r.status_code == 404
    assert "no operation in the spec" in sim.violations()[-1]["messages"][0]
    r = sim.post(f"/api/v2/{SP}/profiles", headers=pass_headers(token))
    assert r.status_code == 405 and r.headers["Allow"] == "GET"
    r = sim.get(f"/api/v2/{SP}/configuration/", headers=pass_headers(token))
    assert r.status_code == 200 and sim.last_request()["operation"] == "configuration"
    assert "trailing slash" in sim.violations()[-1]["messages"][0]


def test_documented_requirements_are_recorded_but_served(sim):
    client = register(sim)
    r = sim.post("/o/client/token", data={"client_id": client["client_id"], "client_secret": client["client_secret"],
                                          "grant_type": "client_credentials"})  # no X-Device-Info
    assert r.status_code == 201
    violation = sim.violations()[-1]
    assert violation["operation"] == "token" and violation["messages"][0].startswith("docs:")
    assert sim.last_request()["valid"] is False


def test_reset_forgets_registrations_logins_and_limits(sim):
    client = register(sim)
    sim.post("/_sim/pass/login", json={"serviceProvider": SP, "mvpd": "Cablevision"})
    sim.post("/_sim/pass/ratelimit", json={"enabled": True})
    sim.reset()
    state = sim.get("/_sim/pass/state").json()
    assert state["registrations"] == [] and state["logins"] == [] and state["rateLimit"]["enabled"] is False
    r = sim.post("/o/client/token", data={"client_id": client["client_id"], "client_secret": client["client_secret"],
                                          "grant_type": "client_credentials"}, headers={"X-Device-Info": X_DEVICE_INFO})
    assert r.json() == {"error": "invalid_client"}


def test_no_response_violations_in_this_module(sim):
    sim.collect_response_violations()
    assert sim.response_violations == []

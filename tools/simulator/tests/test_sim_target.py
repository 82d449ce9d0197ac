"""Target Delivery API as the simulator serves it, checked over real HTTP."""

from __future__ import annotations

import base64
import hashlib
import http.client
import json
import re

from simharness import clean_sim, sim  # noqa: F401 - fixtures
from simharness import SPECS, delivery_url, epoch_ms, mobile_context, requires_specs

# Without the shared specs the simulator cannot tell a conforming request from a broken one.
pytestmark = requires_specs

TNT_ID = re.compile(r"^[0-9a-f]{32}\.35_0$")


def prefetch_request(*names: str) -> dict:
    """A prefetch request shaped like the mobile SDK's targetPrefetchContent."""
    return {
        "requestId": "8f3a3c1e-0b7c-4c39-9a53-4b8e2c7f1d10",
        "context": mobile_context(),
        "experienceCloud": {"analytics": {"logging": "client_side"}},
        "prefetch": {"mboxes": [{
            "index": i,
            "name": name,
            "parameters": {"status": "platinum"},
            "profileParameters": {"age": "20-32"},
            "product": {"id": "24D3412", "categoryId": "Books"},
            "order": {"id": "ADCKKIM", "total": 344.30, "purchasedProductIds": ["34", "125", "99"]},
        } for i, name in enumerate(names, start=1)]},
    }


def test_health_reports_validation_against_the_shared_specs(sim):
    health = sim.get("/health").json()
    assert health["status"] == "ok"
    assert health["validating"] is True
    assert health["specs"] == str(SPECS)
    assert health["version"]
    assert any("MboxRequest" in o for o in health["overlays"])


def test_prefetch_like_a_mobile_sdk_gets_options_tokens_state_and_a_visitor(sim):
    r = sim.post(delivery_url(), json=prefetch_request("logo", "buttonColor", "unknownMbox"))
    assert r.status_code == 200, r.text
    assert r.headers["Content-Type"].startswith("application/json")
    body = r.json()
    assert body["status"] == 200
    assert body["requestId"] == "8f3a3c1e-0b7c-4c39-9a53-4b8e2c7f1d10"
    assert body["client"] == "demo"
    assert TNT_ID.match(body["id"]["tntId"])
    assert body["edgeHost"] == "mboxedge35.tt.omtrdc.net"

    offers = sim.get("/_sim/target/offers").json()["offers"]
    logo, button, unknown = body["prefetch"]["mboxes"]
    assert (logo["index"], logo["name"]) == (1, "logo")
    assert logo["options"] == offers["logo"]["options"]
    assert logo["options"][0]["type"] == "html"
    assert logo["options"][0]["content"] == '<img src="https://example.com/logo-platinum.png">'
    assert logo["options"][0]["eventToken"]
    assert logo["state"] == offers["logo"]["state"]
    assert button["options"][0] == {"type": "json", "content": {"color": "blue"},
                                    "eventToken": offers["buttonColor"]["options"][0]["eventToken"]}
    assert unknown["name"] == "unknownMbox" and "options" not in unknown

    entry = sim.last_request()
    assert (entry["service"], entry["operation"], entry["status"]) == ("target", "delivery", 200)
    assert entry["valid"] is True and entry["violations"] == []
    assert entry["query"] == {"client": "demo", "sessionId": "a1b2c3d4e5f6", "version": "5.0.0"}
    assert entry["headers"]["content-type"].startswith("application/json")
    assert entry["body"]["prefetch"]["mboxes"][0]["name"] == "logo"
    assert sim.get("/_sim/stats").json()["prefetched"] == {"logo": 1, "buttonColor": 1, "unknownMbox": 1}
    assert sim.violations() == []


def test_tokens_and_state_are_deterministic_per_mbox_and_offer(sim):
    first = sim.post(delivery_url(), json=prefetch_request("logo")).json()["prefetch"]["mboxes"][0]
    second = sim.post(delivery_url("other-session"), json=prefetch_request("logo")).json()["prefetch"]["mboxes"][0]
    assert first["options"][0]["eventToken"] == second["options"][0]["eventToken"]
    assert first["state"] == second["state"]
    sim.put("/_sim/target/offers/logo", json={"type": "html", "content": "<img src=\"gold.png\">"})
    third = sim.post(delivery_url(), json=prefetch_request("logo")).json()["prefetch"]["mboxes"][0]
    assert third["options"][0]["eventToken"] != first["options"][0]["eventToken"]
    assert third["state"] != first["state"]


def test_a_visitor_id_sent_is_echoed(sim):
    request = prefetch_request("logo")
    request["id"] = {"tntId": "d359234570e04f14e1faeeba02d6ab9914e.28_7", "marketingCloudVisitorId": "2304820394812039"}
    body = sim.post(delivery_url(), json=request).json()
    assert body["id"] == request["id"]
    request["id"] = {"marketingCloudVisitorId": "2304820394812039"}
    body = sim.post(delivery_url(), json=request).json()
    assert body["id"]["marketingCloudVisitorId"] == "2304820394812039" and TNT_ID.match(body["id"]["tntId"])


def test_ims_org_id_is_accepted_in_place_of_client(sim):
    r = sim.post("/rest/v1/delivery?imsOrgId=ABC123@AdobeOrg&sessionId=s1", json=prefetch_request("logo"))
    assert r.status_code == 200
    assert sim.violations() == []


def test_invalid_delivery_requests_get_target_400_and_a_recorded_violation(sim):
    cases = {
        "tv channel": (delivery_url(), {"context": {"channel": "tv"}}, "channel"),
        "no context": (delivery_url(), {"prefetch": {"mboxes": [{"index": 1, "name": "logo"}]}}, "context"),
        "mbox without name": (delivery_url(), {"context": {"channel": "web"},
                                               "prefetch": {"mboxes": [{"index": 1}]}}, "name"),
        "number parameter": (delivery_url(), {"context": {"channel": "web"}, "execute": {"mboxes": [
            {"index": 1, "name": "logo", "parameters": {"n": 1}}]}}, "parameters"),
        "no sessionId": ("/rest/v1/delivery?client=demo", {"context": {"channel": "web"}}, "sessionId"),
        "reserved mbox parameter": (delivery_url(), {"context": {"channel": "web"}, "prefetch": {"mboxes": [
            {"index": 1, "name": "logo", "parameters": {"orderId": "1"}}]}}, "orderId"),
        "profile. parameter": (delivery_url(), {"context": {"channel": "web"}, "prefetch": {"mboxes": [
            {"index": 1, "name": "logo", "profileParameters": {"profile.age": "1"}}]}}, "profile."),
        "notification without timestamp": (delivery_url(), {"context": {"channel": "web"}, "notifications": [
            {"id": "n1", "type": "display", "mbox": {"name": "logo"}}]}, "timestamp"),
    }
    for label, (url, body, word) in cases.items():
        before = len(sim.violations())
        r = sim.post(url, json=body)
        assert r.status_code == 400, label
        error = r.json()
        assert error["status"] == 400 and word in error["message"], (label, error)
        violations = sim.violations()
        assert len(violations) == before + 1, label
        assert violations[-1]["kind"] == "request" and violations[-1]["operation"] == "delivery"
        assert any(word in m for m in violations[-1]["messages"]), (label, violations[-1])
        entry = sim.last_request()
        assert entry["valid"] is False and entry["status"] == 400

    r = sim.post(delivery_url(), data=b"{not json", headers={"Content-Type": "application/json"})
    assert r.status_code == 400 and r.json()["status"] == 400


def test_execute_returns_content_and_counts(sim):
    body = {"context": mobile_context(), "execute": {"mboxes": [
        {"index": 1, "name": "hero", "parameters": {"status": "platinum"}},
        {"index": 2, "name": "nothingHere"},
    ]}}
    r = sim.post(delivery_url(), json=body)
    assert r.status_code == 200, r.text
    hero, nothing = r.json()["execute"]["mboxes"]
    assert hero["name"] == "hero" and hero["options"][0]["type"] == "html"
    assert "<h1>" in hero["options"][0]["content"] and hero["options"][0]["eventToken"]
    assert nothing == {"index": 2, "name": "nothingHere"}
    assert "prefetch" not in r.json()
    assert sim.get("/_sim/stats").json()["executed"] == {"hero": 1, "nothingHere": 1}


def test_notifications_are_acknowledged_by_id_and_recorded(sim):
    logo = sim.post(delivery_url(), json=prefetch_request("logo")).json()["prefetch"]["mboxes"][0]
    token, state = logo["options"][0]["eventToken"], logo["state"]
    # A well-formed token this process did not issue (an earlier simulator's, for an offer since changed) is
    # accepted and recorded as not issued.
    elsewhere = base64.b64encode(hashlib.sha256(b"an earlier offer").digest()).decode()
    now = epoch_ms()
    body = {"context": mobile_context(), "notifications": [
        {"id": "logo-display-1", "type": "display", "timestamp": now - 1000,
         "mbox": {"name": "logo", "state": state}, "tokens": [token], "parameters": {"status": "platinum"}},
        {"id": "logo-display-2", "type": "display", "timestamp": now - 500, "mbox": {"name": "logo"},
         "tokens": [elsewhere]},
    ]}
    r = sim.post(delivery_url(), json=body)
    assert r.status_code == 200, r.text
    assert r.json()["notifications"] == [{"id": "logo-display-1"}, {"id": "logo-display-2"}]
    seq = sim.last_request()["seq"]

    recorded = sim.get("/_sim/target/notifications").json()
    assert recorded["count"] == 2
    first, second = recorded["notifications"]
    assert first["seq"] == seq and first["id"] == "logo-display-1" and first["mbox"] == "logo"
    assert first["tokens"] == [token] and first["state"] == state
    assert first["tokensIssued"] is True and first["stateIssued"] is True
    assert first["parameters"] == {"status": "platinum"} and first["timestamp"] == now - 1000
    assert second["tokensIssued"] is False and second["stateIssued"] is False
    assert sim.get("/_sim/stats").json()["notifications"] == 2


def test_prefetch_execute_and_notifications_in_one_call(sim):
    # A click notification carries the click token of its mbox's offer (see test_sim_target_parity.py).
    hero = sim.put("/_sim/target/offers/hero", json={"type": "html", "content": "<p>hero</p>", "clickMetric": True})
    click = hero.json()["offers"]["hero"]["metrics"][0]["eventToken"]
    body = prefetch_request("logo")
    body["execute"] = {"mboxes": [{"index": 1, "name": "buttonColor"}]}
    body["notifications"] = [{"id": "n-1", "type": "click", "timestamp": epoch_ms(), "mbox": {"name": "hero"},
                              "tokens": [click]}]
    document = sim.post(delivery_url(), json=body).json()
    assert document["prefetch"]["mboxes"][0]["name"] == "logo"
    assert document["execute"]["mboxes"][0]["options"][0]["content"] == {"color": "blue"}
    assert document["notifications"] == [{"id": "n-1"}]


def test_offers_control(sim):
    r = sim.put("/_sim/target/offers/promo", json={"options": [{"type": "html", "content": "<b>50% off</b>"},
                                                               {"type": "json", "content": {"a": 1}}]})
    assert r.status_code == 200, r.text
    described = sim.get("/_sim/target/offers").json()["offers"]["promo"]
    promo = sim.post(delivery_url(), json=prefetch_request("promo")).json()["prefetch"]["mboxes"][0]
    assert [o["content"] for o in promo["options"]] == ["<b>50% off</b>", {"a": 1}]
    assert promo["options"] == described["options"] and promo["state"] == described["state"]

    assert sim.delete("/_sim/target/offers/promo").status_code == 200
    assert "options" not in sim.post(delivery_url(), json=prefetch_request("promo")).json()["prefetch"]["mboxes"][0]
    assert sim.delete("/_sim/target/offers/promo").status_code == 404

    r = sim.put("/_sim/target/offers", json={"only": {"type": "json", "content": {"x": True}}})
    assert r.status_code == 200
    assert set(sim.get("/_sim/target/offers").json()["offers"]) == {"only"}
    assert "options" not in sim.post(delivery_url(), json=prefetch_request("logo")).json()["prefetch"]["mboxes"][0]

    tokens = {"activity.id": "181024", "experience.name": "Experience B", "option.id": "2"}
    assert sim.put("/_sim/target/offers/tokens", json={"type": "html", "content": "<p/>",
                                                       "responseTokens": tokens}).status_code == 200
    served = sim.post(delivery_url(), json=prefetch_request("tokens")).json()["prefetch"]["mboxes"][0]
    assert served["options"][0]["responseTokens"] == tokens

    assert sim.put("/_sim/target/offers/bad", json={"type": "video", "content": "x"}).status_code == 400
    assert sim.put("/_sim/target/offers/bad", json={"type": "html", "content": {"no": "string"}}).status_code == 400

    sim.reset()
    assert set(sim.get("/_sim/target/offers").json()["offers"]) == {"logo", "buttonColor", "hero"}


def test_edge_host_is_configurable(sim):
    assert sim.put("/_sim/target/edgeHost", json={"edgeHost": "localhost"}).json() == {"edgeHost": "localhost"}
    assert sim.post(delivery_url(), json=prefetch_request("logo")).json()["edgeHost"] == "localhost"
    sim.reset()
    assert sim.get("/_sim/target/edgeHost").json() == {"edgeHost": "mboxedge35.tt.omtrdc.net"}


def test_beacon_requests_get_204(sim):
    body = {"context": {"channel": "web", "beacon": True},
            "notifications": [{"id": "b1", "type": "display", "timestamp": epoch_ms(), "mbox": {"name": "logo"}}]}
    r = sim.post(delivery_url(), json=body)
    assert r.status_code == 204 and r.content == b""


def test_keep_alive_serves_several_requests_on_one_connection(sim):
    conn = http.client.HTTPConnection("127.0.0.1", sim.port, timeout=5)
    for _ in range(3):
        conn.request("POST", delivery_url(), body=json.dumps(prefetch_request("logo")),
                     headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        assert response.status == 200
        assert int(response.getheader("Content-Length")) == len(response.read())
        assert response.getheader("Connection") is None
    sock = conn.sock
    conn.request("GET", "/health")
    assert conn.getresponse().read()
    assert conn.sock is sock
    conn.close()


def test_request_log_filters_and_clears(sim):
    sim.post(delivery_url(), json=prefetch_request("logo"))
    sim.get("/api/v2/REF30/configuration")
    entries = sim.requests_log()
    assert [e["service"] for e in entries] == ["target", "pass"]
    assert [e["service"] for e in sim.requests_log(service="target")] == ["target"]
    assert sim.requests_log(since=entries[0]["seq"])[0]["seq"] == entries[1]["seq"]
    assert sim.delete("/_sim/requests").status_code == 200
    assert sim.requests_log() == []


def test_no_response_violations_in_this_module(sim):
    sim.collect_response_violations()
    assert sim.response_violations == []

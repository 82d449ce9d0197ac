"""On-device decisioning in loads: with `target.decisioningMethod` on-device or hybrid and a rules artifact held,
`loadRequests` misses the artifact decides are answered on the box (`source: "on-device"`), their display
notifications queued as a cached load's are; the others go to Target in one call. A real preflightd and
preflight-sim (Target's Delivery API and CDN); Adobe's AB_SIMPLE artifact, read from ../shared at run time."""

import json

from agent_harness import ok, request, wait_until
from test_target_artifact import (  # noqa: F401  (setup: the fixture)
    AB_SIMPLE, artifact_status, reload_and_wait_for_fetch, setup)

MAGICIAN = {"requests": [{"name": "mbox-magician", "defaultContent": "d"}]}


def held(setup, **extra):
    setup.sim.call("PUT", "/_sim/target/artifact", json.loads(AB_SIMPLE.read_text()))
    agent = setup.start(notificationBatchAge=0.2, **extra)
    wait_until("the artifact", lambda: artifact_status(agent)["lastFetchResult"] == "updated", timeout=30)
    return agent


def delivery_calls(sim):
    return len(sim.call("GET", "/_sim/target/visitors")["requests"])


def displays(sim):
    return sim.call("GET", "/_sim/target/notifications?type=display")["notifications"]


def test_an_mbox_the_artifact_decides_is_answered_on_the_box_and_counted(setup):
    agent = held(setup)
    calls = delivery_calls(setup.sim)
    content = ok(request(agent.app, "loadRequests", MAGICIAN))["contents"][0]
    assert content["source"] == "on-device", content
    # Either experience of the A/B activity, by where this visitor falls in its allocation.
    assert "doMagic" in json.loads(content["content"])
    assert delivery_calls(setup.sim) == calls  # decided with no call to Target
    # Its impression reaches Target as a cached load's does, with the artifact's event token.
    wait_until("the impression at Target", lambda: len(displays(setup.sim)) == 1)
    note = displays(setup.sim)[0]
    assert note["mbox"] == "mbox-magician" and note["tokens"]
    assert ok(request(agent.admin, "stats"))["offers"]["defaultsByReason"] == {}


def test_with_target_unreachable_on_device_mboxes_still_get_offers_and_their_notifications_wait(setup):
    agent = held(setup)
    setup.sim.call("POST", "/_sim/faults", {"path": "/rest/v1/delivery", "drop": True})
    for _ in range(3):
        assert ok(request(agent.app, "loadRequests", MAGICIAN))["contents"][0]["source"] == "on-device"
    # An mbox only Target decides gets its default content.
    other = ok(request(agent.app, "loadRequests", {"requests": [{"name": "logo", "defaultContent": "d"}]}))
    assert other["contents"][0]["source"] == "default"
    wait_until("three impressions queued", lambda: ok(request(agent.admin, "notifications.status"))["queued"] >= 3)
    setup.sim.call("DELETE", "/_sim/faults")
    ok(request(agent.admin, "notifications.flush", timeout_ms=30000))
    wait_until("the impressions at Target", lambda: len(displays(setup.sim)) == 3, timeout=60)


def test_hybrid_sends_one_call_for_the_mboxes_the_artifact_does_not_decide(setup):
    agent = held(setup, decisioningMethod="hybrid")
    since = setup.sim.call("GET", "/_sim/requests")["lastSeq"]
    load = {"requests": [{"name": "mbox-magician", "defaultContent": "d"}, {"name": "logo", "defaultContent": "d"},
                         {"name": "hero", "defaultContent": "d"}]}
    sources = [c["source"] for c in ok(request(agent.app, "loadRequests", load))["contents"]]
    assert sources == ["on-device", "network", "network"]
    entries = setup.sim.call("GET", f"/_sim/requests?since={since}&service=target")["requests"]
    executes = [e["body"]["execute"] for e in entries if e["path"] == "/rest/v1/delivery" and "execute" in e["body"]]
    assert [sorted(m["name"] for m in execute["mboxes"]) for execute in executes] == [["hero", "logo"]]


def test_a_prefetch_of_mboxes_the_artifact_decides_caches_them_without_a_call(setup):
    agent = held(setup)
    calls = delivery_calls(setup.sim)
    assert ok(request(agent.app, "prefetch", {"mboxes": [{"name": "mbox-magician"}]}))["mboxes"] == [
        {"name": "mbox-magician", "cached": True}]
    assert delivery_calls(setup.sim) == calls
    assert ok(request(agent.app, "loadRequests", MAGICIAN))["contents"][0]["source"] == "cache"
    wait_until("the cached load's impression at Target", lambda: len(displays(setup.sim)) == 1)
    assert displays(setup.sim)[0]["mbox"] == "mbox-magician"


def test_before_any_artifact_on_device_asks_nothing_and_hybrid_asks_target(setup):
    setup.sim.call("DELETE", "/_sim/target/artifact")
    agent = setup.start()
    wait_until("a fetch that found nothing", lambda: artifact_status(agent)["lastFetchResult"] == "httpError", timeout=30)
    load = ok(request(agent.app, "loadRequests", {"requests": [{"name": "logo", "defaultContent": "d"}]}))
    assert load["contents"][0] == {"name": "logo", "content": "d", "source": "default"}
    assert ok(request(agent.app, "prefetch", {"mboxes": [{"name": "logo"}]}))["success"] is False
    assert delivery_calls(setup.sim) == 0
    assert ok(request(agent.admin, "stats"))["offers"]["defaultsByReason"] == {"noArtifact": 1}


def test_before_any_artifact_hybrid_behaves_as_server_side(setup):
    setup.sim.call("DELETE", "/_sim/target/artifact")
    agent = setup.start(decisioningMethod="hybrid")
    load = ok(request(agent.app, "loadRequests", {"requests": [{"name": "logo", "defaultContent": "d"}]}))
    assert load["contents"][0]["source"] == "network"


def test_an_opted_out_box_decides_nothing_on_the_box_either(setup):
    agent = held(setup)
    ok(request(agent.admin, "target.privacy", {"status": "optedOut"}, timeout_ms=20000))
    assert ok(request(agent.app, "loadRequests", MAGICIAN))["contents"][0] == {
        "name": "mbox-magician", "content": "d", "source": "default"}
    assert ok(request(agent.admin, "notifications.status"))["queued"] == 0


def test_a_visitor_without_an_id_keeps_the_tnt_id_the_box_gave_it_and_each_load_its_own_impression(setup):
    agent = held(setup)
    assert ok(request(agent.app, "getTntId")) == {"tntId": None}
    contents = [ok(request(agent.app, "loadRequests", MAGICIAN))["contents"][0] for _ in range(4)]
    # One visitor, one experience: the first decision's tntId is kept, so every load falls alike.
    tnt_id = ok(request(agent.app, "getTntId"))["tntId"]
    assert tnt_id
    assert all(c == contents[0] and c["source"] == "on-device" for c in contents), contents
    assert ok(request(agent.admin, "stats"))["offers"]["onDeviceLoads"] == 4
    wait_until("four impressions at Target", lambda: len(displays(setup.sim)) == 4)
    notes = displays(setup.sim)
    assert len({n["id"] for n in notes}) == 4 and len({n["impressionId"] for n in notes}) == 4
    assert all(n["impressionId"] and n["parameters"] is None for n in notes), notes
    # Sent under that visitor.
    assert {v["tntId"] for v in setup.sim.call("GET", "/_sim/target/visitors")["requests"]} == {tnt_id}


def test_new_rules_decide_the_next_load(setup):
    agent = held(setup)
    first = json.loads(ok(request(agent.app, "loadRequests", MAGICIAN))["contents"][0]["content"])
    artifact = json.loads(AB_SIMPLE.read_text())
    for rule in artifact["rules"]["mboxes"]["mbox-magician"]:
        for option in rule["consequence"]["options"]:
            option["content"] = {"doMagic": "second rules"}
    setup.sim.call("PUT", "/_sim/target/artifact", artifact)
    reload_and_wait_for_fetch(agent, artifact_status(agent)["lastFetchAtMs"])
    assert artifact_status(agent)["lastFetchResult"] == "updated"
    second = json.loads(ok(request(agent.app, "loadRequests", MAGICIAN))["contents"][0]["content"])
    assert first["doMagic"] != "second rules"
    assert second == {"doMagic": "second rules"}


def test_a_hybrid_prefetch_keeps_what_the_box_decided_when_target_fails_for_the_rest(setup):
    agent = held(setup, decisioningMethod="hybrid")
    setup.sim.call("POST", "/_sim/faults", {"path": "/rest/v1/delivery", "status": 503})
    result = ok(request(agent.app, "prefetch", {"mboxes": [{"name": "mbox-magician"}, {"name": "logo"}]}))
    assert result == {"success": False, "mboxes": [{"name": "mbox-magician", "cached": True},
                                                   {"name": "logo", "cached": False}]}
    assert ok(request(agent.app, "loadRequests", MAGICIAN))["contents"][0]["source"] == "cache"

"""Target offers end to end: pyzmq apps, a real preflightd, preflight-sim as the Delivery API."""

import json
import signal
import threading

import zmq

from agent_harness import ok, request, start_agent, stop_agent, wait_until

SEED_PREFETCH = {
    "mboxes": [
        {
            "name": "logo",
            "mboxParameters": {"status": "platinum"},
            "productParameters": {"id": "24D3412", "categoryId": "Books"},
            "orderParameters": {"id": "ADCKKIM", "total": "344.30", "purchasedProductIds": "34, 125, 99"},
        },
        {
            "name": "buttonColor",
            "mboxParameters": {"userType": "Paid"},
            "productParameters": {"id": "764334", "categoryId": "Online"},
            "orderParameters": {"id": "4t4uxksa", "total": "54.90", "purchasedProductIds": ["id1", "id2"]},
        },
    ],
    "profileParameters": {"age": "20-32"},
}

SEED_LOAD = {
    "requests": [
        {"name": "logo", "defaultContent": "BlueWhale", "mboxParameters": {"status": "platinum"}},
        {"name": "buttonColor", "defaultContent": "red"},
    ],
    "profileParameters": {"age": "20-32"},
}


def test_seed_example_prefetch_then_load_from_the_cache(target_env):
    sim, agent = target_env.sim, target_env.agent
    result = ok(request(agent.app, "prefetch", SEED_PREFETCH))
    assert result == {"success": True, "mboxes": [{"name": "logo", "cached": True}, {"name": "buttonColor", "cached": True}]}

    deliveries = sim.requests("delivery")
    assert len(deliveries) == 1
    body = deliveries[0]["body"]
    assert body["context"]["channel"] == "mobile"
    logo = body["prefetch"]["mboxes"][0]
    assert logo["index"] == 0 and logo["name"] == "logo"
    assert logo["parameters"] == {"status": "platinum"}
    assert logo["profileParameters"] == {"age": "20-32"}
    assert logo["product"] == {"id": "24D3412", "categoryId": "Books"}
    assert logo["order"] == {"id": "ADCKKIM", "total": 344.30, "purchasedProductIds": ["34", "125", "99"]}
    assert body["prefetch"]["mboxes"][1]["order"]["purchasedProductIds"] == ["id1", "id2"]
    assert deliveries[0]["query"]["client"] == "acme"
    assert deliveries[0]["headers"]["x-exc-sdk"] == "Preflight"

    offers = sim.call("GET", "/_sim/target/offers")
    contents = ok(request(agent.app, "loadRequests", SEED_LOAD))["contents"]
    assert [c["source"] for c in contents] == ["cache", "cache"]
    assert [c["name"] for c in contents] == ["logo", "buttonColor"]
    assert contents[0]["content"].startswith("<img")
    assert json.loads(contents[1]["content"]) == {"color": "blue"}
    # No execute call: served from the cache.
    assert all("execute" not in d["body"] for d in sim.requests("delivery"))

    def notified():
        return sim.call("GET", "/_sim/target/notifications")["count"] >= 2

    wait_until("display notifications at the simulator", notified)
    notes = sim.call("GET", "/_sim/target/notifications")["notifications"]
    by_mbox = {n["mbox"]: n for n in notes}
    assert set(by_mbox) == {"logo", "buttonColor"}
    for note in notes:
        assert note["type"] == "display"
        assert note["tokensIssued"] is True and note["stateIssued"] is True
    text = json.dumps(offers)
    assert by_mbox["logo"]["state"] in text


def test_a_miss_is_fetched_with_execute_and_not_cached(target_env):
    sim, agent = target_env.sim, target_env.agent
    contents = ok(request(agent.app, "loadRequests", {"requests": [{"name": "hero", "defaultContent": "d"}]}))["contents"]
    assert contents[0]["source"] == "network"
    assert contents[0]["content"] != "d"
    assert len([d for d in sim.requests("delivery") if "execute" in d["body"]]) == 1
    again = ok(request(agent.app, "loadRequests", {"requests": [{"name": "hero", "defaultContent": "d"}]}))
    assert again["contents"][0]["source"] == "network"
    assert len([d for d in sim.requests("delivery") if "execute" in d["body"]]) == 2


def test_each_failure_kind_gives_the_default_content(target_env):
    sim, agent = target_env.sim, target_env.agent
    # Faults that leave a call without an answer (drop, hang, truncated, reset) alternate with answers,
    # so that Target is never three unanswered calls in a row away from being marked down (which
    # test_field_faults.py tests) and each call here really goes out.
    faults = [
        {"status": 503},
        {"drop": True},
        {"malformed": True},
        {"hangMs": 4000},
        {"message": "bad request from the sim"},
        {"truncated": True},
        {"status": 502},
        {"resetMidBody": True},
    ]
    for index, fault in enumerate(faults):
        sim.call("POST", "/_sim/faults", {"path": "/rest/v1/delivery", "count": 1, **fault})
        reply = request(agent.app, "loadRequests", {"requests": [{"name": "hero", "defaultContent": f"default-{index}"}]})
        assert ok(reply)["contents"] == [{"name": "hero", "content": f"default-{index}", "source": "default"}], fault
        sim.call("DELETE", "/_sim/faults")
    # An mbox Target has no offer for also gets its default.
    reply = request(agent.app, "loadRequests", {"requests": [{"name": "nothing-here", "defaultContent": "dflt"}]})
    assert ok(reply)["contents"][0] == {"name": "nothing-here", "content": "dflt", "source": "default"}
    status = ok(request(agent.admin, "status"))
    assert status["target"]["loads"]["defaultsByReason"]["noContent"] == 1
    assert status["upstreams"]["target"]["errors"] >= 4


def test_ten_concurrent_clients_missing_the_same_mbox_make_one_call(target_env):
    sim, agent = target_env.sim, target_env.agent
    sim.call("POST", "/_sim/faults", {"path": "/rest/v1/delivery", "latencyMs": 800, "count": 1})
    results = []

    def load():
        results.append(request(agent.app, "loadRequests", {"requests": [{"name": "hero", "defaultContent": "d"}]}))

    threads = [threading.Thread(target=load) for _ in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 10
    assert all(ok(r)["contents"][0]["source"] == "network" for r in results)
    assert len([d for d in sim.requests("delivery") if "execute" in d["body"]]) == 1


def test_clear_prefetch_cache_empties_it(target_env):
    agent = target_env.agent
    ok(request(agent.app, "prefetch", SEED_PREFETCH))
    assert ok(request(agent.app, "clearPrefetchCache")) == {"cleared": 2}
    contents = ok(request(agent.app, "loadRequests", SEED_LOAD))["contents"]
    assert all(c["source"] != "cache" for c in contents)


def test_invalid_prefetch_sends_nothing_upstream(target_env):
    sim, agent = target_env.sim, target_env.agent
    reply = request(agent.app, "prefetch", {"mboxes": [{"name": "a", "mboxParameters": {"orderId": "1"}}]})
    assert reply["error"]["field"] == "mboxes[0].mboxParameters.orderId"
    assert sim.requests("delivery") == []


def test_tnt_id_is_learned_kept_and_sent(target_env):
    sim, agent = target_env.sim, target_env.agent
    ok(request(agent.app, "prefetch", SEED_PREFETCH))
    ok(request(agent.app, "prefetch", SEED_PREFETCH))
    first, second = sim.requests("delivery")[:2]
    assert "tntId" not in first["body"].get("id", {})
    assert second["body"]["id"]["tntId"].endswith(".35_0")
    assert second["query"]["sessionId"] == first["query"]["sessionId"]
    status = ok(request(agent.admin, "status"))
    assert status["target"]["visitor"]["tntId"] == second["body"]["id"]["tntId"]


def _pending_notifications_survive(target_env, sig):
    sim, folder = target_env.sim, target_env.folder
    agent = target_env.agent
    ok(request(agent.app, "prefetch", SEED_PREFETCH))
    # Target is down: the notifications of these loads cannot be delivered.
    sim.call("POST", "/_sim/faults", {"path": "/rest/v1/delivery", "status": 503})
    for _ in range(3):
        ok(request(agent.app, "loadRequests", SEED_LOAD))
    stop_agent(agent, sig)
    assert sim.call("GET", "/_sim/target/notifications")["count"] == 0
    sim.call("DELETE", "/_sim/faults")
    target_env.agent = start_agent(
        folder, target={"serverURL": sim.url, "notificationBatchAge": 0.2, "timeout": 2}
    )
    wait_until("all six notifications to reach Target", lambda: sim.call("GET", "/_sim/target/notifications")["count"] >= 6)
    notes = sim.call("GET", "/_sim/target/notifications")["notifications"]
    assert len({n["id"] for n in notes}) == 6


def test_sigterm_with_pending_notifications_loses_none(target_env):
    _pending_notifications_survive(target_env, signal.SIGTERM)


def test_sigkill_with_pending_notifications_loses_none(target_env):
    _pending_notifications_survive(target_env, signal.SIGKILL)


def test_prefetch_and_upstream_errors_are_published_as_events(target_env):
    sim, agent = target_env.sim, target_env.agent
    subscriber = zmq.Context.instance().socket(zmq.SUB)
    subscriber.setsockopt(zmq.LINGER, 0)
    subscriber.setsockopt(zmq.SUBSCRIBE, b"")
    subscriber.connect(agent.events)
    events = []

    def drain():
        while subscriber.poll(50):
            topic, body = subscriber.recv_multipart()
            events.append((topic.decode(), json.loads(body)))

    try:
        # PUB drops what is published before the subscription arrives: prefetch until one is seen.
        def prefetched():
            ok(request(agent.app, "prefetch", {"mboxes": [{"name": "logo"}, {"name": "nothing-here"}]}))
            drain()
            return any(topic == "offers.prefetched" for topic, _ in events)

        wait_until("offers.prefetched", prefetched)
        body = next(body for topic, body in events if topic == "offers.prefetched")
        assert body["mboxes"] == ["logo", "nothing-here"] and body["cached"] == ["logo"]
        assert body["topic"] == "offers.prefetched"
        sim.call("POST", "/_sim/faults", {"path": "/rest/v1/delivery", "status": 502, "count": 1})
        reply = ok(request(agent.app, "prefetch", {"mboxes": [{"name": "logo"}]}))
        assert reply == {"success": False, "mboxes": [{"name": "logo", "cached": False}]}

        def upstream_error():
            drain()
            return any(topic == "upstream.error" for topic, _ in events)

        wait_until("upstream.error", upstream_error)
        error = next(body for topic, body in events if topic == "upstream.error")
        assert error["service"] == "target" and error["operation"] == "prefetch" and error["code"] == "status"
    finally:
        subscriber.close()

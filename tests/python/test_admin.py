"""The admin commands over the admin endpoint, against a real agent and simulator."""

import json

import pytest

from agent_harness import TEST_SOFTWARE_STATEMENT, ok, request, wait_until

PREFETCH = {"mboxes": [{"name": "logo"}, {"name": "buttonColor"}]}
ADMIN_COMMANDS = ["status", "stats", "offers.list", "offers.show", "offers.clear", "notifications.status",
                  "notifications.flush", "config.show"]


@pytest.mark.parametrize("command", ADMIN_COMMANDS)
def test_admin_commands_are_refused_on_the_app_endpoint(agent, command):
    reply = request(agent.app, command, {"name": "logo"})
    assert reply["error"]["code"] == "not_permitted"


def test_offers_list_show_and_clear(target_env):
    agent = target_env.agent
    ok(request(agent.app, "prefetch", PREFETCH))
    ok(request(agent.app, "loadRequests", {"requests": [{"name": "logo", "defaultContent": "x"}]}))
    offers = ok(request(agent.admin, "offers.list"))["offers"]
    assert [o["name"] for o in offers] == ["logo", "buttonColor"]  # most recently used first
    logo = offers[0]
    assert logo["hits"] == 1 and logo["tokens"] == 1 and logo["options"] == 1 and logo["bytes"] > 0
    assert logo["ageMs"] >= 0
    shown = ok(request(agent.admin, "offers.show", {"name": "buttonColor"}))
    assert shown["options"][0]["type"] == "json"
    assert shown["options"][0]["content"] == {"color": "blue"}
    assert shown["state"] and shown["options"][0]["eventToken"]
    missing = request(agent.admin, "offers.show", {"name": "nope"})
    assert missing["error"]["code"] == "invalid_argument" and missing["error"]["field"] == "name"
    assert ok(request(agent.admin, "offers.clear", {"name": "logo"})) == {"cleared": 1}
    assert [o["name"] for o in ok(request(agent.admin, "offers.list"))["offers"]] == ["buttonColor"]
    assert ok(request(agent.admin, "offers.clear")) == {"cleared": 1}


def test_stats_has_percentiles_hit_ratio_and_resets(target_env):
    agent = target_env.agent
    ok(request(agent.app, "prefetch", PREFETCH))
    for _ in range(3):
        ok(request(agent.app, "loadRequests", {"requests": [{"name": "logo", "defaultContent": "x"}]}))
    ok(request(agent.app, "loadRequests", {"requests": [{"name": "nothing", "defaultContent": "x"}]}))
    request(agent.app, "prefetch", {"mboxes": []})
    stats = ok(request(agent.admin, "stats", {"reset": True}))
    loads = stats["commands"]["loadRequests"]
    assert loads["count"] == 4
    assert 0 <= loads["p50Ms"] <= loads["p90Ms"] <= loads["p99Ms"]
    assert stats["commands"]["prefetch"]["errors"] == {"invalid_argument": 1}
    assert stats["offers"]["hits"] == 3 and stats["offers"]["misses"] == 1
    assert stats["offers"]["hitRatio"] == pytest.approx(0.75)
    assert stats["offers"]["defaultsByReason"] == {"noContent": 1}
    assert stats["upstreams"]["target"]["calls"] >= 2
    assert stats["upstreams"]["target"]["latency"]["p50Ms"] > 0
    after = ok(request(agent.admin, "stats"))
    assert "loadRequests" not in after["commands"]
    assert after["offers"]["hits"] == 0


def test_notifications_status_and_flush(target_env):
    sim, agent = target_env.sim, target_env.agent
    ok(request(agent.app, "prefetch", PREFETCH))
    sim.call("POST", "/_sim/faults", {"path": "/rest/v1/delivery", "status": 503})
    ok(request(agent.app, "loadRequests", {"requests": [{"name": "logo", "defaultContent": "x"}]}))
    wait_until(
        "a failed notification attempt",
        lambda: ok(request(agent.admin, "notifications.status"))["failedAttempts"] >= 1,
    )
    status = ok(request(agent.admin, "notifications.status"))
    assert status["queued"] == 1 and "503" in status["lastError"]
    sim.call("DELETE", "/_sim/faults")
    flushed = ok(request(agent.admin, "notifications.flush"))
    assert flushed["confirmed"] == 1 and flushed["queued"] == 0
    assert sim.call("GET", "/_sim/target/notifications")["count"] == 1


def test_config_show_redacts_the_software_statement(target_env):
    agent = target_env.agent
    shown = ok(request(agent.admin, "config.show"))
    assert shown["target"]["serverURL"] == target_env.sim.url
    assert shown["pass"]["softwareStatement"] == f"(redacted, {len(TEST_SOFTWARE_STATEMENT)} characters)"
    assert TEST_SOFTWARE_STATEMENT not in json.dumps(shown)
    assert TEST_SOFTWARE_STATEMENT not in json.dumps(ok(request(agent.admin, "status")))
    assert shown["agent"]["appEndpoint"] == agent.app


def test_stats_count_unknown_commands_and_unreadable_bodies_each_under_one_name(agent):
    import zmq

    ok(request(agent.admin, "stats", {"reset": True}))
    for name in ["fly", "jump", "fly"]:
        assert request(agent.app, name)["error"]["code"] == "unknown_command"
    socket = zmq.Context.instance().socket(zmq.REQ)
    socket.setsockopt(zmq.LINGER, 0)
    socket.setsockopt(zmq.RCVTIMEO, 5000)
    socket.connect(agent.app)
    try:
        socket.send(b"{not json")
        assert json.loads(socket.recv())["error"]["code"] == "malformed_request"
    finally:
        socket.close()
    ok(request(agent.app, "ping"))
    commands = ok(request(agent.admin, "stats"))["commands"]
    assert list(commands) == sorted(commands)
    assert commands["(unknown)"]["count"] == 3
    assert commands["(unknown)"]["errors"] == {"unknown_command": 3}
    assert commands["(unreadable)"]["count"] == 1
    assert commands["(unreadable)"]["errors"] == {"malformed_request": 1}
    assert commands["ping"]["count"] == 1 and commands["ping"]["errors"] == {}
    assert "fly" not in commands

"""Faults a TV box meets in the field (issue #14), each played by preflight-sim against a real preflightd.

Each test fails on an agent without the behaviour it names."""

import os
import re
import subprocess

import pytest

from agent_harness import Events, bin_dir, ok, request, wait_until

YEAR_MS = 365 * 24 * 3600 * 1000
PREFETCH = {"mboxes": [{"name": "logo"}, {"name": "buttonColor"}, {"name": "hero"}]}


def load(agent, *names):
    contents = ok(request(agent.app, "loadRequests", {"requests": [{"name": n, "defaultContent": "d"} for n in names]}))
    assert [c["source"] for c in contents["contents"]] == ["cache"] * len(names), contents
    return contents


def notifications_status(agent):
    return ok(request(agent.admin, "notifications.status"))


def sim_notifications(sim):
    return sim.call("GET", "/_sim/target/notifications")["notifications"]


# 1. A box whose clock is not set ------------------------------------------------------------------


def test_a_box_clock_26_years_slow_stamps_notifications_with_the_real_time(target_env):
    sim, agent = target_env.sim, target_env.agent
    # The real world is 26 years ahead of this box's clock (a box that booted in 2000).
    sim.call("PUT", "/_sim/clock", {"offsetMs": 26 * YEAR_MS})
    real_now = sim.call("GET", "/_sim/clock")["nowMs"]
    assert ok(request(agent.app, "prefetch", PREFETCH))["success"] is True
    load(agent, "logo", "buttonColor")

    wait_until("both displays at the simulator", lambda: len(sim_notifications(sim)) == 2)
    for note in sim_notifications(sim):
        # Stamped with Adobe's time, not the box's: within a minute of the simulator's clock.
        assert abs(note["timestamp"] - real_now) < 60_000, note
    assert sim.call("GET", "/_sim/stats")["notificationRefusals"] == 0
    status = notifications_status(agent)
    assert status["refused"] == 0 and status["queued"] == 0

    clock = ok(request(agent.admin, "status"))["clock"]
    assert clock["source"] == "upstream"
    assert abs(clock["offsetMs"] - 26 * YEAR_MS) < 5_000
    assert abs(clock["nowMs"] - sim.call("GET", "/_sim/clock")["nowMs"]) < 5_000
    shown = subprocess.run(
        [os.path.join(bin_dir(), "preflightctl"), "--config", agent.config_path, "status"],
        capture_output=True, text=True, timeout=30,
    )
    assert shown.returncode == 0, shown.stderr
    assert "Box clock" in shown.stdout and "26 years slow" in shown.stdout, shown.stdout
    # Ages are counted by the agent's (Adobe's) time, not the box's: seconds, not "in 9496d".
    assert re.search(r"Upstream target .* ok, last success \d+(?:ms|s|m \d+s) ago", shown.stdout), shown.stdout


def test_a_box_clock_that_is_right_shows_no_clock_line(target_env):
    sim, agent = target_env.sim, target_env.agent
    assert ok(request(agent.app, "prefetch", PREFETCH))["success"] is True
    clock = ok(request(agent.admin, "status"))["clock"]
    assert clock["source"] == "box-confirmed" and abs(clock["offsetMs"]) < 3_000


# 2. A notification Target refuses -----------------------------------------------------------------


@pytest.mark.target_settings(notificationBatchAge=0.2)
def test_one_refused_notification_is_dropped_and_every_good_one_delivered(target_env):
    sim, agent = target_env.sim, target_env.agent
    assert ok(request(agent.app, "prefetch", PREFETCH))["success"] is True
    sim.call("PUT", "/_sim/target/revokedTokens", {"mboxes": ["buttonColor"]})
    load(agent, "logo", "buttonColor", "hero")

    wait_until("the refused notification dropped", lambda: notifications_status(agent)["refused"] == 1)
    wait_until("the queue empty", lambda: notifications_status(agent)["queued"] == 0)
    delivered = sorted(n["mbox"] for n in sim_notifications(sim))
    assert delivered == ["hero", "logo"]
    status = notifications_status(agent)
    assert status["sent"] == 2 and status["failedAttempts"] == 0
    assert status["lastRefusal"].startswith("HTTP 400")
    assert "Target refused a display notification as invalid" in open(os.path.join(target_env.folder, "preflightd.log")).read()
    # Never retried: no request after the isolation carries it.
    refusals = sim.call("GET", "/_sim/stats")["notificationRefusals"]
    load(agent, "logo")
    wait_until("the next display delivered", lambda: len(sim_notifications(sim)) == 3)
    assert sim.call("GET", "/_sim/stats")["notificationRefusals"] == refusals


@pytest.mark.target_settings(notificationBatchAge=3600, notificationBatchSize=1000)
def test_a_refused_notification_never_takes_the_prefetch_it_rode_with_down(target_env):
    sim, agent = target_env.sim, target_env.agent
    assert ok(request(agent.app, "prefetch", PREFETCH))["success"] is True
    sim.call("PUT", "/_sim/target/revokedTokens", {"mboxes": ["buttonColor"]})
    load(agent, "logo", "buttonColor")
    # Not yet due on their own (an hour's batch age): they ride along with the next prefetch.
    result = ok(request(agent.app, "prefetch", {"mboxes": [{"name": "hero"}]}))
    assert result == {"success": True, "mboxes": [{"name": "hero", "cached": True}]}
    statuses = [entry["status"] for entry in sim.requests("delivery")]
    assert statuses[-2:] == [400, 200], statuses
    # The suspects went out on their own at once, were isolated, and the good one arrived.
    wait_until("the refused notification dropped", lambda: notifications_status(agent)["refused"] == 1)
    wait_until("the good notification delivered", lambda: [n["mbox"] for n in sim_notifications(sim)] == ["logo"])
    assert notifications_status(agent)["queued"] == 0


# 4. An edge host that disappears ------------------------------------------------------------------


def visitor(agent):
    return ok(request(agent.admin, "status"))["target"]["visitor"]


def test_after_its_edge_host_fails_the_agent_calls_the_configured_server_again(target_env):
    sim, agent = target_env.sim, target_env.agent
    # Adobe moved edge clusters: the edge host handed out no longer resolves.
    sim.call("PUT", "/_sim/target/edgeHost", {"edgeHost": "edge.invalid"})
    assert ok(request(agent.app, "prefetch", PREFETCH))["success"] is True
    assert visitor(agent)["edgeHost"] == "edge.invalid"
    sim.call("PUT", "/_sim/target/edgeHost", {"edgeHost": "127.0.0.1"})
    calls = len(sim.requests("delivery"))
    assert ok(request(agent.app, "prefetch", PREFETCH))["success"] is False  # went to edge.invalid
    assert len(sim.requests("delivery")) == calls
    # The next call goes to the configured server, and the edge host is learned again from its answer.
    assert ok(request(agent.app, "prefetch", PREFETCH))["success"] is True
    assert visitor(agent)["edgeHost"] == "127.0.0.1"
    log = open(os.path.join(target_env.folder, "preflightd.log")).read()
    assert "the Target edge host failed; the next call goes to the configured server" in log


@pytest.mark.parametrize("edge_host", ["http://evil.example:1/x", "user@127.0.0.1", "127.0.0.1:9", "a/b"])
def test_an_edge_host_that_is_not_a_plain_host_name_is_not_used(target_env, edge_host):
    sim, agent = target_env.sim, target_env.agent
    sim.call("PUT", "/_sim/target/edgeHost", {"edgeHost": edge_host})
    for _ in range(2):
        assert ok(request(agent.app, "prefetch", PREFETCH))["success"] is True
    assert visitor(agent)["edgeHost"] is None
    log = open(os.path.join(target_env.folder, "preflightd.log")).read()
    assert "Target sent an edgeHost that is not a plain host name" in log


# 3. An upstream that has gone away ----------------------------------------------------------------


def target_health(agent):
    return ok(request(agent.admin, "status"))["upstreams"]["target"]


@pytest.mark.target_settings(timeout=1)
def test_when_target_stops_answering_misses_get_default_content_at_once_until_it_is_back(target_env):
    sim, agent = target_env.sim, target_env.agent
    assert ok(request(agent.app, "prefetch", {"mboxes": [{"name": "logo"}]}))["success"] is True
    events = Events(agent, b"upstream.")
    try:
        # A black-holing firewall: every Delivery call hangs past the agent's one-second timeout.
        sim.call("POST", "/_sim/faults", {"path": "/rest/v1/delivery", "hangMs": 60_000})
        miss = {"requests": [{"name": "hero", "defaultContent": "fallback"}]}
        for _ in range(3):
            assert ok(request(agent.app, "loadRequests", miss))["contents"][0]["source"] == "default"
        wait_until("Target marked down", lambda: target_health(agent).get("state") == "down")
        health = target_health(agent)
        assert health["failuresInARow"] >= 3 and health["downSinceMs"] > 0
        # Now a miss is not sent at all: answered with its default content, counted as upstreamDown.
        calls = len(sim.requests("delivery"))
        assert ok(request(agent.app, "loadRequests", miss))["contents"] == [
            {"name": "hero", "content": "fallback", "source": "default"}
        ]
        defaults = ok(request(agent.admin, "stats"))["offers"]["defaultsByReason"]
        assert defaults.get("upstreamDown", 0) >= 1, defaults
        # Cached answers keep flowing throughout.
        assert load(agent, "logo")["contents"][0]["source"] == "cache"
        wait_until("upstream.down", lambda: any(t == "upstream.down" for t, _ in events.drain()))
        down = next(body for topic, body in events.seen if topic == "upstream.down")
        assert down["service"] == "target" and down["failures"] >= 3
        shown = subprocess.run(
            [os.path.join(bin_dir(), "preflightctl"), "--config", agent.config_path, "status"],
            capture_output=True, text=True, timeout=30,
        )
        assert "DOWN since" in shown.stdout, shown.stdout
        # Only probes reach the (hung) upstream while it is down: empty requests, never the app's miss.
        assert not any("execute" in entry["body"] for entry in sim.requests("delivery")[calls:])

        # The firewall opens: a probe finds Target within seconds and misses go to the network again.
        sim.call("DELETE", "/_sim/faults")
        wait_until("Target back up", lambda: target_health(agent).get("state") == "up", timeout=30)
        wait_until("upstream.up", lambda: any(t == "upstream.up" for t, _ in events.drain()))
        up = next(body for topic, body in events.seen if topic == "upstream.up")
        assert up["service"] == "target" and up["downForMs"] > 0
        assert ok(request(agent.app, "loadRequests", miss))["contents"][0]["source"] == "network"
        # The display queued while Target was down is delivered.
        wait_until("the display delivered", lambda: any(n["mbox"] == "logo" for n in sim_notifications(sim)))
    finally:
        events.close()

"""A per-request `timeout` on `loadRequests` and `prefetch`, for apps that would rather show default content sooner
than wait `target.timeout`. pyzmq apps, a real preflightd, preflight-sim as Target made slow."""

import time

import pytest

from agent_harness import ok, request

MISS = {"requests": [{"name": "logo", "defaultContent": "fallback"}]}


@pytest.mark.target_settings(timeout=20)
def test_a_short_timeout_gives_the_default_at_its_own_deadline_while_others_wait_for_target(target_env):
    sim, agent = target_env.sim, target_env.agent
    sim.call("POST", "/_sim/faults", {"path": "/rest/v1/delivery", "latencyMs": 8000})
    started = time.monotonic()
    quick = ok(request(agent.app, "loadRequests", {**MISS, "timeout": 0.3}, timeout_ms=30000))
    waited = time.monotonic() - started
    assert quick["contents"] == [{"name": "logo", "content": "fallback", "source": "default"}]
    assert ok(request(agent.admin, "stats"))["offers"]["defaultsByReason"].get("timeout") == 1
    # The reply did not wait for Target (8 s) nor for target.timeout (20 s). Not a speed check: the app's
    # 0.3 s deadline against an answer 8 s away, with a margin a loaded machine cannot eat.
    assert waited < 7, waited
    patient = ok(request(agent.app, "loadRequests", MISS, timeout_ms=30000))
    assert patient["contents"][0]["source"] == "network"


@pytest.mark.target_settings(timeout=10)
def test_a_prefetch_that_runs_out_of_time_caches_nothing(target_env):
    sim, agent = target_env.sim, target_env.agent
    sim.call("POST", "/_sim/faults", {"path": "/rest/v1/delivery", "latencyMs": 3000, "count": 1})
    result = ok(request(agent.app, "prefetch", {"mboxes": [{"name": "logo"}], "timeout": 0.3}, timeout_ms=30000))
    assert result == {"success": False, "mboxes": [{"name": "logo", "cached": False}]}
    assert ok(request(agent.admin, "offers.list"))["offers"] == []


def test_a_timeout_must_be_a_positive_number_of_seconds(target_env):
    for value in (0, -1, "1", 61):
        reply = request(target_env.agent.app, "loadRequests", {**MISS, "timeout": value})
        assert reply["ok"] is False and reply["error"]["field"] == "timeout", (value, reply)

"""SIGHUP: the configuration is re-read and applied without losing the cache; a broken file changes nothing."""

import json
import os
import signal

from agent_harness import ok, read_log, request, wait_until


def rewrite_config(agent, change):
    with open(agent.config_path) as handle:
        config = json.load(handle)
    change(config)
    with open(agent.config_path, "w") as handle:
        json.dump(config, handle)


def test_sighup_applies_a_new_timeout_and_keeps_the_cache(target_env):
    sim, agent = target_env.sim, target_env.agent
    ok(request(agent.app, "prefetch", {"mboxes": [{"name": "logo"}]}))
    rewrite_config(agent, lambda config: config["target"].update({"timeout": 0.3}))
    os.kill(agent.process.pid, signal.SIGHUP)
    wait_until("the new timeout", lambda: ok(request(agent.admin, "config.show"))["target"]["timeout"] == 0.3)

    # Target now answers slower than the new timeout: a miss falls back to its default...
    sim.call("POST", "/_sim/faults", {"path": "/rest/v1/delivery", "latencyMs": 1500})
    load = {"requests": [{"name": "logo", "defaultContent": "d"}, {"name": "hero", "defaultContent": "h"}]}
    contents = ok(request(agent.app, "loadRequests", load))["contents"]
    # ...while the cache prefetched before the reload still answers.
    assert contents[0]["source"] == "cache"
    assert contents[1] == {"name": "hero", "content": "h", "source": "default"}
    assert ok(request(agent.admin, "stats"))["offers"]["defaultsByReason"] == {"timeout": 1}
    sim.call("DELETE", "/_sim/faults")


def test_sighup_with_a_broken_file_keeps_serving_the_old_configuration(target_env):
    agent = target_env.agent
    with open(agent.config_path, "w") as handle:
        handle.write('{"target": {"clientCode": "acme", "timeout": "soon"}}')
    os.kill(agent.process.pid, signal.SIGHUP)
    wait_until("the refusal in the log", lambda: "reload refused" in read_log(agent.folder))
    assert "target.timeout" in read_log(agent.folder)
    assert ok(request(agent.app, "ping"))["version"]
    assert ok(request(agent.admin, "config.show"))["target"]["timeout"] == 2


def test_sighup_refuses_an_endpoint_change_but_applies_the_rest(target_env):
    agent = target_env.agent

    def change(config):
        config["agent"]["appEndpoint"] = "ipc:///tmp/elsewhere.sock"
        config["agent"]["logLevel"] = "debug"
        config["target"]["notificationQueueCapacity"] = 500
        config["target"]["timeout"] = 1.5

    rewrite_config(agent, change)
    os.kill(agent.process.pid, signal.SIGHUP)
    wait_until("the new timeout", lambda: ok(request(agent.admin, "config.show"))["target"]["timeout"] == 1.5)
    shown = ok(request(agent.admin, "config.show"))
    assert shown["agent"]["appEndpoint"] == agent.app
    # Keys applied only at start keep their running value, and the journal says why.
    assert shown["agent"]["logLevel"] == "info"
    assert shown["target"]["notificationQueueCapacity"] == 10000
    log = read_log(agent.folder)
    for key in ("agent.appEndpoint", "agent.logLevel", "target.notificationQueueCapacity"):
        assert f"{key} changed; that needs a restart" in log
    assert ok(request(agent.app, "ping"))["version"]

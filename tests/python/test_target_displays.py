"""Impressions under the app's control (AEP's displayedLocations): a load from the cache with `notifyDisplay: false`
queues nothing; `displayedLocations` counts it once, when the app shows it. pyzmq apps, a real preflightd,
preflight-sim as Target."""

from agent_harness import ok, request, wait_until


def displays(sim):
    return sim.call("GET", "/_sim/target/notifications?type=display")["notifications"]


def queued(agent):
    return ok(request(agent.admin, "notifications.status"))["queued"]


LOAD = {"requests": [{"name": "logo", "defaultContent": "d", "mboxParameters": {"placement": "home"}}]}


def test_a_deferred_display_is_counted_once_when_the_app_shows_the_offer(target_env):
    sim, agent = target_env.sim, target_env.agent
    assert ok(request(agent.app, "prefetch", {"mboxes": [{"name": "logo"}]}))["success"] is True
    assert ok(request(agent.app, "loadRequests", {**LOAD, "notifyDisplay": False}))["contents"][0]["source"] == "cache"
    assert queued(agent) == 0
    shown = ok(request(agent.app, "displayedLocations", {"names": ["logo", "never-loaded"]}))
    assert shown == {"notified": ["logo"], "skipped": ["never-loaded"]}
    # A second report of the same display counts nothing more.
    assert ok(request(agent.app, "displayedLocations", {"names": ["logo"]})) == {"notified": [], "skipped": ["logo"]}
    wait_until("the display to reach Target", lambda: len(displays(sim)) == 1)
    assert displays(sim)[0]["parameters"] == {"placement": "home"}


def test_a_default_load_counts_at_once_and_displayed_locations_does_not_count_it_again(target_env):
    sim, agent = target_env.sim, target_env.agent
    assert ok(request(agent.app, "prefetch", {"mboxes": [{"name": "logo"}]}))["success"] is True
    ok(request(agent.app, "loadRequests", LOAD))
    assert ok(request(agent.app, "displayedLocations", {"names": ["logo"]})) == {"notified": [], "skipped": ["logo"]}
    wait_until("the display to reach Target", lambda: len(displays(sim)) == 1)
    assert ok(request(agent.admin, "notifications.flush"))["queued"] == 0
    assert len(displays(sim)) == 1


def test_the_parameters_of_the_display_call_win_over_those_of_the_load(target_env):
    sim, agent = target_env.sim, target_env.agent
    assert ok(request(agent.app, "prefetch", {"mboxes": [{"name": "logo"}]}))["success"] is True
    ok(request(agent.app, "loadRequests", {**LOAD, "notifyDisplay": False}))
    ok(request(agent.app, "displayedLocations", {"names": ["logo"], "mboxParameters": {"placement": "rail"}}))
    wait_until("the display to reach Target", lambda: len(displays(sim)) == 1)
    assert displays(sim)[0]["parameters"] == {"placement": "rail"}


def test_bad_display_reports_are_refused_with_the_field(target_env):
    agent = target_env.agent
    for args, field in [({}, "names"), ({"names": []}, "names"), ({"names": [""]}, "names[0]"),
                        ({"names": ["a"], "mboxParameters": {"orderId": "1"}}, "mboxParameters.orderId")]:
        reply = request(agent.app, "displayedLocations", args)
        assert reply["ok"] is False and reply["error"]["field"] == field, (args, reply)
    reply = request(agent.app, "loadRequests", {**LOAD, "notifyDisplay": 0})
    assert reply["ok"] is False and reply["error"]["field"] == "notifyDisplay"

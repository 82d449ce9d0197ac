"""Several publishers on one box: `propertyToken` per request (AEP's `at_property`), each property its own Target
workspace, its own cached offers, its own notifications. pyzmq apps, a real preflightd, preflight-sim as Target."""

import signal

import pytest

from agent_harness import ok, request, start_agent, stop_agent, wait_until

WORKSPACES = {
    "ws-a": {"logo": {"type": "html", "content": "<p>logo A</p>", "clickMetric": True}},
    "ws-b": {"logo": {"type": "html", "content": "<p>logo B</p>"}},
}


def set_up_workspaces(sim):
    for token, offers in WORKSPACES.items():
        sim.call("PUT", f"/_sim/target/offers?propertyToken={token}", offers)


def load(agent, name="logo", **args):
    reply = ok(request(agent.app, "loadRequests", {"requests": [{"name": name, "defaultContent": "d"}], **args}))
    return reply["contents"][0]


def prefetch(agent, **args):
    return ok(request(agent.app, "prefetch", {"mboxes": [{"name": "logo"}], **args}))["success"]


def recorded(sim, kind="display"):
    return sim.call("GET", f"/_sim/target/notifications?type={kind}")["notifications"]


def test_each_property_gets_its_own_offers_cache_and_notifications(target_env):
    sim, agent = target_env.sim, target_env.agent
    set_up_workspaces(sim)
    for args in ({"propertyToken": "ws-a"}, {"propertyToken": "ws-b"}, {}):
        assert prefetch(agent, **args) is True
    # One box, three workspaces: each app sees its publisher's offer, from the cache.
    a, b, default = load(agent, propertyToken="ws-a"), load(agent, propertyToken="ws-b"), load(agent)
    assert (a["content"], a["source"]) == ("<p>logo A</p>", "cache")
    assert (b["content"], b["source"]) == ("<p>logo B</p>", "cache")
    assert default["source"] == "cache" and default["content"] not in ("<p>logo A</p>", "<p>logo B</p>")
    # A property nobody prefetched asks Target, whose workspace for it is empty: the default content.
    assert load(agent, propertyToken="ws-c") == {"name": "logo", "content": "d", "source": "default"}
    listed = ok(request(agent.admin, "offers.list"))["offers"]
    assert sorted((o["name"], o["propertyToken"] or "") for o in listed) == [
        ("logo", ""), ("logo", "ws-a"), ("logo", "ws-b")]

    # Each impression reaches Target under the property whose workspace issued its tokens.
    wait_until("three impressions at Target", lambda: len(recorded(sim)) == 3)
    assert sorted((n["propertyToken"] or "", n["tokensIssuedUnderProperty"]) for n in recorded(sim)) == [
        ("", True), ("ws-a", True), ("ws-b", True)]
    visitors = sim.call("GET", "/_sim/target/visitors")["requests"]
    assert {v["propertyToken"] for v in visitors} == {None, "ws-a", "ws-b", "ws-c"}

    # A click goes under its property too; the same mbox of another property has no click metric.
    assert ok(request(agent.app, "clickedLocation", {"name": "logo", "propertyToken": "ws-a"}))["queued"] is True
    refused = request(agent.app, "clickedLocation", {"name": "logo"})
    assert refused["ok"] is False and refused["error"]["field"] == "name"
    wait_until("the click at Target", lambda: len(recorded(sim, "click")) == 1)
    click = recorded(sim, "click")[0]
    assert (click["propertyToken"], click["tokensIssued"], click["tokensIssuedUnderProperty"]) == ("ws-a", True, True)


def test_deferred_displays_are_counted_per_property(target_env):
    sim, agent = target_env.sim, target_env.agent
    set_up_workspaces(sim)
    assert prefetch(agent, propertyToken="ws-b") is True and prefetch(agent) is True
    assert load(agent, propertyToken="ws-b", notifyDisplay=False)["source"] == "cache"
    # The configured property's logo was not loaded with notifyDisplay false: nothing to count.
    assert ok(request(agent.app, "displayedLocations", {"names": ["logo"]})) == {"notified": [], "skipped": ["logo"]}
    assert ok(request(agent.app, "displayedLocations", {"names": ["logo"], "propertyToken": "ws-b"})) == {
        "notified": ["logo"], "skipped": []}
    wait_until("the impression at Target", lambda: len(recorded(sim)) == 1)
    assert recorded(sim)[0]["propertyToken"] == "ws-b" and recorded(sim)[0]["tokensIssuedUnderProperty"]


@pytest.mark.target_settings(propertyToken="ws-a")
def test_naming_the_configured_property_shares_its_cache(target_env):
    sim, agent = target_env.sim, target_env.agent
    set_up_workspaces(sim)
    assert prefetch(agent) is True
    assert load(agent, propertyToken="ws-a") == {"name": "logo", "content": "<p>logo A</p>", "source": "cache"}
    assert load(agent)["content"] == "<p>logo A</p>"
    assert [o["propertyToken"] for o in ok(request(agent.admin, "offers.list"))["offers"]] == [None]


# Nothing goes out by itself before the kill: the journal alone carries the impressions across it.
@pytest.mark.target_settings(notificationBatchAge=600)
def test_queued_notifications_keep_their_property_across_a_sigkill(target_env):
    sim, agent, folder = target_env.sim, target_env.agent, target_env.folder
    set_up_workspaces(sim)
    assert prefetch(agent, propertyToken="ws-b") is True and prefetch(agent) is True
    for args in ({"propertyToken": "ws-b"}, {}, {"propertyToken": "ws-b"}):
        assert load(agent, **args)["source"] == "cache"
    wait_until("three impressions queued", lambda: ok(request(agent.admin, "notifications.status"))["queued"] == 3)
    stop_agent(agent, signal.SIGKILL)
    target_env.agent = start_agent(folder, target={"serverURL": sim.url, "notificationBatchAge": 0.2})
    wait_until("the replayed impressions at Target", lambda: len(recorded(sim)) == 3)
    assert sorted((n["propertyToken"] or "", n["tokensIssuedUnderProperty"]) for n in recorded(sim)) == [
        ("", True), ("ws-b", True), ("ws-b", True)]


@pytest.mark.parametrize("bad", ["", "has space", 7, "x" * 129])
def test_a_bad_property_token_is_refused_with_its_field(target_env, bad):
    agent = target_env.agent
    for cmd, args in [("loadRequests", {"requests": [{"name": "logo", "defaultContent": "d"}]}),
                      ("prefetch", {"mboxes": [{"name": "logo"}]}),
                      ("clickedLocation", {"name": "logo"}),
                      ("displayedLocations", {"names": ["logo"]})]:
        reply = request(agent.app, cmd, {**args, "propertyToken": bad})
        assert reply["ok"] is False and reply["error"]["code"] == "invalid_argument", (cmd, reply)
        assert reply["error"]["field"] == "propertyToken", (cmd, reply)
    assert ok(request(agent.admin, "offers.list"))["offers"] == []
    assert target_env.sim.call("GET", "/_sim/target/visitors")["requests"] == []

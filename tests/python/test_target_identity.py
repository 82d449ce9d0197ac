"""The box's Target visitor as AEP's Target extension lets apps handle it: third-party id, tntId and session id
read and set, and resetExperience. pyzmq apps, a real preflightd, preflight-sim as the Delivery API."""

import os
import re
import subprocess

from agent_harness import Events, bin_dir, ok, request, start_agent, stop_agent, wait_until


def visitors(sim):
    """The ids of each Delivery call the simulator carried out, oldest first."""
    return sim.call("GET", "/_sim/target/visitors")["requests"]


def prefetch(agent, name="logo"):
    assert ok(request(agent.app, "prefetch", {"mboxes": [{"name": name}]}))["success"] is True


def test_third_party_id_is_sent_kept_across_restarts_and_cleared(target_env):
    sim, agent = target_env.sim, target_env.agent
    assert ok(request(agent.app, "getThirdPartyId")) == {"thirdPartyId": None}
    assert ok(request(agent.app, "setThirdPartyId", {"thirdPartyId": "household-42"})) == {"thirdPartyId": "household-42"}
    prefetch(agent)
    assert visitors(sim)[-1]["thirdPartyId"] == "household-42"
    assert stop_agent(agent) == 0
    target_env.agent = agent = start_agent(target_env.folder, target={"serverURL": sim.url}, wait=True)
    assert ok(request(agent.app, "getThirdPartyId")) == {"thirdPartyId": "household-42"}
    assert ok(request(agent.app, "setThirdPartyId", {"thirdPartyId": None})) == {"thirdPartyId": None}
    prefetch(agent)
    assert visitors(sim)[-1]["thirdPartyId"] is None


def test_tnt_id_and_session_id_can_be_read_and_set_for_a_migrating_visitor(target_env):
    sim, agent = target_env.sim, target_env.agent
    prefetch(agent)
    learned = visitors(sim)[-1]["responseTntId"]
    assert ok(request(agent.app, "getTntId")) == {"tntId": learned}
    session = ok(request(agent.app, "getSessionId"))["sessionId"]
    assert session == visitors(sim)[-1]["sessionId"]

    assert ok(request(agent.app, "setTntId", {"tntId": "migrated-visitor-7"})) == {"tntId": "migrated-visitor-7"}
    assert ok(request(agent.app, "setSessionId", {"sessionId": "web-session-1"})) == {"sessionId": "web-session-1"}
    prefetch(agent)
    sent = visitors(sim)[-1]
    assert (sent["tntId"], sent["sessionId"]) == ("migrated-visitor-7", "web-session-1")
    assert ok(request(agent.app, "getSessionId")) == {"sessionId": "web-session-1"}


def test_bad_ids_are_refused_with_the_field_and_change_nothing(target_env):
    agent = target_env.agent
    before = ok(request(agent.app, "getSessionId"))
    for cmd, args, field in [
        ("setSessionId", {"sessionId": "has space"}, "sessionId"),
        ("setSessionId", {"sessionId": "a/b"}, "sessionId"),
        ("setSessionId", {}, "sessionId"),
        ("setThirdPartyId", {}, "thirdPartyId"),
        ("setThirdPartyId", {"thirdPartyId": "x" * 129}, "thirdPartyId"),
        ("setTntId", {"tntId": 7}, "tntId"),
    ]:
        reply = request(agent.app, cmd, args)
        assert reply["ok"] is False and reply["error"]["code"] == "invalid_argument", (cmd, reply)
        assert reply["error"]["field"] == field, (cmd, reply)
    assert ok(request(agent.app, "getSessionId")) == before
    assert ok(request(agent.app, "getThirdPartyId")) == {"thirdPartyId": None}


def test_reset_experience_sends_the_old_visitors_impressions_then_starts_a_new_visitor(target_env):
    sim, agent = target_env.sim, target_env.agent
    # Subscribed first: confirming the subscription clears the prefetch cache.
    events = Events(agent, b"target.", confirm=True)
    ok(request(agent.app, "setThirdPartyId", {"thirdPartyId": "old-household"}))
    prefetch(agent)
    old_tnt = ok(request(agent.app, "getTntId"))["tntId"]
    old_session = ok(request(agent.app, "getSessionId"))["sessionId"]
    # A cached load queues its display notification for the old visitor.
    load = ok(request(agent.app, "loadRequests", {"requests": [{"name": "logo", "defaultContent": "d"}]}))
    assert load["contents"][0]["source"] == "cache"

    assert ok(request(agent.app, "resetExperience", timeout_ms=30000)) == {"cleared": 1}
    assert events.wait_for("target.reset")["cleared"] == 1
    # The impression reached Target under the old visitor, before the reset.
    notified = [v for v in visitors(sim) if v["thirdPartyId"] == "old-household"]
    assert sim.call("GET", "/_sim/stats")["displayNotifications"] == 1
    assert notified and notified[-1]["tntId"] == old_tnt
    assert ok(request(agent.app, "getTntId")) == {"tntId": None}
    assert ok(request(agent.app, "getThirdPartyId")) == {"thirdPartyId": None}
    assert ok(request(agent.app, "getSessionId"))["sessionId"] != old_session
    # The cached offer went with the old visitor; the next call carries no ids and gets a new tntId.
    miss = ok(request(agent.app, "loadRequests", {"requests": [{"name": "logo", "defaultContent": "d"}]}))
    assert miss["contents"][0]["source"] == "network"
    sent = visitors(sim)[-1]
    assert sent["tntId"] is None and sent["thirdPartyId"] is None and sent["responseTntId"] != old_tnt
    assert "Target visitor reset" in open(os.path.join(target_env.folder, "preflightd.log")).read()
    events.close()


def test_preflightctl_target_reset_and_visitor(target_env):
    sim, agent = target_env.sim, target_env.agent
    prefetch(agent)

    def ctl(*args):
        done = subprocess.run([os.path.join(bin_dir(), "preflightctl"), "--config", agent.config_path, *args],
                              capture_output=True, text=True, timeout=60)
        return done.returncode, done.stdout, done.stderr

    status, out, _ = ctl("target", "visitor")
    assert status == 0 and re.search(r"tntId\s+\S+", out) and re.search(r"thirdPartyId\s+-", out), out
    status, _, err = ctl("target", "reset")
    assert status == 2 and "--yes" in err
    status, out, _ = ctl("target", "reset", "--yes")
    assert status == 0 and out == "New Target visitor: ids and session forgotten, 1 cached offer dropped.\n", out
    wait_until("the reset to show", lambda: ok(request(agent.app, "getTntId")) == {"tntId": None})


def test_customer_ids_go_with_a_marketing_cloud_visitor_id_and_are_kept(target_env):
    sim, agent = target_env.sim, target_env.agent
    ids = [{"id": "c-1001", "integrationCode": "crm", "authenticatedState": "authenticated"}]
    refused = request(agent.app, "setCustomerIds", {"customerIds": ids})
    assert refused["ok"] is False and refused["error"]["field"] == "customerIds"
    mcid = "12345678901234567890123456789012345678"
    assert ok(request(agent.app, "setMarketingCloudVisitorId", {"marketingCloudVisitorId": mcid}))["customerIds"] == []
    assert ok(request(agent.app, "setCustomerIds", {"customerIds": ids})) == {"customerIds": ids}
    prefetch(agent)
    sent = visitors(sim)[-1]
    assert sent["marketingCloudVisitorId"] == mcid and sent["customerIds"] == ids
    assert stop_agent(agent) == 0
    target_env.agent = agent = start_agent(target_env.folder, target={"serverURL": sim.url})
    kept = ok(request(agent.app, "getVisitorIds"))
    assert kept["marketingCloudVisitorId"] == mcid and kept["customerIds"] == ids
    # Clearing the visitor id clears the customer ids, which Target takes only along with it.
    assert ok(request(agent.app, "setMarketingCloudVisitorId", {"marketingCloudVisitorId": None})) == {
        "marketingCloudVisitorId": None, "customerIds": []}
    for bad, field in [([{"id": "x", "integrationCode": "crm", "authenticatedState": "maybe"}],
                        "customerIds[0].authenticatedState"),
                       ([{"id": "x"}], "customerIds[0].integrationCode")]:
        reply = request(agent.app, "setCustomerIds", {"customerIds": bad})
        assert reply["ok"] is False and reply["error"]["field"] == field, reply

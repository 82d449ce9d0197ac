"""Click notifications (AEP's clickedLocation): the click metric Target sent with an offer, prefetched or loaded,
queued and delivered like display notifications. pyzmq apps, a real preflightd, preflight-sim as Target."""

import pytest

from agent_harness import ok, request, start_agent, stop_agent, wait_until


def clicks(sim):
    return sim.call("GET", "/_sim/target/notifications?type=click")["notifications"]


@pytest.fixture
def promo(target_env):
    """An offer whose activity counts clicks (Target answers it with a click metric)."""
    target_env.sim.call("PUT", "/_sim/target/offers/promo",
                        {"options": [{"type": "html", "content": "<p>50% off</p>"}], "clickMetric": True})
    return target_env


def test_a_click_on_a_prefetched_offer_reaches_target_with_its_click_token(promo):
    sim, agent = promo.sim, promo.agent
    assert ok(request(agent.app, "prefetch", {"mboxes": [{"name": "promo"}]}))["success"] is True
    reply = ok(request(agent.app, "clickedLocation", {"name": "promo", "mboxParameters": {"placement": "home"}}))
    assert reply == {"queued": True, "name": "promo"}
    wait_until("the click to reach Target", lambda: len(clicks(sim)) == 1)
    sent = clicks(sim)[0]
    assert sent["mbox"] == "promo" and sent["type"] == "click"
    offers = sim.call("GET", "/_sim/target/offers")["offers"]
    assert sent["tokens"] == [offers["promo"]["metrics"][0]["eventToken"]]
    assert ok(request(agent.admin, "stats"))["offers"]["clicks"] == 1


def test_a_click_on_an_offer_loaded_from_target_uses_that_answers_metric(promo):
    sim, agent = promo.sim, promo.agent
    load = ok(request(agent.app, "loadRequests", {"requests": [{"name": "promo", "defaultContent": "d"}]}))
    assert load["contents"][0]["source"] == "network"
    assert ok(request(agent.app, "clickedLocation", {"name": "promo"}))["queued"] is True
    wait_until("the click to reach Target", lambda: len(clicks(sim)) == 1)


def test_a_click_without_a_click_metric_or_an_offer_is_refused_and_sends_nothing(promo):
    sim, agent = promo.sim, promo.agent
    assert ok(request(agent.app, "prefetch", {"mboxes": [{"name": "logo"}]}))["success"] is True
    for name, says in [("logo", "no click metric"), ("never-seen", "nothing to click")]:
        reply = request(agent.app, "clickedLocation", {"name": name})
        assert reply["ok"] is False and reply["error"]["code"] == "invalid_argument", reply
        assert reply["error"]["field"] == "name" and says in reply["error"]["message"], reply
    bad = request(agent.app, "clickedLocation", {"name": "promo", "mboxParameters": {"orderId": "1"}})
    assert bad["ok"] is False and bad["error"]["field"] == "mboxParameters.orderId"
    assert ok(request(agent.admin, "notifications.status"))["queued"] == 0
    assert clicks(sim) == []


def test_a_click_queued_while_target_is_down_is_journaled_and_sent_after_a_restart(promo):
    sim, agent = promo.sim, promo.agent
    assert ok(request(agent.app, "prefetch", {"mboxes": [{"name": "promo"}]}))["success"] is True
    sim.call("POST", "/_sim/faults", {"path": "/rest/v1/delivery", "status": 503})
    assert ok(request(agent.app, "clickedLocation", {"name": "promo"}))["queued"] is True
    wait_until("the click journaled", lambda: ok(request(agent.admin, "notifications.status"))["queued"] == 1)
    assert stop_agent(agent, sig=9) != 0
    sim.call("DELETE", "/_sim/faults")
    promo.agent = start_agent(promo.folder, target={"serverURL": sim.url, "notificationBatchAge": 0.2})
    wait_until("the click to reach Target after the restart", lambda: len(clicks(sim)) == 1)

"""`loadRequests` with `withData`: what AEP's contentWithDataCallback gives an app (response tokens, Analytics for
Target payloads), from the cache and from Target. pyzmq apps, a real preflightd, preflight-sim as Target."""

import pytest

from agent_harness import ok, request

REQUEST = {"requests": [{"name": "promo", "defaultContent": "d"}]}


@pytest.fixture
def promo(target_env):
    target_env.sim.call("PUT", "/_sim/target/offers/promo", {
        "options": [{"type": "html", "content": "<p>50% off</p>"}], "clickMetric": True, "responseTokens": True})
    return target_env


def load(agent, **extra):
    return ok(request(agent.app, "loadRequests", {**REQUEST, **extra}))["contents"][0]


@pytest.mark.target_settings(analyticsLogging="client_side")
def test_a_cached_offer_answers_with_its_tokens_and_analytics_payloads_when_asked(promo):
    sim, agent = promo.sim, promo.agent
    assert ok(request(agent.app, "prefetch", {"mboxes": [{"name": "promo"}]}))["success"] is True
    sent = sim.requests("delivery")[-1]["body"]
    assert sent["experienceCloud"] == {"analytics": {"logging": "client_side"}}
    plain = load(agent)
    assert plain == {"name": "promo", "content": "<p>50% off</p>", "source": "cache"}
    rich = load(agent, withData=True)
    assert rich["source"] == "cache" and rich["content"] == plain["content"]
    tokens = rich["data"]["responseTokens"]
    assert tokens["activity.name"] == "promo activity" and tokens["option.id"] and tokens["offer.name"]
    assert rich["data"]["analyticsPayload"]["pe"] == "tnt" and rich["data"]["analyticsPayload"]["tnta"]
    assert rich["data"]["clickMetricAnalyticsPayload"]["pe"] == "tnt"


@pytest.mark.target_settings(analyticsLogging="client_side")
def test_an_offer_loaded_from_target_and_a_default_carry_data_too(promo):
    agent = promo.agent
    two = ok(request(agent.app, "loadRequests", {"requests": [
        {"name": "promo", "defaultContent": "d"}, {"name": "nothing-here", "defaultContent": "fallback"}],
        "withData": True}))["contents"]
    assert two[0]["source"] == "network" and two[0]["data"]["responseTokens"]["activity.name"] == "promo activity"
    assert two[1] == {"name": "nothing-here", "content": "fallback", "source": "default", "data": {}}


def test_without_client_side_logging_there_is_no_analytics_payload(promo):
    agent = promo.agent
    assert ok(request(agent.app, "prefetch", {"mboxes": [{"name": "promo"}]}))["success"] is True
    assert "experienceCloud" not in promo.sim.requests("delivery")[-1]["body"]
    data = load(agent, withData=True)["data"]
    assert "analyticsPayload" not in data and "clickMetricAnalyticsPayload" not in data
    assert data["responseTokens"]["activity.name"] == "promo activity"


def test_with_data_must_be_a_boolean(promo):
    reply = request(promo.agent.app, "loadRequests", {**REQUEST, "withData": "yes"})
    assert reply["ok"] is False and reply["error"]["field"] == "withData"

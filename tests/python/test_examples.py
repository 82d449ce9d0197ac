"""tools/examples/python end to end: the pyzmq client and its example scripts against a real preflightd,
with preflight-sim as both Target and Adobe Pass (as tools/demo runs them)."""

import json
import os
import shutil
import socket as pysocket
import subprocess
import sys
import tempfile
import threading
import time

import pytest
import zmq

from agent_harness import (
    REPO,
    TEST_SOFTWARE_STATEMENT,
    Simulator,
    read_log,
    request,
    start_agent,
    stop_agent,
    wait_until,
)

EXAMPLES = os.path.join(REPO, "tools", "examples", "python")
sys.path.insert(0, EXAMPLES)

from preflight_client import (  # noqa: E402  (the examples folder is not a package)
    AgentError,
    AgentUnavailable,
    AuthenticationEvent,
    AuthenticationResult,
    AuthenticationStatus,
    AuthorizationResponse,
    CustomerId,
    Event,
    Feature,
    LogoutResult,
    MediaToken,
    Metadata,
    PreflightClient,
    ProviderSelection,
    SignInCode,
    Status,
    TargetPrefetch,
    TargetRequest,
    VisitorIds,
)
from preflight_client import MVPD as Provider  # noqa: E402  (MVPD here is the provider the tests sign in with)

REQUESTOR = "acme-requestor"
MVPD = "Cablevision"

# What the seed example must put on the wire: the JSON docs/PROTOCOL.md and docs/APPS.md show
# (test_apps_guide.py compares the guide's own blocks with what its programs send).
SEED_PREFETCH_ARGS = {
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
SEED_LOAD_ARGS = {
    "requests": [
        {"name": "logo", "defaultContent": "BlueWhale", "mboxParameters": {"status": "platinum"}},
        {"name": "buttonColor", "defaultContent": "red"},
    ],
    "profileParameters": {"age": "20-32"},
}
SEED_PREAUTHORIZE_ARGS = {
    "requestor": REQUESTOR,
    "resources": ["resource1", "resource2", "resource3"],
    "disabledFeatures": ["LOCAL_CACHE"],
}

ENHANCED_DENIAL = {
    "status": 403,
    "code": "preauthorization_denied_by_mvpd",
    "message": "The MVPD has returned a \"Deny\" decision when requesting pre-authorization for the specified resource.",
    "details": "Your subscription package does not include this channel.",
    "helpUrl": "https://experienceleague.adobe.com/docs/pass/authentication/auth-features/error-reportn/enhanced-error-codes.html",
    "trace": "8bcb17f9-b172-47d2-86d9-3eb146f5f85c",
    "action": "none",
}


class ExamplesSetup:
    def __init__(self, folder, sim):
        self.folder = folder
        self.sim = sim
        self.agent = None

    def start(self):
        self.agent = start_agent(
            self.folder,
            target={"serverURL": self.sim.url, "notificationBatchAge": 0.2, "timeout": 5},
            pass_={
                "serverURL": self.sim.url,
                "softwareStatement": TEST_SOFTWARE_STATEMENT,
                "requestors": [REQUESTOR],
                "deviceIdentifier": "test-box-examples",
                # A sign-in on the second screen is noticed within a second.
                "signInPollInterval": 1,
            },
        )
        return self.agent

    def client(self, **options):
        return PreflightClient(self.agent.app, events_endpoint=self.agent.events, requestor=REQUESTOR, **options)

    def login_and_wait_configured(self):
        """Logs the box in at the simulated Adobe Pass and waits until the agent has the requestor's
        configuration (before that, preauthorize honestly answers requestor_not_configured)."""
        self.sim.call("POST", "/_sim/pass/login", {"serviceProvider": REQUESTOR, "mvpd": MVPD})
        with self.client() as client:

            def configured():
                response = client.preauthorize(["probe"], disable_features=[Feature.LOCAL_CACHE])
                return not (response.failed and response.status.code == "requestor_not_configured")

            wait_until("the requestor configuration", configured)

    def wait_configured(self):
        """Waits until the agent has the requestor's configuration, without signing the box in: then
        checkAuthentication answers `authentication_session_missing` rather than `requestor_not_configured`."""
        with self.client() as client:

            def configured():
                status = client.check_authentication().status
                return status is None or status.code != "requestor_not_configured"

            wait_until("the requestor configuration", configured)


@pytest.fixture
def env():
    folder = tempfile.mkdtemp(prefix="pf-ex-", dir="/tmp")
    sim = Simulator(folder)
    setup = ExamplesSetup(folder, sim)
    setup.start()
    yield setup
    log = read_log(folder)
    stop_agent(setup.agent)
    violations = sim.call("GET", "/_sim/violations")
    sim.stop()
    shutil.rmtree(folder, ignore_errors=True)
    assert violations["count"] == 0, violations
    assert TEST_SOFTWARE_STATEMENT not in log


def run_example(script, *args):
    return subprocess.run(
        [sys.executable, os.path.join(EXAMPLES, script), *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def loaded_lines(stdout):
    """`name (source): content` lines of prefetch_and_load.py as {name: (source, content)}."""
    loaded = {}
    for line in stdout.splitlines():
        head, sep, content = line.partition(": ")
        if sep and head.endswith(")") and " (" in head:
            name, _, source = head[:-1].partition(" (")
            loaded[name] = (source, content)
    return loaded


def callback_lines(stdout):
    return dict(line[len("callback "):].split(": ", 1) for line in stdout.splitlines() if line.startswith("callback "))


def option_content(option):
    return option["content"] if isinstance(option["content"], str) else json.dumps(option["content"])


def put_distinctive_offers(sim):
    """Offers no default could be mistaken for, so equal content proves it came from the simulator."""
    marker = os.path.basename(sim.url).replace(":", "-")
    sim.call("PUT", "/_sim/target/offers/logo", {"type": "html", "content": f'<img src="https://example.com/{marker}.png">'})
    sim.call("PUT", "/_sim/target/offers/buttonColor", {"type": "json", "content": {"color": "teal", "marker": marker}})
    return sim.call("GET", "/_sim/target/offers")["offers"]


# --- Target -------------------------------------------------------------------------------------------


def test_prefetch_and_load_example_serves_the_simulators_offers_from_the_cache_and_notifies_target(env):
    offers = put_distinctive_offers(env.sim)
    done = run_example("prefetch_and_load.py", "--endpoint", env.agent.app)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "prefetch: success"

    loaded = loaded_lines(done.stdout)
    assert set(loaded) == {"logo", "buttonColor"}
    assert loaded["logo"] == ("cache", offers["logo"]["options"][0]["content"])
    assert loaded["buttonColor"][0] == "cache"
    assert json.loads(loaded["buttonColor"][1]) == offers["buttonColor"]["options"][0]["content"]
    # Each request's callback got its content.
    assert callback_lines(done.stdout) == {name: content for name, (_, content) in loaded.items()}

    # One prefetch call upstream with both mboxes, and no execute call: the loads came from the cache.
    deliveries = env.sim.requests("delivery")
    prefetched = [d for d in deliveries if "prefetch" in d["body"]]
    assert len(prefetched) == 1
    assert [m["name"] for m in prefetched[0]["body"]["prefetch"]["mboxes"]] == ["logo", "buttonColor"]
    assert all("execute" not in d["body"] for d in deliveries)

    def notified():
        return env.sim.call("GET", "/_sim/target/notifications")["count"] >= 2

    wait_until("display notifications at the simulator", notified)
    notes = env.sim.call("GET", "/_sim/target/notifications")["notifications"]
    assert {n["mbox"] for n in notes} == {"logo", "buttonColor"}
    assert all(n["type"] == "display" and n["tokensIssued"] and n["stateIssued"] for n in notes)
    assert {n["mbox"]: n["state"] for n in notes} == {name: offer["state"] for name, offer in offers.items()
                                                      if name in ("logo", "buttonColor")}


def test_client_prefetches_loads_with_callbacks_and_clears_the_cache(env):
    offers = put_distinctive_offers(env.sim)
    with env.client() as client:
        # Plain names are mboxes without parameters; an mbox Target has nothing for is not cached.
        assert client.prefetch(["logo", "buttonColor", "nothing-here"]) is True
        got = {}
        requests = [
            TargetRequest("logo", "BlueWhale", callback=lambda content: got.setdefault("logo", content)),
            TargetRequest("buttonColor", "red", callback=lambda content: got.setdefault("buttonColor", content)),
            TargetRequest("nothing-here", "fallback", callback=lambda content: got.setdefault("nothing-here", content)),
        ]
        contents = client.load_requests(requests)
        assert [(c.name, c.source) for c in contents] == [("logo", "cache"), ("buttonColor", "cache"),
                                                          ("nothing-here", "default")]
        assert contents[0].content == option_content(offers["logo"]["options"][0])
        assert json.loads(contents[1].content) == offers["buttonColor"]["options"][0]["content"]
        assert got == {c.name: c.content for c in contents}

        assert client.clear_prefetch_cache() == 2
        again = client.load_requests([TargetRequest("logo", "BlueWhale")])
        assert again[0].source == "network"
        assert again[0].content == contents[0].content
        assert client.clear_prefetch_cache() == 0


def test_one_client_can_be_shared_by_threads(env):
    offers = put_distinctive_offers(env.sim)
    expected = option_content(offers["logo"]["options"][0])
    results = []
    with env.client() as client:
        assert client.prefetch(["logo"]) is True

        def app():
            for _ in range(5):
                results.extend(client.load_requests([TargetRequest("logo", "BlueWhale")]))

        threads = [threading.Thread(target=app) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert len(results) == 40
    assert {(c.source, c.content) for c in results} == {("cache", expected)}


def test_an_argument_the_agent_refuses_raises_with_its_field_and_sends_nothing(env):
    called = []
    with env.client() as client:
        with pytest.raises(AgentError) as refused:
            client.prefetch([TargetPrefetch("logo", mbox_parameters={"orderId": "1"})])
        assert refused.value.code == "invalid_argument"
        assert refused.value.field == "mboxes[0].mboxParameters.orderId"
        with pytest.raises(AgentError) as refused:
            client.load_requests([TargetRequest("logo", "d", product_parameters={"color": "red"}, callback=called.append)])
        assert refused.value.field == "requests[0].productParameters.color"
    assert called == []
    assert env.sim.requests("delivery") == []


# --- Target visitor (AEP's ids and resetExperience) -----------------------------------------------------


def last_target_call(sim):
    """The ids the simulator saw on the latest prefetch or load (a notification beacon is answered no tntId)."""
    calls = [entry for entry in sim.call("GET", "/_sim/target/visitors")["requests"] if entry["responseTntId"]]
    assert calls, "no prefetch or load reached the simulator"
    return calls[-1]


def test_client_sets_the_boxs_visitor_ids_that_target_then_sees(env):
    with env.client() as client, env.client() as other_app:
        assert client.get_third_party_id() is None
        assert client.set_third_party_id("household-42") is True
        # One visitor per box: every app reads what one app set.
        assert other_app.get_third_party_id() == "household-42"
        assert client.prefetch(["logo"]) is True
        sent = last_target_call(env.sim)
        assert sent["thirdPartyId"] == "household-42"
        # The tntId Target handed out in its answer, and the session that call carried.
        assert sent["tntId"] is None and sent["responseTntId"]
        assert client.get_tnt_id() == sent["responseTntId"]
        assert other_app.get_session_id() == sent["sessionId"]

        # A visitor migrated from another channel: its tntId and its web session.
        assert client.set_tnt_id("migrated-visitor-7") is True
        assert client.set_session_id("web-session-1") is True
        assert client.load_requests([TargetRequest("buttonColor", "red")])[0].source == "network"
        sent = last_target_call(env.sim)
        assert (sent["tntId"], sent["sessionId"], sent["thirdPartyId"]) == ("migrated-visitor-7", "web-session-1",
                                                                            "household-42")
        assert other_app.get_tnt_id() == "migrated-visitor-7"
        assert other_app.get_session_id() == "web-session-1"

        # "" clears, as AEP's setters take it; None too.
        assert client.set_third_party_id("") is True
        assert client.get_third_party_id() is None
        assert client.set_tnt_id(None) is True
        assert client.get_tnt_id() is None


def test_a_visitor_id_the_agent_refuses_raises_with_its_field_and_changes_nothing(env):
    with env.client() as client:
        session = client.get_session_id()
        for call, value, field in [
            (client.set_session_id, "has space", "sessionId"),
            (client.set_session_id, "a/b", "sessionId"),
            (client.set_session_id, "", "sessionId"),
            (client.set_third_party_id, "x" * 129, "thirdPartyId"),
            (client.set_tnt_id, "t" * 129, "tntId"),
        ]:
            with pytest.raises(AgentError) as refused:
                call(value)
            assert (refused.value.code, refused.value.field) == ("invalid_argument", field), value
        assert client.get_session_id() == session
        assert client.get_third_party_id() is None and client.get_tnt_id() is None


def test_reset_experience_starts_a_new_visitor_for_every_app_and_drops_the_cached_offers(env):
    with env.client() as client, env.client() as other_app, \
            client.events(["target.reset", "offers.cleared"]) as events:
        # PUB drops what is published before the subscription arrives: clear until an event is heard.
        def subscribed():
            assert client.clear_prefetch_cache() is not None
            return events.receive(0.05) is not None

        wait_until("the events subscription", subscribed)
        assert client.set_third_party_id("old-household") is True
        assert client.prefetch(["logo"]) is True
        old_tnt, old_session = client.get_tnt_id(), client.get_session_id()
        assert old_tnt and old_session

        # Another app resets: every app has a new visitor, and the offer cached for the old one is gone.
        assert other_app.reset_experience() == 1
        reset = []

        def reset_heard():
            event = events.receive(0.05)
            if event is not None and event.topic == "target.reset":
                reset.append(event)
            return bool(reset)

        wait_until("the target.reset event", reset_heard)
        assert reset[0].body["cleared"] == 1 and reset[0].body["by"] == "resetExperience"
        assert client.get_tnt_id() is None and client.get_third_party_id() is None
        assert client.get_session_id() not in (None, old_session)
        content = client.load_requests([TargetRequest("logo", "BlueWhale")])[0]
        assert content.source == "network"
        sent = last_target_call(env.sim)
        assert sent["tntId"] is None and sent["thirdPartyId"] is None
        assert sent["responseTntId"] != old_tnt
        assert client.get_tnt_id() == sent["responseTntId"]
        # Nothing left to drop.
        assert client.reset_experience() == 0


def test_the_visitor_calls_put_the_documented_json_on_the_wire(env):
    proxy = RecordingProxy(env.folder, env.agent.app)
    try:
        with PreflightClient(proxy.endpoint) as client:
            client.set_third_party_id("household-42")
            client.get_third_party_id()
            client.set_third_party_id(None)
            client.get_tnt_id()
            client.set_tnt_id("migrated-visitor-7")
            client.get_session_id()
            client.set_session_id("web-session-1")
            client.reset_experience()
    finally:
        proxy.close()
    # docs/PROTOCOL.md, "Visitor identity".
    assert [{key: value for key, value in body.items() if key != "id"} for body in proxy.bodies] == [
        {"v": 1, "cmd": "setThirdPartyId", "args": {"thirdPartyId": "household-42"}},
        {"v": 1, "cmd": "getThirdPartyId"},
        {"v": 1, "cmd": "setThirdPartyId", "args": {"thirdPartyId": None}},
        {"v": 1, "cmd": "getTntId"},
        {"v": 1, "cmd": "setTntId", "args": {"tntId": "migrated-visitor-7"}},
        {"v": 1, "cmd": "getSessionId"},
        {"v": 1, "cmd": "setSessionId", "args": {"sessionId": "web-session-1"}},
        {"v": 1, "cmd": "resetExperience"},
    ]
    results = [reply["result"] for reply in proxy.replies]
    assert results[:3] == [{"thirdPartyId": "household-42"}, {"thirdPartyId": "household-42"}, {"thirdPartyId": None}]
    assert results[3] == {"tntId": None}
    assert results[4:] == [{"tntId": "migrated-visitor-7"}, {"sessionId": results[5]["sessionId"]},
                           {"sessionId": "web-session-1"}, {"cleared": 0}]


def put_promo(sim):
    """An offer whose activity counts clicks and whose answer carries response tokens."""
    sim.call("PUT", "/_sim/target/offers/promo", {
        "options": [{"type": "html", "content": "<p>50% off</p>"}], "clickMetric": True, "responseTokens": True})


def target_notifications(sim, kind):
    return sim.call("GET", f"/_sim/target/notifications?type={kind}")["notifications"]


def test_a_click_reaches_target_and_a_deferred_display_is_reported_once(env):
    put_promo(env.sim)
    with env.client() as client:
        assert client.prefetch(["promo", "logo"], timeout=10) is True
        contents = client.load_requests([TargetRequest("promo", "d", mbox_parameters={"placement": "home"})],
                                        notify_display=False)
        assert [(c.source, c.data) for c in contents] == [("cache", None)]
        assert target_notifications(env.sim, "display") == []
        assert client.displayed_locations(["promo", "never-loaded"]) == ["promo"]
        # Reported again: the agent skips it, so the impression is counted once.
        assert client.displayed_locations(["promo"]) == []
        assert client.clicked_location("promo", mbox_parameters={"placement": "home"}) is True
        # The click is queued after the display: once it reached Target, so did every display there was.
        wait_until("the click to reach Target", lambda: len(target_notifications(env.sim, "click")) == 1)
        wait_until("the display to reach Target", lambda: len(target_notifications(env.sim, "display")) == 1)
        assert ok_count(env) == 0
        displays = target_notifications(env.sim, "display")
        assert [(d["mbox"], d["parameters"]) for d in displays] == [("promo", {"placement": "home"})]
        click = target_notifications(env.sim, "click")[0]
        offers = env.sim.call("GET", "/_sim/target/offers")["offers"]
        assert click["mbox"] == "promo" and click["tokens"] == [offers["promo"]["metrics"][0]["eventToken"]]
        # An offer without a click metric (logo's activity has no click goal) is refused; nothing is sent.
        with pytest.raises(AgentError) as refused:
            client.clicked_location("logo")
        assert refused.value.code == "invalid_argument" and refused.value.field == "name"


def test_two_publishers_apps_each_get_their_property_s_offers(env):
    for token, content in (("ws-a", "<p>A</p>"), ("ws-b", "<p>B</p>")):
        env.sim.call("PUT", f"/_sim/target/offers?propertyToken={token}",
                     {"promo": {"type": "html", "content": content, "clickMetric": True}})
    with env.client(property_token="ws-a") as app_a, env.client(property_token="ws-b") as app_b:
        assert app_a.prefetch(["promo"]) is True and app_b.prefetch(["promo"]) is True
        assert [(c.content, c.source) for c in app_a.load_requests([TargetRequest("promo", "d")])] == [
            ("<p>A</p>", "cache")]
        assert app_b.load_requests([TargetRequest("promo", "d")], notify_display=False)[0].content == "<p>B</p>"
        assert app_b.displayed_locations(["promo"]) == ["promo"]
        assert app_b.clicked_location("promo") is True
        # A call may name another property than its client's (AEP's at_property).
        assert app_a.load_requests([TargetRequest("promo", "d")], property_token="ws-b")[0].content == "<p>B</p>"
    wait_until("the click at Target", lambda: len(target_notifications(env.sim, "click")) == 1)
    wait_until("three impressions at Target", lambda: len(target_notifications(env.sim, "display")) == 3)
    sent = target_notifications(env.sim, "display") + target_notifications(env.sim, "click")
    assert sorted(n["propertyToken"] for n in sent) == ["ws-a", "ws-b", "ws-b", "ws-b"]
    assert all(n["tokensIssuedUnderProperty"] for n in sent)


def ok_count(env):
    """Notifications still queued at the agent once it sent what it had (flush waits for the delivery)."""
    return request(env.agent.admin, "notifications.flush")["result"]["queued"]


def test_content_with_data_gets_the_tokens_target_sent_and_a_default_gets_an_empty_dict(env):
    put_promo(env.sim)
    with env.client() as client:
        assert client.prefetch(["promo"]) is True
        got = {}
        requests = [TargetRequest("promo", "d", content_with_data=lambda content, data: got.update(promo=(content, data))),
                    TargetRequest("nothing-here", "fallback",
                                  content_with_data=lambda content, data: got.update(nothing=(content, data)))]
        contents = client.load_requests(requests, timeout=10)
        assert [c.source for c in contents] == ["cache", "default"]
        assert got["promo"][0] == "<p>50% off</p>" and got["promo"][1] == contents[0].data
        assert contents[0].data["responseTokens"]["activity.name"] == "promo activity"
        # The A4T payloads come only with target.analyticsLogging client_side, which this agent does not set.
        assert set(contents[0].data) == {"responseTokens"}
        assert got["nothing"] == ("fallback", {}) and contents[1].data == {}
        # with_data alone, without a callback asking for it.
        again = client.load_requests([TargetRequest("promo", "d")], with_data=True)
        assert again[0].data["responseTokens"] == contents[0].data["responseTokens"]


def test_the_experience_cloud_and_customer_ids_reach_target(env):
    mcid = "12345678901234567890123456789012345678"
    crm = CustomerId("c-1", "crm", "authenticated")
    with env.client() as client:
        with pytest.raises(AgentError) as refused:
            client.set_customer_ids([crm])
        assert refused.value.code == "invalid_argument" and refused.value.field == "customerIds"
        assert client.set_marketing_cloud_visitor_id(mcid) is True
        assert client.set_customer_ids([crm, {"id": "h-9", "integrationCode": "household"}]) is True
        assert client.prefetch(["logo"]) is True
        sent = last_target_call(env.sim)
        assert sent["marketingCloudVisitorId"] == mcid
        assert sent["customerIds"] == [crm.to_wire(), {"id": "h-9", "integrationCode": "household",
                                                       "authenticatedState": "unknown"}]
        ids = client.get_visitor_ids()
        assert ids.marketing_cloud_visitor_id == mcid and ids.tnt_id == sent["responseTntId"]
        assert ids.customer_ids == [crm, CustomerId("h-9", "household")]
        assert ids.session_id == sent["sessionId"] and ids.third_party_id is None
        # Clearing the visitor id clears the customer ids, which Target takes only along with it.
        assert client.set_marketing_cloud_visitor_id(None) is True
        assert client.get_visitor_ids() == VisitorIds(tnt_id=ids.tnt_id, session_id=ids.session_id)


def test_the_newer_target_calls_put_the_documented_json_on_the_wire(env):
    put_promo(env.sim)
    proxy = RecordingProxy(env.folder, env.agent.app)
    try:
        with PreflightClient(proxy.endpoint) as client:
            client.prefetch(["promo"], timeout=5)
            client.load_requests([TargetRequest("promo", "d")], notify_display=False, with_data=True, timeout=30)
            client.displayed_locations(["promo"], profile_parameters={"age": "20-32"})
            client.clicked_location("promo", mbox_parameters={"placement": "home"}, order_parameters={"id": "o1"})
            client.set_marketing_cloud_visitor_id("mcid-1")
            client.set_customer_ids([CustomerId("c-1", "crm")])
            client.set_customer_ids([])
            client.get_visitor_ids()
    finally:
        proxy.close()
    assert [{key: value for key, value in body.items() if key != "id"} for body in proxy.bodies] == [
        {"v": 1, "cmd": "prefetch", "args": {"mboxes": [{"name": "promo"}], "timeout": 5}},
        {"v": 1, "cmd": "loadRequests", "args": {"requests": [{"name": "promo", "defaultContent": "d"}],
                                                 "notifyDisplay": False, "withData": True, "timeout": 30}},
        {"v": 1, "cmd": "displayedLocations", "args": {"names": ["promo"], "profileParameters": {"age": "20-32"}}},
        {"v": 1, "cmd": "clickedLocation", "args": {"name": "promo", "mboxParameters": {"placement": "home"},
                                                    "orderParameters": {"id": "o1"}}},
        {"v": 1, "cmd": "setMarketingCloudVisitorId", "args": {"marketingCloudVisitorId": "mcid-1"}},
        {"v": 1, "cmd": "setCustomerIds", "args": {"customerIds": [
            {"id": "c-1", "integrationCode": "crm", "authenticatedState": "unknown"}]}},
        {"v": 1, "cmd": "setCustomerIds", "args": {"customerIds": []}},
        {"v": 1, "cmd": "getVisitorIds"},
    ]
    assert all(reply["ok"] is True for reply in proxy.replies), proxy.replies
    assert proxy.replies[2]["result"] == {"notified": ["promo"], "skipped": []}
    assert proxy.replies[3]["result"] == {"queued": True, "name": "promo"}


# --- Adobe Pass ---------------------------------------------------------------------------------------


def test_preauthorize_example_prints_the_simulators_three_decisions_with_local_cache_disabled(env):
    env.sim.call("PUT", "/_sim/pass/decisions",
                 {"serviceProvider": REQUESTOR, "decisions": {"resource2": {"authorized": False, "error": ENHANCED_DENIAL}}})
    env.login_and_wait_configured()
    # A permit the agent has cached; LOCAL_CACHE disabled must ask Adobe Pass again all the same.
    with env.client() as client:
        assert client.preauthorize(["resource1"]).decisions[0].authorized is True
    calls_before = env.sim.requests("preauthorize")

    done = run_example("preauthorize.py", "--config", env.agent.config_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines() == [
        "resource1: authorized",
        f"resource2: denied ({ENHANCED_DENIAL['code']}: {ENHANCED_DENIAL['message']})",
        "resource3: authorized",
    ]
    calls = env.sim.requests("preauthorize")
    assert len(calls) == len(calls_before) + 1
    assert calls[-1]["body"] == {"resources": ["resource1", "resource2", "resource3"]}


def test_client_preauthorize_gives_decisions_with_adobes_error_and_failures_with_a_status(env):
    env.sim.call("PUT", "/_sim/pass/decisions",
                 {"serviceProvider": REQUESTOR, "decisions": {"r2": {"authorized": False, "error": ENHANCED_DENIAL}}})
    env.login_and_wait_configured()
    with env.client() as client:
        response = client.preauthorize(["r1", "r2", "r1"], disable_features=[Feature.LOCAL_CACHE])
        assert response.outcome == "response" and not response.failed and response.status is None
        assert [(d.id, d.authorized) for d in response.decisions] == [("r1", True), ("r2", False), ("r1", True)]
        error = response.decisions[1].error
        assert (error.status, error.code, error.message, error.details, error.help_url, error.trace, error.action) == (
            403, ENHANCED_DENIAL["code"], ENHANCED_DENIAL["message"], ENHANCED_DENIAL["details"],
            ENHANCED_DENIAL["helpUrl"], ENHANCED_DENIAL["trace"], "none")

        failure = client.preauthorize(["r1"], requestor="someone-else")
        assert failure.failed and failure.decisions == []
        assert (failure.status.status, failure.status.code, failure.status.action) == (0, "requestor_not_configured", "retry")

        # An error for the whole request from Adobe Pass: a response with its status and no decisions.
        bad_request = {"status": 400, "code": "bad_request", "message": "The request sent to the Adobe Pass server was invalid.",
                       "action": "none"}
        env.sim.call("POST", "/_sim/faults", {"path": f"/api/v2/{REQUESTOR}/decisions/preauthorize/{MVPD}", "count": 1,
                                              "status": 400, "body": bad_request, "contentType": "application/json"})
        rejected = client.preauthorize(["r1"], disable_features=[Feature.LOCAL_CACHE])
        assert rejected.outcome == "response" and not rejected.failed and rejected.decisions == []
        assert (rejected.status.status, rejected.status.code, rejected.status.action) == (400, "bad_request", "none")


# --- Adobe Pass entitlement ---------------------------------------------------------------------------


def test_client_signs_in_with_a_code_authorizes_and_logs_out(env):
    env.wait_configured()
    with env.client() as client:
        before = client.check_authentication()
        assert before.authenticated is False and before.mvpd is None and before.pending is None
        assert (before.status.status, before.status.code, before.status.action) == (
            0, "authentication_session_missing", "authentication")

        providers = client.get_selected_provider()
        assert providers.selected is None and providers.status is None
        assert [m.id for m in providers.mvpds] == ["Cablevision", "Comcast_SSO"]
        assert providers.mvpds[0].display_name == "Optimum" and providers.mvpds[0].logo_url.startswith("https://")
        with pytest.raises(AgentError) as refused:
            client.set_selected_provider("NoSuchTV")
        assert (refused.value.code, refused.value.field) == ("invalid_argument", "mvpd")
        assert client.set_selected_provider(MVPD).selected == MVPD

        # One subscription for the whole flow: a SUB sees only what is published after it joined, and the
        # logout's event follows its reply at once (auth.authenticated comes after a poll, long after the join).
        with client.authentication_events(timeout=30) as events:
            result = client.get_authentication()
            assert not result.failed and result.authenticated is False and result.mvpd == MVPD
            code = result.pending
            assert code.url == f"{env.sim.url}/api/v2/authenticate/{REQUESTOR}/{code.code}"
            assert code.mvpd == MVPD and code.not_after > code.not_before > 0
            # Every app asking while it lives gets the same code, and sees it pending.
            assert client.get_authentication().pending.code == code.code
            assert client.check_authentication().pending == code

            env.sim.call("POST", f"/_sim/pass/sessions/{code.code}/signin", {"attributes": {"zip": "10001"}})
            seen = []
            for event in events:
                seen.append(event)
                if event.kind == "authenticated":
                    break
            assert seen[-1].kind == "authenticated" and seen[-1].mvpd == MVPD and seen[-1].requestor == REQUESTOR
            assert all(event.kind in ("code", "session", "authenticated") for event in seen), seen

            status = client.check_authentication()
            assert status.authenticated is True and status.mvpd == MVPD and status.type == "regular"
            assert status.not_after == seen[-1].not_after and status.status is None and status.pending is None
            signed_in = client.get_authentication()
            assert (signed_in.authenticated, signed_in.mvpd, signed_in.not_after, signed_in.pending) == (
                True, MVPD, status.not_after, None)
            assert client.cancel_authentication() is False

            metadata = client.get_metadata()
            assert metadata.attributes["zip"] == "10001" and metadata.attributes["userID"] and metadata.status is None
            assert client.get_metadata("zip") == Metadata(key="zip", value="10001")
            assert client.get_metadata("nothing") == Metadata(key="nothing", value=None)

            granted = client.get_authorization("movie-1")
            assert granted.authorized is True and granted.source == "mvpd" and granted.mvpd == MVPD
            token = granted.media_token.serialized_token
            assert token and granted.media_token.not_after > granted.media_token.not_before
            # Printed, the response keeps the token to itself.
            assert token not in repr(granted) and token not in str(granted.media_token)
            assert granted.media_token.masked in repr(granted)
            checked = client.check_authorization("movie-1")
            assert checked.authorized is True and checked.from_cache is True and checked.media_token is None

            logout = client.logout()
            assert logout.logged_out is True and logout.mvpd == MVPD and logout.status is None
            assert logout.action_type == "interactive" and logout.url.startswith("https://")
            assert next(event for event in events if event.kind == "logout").mvpd == MVPD
        after = client.check_authentication(fresh=True)
        assert after.authenticated is False and after.status.code == "authentication_session_missing"
        denied = client.get_authorization("movie-1")
        assert denied.authorized is False and denied.media_token is None
        assert denied.status.code == "authentication_session_missing"
    assert token not in read_log(env.folder) and code.code not in read_log(env.folder)


def test_the_entitlement_calls_put_the_documented_json_on_the_wire(env):
    env.wait_configured()
    proxy = RecordingProxy(env.folder, env.agent.app)
    try:
        with PreflightClient(proxy.endpoint, requestor=REQUESTOR) as client:
            client.check_authentication()
            client.check_authentication(mvpd=MVPD, fresh=True)
            client.get_selected_provider()
            client.set_selected_provider(MVPD)
            client.set_selected_provider(None)
            client.get_authentication(mvpd=MVPD, redirect_url="https://example.com/done", domain_name="example.com")
            client.cancel_authentication()
            client.get_authorization("movie-1")
            client.check_authorization("movie-1")
            client.get_metadata()
            client.get_metadata("zip")
            client.logout()
            client.logout(mvpd=MVPD)
    finally:
        proxy.close()
    requestor = {"requestor": REQUESTOR}
    assert [(body["cmd"], body["args"]) for body in proxy.bodies] == [
        ("checkAuthentication", requestor),
        ("checkAuthentication", {"mvpd": MVPD, "fresh": True, **requestor}),
        ("getSelectedProvider", requestor),
        ("setSelectedProvider", {"mvpd": MVPD, **requestor}),
        ("setSelectedProvider", {"mvpd": None, **requestor}),
        ("getAuthentication", {"mvpd": MVPD, "redirectUrl": "https://example.com/done", "domainName": "example.com",
                               **requestor}),
        ("cancelAuthentication", requestor),
        ("getAuthorization", {"resource": "movie-1", **requestor}),
        ("checkAuthorization", {"resource": "movie-1", **requestor}),
        ("getMetadata", requestor),
        ("getMetadata", {"key": "zip", **requestor}),
        ("logout", requestor),
        ("logout", {"mvpd": MVPD, **requestor}),
    ]
    assert all(reply["ok"] is True for reply in proxy.replies), proxy.replies


def protocol_entitlement_flow():
    """[(command, args, result)] of docs/PROTOCOL.md's entitlement flow: real replies of the agent."""
    text = open(os.path.join(REPO, "docs", "PROTOCOL.md"), encoding="utf-8").read()
    flow = text.split("<!-- entitlement-flow -->", 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    exchanges, request = [], None
    for line in flow.splitlines():
        if line.startswith("→ "):
            request = json.loads(line[2:])
        elif line.startswith("← "):
            exchanges.append((request["cmd"], request["args"], json.loads(line[2:])))
    return exchanges


def test_the_replies_of_protocol_md_read_as_the_documented_types():
    flow = protocol_entitlement_flow()
    assert [cmd for cmd, _, _ in flow] == [
        "checkAuthentication", "getSelectedProvider", "setSelectedProvider", "getAuthentication",
        "checkAuthentication", "getAuthentication", "getAuthorization", "checkAuthorization", "getMetadata",
        "getMetadata", "logout", "cancelAuthentication"]
    results = [result for _, _, result in flow]

    missing = AuthenticationStatus.from_wire(results[0])
    assert (missing.authenticated, missing.mvpd, missing.not_after, missing.pending) == (False, None, None, None)
    assert (missing.status.status, missing.status.code, missing.status.action) == (
        0, "authentication_session_missing", "authentication")
    mvpds = [Provider("Cablevision", "Optimum", "https://example.com/mvpd/optimum.png"),
             Provider("Comcast_SSO", "Xfinity", "https://example.com/mvpd/xfinity.png")]
    assert ProviderSelection.from_wire(results[1]) == ProviderSelection(None, mvpds)
    assert ProviderSelection.from_wire(results[2]) == ProviderSelection("Cablevision", mvpds)
    code = SignInCode("UXD6NWP", "https://sp.auth.adobe.com/api/v2/authenticate/acme-requestor/UXD6NWP",
                      not_after=1795640461768, not_before=1795638661768, mvpd="Cablevision")
    assert AuthenticationResult.from_wire(results[3]) == AuthenticationResult(False, "Cablevision", pending=code)
    assert AuthenticationStatus.from_wire(results[4]) == AuthenticationStatus(
        True, "Cablevision", 1795638661774, 1795642261774, "regular")
    assert AuthenticationResult.from_wire(results[5]) == AuthenticationResult(True, "Cablevision", 1795642261774)
    token = results[6]["mediaToken"]["serializedToken"]
    assert AuthorizationResponse.from_wire(results[6], "movie-1") == AuthorizationResponse(
        "movie-1", True, "mvpd", "Cablevision", 1795639262831, MediaToken(token, 1795638662831, 1795639082831))
    assert AuthorizationResponse.from_wire(results[7], "movie-1") == AuthorizationResponse(
        "movie-1", True, "mvpd", "Cablevision", 1795639262831, from_cache=True)
    assert Metadata.from_wire(results[8]) == Metadata(attributes={
        "userID": "sim-0aedc8bad418da8b7d74", "householdID": "hh-0aedc8bad4", "zip": "10001"})
    assert Metadata.from_wire(results[9]) == Metadata(key="zip", value="10001")
    assert LogoutResult.from_wire(results[10]) == LogoutResult(
        True, "Cablevision", "logout", "interactive",
        "https://sp.auth.adobe.com/adobe-services/logout?noflash=true&mso_id=Cablevision&requestor_id=acme-requestor")
    assert results[11] == {"cancelled": False}


def test_a_media_tokens_repr_shows_only_its_last_characters():
    secret = "PHNpZ25hdHVyZUluZm8+bW92aWUtMXxhY21lLXJlcXVlc3Rvcg=="
    token = MediaToken(secret, 1, 2)
    assert token.masked == "\u2026cg=="
    for shown in (repr(token), str(token), repr(AuthorizationResponse("movie-1", True, media_token=token)),
                  f"{token}", "%s" % (token,)):
        assert secret not in shown and secret[:12] not in shown
        assert token.masked in shown
    assert MediaToken("short").masked == "\u2026"
    # Equal tokens are still equal: masking changes only how one prints.
    assert token == MediaToken(secret, 1, 2) and token.serialized_token == secret


def test_auth_events_become_typed_events_of_the_requestor():
    code = AuthenticationEvent.from_event(Event("auth.code", {
        "topic": "auth.code", "uptimeMs": 1, "requestor": REQUESTOR, "code": "C", "url": "https://u",
        "notAfter": 9, "mvpd": None}))
    assert (code.kind, code.requestor, code.sign_in) == ("code", REQUESTOR, SignInCode("C", "https://u", not_after=9))
    failed = AuthenticationEvent.from_event(Event("auth.failed", {
        "requestor": REQUESTOR, "reason": "error", "code": "invalid_code", "message": "m", "mvpd": None}))
    assert (failed.kind, failed.reason, failed.code, failed.message) == ("failed", "error", "invalid_code", "m")
    session = AuthenticationEvent.from_event(Event("auth.session", {"requestor": REQUESTOR, "state": "expired",
                                                                    "mvpd": MVPD}))
    assert (session.kind, session.state, session.mvpd, session.code) == ("session", "expired", MVPD, None)
    assert AuthenticationEvent.from_event(Event("auth.decisions", {"requestor": REQUESTOR})) is None
    assert AuthenticationEvent.from_event(Event("auth.logout", {"mvpd": MVPD})) is None


# --- No agent -----------------------------------------------------------------------------------------


def test_without_an_agent_the_examples_show_default_content_and_network_error():
    folder = tempfile.mkdtemp(prefix="pf-ex-", dir="/tmp")
    try:
        nowhere = f"ipc://{folder}/app.sock"
        done = run_example("prefetch_and_load.py", "--endpoint", nowhere)
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines()[0] == "prefetch: failed"
        assert loaded_lines(done.stdout) == {"logo": ("default", "BlueWhale"), "buttonColor": ("default", "red")}
        assert callback_lines(done.stdout) == {"logo": "BlueWhale", "buttonColor": "red"}

        done = run_example("preauthorize.py", "--endpoint", nowhere, "--requestor", REQUESTOR)
        assert done.returncode == 1
        assert done.stdout.startswith("failure: network_error (none): ")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_a_socket_file_nobody_serves_gives_defaults_and_network_error():
    """What a crashed agent leaves behind: the file is there, nothing accepts connections on it."""
    folder = tempfile.mkdtemp(prefix="pf-ex-", dir="/tmp")
    stale = os.path.join(folder, "app.sock")
    listener = pysocket.socket(pysocket.AF_UNIX, pysocket.SOCK_STREAM)
    listener.bind(stale)
    listener.close()
    try:
        assert os.path.exists(stale)
        with PreflightClient(f"ipc://{stale}", requestor=REQUESTOR) as client:
            assert client.prefetch(["logo"]) is False
            contents = client.load_requests([TargetRequest("logo", "BlueWhale")])
            assert [(c.name, c.content, c.source) for c in contents] == [("logo", "BlueWhale", "default")]
            response = client.preauthorize(["resource1"])
            assert response.failed and response.decisions == []
            assert (response.status.status, response.status.code, response.status.action) == (0, "network_error", "none")
            assert client.clear_prefetch_cache() is None
            with pytest.raises(AgentUnavailable):
                client.ping()
            assert_every_entitlement_call_answers_network_error(client)
            assert_every_visitor_call_answers_that_nothing_was_done(client)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def assert_every_visitor_call_answers_that_nothing_was_done(client):
    """AEP's getters call back with nil when they cannot answer: None; a setter says False and a reset None."""
    assert [client.get_third_party_id(), client.get_tnt_id(), client.get_session_id()] == [None] * 3
    assert [client.set_third_party_id("household-42"), client.set_third_party_id(None), client.set_tnt_id("t"),
            client.set_session_id("web-session-1")] == [False] * 4
    assert client.reset_experience() is None
    assert client.get_visitor_ids() is None
    assert [client.set_marketing_cloud_visitor_id("m"), client.set_customer_ids([CustomerId("c", "crm")])] == [False] * 2


def test_without_an_agent_the_visitor_calls_answer_at_once_that_nothing_was_done():
    folder = tempfile.mkdtemp(prefix="pf-ex-", dir="/tmp")
    try:
        with PreflightClient(f"ipc://{folder}/app.sock") as client:
            started = time.monotonic()
            assert_every_visitor_call_answers_that_nothing_was_done(client)
            # No socket file: each call gives up after its retries' short pauses, not after its timeout (17 s
            # for a reset).
            assert time.monotonic() - started < 10
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_without_an_agent_clicks_displays_and_loads_with_data_answer_at_once_that_nothing_was_done():
    folder = tempfile.mkdtemp(prefix="pf-ex-", dir="/tmp")
    try:
        with PreflightClient(f"ipc://{folder}/app.sock") as client:
            started = time.monotonic()
            assert client.clicked_location("promo") is False
            assert client.displayed_locations(["promo"]) is None
            assert client.prefetch(["promo"], timeout=30) is False
            got = []
            contents = client.load_requests(
                [TargetRequest("promo", "fallback", content_with_data=lambda content, data: got.append((content, data)))],
                notify_display=False, timeout=30)
            assert [(c.content, c.source, c.data) for c in contents] == [("fallback", "default", {})]
            assert got == [("fallback", {})]
            # No socket file: each call gives up after its retries' short pauses, not after its timeout.
            assert time.monotonic() - started < 10
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def assert_every_entitlement_call_answers_network_error(client):
    statuses = [
        client.check_authentication().status,
        client.get_authentication().status,
        client.get_authorization("movie-1").status,
        client.check_authorization("movie-1").status,
        client.logout().status,
        client.get_metadata().status,
        client.get_metadata("zip").status,
        client.get_selected_provider().status,
        client.set_selected_provider(MVPD).status,
    ]
    assert [(status.status, status.code, status.action) for status in statuses] == [(0, "network_error", "none")] * 9
    assert client.get_authentication().failed and client.check_authentication().authenticated is False
    assert client.get_authorization("movie-1").authorized is False and client.logout().logged_out is False
    assert client.cancel_authentication() is None


def test_without_an_agent_the_entitlement_calls_answer_network_error_and_sign_in_exits_1():
    folder = tempfile.mkdtemp(prefix="pf-ex-", dir="/tmp")
    try:
        with PreflightClient(f"ipc://{folder}/app.sock", events_endpoint=f"ipc://{folder}/events.sock",
                             requestor=REQUESTOR) as client:
            assert_every_entitlement_call_answers_network_error(client)
            # The events stream waits silently for an agent that is not there.
            with client.authentication_events(timeout=0.1) as events:
                assert list(events) == []
        config = os.path.join(folder, "config.json")
        with open(config, "w") as handle:
            json.dump({"agent": {"appEndpoint": f"ipc://{folder}/app.sock",
                                 "eventsEndpoint": f"ipc://{folder}/events.sock"}}, handle)
        done = run_example("sign_in.py", config)
        assert done.returncode == 1, done.stdout + done.stderr
        assert done.stdout.startswith("failure: network_error (none): ") and len(done.stdout.splitlines()) == 1
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# --- Events -------------------------------------------------------------------------------------------


def test_watch_events_example_prints_the_event_a_prefetch_causes(env):
    watcher = subprocess.Popen(
        [sys.executable, os.path.join(EXAMPLES, "watch_events.py"), "--endpoint", env.agent.events,
         "--topic", "offers.prefetched", "--count", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        with env.client() as client:
            # PUB drops what is published before the subscription arrives: prefetch until one is printed.
            def printed():
                assert client.prefetch(["logo"])
                try:
                    watcher.wait(timeout=0.05)
                    return True
                except subprocess.TimeoutExpired:
                    return False

            wait_until("watch_events.py to print an event", printed)
        out, err = watcher.communicate(timeout=10)
    finally:
        if watcher.poll() is None:
            watcher.kill()
            watcher.communicate()
    assert watcher.returncode == 0, err
    lines = out.splitlines()
    assert len(lines) == 1
    topic, _, body = lines[0].partition(" ")
    assert topic == "offers.prefetched"
    event = json.loads(body)
    assert event["topic"] == "offers.prefetched"
    assert event["mboxes"] == ["logo"] and event["cached"] == ["logo"]


def test_client_events_yields_events_of_the_topics_asked_for(env):
    with env.client() as client, client.events(["offers.cleared"]) as stream:
        seen = []

        def cleared():
            client.clear_prefetch_cache()
            event = stream.receive(timeout=0.05)
            if event is not None:
                seen.append(event)
            return bool(seen)

        wait_until("an offers.cleared event", cleared)
    assert seen[0].topic == "offers.cleared"
    assert seen[0].body["topic"] == "offers.cleared" and seen[0].body["cleared"] == 0


# --- Wire and reliability -----------------------------------------------------------------------------


class RecordingProxy:
    """A ROUTER in front of the real agent that records every request body the client sends and forwards
    it unchanged, so the test sees exactly what the agent receives (and what it answers)."""

    def __init__(self, folder, upstream):
        self.endpoint = f"ipc://{folder}/recording.sock"
        self.context = zmq.Context()
        self.front = self.context.socket(zmq.ROUTER)
        self.front.setsockopt(zmq.LINGER, 0)
        self.front.bind(self.endpoint)
        self.back = self.context.socket(zmq.DEALER)
        self.back.setsockopt(zmq.LINGER, 0)
        self.back.connect(upstream)
        self.bodies = []
        self.replies = []
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        peers = {}
        poller = zmq.Poller()
        poller.register(self.front, zmq.POLLIN)
        poller.register(self.back, zmq.POLLIN)
        while not self.stopping.is_set():
            for sock, _ in poller.poll(50):
                if sock is self.front:
                    identity, delimiter, body = self.front.recv_multipart()
                    assert delimiter == b""
                    self.bodies.append(json.loads(body))
                    peers[self.bodies[-1]["id"]] = identity
                    self.back.send_multipart([b"", body])
                else:
                    _, body = self.back.recv_multipart()
                    reply = json.loads(body)
                    self.replies.append(reply)
                    self.front.send_multipart([peers.pop(reply["id"]), b"", body])

    def close(self):
        self.stopping.set()
        self.thread.join()
        self.front.close()
        self.back.close()
        self.context.term()


def test_the_client_puts_the_documented_json_on_the_wire(env):
    env.login_and_wait_configured()
    proxy = RecordingProxy(env.folder, env.agent.app)
    try:
        with PreflightClient(proxy.endpoint, requestor=REQUESTOR) as client:
            mboxes = [
                TargetPrefetch("logo", mbox_parameters={"status": "platinum"},
                               product_parameters={"id": "24D3412", "categoryId": "Books"},
                               order_parameters={"id": "ADCKKIM", "total": "344.30", "purchasedProductIds": "34, 125, 99"}),
                TargetPrefetch("buttonColor", mbox_parameters={"userType": "Paid"},
                               product_parameters={"id": "764334", "categoryId": "Online"},
                               order_parameters={"id": "4t4uxksa", "total": "54.90", "purchasedProductIds": ["id1", "id2"]}),
            ]
            assert client.prefetch(mboxes, profile_parameters={"age": "20-32"})
            client.load_requests([TargetRequest("logo", "BlueWhale", mbox_parameters={"status": "platinum"}),
                                  TargetRequest("buttonColor", "red")], profile_parameters={"age": "20-32"})
            client.preauthorize(["resource1", "resource2", "resource3"], disable_features=[Feature.LOCAL_CACHE])
            client.clear_prefetch_cache()
    finally:
        proxy.close()

    without_ids = [{key: value for key, value in body.items() if key != "id"} for body in proxy.bodies]
    assert without_ids == [
        {"v": 1, "cmd": "prefetch", "args": SEED_PREFETCH_ARGS},
        {"v": 1, "cmd": "loadRequests", "args": SEED_LOAD_ARGS},
        {"v": 1, "cmd": "preauthorize", "args": SEED_PREAUTHORIZE_ARGS},
        {"v": 1, "cmd": "clearPrefetchCache"},
    ]
    assert len({body["id"] for body in proxy.bodies}) == 4
    assert all(reply["ok"] is True for reply in proxy.replies), proxy.replies
    assert [reply["id"] for reply in proxy.replies] == [body["id"] for body in proxy.bodies]
    assert proxy.replies[0]["result"] == {"success": True, "mboxes": [{"name": "logo", "cached": True},
                                                                     {"name": "buttonColor", "cached": True}]}
    assert [c["source"] for c in proxy.replies[1]["result"]["contents"]] == ["cache", "cache"]
    assert proxy.replies[2]["result"]["outcome"] == "response"
    assert proxy.replies[3]["result"] == {"cleared": 2}


def test_a_request_without_a_reply_is_sent_again_on_a_new_socket():
    """Lazy Pirate: a stand-in agent that ignores the first request and answers every later one."""
    folder = tempfile.mkdtemp(prefix="pf-ex-", dir="/tmp")
    context = zmq.Context()
    stand_in = context.socket(zmq.ROUTER)
    stand_in.setsockopt(zmq.LINGER, 0)
    endpoint = f"ipc://{folder}/app.sock"
    stand_in.bind(endpoint)
    received = []
    stopping = threading.Event()

    def serve():
        while not stopping.is_set():
            if not stand_in.poll(50):
                continue
            identity, _, body = stand_in.recv_multipart()
            received.append((identity, json.loads(body)))
            if len(received) > 1:
                reply = {"v": 1, "id": received[-1][1]["id"], "ok": True, "result": {"version": "stand-in", "uptimeMs": 1}}
                stand_in.send_multipart([identity, b"", json.dumps(reply).encode()])

    server = threading.Thread(target=serve)
    server.start()
    try:
        with PreflightClient(endpoint, timeout=0.3, retries=5) as client:
            assert client.ping() == {"version": "stand-in", "uptimeMs": 1}
    finally:
        stopping.set()
        server.join()
        stand_in.close()
        context.term()
        shutil.rmtree(folder, ignore_errors=True)
    assert len(received) >= 2
    (first_peer, first), (second_peer, second) = received[:2]
    assert first == second and first["cmd"] == "ping"
    assert first_peer != second_peer


def test_the_client_keeps_working_across_an_agent_restart(env):
    offers = put_distinctive_offers(env.sim)
    with env.client() as client:
        assert client.prefetch(["logo"]) is True
        assert client.load_requests([TargetRequest("logo", "BlueWhale")])[0].source == "cache"
        stop_agent(env.agent)
        # While it is gone: the default content, at once.
        assert client.load_requests([TargetRequest("logo", "BlueWhale")])[0].source == "default"
        env.start()
        # The same client, with no reconnect call: a new agent with an empty cache fetches from Target.
        contents = client.load_requests([TargetRequest("logo", "BlueWhale")])
        assert (contents[0].source, contents[0].content) == ("network", option_content(offers["logo"]["options"][0]))
        assert client.ping()["uptimeMs"] >= 0


def test_endpoints_and_requestor_default_to_the_configuration_file(env):
    with PreflightClient(config=env.agent.config_path) as client:
        assert client.endpoint == env.agent.app
        assert client.events_endpoint == env.agent.events
        assert client.requestor == REQUESTOR
        assert isinstance(client.ping()["version"], str)
    # The admin endpoint answers app commands too; the app endpoint refuses admin commands.
    with PreflightClient(env.agent.app, requestor=REQUESTOR) as client:
        with pytest.raises(AgentError) as refused:
            client.request("status")
        assert refused.value.code == "not_permitted"
    assert request(env.agent.admin, "ping")["ok"] is True

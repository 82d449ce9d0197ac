"""What Adobe's Target mobile extension gets from the Delivery API, as the simulator serves it: click metrics, response
tokens, A4T payloads, visitor ids, workspaces (property tokens), QA mode previews, trace, and a slow answer."""

from __future__ import annotations

import time

import requests

from simharness import clean_sim, sim  # noqa: F401 - fixtures
from simharness import delivery_url, mobile_context, requires_specs

pytestmark = requires_specs

EXPLICIT_CLICK = "QPaLjCeI9qKCBUylkRQKBg=="  # the API description's click token (16 bytes)
DEFAULT_TOKEN_KEYS = {"activity.id", "activity.name", "experience.id", "experience.name", "offer.id", "offer.name",
                      "option.id", "option.name"}


# helpers --------------------------------------------------------------------------------------

def sim_now(sim) -> int:
    """The simulator's time (epoch ms): what a notification timestamp must be near."""
    return int(sim.get("/_sim/clock").json()["nowMs"])


def body_for(*names: str, kind: str = "prefetch", **extra) -> dict:
    body = {"context": mobile_context(),
            kind: {"mboxes": [{"index": i, "name": name} for i, name in enumerate(names, start=1)]}}
    body.update(extra)
    return body


def deliver(sim, body: dict, status: int = 200, session: str = "a1b2c3d4e5f6") -> dict:
    r = sim.post(delivery_url(session), json=body)
    assert r.status_code == status, r.text
    return r.json() if r.content else {}


def mboxes(sim, *names: str, kind: str = "prefetch", **extra) -> list[dict]:
    return deliver(sim, body_for(*names, kind=kind, **extra))[kind]["mboxes"]


def put_offer(sim, name: str, offer: dict, token: str | None = None) -> dict:
    r = sim.put(f"/_sim/target/offers/{name}", params={"propertyToken": token} if token else None, json=offer)
    assert r.status_code == 200, r.text
    return r.json()["offers"][name]


def click_token(described: dict) -> str:
    return described["metrics"][0]["eventToken"]


def notify(sim, *notes: dict, status: int = 200) -> dict:
    return deliver(sim, {"context": mobile_context(), "notifications": list(notes)}, status)


def note(sim, id_: str, mbox: str, tokens: list | None, kind: str = "click") -> dict:
    item = {"id": id_, "type": kind, "timestamp": sim_now(sim), "mbox": {"name": mbox}}
    if tokens is not None:
        item["tokens"] = tokens
    return item


def recorded(sim, **params) -> list[dict]:
    return sim.get("/_sim/target/notifications", params=params).json()["notifications"]


def request_violations(sim) -> list[str]:
    return [m for v in sim.violations() for m in v["messages"]]


def wait_until(condition, timeout: float = 10.0, interval: float = 0.02):
    """Polls `condition` until it returns something truthy (returned), or fails after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout} s")
        time.sleep(interval)


# 1. click metrics -----------------------------------------------------------------------------

def test_an_offer_with_a_click_metric_carries_it_in_prefetch_and_execute_answers(sim):
    described = put_offer(sim, "promo", {"options": [{"type": "html", "content": "<b>50% off</b>"}],
                                         "clickMetric": True})
    click = described["metrics"][0]["eventToken"]
    assert described["metrics"] == [{"type": "click", "eventToken": click}]
    assert click != described["options"][0]["eventToken"]

    prefetched, plain = mboxes(sim, "promo", "logo")
    assert prefetched["metrics"] == [{"type": "click", "eventToken": click}]
    assert "metrics" not in plain  # the logo offer declares no click metric
    executed = mboxes(sim, "promo", kind="execute")[0]
    assert executed["metrics"] == prefetched["metrics"]
    assert "metrics" not in mboxes(sim, "nothingHere")[0]
    # Deterministic per (mbox, offer), like event tokens; another offer gets another click token.
    assert put_offer(sim, "promo", {"type": "html", "content": "<b>60% off</b>", "clickMetric": True}
                     )["metrics"][0]["eventToken"] != click
    assert sim.violations() == []


def test_an_explicit_click_token_is_served_and_accepted(sim):
    put_offer(sim, "promo", {"type": "json", "content": {"x": 1}, "clickMetric": {"eventToken": EXPLICIT_CLICK}})
    assert mboxes(sim, "promo")[0]["metrics"] == [{"type": "click", "eventToken": EXPLICIT_CLICK}]
    assert notify(sim, note(sim, "c1", "promo", [EXPLICIT_CLICK]))["notifications"] == [{"id": "c1"}]
    put_offer(sim, "other", {"type": "json", "content": {"y": 1}, "clickMetric": "b3RoZXIgY2xpY2sgdG9rZW4="})
    assert mboxes(sim, "other")[0]["metrics"][0]["eventToken"] == "b3RoZXIgY2xpY2sgdG9rZW4="
    assert sim.violations() == []


def test_a_click_notification_needs_the_click_token_of_its_mbox(sim):
    put_offer(sim, "promo", {"type": "html", "content": "<p>promo</p>", "clickMetric": True})
    put_offer(sim, "banner", {"type": "html", "content": "<p>banner</p>", "clickMetric": True})
    promo, banner = mboxes(sim, "promo", "banner")
    click, display = promo["metrics"][0]["eventToken"], promo["options"][0]["eventToken"]
    other_click = banner["metrics"][0]["eventToken"]
    unknown = "dW5rbm93biB0b2tlbiB1bmtub3duIHRva2VuIHVua25vd24="

    cases = [([display], "is a display token of mbox 'promo', not its click token"),
             ([other_click], "is the click token of another mbox, not of 'promo'"),
             ([unknown], "is not a click token issued for mbox 'promo'"),
             ([click, display], "notifications[1].tokens[1]"),
             (None, "a click notification must carry the click token"),
             ([], "a click notification must carry the click token")]
    for tokens, words in cases:
        good = note(sim, "ok", "promo", [click])
        r = sim.post(delivery_url(), json={"context": mobile_context(),
                                           "notifications": [good, note(sim, "bad", "promo", tokens)]})
        assert r.status_code == 400, (tokens, r.text)
        assert r.json()["message"].startswith("Invalid request: ") and words in r.json()["message"], r.json()
        assert '"bad"' in r.json()["message"]
    # As for any invalid notification, nothing of the request was carried out, and it is not a contract violation.
    assert recorded(sim) == []
    stats = sim.get("/_sim/stats").json()
    assert stats["notificationRefusals"] == len(cases) and stats["notifications"] == 0
    assert sim.violations() == []

    assert notify(sim, note(sim, "c1", "promo", [click]))["notifications"] == [{"id": "c1"}]


def test_click_notifications_are_recorded_apart_and_counted(sim):
    promo = put_offer(sim, "promo", {"type": "html", "content": "<p>promo</p>", "clickMetric": True})
    click, display = promo["metrics"][0]["eventToken"], promo["options"][0]["eventToken"]
    # A journal replayed after a restart: the click token of the current offer is valid before it is served here.
    notify(sim, note(sim, "c0", "promo", [click]))
    mboxes(sim, "promo")
    notify(sim, note(sim, "d1", "promo", [display], kind="display"), note(sim, "c1", "promo", [click]),
           note(sim, "c2", "promo", [click]))

    assert [(n["id"], n["type"]) for n in recorded(sim)] == [("c0", "click"), ("d1", "display"), ("c1", "click"),
                                                            ("c2", "click")]
    clicks = recorded(sim, type="click")
    assert [(n["id"], n["tokensIssued"]) for n in clicks] == [("c0", False), ("c1", True), ("c2", True)]
    assert all(n["tokens"] == [click] and n["mbox"] == "promo" for n in clicks)
    assert [n["id"] for n in recorded(sim, type="display")] == ["d1"]
    listed = sim.get("/_sim/target/notifications", params={"type": "click"}).json()
    assert listed["count"] == 3
    r = sim.get("/_sim/target/notifications", params={"type": "view"})
    assert r.status_code == 400 and "type" in r.json()["error"]
    stats = sim.get("/_sim/stats").json()
    assert (stats["notifications"], stats["clickNotifications"], stats["displayNotifications"]) == (4, 3, 1)
    assert sim.violations() == []


def test_a_click_token_in_a_display_notification_is_served_with_an_advisory(sim):
    click = click_token(put_offer(sim, "promo", {"type": "html", "content": "<p/>", "clickMetric": True}))
    notify(sim, note(sim, "d1", "promo", [click], kind="display"))
    assert any(m.startswith("advisory: $.notifications[0].tokens[0]: a click token in a display notification")
               for m in request_violations(sim))


def test_revoking_an_mbox_revokes_its_click_token(sim):
    click = click_token(put_offer(sim, "promo", {"type": "html", "content": "<p/>", "clickMetric": True}))
    mboxes(sim, "promo")
    revoked = sim.put("/_sim/target/revokedTokens", json={"mboxes": ["promo"]}).json()["tokens"]
    assert click in revoked
    r = sim.post(delivery_url(), json={"context": mobile_context(),
                                       "notifications": [note(sim, "c", "promo", [click])]})
    assert r.status_code == 400 and "is revoked" in r.json()["message"]


def test_bad_click_metrics_are_refused_by_control(sim):
    for bad in ({"type": "html", "content": "x", "clickMetric": 1},
                {"type": "html", "content": "x", "clickMetric": ""},
                {"type": "html", "content": "x", "clickMetric": {"token": "x"}},
                {"options": [{"type": "html", "content": "x"}], "clickMetric": [True]},
                {"options": [{"type": "html", "content": "x"}], "responseTokens": "yes"},
                {"options": [{"type": "html", "content": "x"}], "colour": "red"}):
        r = sim.put("/_sim/target/offers/promo", json=bad)
        assert r.status_code == 400 and r.json()["error"], bad
    assert "promo" not in sim.get("/_sim/target/offers").json()["offers"]


# 2. response tokens ---------------------------------------------------------------------------

def test_response_tokens_true_sends_the_default_set_with_stable_ids(sim):
    put_offer(sim, "promo", {"options": [{"type": "html", "content": "<p>a</p>"},
                                         {"type": "html", "content": "<p>b</p>",
                                          "responseTokens": {"activity.id": "181024"}}],
                             "responseTokens": True})
    first, explicit = mboxes(sim, "promo")[0]["options"]
    tokens = first["responseTokens"]
    assert set(tokens) == DEFAULT_TOKEN_KEYS and all(isinstance(v, str) and v for v in tokens.values())
    assert tokens["activity.id"].isdigit() and tokens["offer.id"].isdigit()
    assert tokens["activity.name"] == "promo activity" and tokens["option.id"] == "1"
    assert tokens["experience.id"] == "0" and tokens["experience.name"] == "Experience A"
    assert explicit["responseTokens"] == {"activity.id": "181024"}  # explicit ones are served as given
    # Stable: the same in the next response, in an execute, in control's description, and after a reset.
    assert mboxes(sim, "promo", kind="execute")[0]["options"][0]["responseTokens"] == tokens
    assert sim.get("/_sim/target/offers").json()["offers"]["promo"]["options"][0]["responseTokens"] == tokens
    sim.reset()
    put_offer(sim, "promo", {"type": "html", "content": "<p>other</p>", "responseTokens": True})
    again = mboxes(sim, "promo")[0]["options"][0]["responseTokens"]
    assert again["activity.id"] == tokens["activity.id"] and again["offer.id"] == tokens["offer.id"]
    # Derived from the mbox name: another mbox, other ids.
    put_offer(sim, "banner", {"type": "html", "content": "<p/>", "responseTokens": True})
    assert mboxes(sim, "banner")[0]["options"][0]["responseTokens"]["activity.id"] != tokens["activity.id"]
    assert "responseTokens" not in mboxes(sim, "logo")[0]["options"][0]
    # Per option: true for the default set (a bare option too), false for none whatever the offer says.
    put_offer(sim, "mixed", {"options": [{"type": "html", "content": "<p>1</p>", "responseTokens": False},
                                         {"type": "html", "content": "<p>2</p>"}], "responseTokens": True})
    none, second = mboxes(sim, "mixed")[0]["options"]
    assert "responseTokens" not in none and second["responseTokens"]["option.name"] == "Offer2"
    put_offer(sim, "bare", {"type": "json", "content": {"k": 1}, "responseTokens": True})
    assert mboxes(sim, "bare")[0]["options"][0]["responseTokens"]["offer.name"] == "bare offer 1"
    assert sim.violations() == []


# 3. A4T ---------------------------------------------------------------------------------------

def a4t(logging: str | None) -> dict:
    if logging == "server_side":  # Target forwards the payload itself: it needs these
        return {"experienceCloud": {"analytics": {"logging": logging,
                                                  "supplementalDataId": "0123456789ABCDEF-0123456789ABCDEF",
                                                  "trackingServer": "ags041.sc.omtrdc.net"}},
                "id": {"marketingCloudVisitorId": "2304820394812039"}}
    return {"experienceCloud": {"analytics": {"logging": logging}}} if logging else {}


def test_client_side_logging_gets_analytics_payloads(sim):
    put_offer(sim, "promo", {"type": "html", "content": "<p/>", "clickMetric": True, "responseTokens": True})
    for kind in ("prefetch", "execute"):
        promo, logo, empty = mboxes(sim, "promo", "logo", "nothingHere", kind=kind, **a4t("client_side"))
        activity = promo["options"][0]["responseTokens"]["activity.id"]
        assert promo["analytics"] == {"payload": {"pe": "tnt", "tnta": f"{activity}:0:0|2"}}
        assert promo["metrics"][0]["analytics"] == {"payload": {"pe": "tnt", "tnta": f"{activity}:0:0|32767"}}
        assert logo["analytics"]["payload"]["pe"] == "tnt"
        assert logo["analytics"]["payload"]["tnta"] != promo["analytics"]["payload"]["tnta"]
        assert "analytics" not in empty  # no content, no payload
    for logging in ("server_side", None):
        promo = mboxes(sim, "promo", **a4t(logging))[0]
        assert "analytics" not in promo and "analytics" not in promo["metrics"][0]
    assert sim.violations() == []


def test_experience_cloud_analytics_is_validated(sim):
    r = sim.post(delivery_url(), json=body_for("logo", **a4t("browser_side")))
    assert r.status_code == 400 and "logging" in r.json()["message"]
    bad_sdid = {"experienceCloud": {"analytics": {"logging": "server_side", "supplementalDataId": "x" * 33,
                                                  "trackingServer": "ags041.sc.omtrdc.net"}},
                "id": {"marketingCloudVisitorId": "2304820394812039"}}
    r = sim.post(delivery_url(), json=body_for("logo", **bad_sdid))
    assert r.status_code == 400 and "<16 hexadecimal digits>-<16 hexadecimal digits>" in r.json()["message"]
    r = sim.post(delivery_url(), json=body_for("logo", experienceCloud={"analytics": {"supplementalDataId": "1"}}))
    assert r.status_code == 400 and "supplementalDataId" in r.json()["message"]
    assert len(sim.violations()) == 3
    sim.delete("/_sim/violations")

    good = dict(bad_sdid)
    good["experienceCloud"] = {"analytics": {"logging": "server_side",
                                             "supplementalDataId": "0123456789ABCDEF-0123456789abcdef",
                                             "trackingServer": "ags041.sc.omtrdc.net"}}
    deliver(sim, body_for("logo", **good))
    assert sim.violations() == []
    # Prose rules are served and recorded: a tracking server with its scheme, server side without what it needs.
    deliver(sim, body_for("logo", experienceCloud={"analytics": {"logging": "server_side",
                                                                 "trackingServer": "https://ags041.sc.omtrdc.net"}}))
    messages = request_violations(sim)
    assert any("trackingServer: should not include http://" in m for m in messages)
    assert any(m.startswith("docs:") and "supplementalDataId, id.marketingCloudVisitorId" in m for m in messages)


# 4. visitor ids -------------------------------------------------------------------------------

FULL_ID = {"tntId": "d359234570e044f14e1faeeba02d6ab23439914e.28_78", "thirdPartyId": "23423432",
           "marketingCloudVisitorId": "2304820394812039",
           "customerIds": [{"id": "134325423", "integrationCode": "crm_data", "authenticatedState": "authenticated"},
                           {"id": "u-7", "integrationCode": "loyalty", "authenticatedState": "logged_out"}]}


def visitors(sim) -> list[dict]:
    return sim.get("/_sim/target/visitors").json()["requests"]


def test_visitor_ids_are_echoed_and_recorded(sim):
    answered = deliver(sim, body_for("logo", id=FULL_ID), session="session-1")
    assert answered["id"] == FULL_ID
    answered = deliver(sim, body_for("logo", id={"thirdPartyId": "B234A029348"}), session="session-2")
    assert answered["id"]["thirdPartyId"] == "B234A029348" and answered["id"]["tntId"].endswith(".35_0")
    deliver(sim, body_for("logo"), session="session-3")

    first, second, third = visitors(sim)
    assert {k: first[k] for k in ("tntId", "thirdPartyId", "marketingCloudVisitorId", "customerIds")} == FULL_ID
    assert first["sessionId"] == "session-1" and first["propertyToken"] is None
    assert first["responseTntId"] == FULL_ID["tntId"]
    assert second["tntId"] is None and second["thirdPartyId"] == "B234A029348"
    assert second["responseTntId"] == answered["id"]["tntId"]
    assert (second["marketingCloudVisitorId"], second["customerIds"]) == (None, None)
    assert third["sessionId"] == "session-3" and third["tntId"] is None
    assert [v["seq"] for v in (first, second, third)] == [e["seq"] for e in sim.requests_log(service="target")]
    assert sim.violations() == []


def test_the_visitors_log_keeps_the_last_hundred_requests(sim):
    for i in range(105):
        deliver(sim, body_for("logo", id={"thirdPartyId": f"user-{i}"}))
    logged = visitors(sim)
    assert len(logged) == 100
    assert logged[0]["thirdPartyId"] == "user-5" and logged[-1]["thirdPartyId"] == "user-104"


def test_visitor_ids_are_validated(sim):
    cases = {
        "unknown state": ({"marketingCloudVisitorId": "1", "customerIds": [
            {"id": "1", "integrationCode": "crm", "authenticatedState": "signed_in"}]}, "authenticatedState"),
        "no integration code": ({"marketingCloudVisitorId": "1", "customerIds": [
            {"id": "1", "authenticatedState": "unknown"}]}, "integrationCode"),
        "null element": ({"marketingCloudVisitorId": "1", "customerIds": [None]}, "customerIds"),
        "code too long": ({"marketingCloudVisitorId": "1", "customerIds": [
            {"id": "1", "integrationCode": "c" * 51, "authenticatedState": "unknown"}]}, "integrationCode"),
        "only customer ids": ({"customerIds": [
            {"id": "1", "integrationCode": "crm", "authenticatedState": "unknown"}]},
            "either tntId, thirdPartyId or marketingCloudVisitorId is required"),
        "no id at all": ({}, "either tntId"),
        "third party id too long": ({"thirdPartyId": "x" * 129}, "thirdPartyId"),
        "dotted tntId": ({"tntId": "a.b.c"}, "tntId"),
    }
    for label, (visitor, words) in cases.items():
        r = sim.post(delivery_url(), json=body_for("logo", id=visitor))
        assert r.status_code == 400, label
        assert words in r.json()["message"], (label, r.json())
        assert any(words in m for m in sim.violations()[-1]["messages"]), label
    assert visitors(sim) == []  # refused requests are not carried out

    sim.delete("/_sim/violations")
    # Customer ids without the Experience Cloud visitor id: the API description says it must be sent too.
    deliver(sim, body_for("logo", id={"tntId": "abc", "customerIds": FULL_ID["customerIds"]}))
    assert [m for m in request_violations(sim) if m.startswith("docs: $.id.customerIds")]


# 5. workspaces (property tokens) --------------------------------------------------------------

def prop(token: str) -> dict:
    return {"property": {"token": token}}


def test_a_property_token_is_answered_from_its_workspace_only(sim):
    r = sim.put("/_sim/target/offers", params={"propertyToken": "ws-a"},
                json={"logo": {"type": "html", "content": "<p>logo A</p>"},
                      "promo": {"type": "json", "content": {"a": 1}}})
    assert r.status_code == 200 and r.json()["propertyToken"] == "ws-a"
    put_offer(sim, "promo", {"type": "json", "content": {"b": 2}}, token="ws-b")

    logo, promo, hero = mboxes(sim, "logo", "promo", "hero", **prop("ws-a"))
    assert logo["options"][0]["content"] == "<p>logo A</p>" and promo["options"][0]["content"] == {"a": 1}
    assert "options" not in hero  # in the default workspace, not in ws-a
    logo, promo = mboxes(sim, "logo", "promo", **prop("ws-b"))
    assert "options" not in logo and promo["options"][0]["content"] == {"b": 2}
    logo, promo = mboxes(sim, "logo", "promo", kind="execute")  # no property: the default workspace
    assert logo["options"][0]["content"].startswith("<img") and "options" not in promo
    assert all("options" not in m for m in mboxes(sim, "logo", "promo", **prop("nobody-set-this")))

    described = sim.get("/_sim/target/offers", params={"propertyToken": "ws-a"}).json()
    assert described["propertyToken"] == "ws-a" and set(described["offers"]) == {"logo", "promo"}
    assert described["offers"]["promo"]["options"][0]["eventToken"] == mboxes(
        sim, "promo", **prop("ws-a"))[0]["options"][0]["eventToken"]
    assert sim.get("/_sim/target/offers").json()["propertyToken"] is None
    assert sim.get("/_sim/target/workspaces").json()["workspaces"] == [
        {"propertyToken": None, "mboxes": ["logo", "buttonColor", "hero"]},
        {"propertyToken": "ws-a", "mboxes": ["logo", "promo"]},
        {"propertyToken": "ws-b", "mboxes": ["promo"]}]
    assert [v["propertyToken"] for v in visitors(sim)] == ["ws-a", "ws-b", None, "nobody-set-this", "ws-a"]
    assert sim.violations() == []


def test_a_notification_is_recorded_with_the_property_it_was_sent_under(sim):
    put_offer(sim, "logo", {"type": "html", "content": "<p>logo A</p>"}, token="ws-a")
    token_a = mboxes(sim, "logo", **prop("ws-a"))[0]["options"][0]["eventToken"]
    token_default = mboxes(sim, "logo")[0]["options"][0]["eventToken"]
    assert token_a != token_default
    display = {"type": "display", "mbox": {"name": "logo"}}
    deliver(sim, {"context": mobile_context(), **prop("ws-a"), "notifications": [
        {**display, "id": "right", "timestamp": sim_now(sim), "tokens": [token_a]},
        {**display, "id": "wrong", "timestamp": sim_now(sim), "tokens": [token_default]}]})
    notify(sim, {**display, "id": "default", "timestamp": sim_now(sim), "tokens": [token_default]})
    recorded = sim.get("/_sim/target/notifications").json()["notifications"]
    assert [(n["id"], n["propertyToken"], n["tokensIssued"], n["tokensIssuedUnderProperty"]) for n in recorded] == [
        ("right", "ws-a", True, True), ("wrong", "ws-a", True, False), ("default", None, True, True)]


def test_workspaces_are_deleted_per_token(sim):
    put_offer(sim, "promo", {"type": "json", "content": {"a": 1}}, token="ws-a")
    r = sim.delete("/_sim/target/offers/logo", params={"propertyToken": "ws-a"})
    assert r.status_code == 404 and "ws-a" in r.json()["error"]
    assert sim.delete("/_sim/target/offers/promo", params={"propertyToken": "ws-a"}).json() == {
        "deleted": "promo", "propertyToken": "ws-a"}
    assert sim.delete("/_sim/target/offers", params={"propertyToken": "ws-a"}).json() == {
        "propertyToken": "ws-a", "cleared": 0}
    assert sim.delete("/_sim/target/offers", params={"propertyToken": "ws-a"}).status_code == 404
    assert "options" in mboxes(sim, "logo")[0]  # the default workspace untouched
    assert sim.delete("/_sim/target/offers").json() == {"propertyToken": None, "cleared": 3}
    assert "options" not in mboxes(sim, "logo")[0]
    assert sim.get("/_sim/target/offers", params={"propertyToken": ""}).status_code == 400


def test_an_empty_or_missing_property_token_is_refused(sim):
    for bad in ({"property": {}}, {"property": {"token": 7}}):
        r = sim.post(delivery_url(), json=body_for("logo", **bad))
        assert r.status_code == 400 and "token" in r.json()["message"], bad


# 6. QA mode previews --------------------------------------------------------------------------

PREVIEW = {"promo": {"type": "html", "content": "<p>new promo</p>", "responseTokens": True},
           "logo": {"type": "html", "content": "<p>new logo</p>"}}


def qa(token: str, **more) -> dict:
    return {"qaMode": {"token": token, **more}}


def test_a_registered_qa_token_is_answered_from_the_preview_offers(sim):
    r = sim.put("/_sim/target/preview", json={"token": "qa-1", "offers": PREVIEW})
    assert r.status_code == 200, r.text
    registered = r.json()["previews"]
    assert [p["token"] for p in registered] == ["qa-1"] and set(registered[0]["offers"]) == {"promo", "logo"}

    promo, logo, hero = mboxes(sim, "promo", "logo", "hero", **qa("qa-1", evaluateAsTrueAudienceIds=[2, 3]))
    assert promo["options"][0]["content"] == "<p>new promo</p>" and logo["options"][0]["content"] == "<p>new logo</p>"
    assert promo["options"][0]["responseTokens"]["activity.name"] == "(preview) promo activity"
    assert promo["options"] == registered[0]["offers"]["promo"]["options"]
    assert hero["options"][0]["content"].startswith('<div class="hero">')  # evaluated along the active ones
    promo, hero = mboxes(sim, "promo", "hero", **qa("qa-1", listedActivitiesOnly=True))
    assert "options" in promo and "options" not in hero
    # previewIndexes names activities of the token (1-based, in the order given); out of bounds: ignored.
    promo, logo = mboxes(sim, "promo", "logo", **qa("qa-1", listedActivitiesOnly=True,
                                                    previewIndexes=[{"activityIndex": 2}]))
    assert "options" not in promo and logo["options"][0]["content"] == "<p>new logo</p>"
    assert sim.violations() == []
    promo, logo = mboxes(sim, "promo", "logo", **qa("qa-1", previewIndexes=[{"activityIndex": 1},
                                                                           {"activityIndex": 9}]))
    assert promo["options"][0]["content"] == "<p>new promo</p>" and logo["options"][0]["content"].startswith("<img")
    assert any("previewIndexes[1].activityIndex: 9" in m for m in request_violations(sim))


def test_an_unknown_qa_token_is_refused(sim):
    sim.put("/_sim/target/preview", json={"token": "qa-1", "offers": PREVIEW})
    r = sim.post(delivery_url(), json=body_for("promo", **qa("qa-2")))
    assert r.status_code == 400 and r.json() == {"status": 400, "message": "Invalid QA mode token"}
    entry = sim.last_request()
    assert entry["note"].startswith("refused: Invalid QA mode token") and entry["valid"] is True
    stats = sim.get("/_sim/stats").json()
    assert stats["qaModeRefusals"] == 1 and stats["prefetched"] == {}
    assert sim.violations() == []

    assert sim.delete("/_sim/target/preview", params={"token": "qa-9"}).status_code == 404
    assert sim.delete("/_sim/target/preview").json() == {"cleared": 1}
    assert sim.post(delivery_url(), json=body_for("promo", **qa("qa-1"))).status_code == 400
    assert sim.get("/_sim/target/preview").json() == {"previews": []}


def test_qa_mode_is_validated(sim):
    cases = {"empty previewIndexes": (qa("qa-1", previewIndexes=[]), "previewIndexes"),
             "activityIndex 0": (qa("qa-1", previewIndexes=[{"activityIndex": 0}]), "activityIndex"),
             "audience ids as strings": (qa("qa-1", evaluateAsTrueAudienceIds=["7"]), "evaluateAsTrueAudienceIds"),
             "token not a string": (qa(12), "token")}
    sim.put("/_sim/target/preview", json={"token": "qa-1", "offers": PREVIEW})
    for label, (extra, words) in cases.items():
        r = sim.post(delivery_url(), json=body_for("promo", **extra))
        assert r.status_code == 400 and words in r.json()["message"], (label, r.json())
    assert len(sim.violations()) == len(cases)
    sim.delete("/_sim/violations")
    # Without a token QA mode names no activity: served from the normal offers, with an advisory.
    logo = mboxes(sim, "logo", qaMode={"listedActivitiesOnly": True})[0]
    assert logo["options"][0]["content"].startswith("<img")
    assert any(m.startswith("advisory: $.qaMode without a token") for m in request_violations(sim))


def test_bad_previews_are_refused_by_control(sim):
    for bad in ({"offers": PREVIEW}, {"token": "", "offers": PREVIEW}, {"token": "t"},
                {"token": "t", "offers": {"x": {"type": "video", "content": "x"}}}, {"token": "t", "offers": {},
                                                                                    "extra": 1}):
        r = sim.put("/_sim/target/preview", json=bad)
        assert r.status_code == 400 and r.json()["error"], bad
    assert sim.get("/_sim/target/preview").json() == {"previews": []}


# 7. trace -------------------------------------------------------------------------------------

def trace(token: str) -> dict:
    return {"trace": {"authorizationToken": token, "usage": {"sdkName": "AEPTarget", "sdkVersion": "5.0.0"}}}


def test_a_trace_with_the_authorization_token_is_answered_with_traces(sim):
    assert sim.put("/_sim/target/traceToken", json={"token": "trace-secret"}).json() == {"token": "trace-secret"}
    assert sim.get("/_sim/target/traceToken").json() == {"token": "trace-secret"}
    put_offer(sim, "promo", {"type": "html", "content": "<p/>", "clickMetric": True}, token="ws-a")
    body = body_for("promo", "logo", id={"tntId": "abc.28_7", "thirdPartyId": "tp-1"}, **prop("ws-a"),
                    **trace("trace-secret"))
    body["prefetch"]["mboxes"][0]["parameters"] = {"status": "gold"}
    promo, logo = deliver(sim, body, session="traced-1")["prefetch"]["mboxes"]
    assert promo["trace"]["request"]["mbox"] == {"name": "promo", "index": 1, "type": "prefetch",
                                                 "parameters": {"status": "gold"}}
    assert promo["trace"]["request"]["propertyToken"] == "ws-a"
    assert promo["trace"]["request"]["sessionId"] == "traced-1" and promo["trace"]["request"]["client"] == "demo"
    assert promo["trace"]["request"]["usage"] == {"sdkName": "AEPTarget", "sdkVersion": "5.0.0"}
    assert promo["trace"]["visitor"] == {"tntId": "abc.28_7", "thirdPartyId": "tp-1"}
    activity = promo["trace"]["activity"]
    assert activity["matched"] is True and activity["name"] == "promo activity" and activity["clickMetric"] is True
    assert activity["offers"][0]["type"] == "html" and activity["experience"] == {"id": "0", "name": "Experience A"}
    assert logo["trace"]["activity"] == {"matched": False}  # not in ws-a
    executed = deliver(sim, body_for("logo", kind="execute", **trace("trace-secret")))["execute"]["mboxes"][0]
    assert executed["trace"]["request"]["mbox"]["type"] == "execute"
    assert executed["trace"]["activity"]["matched"] is True and executed["trace"]["request"]["propertyToken"] is None
    assert executed["trace"]["visitor"]["tntId"].endswith(".35_0")  # the one Target made
    assert sim.violations() == []


def test_a_trace_without_the_right_token_gets_no_trace_and_an_advisory(sim):
    logo = mboxes(sim, "logo", **trace("anything"))[0]
    assert "trace" not in logo
    assert any("no trace token is set" in m for m in request_violations(sim))
    sim.put("/_sim/target/traceToken", json={"token": "trace-secret"})
    sim.delete("/_sim/violations")
    assert "trace" not in mboxes(sim, "logo", **trace("wrong"))[0]
    assert any(m.startswith("advisory: $.trace.authorizationToken: not the authorization token")
               for m in request_violations(sim))
    sim.delete("/_sim/violations")
    assert "trace" not in mboxes(sim, "logo")[0]  # no trace asked for: none, and nothing to say
    assert sim.violations() == []
    assert sim.delete("/_sim/target/traceToken").json() == {"token": None}
    r = sim.post(delivery_url(), json=body_for("logo", trace={"usage": {"a": "b"}}))
    assert r.status_code == 400 and "authorizationToken" in r.json()["message"]
    for bad in ({"token": ""}, {"token": 5}, {}, {"token": "t", "x": 1}):
        assert sim.put("/_sim/target/traceToken", json=bad).status_code == 400, bad


# 8. a delivery slower than the client's timeout -----------------------------------------------

def test_a_latency_fault_makes_one_delivery_slower_than_a_client_timeout(sim):
    fault = sim.fault(path="/rest/v1/delivery", latencyMs=1500, count=1)
    started = time.monotonic()
    try:
        sim.http.post(sim.url(delivery_url()), json=body_for("logo"), timeout=0.3)
        raise AssertionError("the delayed request was answered before the client's timeout")
    except requests.Timeout:
        pass
    assert time.monotonic() - started < 1.5
    # The fault was for one request: the next one is answered at once, well within that timeout's budget.
    fresh = requests.post(sim.url(delivery_url()), json=body_for("logo"), timeout=1.0)
    assert fresh.status_code == 200
    # latencyMs alone carries the request out: it is logged with its fault once the delay is over.
    entry = wait_until(lambda: next((e for e in sim.requests_log(service="target")
                                     if e["fault"] == fault and e["status"] is not None), None))
    assert entry["status"] == 200 and entry["durationMs"] >= 1500
    assert sim.get("/_sim/faults").json() == {"faults": []}
    assert sim.get("/_sim/stats").json()["prefetched"] == {"logo": 2}


# all at once ----------------------------------------------------------------------------------

def test_everything_in_one_request_validates(sim):
    """A request like the mobile extension's with every addition at once: the response passes the spec."""
    put_offer(sim, "promo", {"options": [{"type": "html", "content": "<p>ws</p>"}], "clickMetric": True,
                             "responseTokens": True}, token="ws-a")
    put_offer(sim, "hero", {"type": "json", "content": {"ws": True}}, token="ws-a")
    sim.put("/_sim/target/preview", json={"token": "qa-1", "offers": PREVIEW})
    sim.put("/_sim/target/traceToken", json={"token": "trace-secret"})
    first = deliver(sim, body_for("promo", "hero", id=FULL_ID, **prop("ws-a"), **a4t("client_side")))
    promo = first["prefetch"]["mboxes"][0]
    clicked, displayed = click_token(promo), promo["options"][0]["eventToken"]

    body = body_for("promo", "hero", "logo", id=FULL_ID, **prop("ws-a"), **a4t("client_side"),
                    **qa("qa-1", evaluateAsTrueAudienceIds=[1], previewIndexes=[{"activityIndex": 1}]),
                    **trace("trace-secret"))
    body["execute"] = {"mboxes": [{"index": 1, "name": "hero"}]}
    body["notifications"] = [note(sim, "d1", "promo", [displayed], kind="display"),
                             note(sim, "c1", "promo", [clicked])]
    answer = deliver(sim, body)
    preview_promo, hero, logo = answer["prefetch"]["mboxes"]
    assert preview_promo["options"][0]["content"] == "<p>new promo</p>"  # the preview's first activity
    assert preview_promo["trace"]["activity"]["preview"] is True and "metrics" not in preview_promo
    assert hero["options"][0]["content"] == {"ws": True}  # not in the preview: from the request's workspace
    assert hero["analytics"]["payload"]["pe"] == "tnt" and hero["trace"]["request"]["qaMode"] is True
    assert "options" not in logo  # the preview's logo is not selected, ws-a has none
    assert answer["execute"]["mboxes"][0]["options"][0]["content"] == {"ws": True}
    assert answer["notifications"] == [{"id": "d1"}, {"id": "c1"}] and answer["id"] == FULL_ID
    assert sim.violations() == []


# 9. reset ---------------------------------------------------------------------------------------

def test_reset_forgets_workspaces_previews_trace_clicks_and_visitors(sim):
    described = put_offer(sim, "promo", {"type": "html", "content": "<p/>", "clickMetric": True}, token="ws-a")
    sim.put("/_sim/target/preview", json={"token": "qa-1", "offers": PREVIEW})
    sim.put("/_sim/target/traceToken", json={"token": "trace-secret"})
    mboxes(sim, "promo", **prop("ws-a"))
    notify(sim, note(sim, "c1", "promo", [click_token(described)]))
    assert sim.post(delivery_url(), json=body_for("logo", **qa("nope"))).status_code == 400

    sim.reset()
    assert sim.get("/_sim/target/workspaces").json()["workspaces"] == [
        {"propertyToken": None, "mboxes": ["logo", "buttonColor", "hero"]}]
    assert sim.get("/_sim/target/preview").json() == {"previews": []}
    assert sim.get("/_sim/target/traceToken").json() == {"token": None}
    assert visitors(sim) == [] and recorded(sim) == []
    stats = sim.get("/_sim/stats").json()
    assert (stats["clickNotifications"], stats["displayNotifications"], stats["qaModeRefusals"]) == (0, 0, 0)


def test_no_response_violations_in_this_module(sim):
    sim.collect_response_violations()
    assert sim.response_violations == []

"""What Adobe's Target mobile extension gets from the Delivery API, as the simulator serves it: click metrics, response
tokens, A4T payloads."""

from __future__ import annotations

import time

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


def test_no_response_violations_in_this_module(sim):
    sim.collect_response_violations()
    assert sim.response_violations == []

"""Target invalidates a whole Delivery request for one invalid notification (a timestamp too far from its time,
a token it did not issue or no longer honours), as the spec's Notification description says."""

from __future__ import annotations

import base64
import hashlib

import pytest

from simharness import clean_sim, sim  # noqa: F401 - fixtures
from simharness import SimProcess, delivery_url, epoch_ms, mobile_context, requires_specs

pytestmark = requires_specs

HOUR_MS = 3600 * 1000
YEARS_26_MS = 26 * 365 * 24 * HOUR_MS
Y2K_MS = 946684800000


def offered_token(sim, mbox: str = "logo") -> str:
    return sim.get("/_sim/target/offers").json()["offers"][mbox]["options"][0]["eventToken"]


def note(id_: str, timestamp: int | None = None, tokens: list | None = None, mbox: str = "logo") -> dict:
    item = {"id": id_, "type": "display", "timestamp": epoch_ms() if timestamp is None else timestamp,
            "mbox": {"name": mbox}}
    if tokens is not None:
        item["tokens"] = tokens
    return item


def deliver(sim, *notifications: dict, prefetch: list[str] | None = None):
    body = {"context": mobile_context(), "notifications": list(notifications)}
    if prefetch:
        body["prefetch"] = {"mboxes": [{"index": i, "name": n} for i, n in enumerate(prefetch, start=1)]}
    return sim.post(delivery_url(), json=body)


def assert_refused(sim, response, *words: str) -> str:
    assert response.status_code == 400, response.text
    error = response.json()
    assert error["status"] == 400 and error["message"].startswith("Invalid request: "), error
    for word in words:
        assert word in error["message"], (word, error["message"])
    return error["message"]


def recorded(sim) -> list[dict]:
    return sim.get("/_sim/target/notifications").json()["notifications"]


def test_a_notification_older_than_a_day_invalidates_the_whole_request(sim):
    good = note("fresh", tokens=[offered_token(sim)])
    old = note("stale", timestamp=Y2K_MS)
    r = deliver(sim, good, note("fresh-2"), old, prefetch=["logo"])
    message = assert_refused(sim, r, f"notifications[2].timestamp: {Y2K_MS} is more than 24 hours before the "
                                     "server time", '"stale"')
    assert "fresh" not in message.replace('"stale"', "")
    # Nothing of the request happened: no notification recorded, the prefetch not carried out.
    assert recorded(sim) == []
    stats = sim.get("/_sim/stats").json()
    assert stats["notifications"] == 0 and stats["prefetched"] == {} and stats["notificationRefusals"] == 1
    # The attempt is in the log, with its status; it is not a contract violation.
    entry = sim.last_request()
    assert entry["status"] == 400 and entry["valid"] is True and entry["note"].startswith("refused: ")
    assert [n["id"] for n in entry["body"]["notifications"]] == ["fresh", "fresh-2", "stale"]
    assert sim.violations() == []


def test_the_timestamp_window_is_a_day_back_and_a_minute_ahead(sim):
    now = epoch_ms()
    assert deliver(sim, note("a", now - 23 * HOUR_MS), note("b", now + 30_000)).status_code == 200
    assert_refused(sim, deliver(sim, note("c", now - 25 * HOUR_MS)), "notifications[0].timestamp",
                   "more than 24 hours before")
    assert_refused(sim, deliver(sim, note("d", now + 5 * 60_000)), "more than 1 minute after the server time")
    assert [n["id"] for n in recorded(sim)] == ["a", "b"]
    assert sim.get("/_sim/stats").json()["notificationRefusals"] == 2


def test_the_window_follows_the_simulator_clock(sim):
    """A box 26 years slow stamps its notifications 26 years in Target's past; a box ahead, in its future."""
    assert sim.put("/_sim/clock", json={"offsetMs": YEARS_26_MS}).status_code == 200
    assert_refused(sim, deliver(sim, note("slow-box", epoch_ms())), "before the server time")
    world = int(sim.get("/_sim/clock").json()["nowMs"])
    assert deliver(sim, note("on-time", world)).status_code == 200
    assert sim.put("/_sim/clock", json={"now": Y2K_MS}).status_code == 200
    assert_refused(sim, deliver(sim, note("fast-box", epoch_ms())), "after the server time")
    assert deliver(sim, note("y2k", Y2K_MS + 1000)).status_code == 200
    assert [n["id"] for n in recorded(sim)] == ["on-time", "y2k"]


def test_the_window_is_configurable_and_reset(sim):
    defaults = {"maxAgeMs": 24 * HOUR_MS, "maxFutureMs": 60_000}
    assert sim.get("/_sim/target/notificationRules").json() == defaults
    r = sim.put("/_sim/target/notificationRules", json={"maxAgeMs": 10_000})
    assert r.status_code == 200 and r.json() == {"maxAgeMs": 10_000, "maxFutureMs": 60_000}
    assert_refused(sim, deliver(sim, note("a", epoch_ms() - 20_000)), "more than 10 seconds before")
    sim.put("/_sim/target/notificationRules", json={"maxFutureMs": 0})
    assert_refused(sim, deliver(sim, note("b", epoch_ms() + 5_000)), "more than 0 ms after")
    for bad in ({}, {"maxAgeMs": -1}, {"maxAgeMs": "1"}, {"maxFutureMs": True}, {"window": 1}, [1]):
        r = sim.put("/_sim/target/notificationRules", json=bad)
        assert r.status_code == 400 and r.json()["error"], bad
    assert sim.get("/_sim/target/notificationRules").json() == {"maxAgeMs": 10_000, "maxFutureMs": 0}
    sim.reset()
    assert sim.get("/_sim/target/notificationRules").json() == defaults


def test_tokens_this_simulator_could_not_have_issued_invalidate_the_request(sim):
    short = base64.b64encode(b"\x01" * 16).decode()
    unpadded = base64.b64encode(hashlib.sha256(b"x").digest()).decode().rstrip("=")
    for token in ("t", "not base64!", short, unpadded, ""):
        r = deliver(sim, note("ok"), note("bad-token", tokens=[offered_token(sim), token]))
        assert_refused(sim, r, "notifications[1].tokens[1]", "is not an event token", '"bad-token"')
    assert recorded(sim) == []
    assert sim.get("/_sim/stats").json()["notificationRefusals"] == 5


def test_tokens_of_an_earlier_simulator_process_are_accepted(sim):
    """Tokens are a function of (mbox, offer): after a restart the agent replays its journal with tokens this
    process never served. They are valid; `tokensIssued` says they were not issued here."""
    token = offered_token(sim)  # never served by this process
    other = base64.b64encode(hashlib.sha256(b"an offer since changed").digest()).decode()
    r = deliver(sim, note("replayed", tokens=[token]), note("older-offer", tokens=[other]))
    assert r.status_code == 200, r.text
    assert [(n["id"], n["tokensIssued"]) for n in recorded(sim)] == [("replayed", False), ("older-offer", False)]


def test_revoked_tokens_invalidate_the_request_until_cleared(sim):
    token = offered_token(sim)
    r = sim.put("/_sim/target/revokedTokens", json={"tokens": [token]})
    assert r.status_code == 200 and r.json() == {"count": 1, "tokens": [token]}
    assert sim.get("/_sim/target/revokedTokens").json() == {"count": 1, "tokens": [token]}
    assert_refused(sim, deliver(sim, note("n1", tokens=[token])), "notifications[0].tokens[0]", "is revoked")
    assert sim.delete("/_sim/target/revokedTokens").json() == {"cleared": 1}
    assert deliver(sim, note("n1", tokens=[token])).status_code == 200
    sim.put("/_sim/target/revokedTokens", json={"tokens": [token]})
    sim.reset()
    assert sim.get("/_sim/target/revokedTokens").json() == {"count": 0, "tokens": []}


def test_revoking_by_mbox_makes_one_cached_offer_poison_its_batch(sim):
    assert sim.put("/_sim/target/offers/bad", json={"type": "html", "content": "<p>bad</p>"}).status_code == 200
    served = deliver(sim, prefetch=["logo", "bad"]).json()["prefetch"]["mboxes"]
    tokens = {m["name"]: m["options"][0]["eventToken"] for m in served}
    r = sim.put("/_sim/target/revokedTokens", json={"mboxes": ["bad"]})
    assert r.status_code == 200 and r.json()["tokens"] == [tokens["bad"]]
    batch = [note("logo-1", tokens=[tokens["logo"]]), note("bad-1", tokens=[tokens["bad"]], mbox="bad"),
             note("logo-2", tokens=[tokens["logo"]])]
    assert_refused(sim, deliver(sim, *batch), "notifications[1].tokens[0]", '"bad-1"')
    assert recorded(sim) == []
    r = deliver(sim, batch[0], batch[2])
    assert r.status_code == 200 and r.json()["notifications"] == [{"id": "logo-1"}, {"id": "logo-2"}]

    # An mbox not served yet: the tokens its offer would issue are revoked too. `replace: false` adds.
    r = sim.put("/_sim/target/revokedTokens", json={"mboxes": ["hero"], "replace": False})
    assert r.json()["count"] == 2 and offered_token(sim, "hero") in r.json()["tokens"]


def test_bad_revocations_are_refused_and_change_nothing(sim):
    sim.put("/_sim/target/revokedTokens", json={"tokens": ["x"]})
    for bad in ({"tokens": "x"}, {"tokens": [1]}, {"tokens": [""]}, {"mboxes": ["noSuchMbox"]},
                {"mboxes": ["logo", "noSuchMbox"]}, {"replace": "no"}, {"token": ["y"]}, [1]):
        r = sim.put("/_sim/target/revokedTokens", json=bad)
        assert r.status_code == 400 and r.json()["error"], bad
    assert "noSuchMbox" in sim.put("/_sim/target/revokedTokens", json={"mboxes": ["noSuchMbox"]}).json()["error"]
    assert sim.get("/_sim/target/revokedTokens").json()["tokens"] == ["x"]


def test_many_problems_are_summed_up(sim):
    r = deliver(sim, *[note(f"n{i}", Y2K_MS, tokens=["t"]) for i in range(4)])
    message = assert_refused(sim, r, "notifications[0].timestamp", "notifications[0].tokens[0]", "and 3 more")
    assert "notifications[3]" not in message


def test_a_beacon_with_an_invalid_notification_is_refused_too(sim):
    body = {"context": {"channel": "web", "beacon": True}, "notifications": [note("b1", Y2K_MS)]}
    assert_refused(sim, sim.post(delivery_url(), json=body), "notifications[0].timestamp")
    body["notifications"] = [note("b2")]
    assert sim.post(delivery_url(), json=body).status_code == 204


def test_the_newest_notifications_are_kept_and_every_one_is_counted(tmp_path):
    # A long run (a soak, a benchmark's flood) must not grow the simulator without bound: it keeps the newest
    # `--notification-log` and counts them all, by type, until a reset.
    small = SimProcess(tmp_path / "sim", "--quiet", "--notification-log", "3")
    try:
        token = offered_token(small)
        for batch in (["a1", "a2"], ["a3", "a4", "a5"]):
            r = deliver(small, *[note(id_, tokens=[token]) for id_ in batch])
            assert r.status_code == 200, r.text
            assert r.json()["notifications"] == [{"id": id_} for id_ in batch]
        listed = small.get("/_sim/target/notifications").json()
        assert [n["id"] for n in listed["notifications"]] == ["a3", "a4", "a5"]
        assert (listed["count"], listed["received"]) == (3, 5)
        displays = small.get("/_sim/target/notifications", params={"type": "display"}).json()
        assert (displays["count"], displays["received"]) == (3, 5)
        clicks = small.get("/_sim/target/notifications", params={"type": "click"}).json()
        assert (clicks["count"], clicks["received"], clicks["notifications"]) == (0, 0, [])
        stats = small.get("/_sim/stats").json()
        assert (stats["notifications"], stats["displayNotifications"], stats["clickNotifications"]) == (5, 5, 0)
        assert small.post("/_sim/reset").status_code == 200
        assert small.get("/_sim/target/notifications").json() == {"count": 0, "received": 0, "notifications": []}
        assert small.get("/_sim/stats").json()["notifications"] == 0
        assert small.violations() == []
    finally:
        small.stop()


def test_the_notification_log_size_must_be_positive(tmp_path):
    with pytest.raises(RuntimeError, match="--notification-log must be at least 1"):
        SimProcess(tmp_path / "sim", "--quiet", "--notification-log", "0")


def test_no_response_violations_in_this_module(sim):
    sim.collect_response_violations()
    assert sim.response_violations == []

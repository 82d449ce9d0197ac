"""The box's location for on-device decisions of rules that target by geo: with an artifact whose
`geoTargetingEnabled` is true, the agent asks Target's geo service (preflight-sim's `GET /v1/geo`) where the box
is, keeps the answer in the state directory, and decides with it; a geo-targeted mbox gets its offer only where
its rule says. A real preflightd and preflight-sim; a reload (SIGHUP) looks the location up again, so no test
waits for the polling interval."""

import json
import os
import signal
import subprocess
import time
from pathlib import Path

from agent_harness import Events, bin_dir, ok, read_log, request, stop_agent, wait_until
from test_target_artifact import Setup, artifact_requests, artifact_status  # noqa: F401
from test_target_artifact import setup as artifact_setup  # noqa: F401  (the fixture, under another name)

import pytest

GEO_OFFER = {"requests": [{"name": "geo-offer", "defaultContent": "elsewhere"}]}
PORTLAND = {"city": "PORTLAND", "regionCode": "OR", "countryCode": "US", "latitude": 45.52, "longitude": -122.68}


@pytest.fixture
def setup(artifact_setup):  # noqa: F811
    """The artifact tests' setup, with the agent's geo service at the simulator and its geo sample artifact."""
    original = artifact_setup.settings

    def settings(**extra):
        return original(geoURL=f"{artifact_setup.sim.url}/v1/geo", notificationBatchAge=0.2, **extra)

    artifact_setup.settings = settings
    artifact_setup.sim.call("PUT", "/_sim/target/artifact?sample=geo")
    return artifact_setup


def geo_status(agent):
    return ok(request(agent.admin, "status"))["target"]["geo"]


def located(agent, city):
    wait_until(f"the box located in {city}", lambda: geo_status(agent)["city"] == city, timeout=30)
    return geo_status(agent)


def load(agent):
    return ok(request(agent.app, "loadRequests", GEO_OFFER))["contents"][0]


def geo_requests(sim):
    return [entry for entry in sim.requests() if entry.get("service") == "geo"]


def reload(agent):
    agent.process.send_signal(signal.SIGHUP)


def test_a_geo_targeted_mbox_gets_its_offer_once_the_box_is_located(setup):
    agent = setup.start()
    status = located(agent, "SAN FRANCISCO")
    assert (status["regionCode"], status["countryCode"]) == ("CA", "US")
    assert (status["latitude"], status["longitude"]) == (37.75, -122.4)
    assert status["targetsByGeo"] is True and status["source"] == "network" and status["lastFetchError"] is None
    assert status["url"] == f"{setup.sim.url}/v1/geo"
    content = load(agent)
    assert content["source"] == "on-device", content
    assert json.loads(content["content"]) == {"geo": True, "city": "SAN FRANCISCO"}
    # The box asks without an address of its own: the service locates the caller.
    lookup = geo_requests(setup.sim)[0]
    assert "x-forwarded-for" not in lookup["headers"] and lookup["method"] == "GET"
    # Kept in the state directory, as the service said it.
    kept = json.loads((Path(setup.folder) / "state" / "target-geo.json").read_text())
    assert kept["headers"]["x-geo-city"] == "SAN FRANCISCO" and kept["url"] == status["url"]
    # The lookup sets the location for the status, then logs: on a loaded machine the line comes a moment after.
    wait_until("the location in the log", lambda: "box located by Target's geo service" in read_log(setup.folder),
               timeout=30)
    # The impression reaches Target with the artifact's event token.
    wait_until("the impression at Target",
               lambda: len(setup.sim.call("GET", "/_sim/target/notifications?type=display")["notifications"]) == 1)
    shown = subprocess.run([os.path.join(bin_dir(), "preflightctl"), "--config", agent.config_path, "status"],
                           capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    line = next(line for line in shown.stdout.splitlines() if line.startswith("Target location"))
    assert "SAN FRANCISCO, CA, US (37.75, -122.4), located" in line and "(network)" in line


def test_elsewhere_the_mbox_gets_its_default_and_a_move_is_seen_at_the_next_lookup(setup):
    setup.sim.call("PUT", "/_sim/target/geo", PORTLAND)
    agent = setup.start()
    before = located(agent, "PORTLAND")
    assert load(agent) == {"name": "geo-offer", "content": "elsewhere", "source": "default"}
    # The box is now placed in San Francisco: the next lookup (a reload asks for one at once) says so.
    events = Events(agent, b"geo.", confirm=False)
    setup.sim.call("PUT", "/_sim/target/geo", {"city": "SAN FRANCISCO", "regionCode": "CA", "countryCode": "US"})
    reload(agent)
    after = located(agent, "SAN FRANCISCO")
    assert after["lastFetchAtMs"] > before["lastFetchAtMs"] and after["latitude"] is None
    event = events.wait_for("geo.updated")
    assert (event["city"], event["regionCode"], event["countryCode"]) == ("SAN FRANCISCO", "CA", "US")
    events.close()
    assert load(agent)["source"] == "on-device"


def test_the_location_survives_a_restart_without_network(setup):
    agent = setup.start()
    located(agent, "SAN FRANCISCO")
    assert stop_agent(agent) == 0
    # Offline now: the asset host and the geo service drop every connection.
    setup.sim.call("POST", "/_sim/faults", {"path": "/acme/production/v1/rules.json", "drop": True})
    setup.sim.call("POST", "/_sim/faults", {"path": "/v1/geo", "drop": True})
    agent = setup.start()
    wait_until("a failed lookup", lambda: geo_status(agent)["lastFetchError"] is not None, timeout=30)
    status = geo_status(agent)
    assert (status["city"], status["source"]) == ("SAN FRANCISCO", "disk")
    assert artifact_status(agent)["source"] == "disk"
    assert "box location read from the state directory" in read_log(setup.folder)
    assert json.loads(load(agent)["content"]) == {"geo": True, "city": "SAN FRANCISCO"}


def test_loads_are_answered_while_the_geo_service_fails_or_hangs(setup):
    # Never located: the geo service answers 503, then not at all. Geo rules do not match; loads are answered.
    fault = setup.sim.call("POST", "/_sim/faults", {"path": "/v1/geo", "status": 503})
    agent = setup.start()
    wait_until("a failed lookup", lambda: geo_status(agent)["lastFetchError"] == "HTTP 503", timeout=30)
    assert geo_status(agent)["city"] is None
    assert load(agent) == {"name": "geo-offer", "content": "elsewhere", "source": "default"}
    # The lookup records its error for the status, then logs: the line may come a moment after the status.
    wait_until("the failed lookup in the log",
               lambda: "box location not looked up; the location held is kept" in read_log(setup.folder), timeout=30)
    setup.sim.call("DELETE", f"/_sim/faults/{fault['id']}")
    setup.sim.call("POST", "/_sim/faults", {"path": "/v1/geo", "hangMs": 20000})
    reload(agent)
    wait_until("the hanging lookup", lambda: len(geo_requests(setup.sim)) >= 2, timeout=30)
    started = time.monotonic()
    assert load(agent)["source"] == "default"
    assert time.monotonic() - started < 2.0, "a load waited for the geo service"


def test_a_failing_lookup_keeps_the_location_held(setup):
    agent = setup.start()
    before = located(agent, "SAN FRANCISCO")
    setup.sim.call("POST", "/_sim/faults", {"path": "/v1/geo", "status": 500})
    reload(agent)
    wait_until("the failed lookup", lambda: geo_status(agent)["lastFetchError"] == "HTTP 500", timeout=30)
    status = geo_status(agent)
    assert (status["city"], status["fetchedAtMs"], status["source"]) == (
        "SAN FRANCISCO", before["fetchedAtMs"], "network")
    assert load(agent)["source"] == "on-device"
    shown = subprocess.run([os.path.join(bin_dir(), "preflightctl"), "--config", agent.config_path, "status"],
                           capture_output=True, text=True, timeout=60)
    line = next(line for line in shown.stdout.splitlines() if line.startswith("Target location"))
    assert "SAN FRANCISCO" in line and "last lookup failed" in line and "(HTTP 500)" in line


def test_rules_that_do_not_target_by_geo_ask_no_geo_service(setup):
    artifact = setup.sim.call("GET", "/_sim/target/artifact")["artifact"]
    setup.sim.call("PUT", "/_sim/target/artifact", {**artifact, "geoTargetingEnabled": False})
    agent = setup.start()
    wait_until("the artifact", lambda: artifact_status(agent)["lastFetchResult"] == "updated", timeout=30)
    status = geo_status(agent)
    assert status["targetsByGeo"] is False and status["city"] is None and status["lastFetchAtMs"] is None
    assert load(agent)["source"] == "default"
    assert geo_requests(setup.sim) == []


def test_server_side_decisioning_shows_no_location(setup):
    agent = setup.start(decisioningMethod="server-side")
    assert "geo" not in ok(request(agent.admin, "status"))["target"]
    assert geo_requests(setup.sim) == []


def test_opting_out_forgets_the_location_and_opting_in_locates_the_box_again(setup):
    agent = setup.start()
    located(agent, "SAN FRANCISCO")
    kept = Path(setup.folder) / "state" / "target-geo.json"
    wait_until("the location kept", kept.exists)
    ok(request(agent.admin, "target.privacy", {"status": "optedOut"}, timeout_ms=20000))
    assert not kept.exists()
    assert geo_status(agent)["city"] is None
    asked = len(geo_requests(setup.sim))
    ok(request(agent.admin, "target.privacy", {"status": "optedIn"}, timeout_ms=20000))
    located(agent, "SAN FRANCISCO")
    assert len(geo_requests(setup.sim)) == asked + 1
    assert load(agent)["source"] == "on-device"



@pytest.mark.parametrize("opted_in_again", [False, True], ids=["opted-out", "opted-in-again"])
def test_a_lookup_answered_after_an_opt_out_keeps_nothing(setup, opted_in_again):
    agent = setup.start()
    located(agent, "SAN FRANCISCO")
    kept = Path(setup.folder) / "state" / "target-geo.json"
    wait_until("the location kept", kept.exists)
    located_line, dropped_line = "box located by Target's geo service", "what came is not kept"
    wait_until("the location in the log", lambda: located_line in read_log(setup.folder), timeout=30)
    # The next lookup is answered 3 s after it arrives: the opt-out comes while it is in flight.
    setup.sim.call("POST", "/_sim/faults", {"path": "/v1/geo", "latencyMs": 3000, "count": 1})
    asked = len(geo_requests(setup.sim))
    reload(agent)
    wait_until("the lookup in flight", lambda: len(geo_requests(setup.sim)) > asked, timeout=30)
    ok(request(agent.admin, "target.privacy", {"status": "optedOut"}, timeout_ms=20000))
    if opted_in_again:
        ok(request(agent.admin, "target.privacy", {"status": "optedIn"}, timeout_ms=20000))
        # The lookup made after the opt-in fails: the box has no location but one from before the opt-out.
        setup.sim.call("POST", "/_sim/faults", {"path": "/v1/geo", "status": 503, "count": 1})
    assert geo_requests(setup.sim)[asked]["status"] is None, "the lookup was answered before the opt-out"
    assert not kept.exists() and geo_status(agent)["city"] is None
    # The simulator records its answer as it sends it; the agent then logs what it made of it: dropped (or, before
    # the fix, the box located again).
    wait_until("the delayed answer", lambda: geo_requests(setup.sim)[asked]["status"] == 200, timeout=30)
    wait_until("the agent's word on the answer",
               lambda: dropped_line in read_log(setup.folder) or read_log(setup.folder).count(located_line) > 1,
               timeout=30)
    if opted_in_again:
        wait_until("the lookup after the opt-in", lambda: geo_status(agent)["lastFetchError"] == "HTTP 503",
                   timeout=30)
    status = geo_status(agent)
    assert (status["city"], status["source"], status["fetchedAtMs"]) == (None, None, None), status
    assert not kept.exists()
    assert dropped_line in read_log(setup.folder)
    assert load(agent)["source"] == "default"
    if opted_in_again:
        # The next lookup places the box again.
        reload(agent)
        located(agent, "SAN FRANCISCO")
        wait_until("the location kept again", kept.exists)


# Privacy: the rules artifact's host and the geo service are Target's services, and each request tells them the
# box's address. Unless the box is opted in, neither poller sends anything; the polling interval is 5 minutes at
# least, so each test gives the pollers a turn by a start, a reload or an opt-out, and waits for `status` to say
# the turn was skipped (`skipped`) before it counts the simulator's requests.

def skipped(agent):
    target = ok(request(agent.admin, "status"))["target"]
    return target["artifact"].get("skipped"), target["geo"].get("skipped")


def sent(sim):
    """How many artifact fetches and geo lookups reached the simulator."""
    return len(artifact_requests(sim)), len(geo_requests(sim))


def skipped_and_nothing_sent(agent, sim, reason, before):
    """Waits for both turns skipped (or for a request, which fails at once), then checks nothing was sent."""
    wait_until("both turns skipped, or a request sent",
               lambda: skipped(agent) == (reason, reason) or sent(sim) != before, timeout=30)
    assert sent(sim) == before, "an artifact fetch or geo lookup was sent while not opted in"
    assert skipped(agent) == (reason, reason)


def set_privacy(agent, status):
    return ok(request(agent.admin, "target.privacy", {"status": status}, timeout_ms=20000))


def fetched_again(agent, artifact_before_ms, geo_before_ms):
    wait_until("the rules fetched", lambda: (artifact_status(agent)["lastFetchAtMs"] or 0) > artifact_before_ms,
               timeout=30)
    wait_until("the box looked up", lambda: (geo_status(agent)["lastFetchAtMs"] or 0) > geo_before_ms, timeout=30)


def test_while_privacy_is_unknown_nothing_is_fetched_nothing_dropped_and_opting_in_fetches_both(setup):
    agent = setup.start()
    located(agent, "SAN FRANCISCO")
    wait_until("the location kept", (Path(setup.folder) / "state" / "target-geo.json").exists)
    assert stop_agent(agent) == 0
    fetches, lookups = sent(setup.sim)
    # The next start is configured `unknown`: the rules and the location kept are read back, so a fetch and a
    # lookup are due at once; both turns are skipped.
    agent = setup.start(privacy="unknown")
    reason = "Target privacy is unknown"
    skipped_and_nothing_sent(agent, setup.sim, reason, (fetches, lookups))
    # Nothing is dropped: the rules and the location held still decide.
    held, place = artifact_status(agent), geo_status(agent)
    assert (held["source"], held["lastFetchAtMs"]) == ("disk", None) and held["version"] is not None, held
    assert (place["city"], place["source"]) == ("SAN FRANCISCO", "disk"), place
    # Decided on the box, which sends nothing: its impression is held until the box is opted in.
    assert json.loads(load(agent)["content"]) == {"geo": True, "city": "SAN FRANCISCO"}
    wait_until("the impression held", lambda: ok(request(agent.admin, "notifications.status"))["queued"] == 1)
    shown = subprocess.run([os.path.join(bin_dir(), "preflightctl"), "--config", agent.config_path, "status"],
                           capture_output=True, text=True, timeout=60)
    assert f"not fetched: {reason}" in shown.stdout and f"not looked up: {reason}" in shown.stdout, shown.stdout
    # The skip is recorded for the status, then logged: on a loaded machine the line comes a moment after.
    wait_until("the skip in the log",
               lambda: "rules artifact not fetched: nothing is sent to Target until it is optedIn" in read_log(
                   setup.folder), timeout=30)

    set_privacy(agent, "optedIn")
    fetched_again(agent, 0, 0)
    assert sent(setup.sim) == (fetches + 1, lookups + 1)
    assert skipped(agent) == (None, None)
    assert geo_status(agent)["source"] == "network"
    wait_until("the held impression at Target",
               lambda: len(setup.sim.call("GET", "/_sim/target/notifications?type=display")["notifications"]) == 1)


def test_while_opted_out_nothing_is_fetched_and_opting_in_fetches_both(setup):
    agent = setup.start()
    located(agent, "SAN FRANCISCO")
    wait_until("the rules fetched", lambda: artifact_status(agent)["lastFetchResult"] == "updated", timeout=30)
    before = artifact_status(agent)
    set_privacy(agent, "optedOut")
    fetches, lookups = sent(setup.sim)
    # The opt-out forgot the location, so a lookup is due; a reload asks for a fetch of the rules.
    reload(agent)
    skipped_and_nothing_sent(agent, setup.sim, "Target privacy is optedOut", (fetches, lookups))
    # The rules are the account's, not the visitor's: they are kept. The location is not.
    held = artifact_status(agent)
    assert (held["version"], held["lastFetchAtMs"]) == (before["version"], before["lastFetchAtMs"]), held
    assert geo_status(agent)["city"] is None

    set_privacy(agent, "optedIn")
    fetched_again(agent, before["lastFetchAtMs"], 0)
    located(agent, "SAN FRANCISCO")
    assert sent(setup.sim) == (fetches + 1, lookups + 1)
    assert skipped(agent) == (None, None)


def test_opting_in_fetches_the_rules_and_looks_the_box_up_at_once_not_an_interval_later(setup):
    agent = setup.start()
    located(agent, "SAN FRANCISCO")
    wait_until("the rules fetched", lambda: artifact_status(agent)["lastFetchResult"] == "updated", timeout=30)
    # Both were fetched at start: the next fetch and lookup are 5 minutes away.
    artifact_before, geo_before = artifact_status(agent)["lastFetchAtMs"], geo_status(agent)["lastFetchAtMs"]
    set_privacy(agent, "unknown")
    set_privacy(agent, "optedIn")
    fetched_again(agent, artifact_before, geo_before)

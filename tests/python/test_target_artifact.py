"""Target's rules artifact for on-device decisioning: fetched from preflight-sim (as Target's CDN), kept
with its ETag, polled with If-None-Match, refused when its major version is not 1, and read back from the
state directory when the box starts with the asset host unreachable. A real preflightd; a reload (SIGHUP)
fetches at once, so no test waits for the 5-minute interval."""

import json
import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

import pytest

from agent_harness import (CONFORMANCE, Events, Simulator, bin_dir, ok, read_log, request, start_agent, stop_agent,
                           wait_until)
from test_reload import rewrite_config

ADOBE_ARTIFACTS = CONFORMANCE / "artifacts"
AB_SIMPLE = ADOBE_ARTIFACTS / "TEST_ARTIFACT_AB_SIMPLE.json"


def small_artifact(version="1.0.0", generated="2026-02-01T00:00:00.000Z"):
    """A hand-written artifact with one rule-less mbox (the engine reads it; no rules)."""
    return {"version": version, "meta": {"clientCode": "acme", "environment": "production", "generatedAt": generated},
            "globalMbox": "target-global-mbox", "geoTargetingEnabled": False, "responseTokens": [],
            "remoteMboxes": [], "remoteViews": [], "localMboxes": [], "localViews": [],
            "rules": {"mboxes": {}, "views": {}}}


def artifact_status(agent):
    return ok(request(agent.admin, "status"))["target"]["artifact"]


def artifact_requests(sim):
    return [entry for entry in sim.requests() if entry.get("service") == "artifacts"]


def reload_and_wait_for_fetch(agent, previous_fetch_ms):
    agent.process.send_signal(signal.SIGHUP)
    wait_until("a fetch after the reload",
               lambda: (artifact_status(agent)["lastFetchAtMs"] or 0) > previous_fetch_ms, timeout=30)
    return artifact_status(agent)


class Setup:
    def __init__(self):
        self.folder = tempfile.mkdtemp(prefix="pf-art-", dir="/tmp")
        self.sim = Simulator(self.folder)
        self.agent = None

    def settings(self, **extra):
        return {"serverURL": self.sim.url, "decisioningMethod": "on-device",
                "artifactURL": f"{self.sim.url}/acme/production/v1/rules.json", **extra}

    def start(self, **extra):
        self.agent = start_agent(self.folder, target=self.settings(**extra))
        return self.agent


@pytest.fixture
def setup():
    env = Setup()
    yield env
    if env.agent is not None:
        stop_agent(env.agent)
    violations = env.sim.call("GET", "/_sim/violations")
    env.sim.stop()
    shutil.rmtree(env.folder, ignore_errors=True)
    assert violations["count"] == 0, violations


def first_fetch(setup, artifact):
    put = setup.sim.call("PUT", "/_sim/target/artifact", artifact)
    agent = setup.start()
    wait_until("the first download", lambda: artifact_status(agent)["lastFetchResult"] == "updated", timeout=30)
    return agent, put["etag"]


def test_the_artifact_is_downloaded_at_start_and_kept_with_its_etag(setup):
    artifact = json.loads(AB_SIMPLE.read_text()) if AB_SIMPLE.is_file() else small_artifact()
    agent, etag = first_fetch(setup, artifact)
    status = artifact_status(agent)
    assert status["version"] == artifact["version"] and status["etag"] == etag
    assert status["source"] == "network" and status["decisioningMethod"] == "on-device"
    assert status["url"].endswith("/acme/production/v1/rules.json")
    assert status["rules"] == sum(len(rules) for rules in artifact["rules"]["mboxes"].values())
    assert 0 <= status["ageMs"] < 60_000
    state = Path(setup.folder) / "state"
    assert json.loads((state / "target-artifact.json").read_text()) == artifact
    meta = json.loads((state / "target-artifact.meta.json").read_text())
    assert meta["etag"] == etag and meta["format"] == "json"
    # The fetch records `updated` for the status, then logs: on a loaded machine the line comes a moment after.
    wait_until("the update in the log", lambda: "rules artifact updated" in read_log(setup.folder), timeout=30)
    shown = subprocess.run([os.path.join(bin_dir(), "preflightctl"), "--config", agent.config_path, "status"],
                           capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    line = next(line for line in shown.stdout.splitlines() if line.startswith("Target rules"))
    assert f"on-device: version {artifact['version']}, {status['rules']} rule" in line
    assert "(network); last fetch updated" in line


def test_the_next_poll_sends_if_none_match_and_a_304_keeps_the_rules(setup):
    agent, etag = first_fetch(setup, small_artifact())
    before = artifact_status(agent)
    after = reload_and_wait_for_fetch(agent, before["lastFetchAtMs"])
    assert after["lastFetchResult"] == "notModified"
    assert (after["version"], after["etag"], after["source"]) == (before["version"], etag, "network")
    last = artifact_requests(setup.sim)[-1]
    assert last["headers"]["if-none-match"] == etag and last["status"] == 304


def test_a_new_artifact_replaces_the_old_one_with_an_event(setup):
    agent, old_etag = first_fetch(setup, small_artifact())
    events = Events(agent, b"artifact.", confirm=False)
    newer = small_artifact(version="1.2.0", generated="2026-03-01T00:00:00.000Z")
    newer["rules"]["mboxes"] = {"home": []}
    put = setup.sim.call("PUT", "/_sim/target/artifact", newer)
    status = reload_and_wait_for_fetch(agent, artifact_status(agent)["lastFetchAtMs"])
    assert status["lastFetchResult"] == "updated"
    assert (status["version"], status["generatedAt"], status["etag"]) == (
        "1.2.0", "2026-03-01T00:00:00.000Z", put["etag"])
    assert put["etag"] != old_etag
    event = events.wait_for("artifact.updated")
    assert (event["version"], event["rules"], event["etag"]) == ("1.2.0", 0, put["etag"])
    events.close()


def test_a_version_2_artifact_is_refused_and_the_old_rules_stay(setup):
    agent, etag = first_fetch(setup, small_artifact())
    setup.sim.call("PUT", "/_sim/target/artifact", small_artifact(version="2.0.0"))
    status = reload_and_wait_for_fetch(agent, artifact_status(agent)["lastFetchAtMs"])
    assert status["lastFetchResult"] == "refused"
    assert "version" in status["lastFetchError"]
    assert (status["version"], status["etag"]) == ("1.0.0", etag)
    # The fetch records `refused` for the status, then logs: the line may come a moment after the status.
    wait_until("the refusal in the log",
               lambda: "rules artifact refused; the rules held are kept" in read_log(setup.folder), timeout=30)
    kept = json.loads((Path(setup.folder) / "state" / "target-artifact.json").read_text())
    assert kept["version"] == "1.0.0"


def test_a_box_that_starts_offline_decides_from_the_rules_it_kept(setup):
    agent, etag = first_fetch(setup, small_artifact(version="1.3.0"))
    assert stop_agent(agent) == 0
    # The asset host is unreachable now: every connection to it is dropped.
    setup.sim.call("POST", "/_sim/faults", {"path": "/acme/production/v1/rules.json", "drop": True})
    agent = setup.start()
    wait_until("a failed fetch", lambda: artifact_status(agent)["lastFetchResult"] is not None, timeout=30)
    status = artifact_status(agent)
    assert status["lastFetchResult"] in ("networkError", "httpError"), status
    assert (status["version"], status["etag"], status["source"]) == ("1.3.0", etag, "disk")
    assert "rules artifact read from the state directory" in read_log(setup.folder)


def test_server_side_decisioning_fetches_nothing(setup):
    agent = start_agent(setup.folder, target={"serverURL": setup.sim.url,
                                              "artifactURL": f"{setup.sim.url}/acme/production/v1/rules.json"})
    setup.agent = agent
    status = artifact_status(agent)
    assert status["decisioningMethod"] == "server-side"
    assert status["version"] is None and status["lastFetchResult"] is None
    assert artifact_requests(setup.sim) == []


def test_the_obfuscated_form_is_read_with_the_organization_id(setup):
    organization = "ORG0000000000000000000@AdobeOrg"
    setup.sim.call("PUT", "/_sim/target/artifactOrganization", {"organizationId": organization})
    setup.sim.call("PUT", "/_sim/target/artifact", small_artifact(version="1.4.0"))
    agent = setup.start(artifactFormat="bin", organizationId=organization,
                        artifactURL=f"{setup.sim.url}/acme/production/v1/rules.bin")
    wait_until("the first download", lambda: artifact_status(agent)["lastFetchResult"] == "updated", timeout=30)
    assert artifact_status(agent)["version"] == "1.4.0"
    state = Path(setup.folder) / "state"
    assert (state / "target-artifact.bin").read_bytes()[:5] == b"TDA:1"
    # Restarted offline, the kept rules.bin is read again with the key.
    assert stop_agent(agent) == 0
    setup.sim.call("POST", "/_sim/faults", {"path": "/acme/production/v1/rules.bin", "drop": True})
    agent = setup.start(artifactFormat="bin", organizationId=organization,
                        artifactURL=f"{setup.sim.url}/acme/production/v1/rules.bin")
    wait_until("a failed fetch", lambda: artifact_status(agent)["lastFetchResult"] is not None, timeout=30)
    assert (artifact_status(agent)["version"], artifact_status(agent)["source"]) == ("1.4.0", "disk")


def test_an_artifact_larger_than_any_api_answer_is_read_and_a_huge_one_refused(setup):
    # Past the 4 MiB cap of API answers: an account with many on-device activities.
    large = small_artifact(version="1.6.0")
    large["meta"]["padding"] = "x" * (6 << 20)
    agent, _ = first_fetch(setup, large)
    assert artifact_status(agent)["version"] == "1.6.0"
    # Past 32 MiB the body is not read: the rules held stay.
    setup.sim.call("POST", "/_sim/faults", {"path": "/acme/production/v1/rules.json", "oversizedBytes": 33 << 20})
    status = reload_and_wait_for_fetch(agent, artifact_status(agent)["lastFetchAtMs"])
    assert status["lastFetchResult"] == "networkError", status
    assert "over 33554432 bytes" in status["lastFetchError"]
    assert status["version"] == "1.6.0"


def test_server_side_lets_the_rules_go_and_switching_back_reads_the_kept_copy(setup):
    agent, etag = first_fetch(setup, small_artifact(version="1.5.0"))
    fetched = artifact_status(agent)["lastFetchAtMs"]
    for method in ("server-side", "on-device"):
        rewrite_config(agent, lambda config: config["target"].update({"decisioningMethod": method}))
        agent.process.send_signal(signal.SIGHUP)
        wait_until(f"{method} applied", lambda: artifact_status(agent)["decisioningMethod"] == method)
        if method == "server-side":
            wait_until("the rules let go", lambda: artifact_status(agent)["version"] is None)
    wait_until("a fetch after switching back", lambda: (artifact_status(agent)["lastFetchAtMs"] or 0) > fetched,
               timeout=30)
    status = artifact_status(agent)
    # Read again from the state directory, then confirmed by a 304.
    assert (status["version"], status["etag"], status["source"], status["lastFetchResult"]) == (
        "1.5.0", etag, "disk", "notModified")

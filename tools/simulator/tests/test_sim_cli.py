"""The command line: specs location, offers file, port file, binding, signals."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

from simharness import SIM, SimProcess, delivery_url


def test_missing_specs_folder_runs_unvalidated_and_says_so(tmp_path):
    sim = SimProcess(tmp_path / "sim", "--specs", str(tmp_path / "no-such-specs"))
    try:
        health = sim.get("/health").json()
        assert health["validating"] is False and health["specs"] is None
        assert "UNVALIDATED" in sim.stderr()
        r = sim.post(delivery_url(), json={"context": {"channel": "tv"},
                                           "prefetch": {"mboxes": [{"index": 1, "name": "logo"}]}})
        assert r.status_code == 200, "without specs the channel enum cannot be checked"
        assert r.json()["prefetch"]["mboxes"][0]["options"]
        r = sim.post(delivery_url(), json={"prefetch": {}})
        assert r.status_code == 400, "the simulator still needs a context to answer"
    finally:
        assert sim.stop() == 0


def test_offers_file_replaces_the_built_in_offers(tmp_path):
    offers = tmp_path / "offers.json"
    offers.write_text(json.dumps({"banner": {"options": [{"type": "html", "content": "<p>hi</p>"}]},
                                  "flags": {"type": "json", "content": {"dark": True}}}))
    sim = SimProcess(tmp_path / "sim", "--offers", str(offers), "--quiet")
    try:
        assert set(sim.get("/_sim/target/offers").json()["offers"]) == {"banner", "flags"}
        body = {"context": {"channel": "web"}, "execute": {"mboxes": [{"index": 1, "name": "flags"},
                                                                      {"index": 2, "name": "logo"}]}}
        flags, logo = sim.post(delivery_url(), json=body).json()["execute"]["mboxes"]
        assert flags["options"][0]["content"] == {"dark": True}
        assert "options" not in logo
        sim.put("/_sim/target/offers", json={})
        sim.reset()
        assert set(sim.get("/_sim/target/offers").json()["offers"]) == {"banner", "flags"}
    finally:
        sim.stop()


def test_port_file_is_written_atomically_and_requests_are_logged_to_stderr(tmp_path):
    sim = SimProcess(tmp_path / "sim")
    try:
        assert sim.port_file.read_text() == f"{sim.port}\n"
        assert [p.name for p in sim.port_file.parent.iterdir() if p.name.startswith(".port")] == []
        sim.get("/health")
        deadline = time.monotonic() + 5
        while "GET /health 200" not in sim.stderr() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert "GET /health 200" in sim.stderr()
    finally:
        sim.stop()


def test_sigterm_and_sigint_exit_zero_promptly(tmp_path):
    for sig in (signal.SIGTERM, signal.SIGINT):
        sim = SimProcess(tmp_path / f"sim-{sig}", "--quiet")
        started = time.monotonic()
        assert sim.stop(sig, timeout=5) == 0
        assert time.monotonic() - started < 3


def test_refuses_to_bind_anything_but_loopback(tmp_path):
    result = subprocess.run([sys.executable, str(SIM), "--host", "0.0.0.0", "--port", "0"],
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 2 and "refusing" in result.stderr


def test_bad_offers_file_is_refused(tmp_path):
    offers = tmp_path / "offers.json"
    offers.write_text(json.dumps({"x": {"type": "video", "content": 1}}))
    result = subprocess.run([sys.executable, str(SIM), "--port", "0", "--offers", str(offers)],
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 2 and "offers" in result.stderr

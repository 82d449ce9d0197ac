"""tools/flood --smoke: the overload measurement still works end to end (one idle/flood pair, a 10 s flood
with RSS samples). Not a speed test: nothing is compared with a goal; what is checked holds at any
speed: every request of both clients got exactly one reply, and RSS was sampled."""

import json
import os
import subprocess
import sys
import tempfile

from agent_harness import REPO, bin_dir


def test_flood_smoke_loses_no_reply_and_reports_rss():
    with tempfile.TemporaryDirectory(prefix="pf-flood-smoke-") as folder:
        results_path = os.path.join(folder, "results.json")
        completed = subprocess.run(
            [sys.executable, os.path.join(REPO, "tools", "flood"), "--smoke", "--json", results_path],
            cwd=REPO,
            env=dict(os.environ, PREFLIGHT_BIN_DIR=bin_dir()),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            timeout=180,
        )
        assert completed.returncode == 0, completed.stderr[-4000:] + completed.stdout[-2000:]
        results = json.load(open(results_path))

    assert results["error"] is None
    assert results["repliesLost"] == 0

    fairness = results["fairness"]
    flooder, polite = fairness["flooder"], fairness["polite"]
    assert flooder["sent"] > 0 and flooder["answered"] == flooder["sent"] and flooder["lost"] == 0
    assert flooder["duplicates"] == 0 and flooder["unknown"] == 0
    # Every flood reply is an offer (cached, fetched or default) or `overloaded`; nothing else.
    assert flooder["otherErrors"] == 0 and flooder["unrecognised"] == 0
    assert flooder["cache"] + flooder["network"] + flooder["default"] + flooder["overloaded"] == flooder["answered"]
    assert polite["sent"] > 0 and polite["answered"] == polite["sent"] and polite["lost"] == 0
    assert polite["errors"] == 0  # each polite load was served from the cache
    for side in ("idle", "flood"):
        assert fairness[side]["p50"] > 0 and fairness[side]["p99"] >= fairness[side]["p50"]

    memory = results["memory"]
    assert memory["flooder"]["lost"] == 0 and memory["flooder"]["answered"] == memory["flooder"]["sent"] > 0
    assert memory["polite"]["lost"] == 0 and memory["polite"]["answered"] == memory["polite"]["sent"] > 0
    assert len([s for s in memory["samples"] if s["phase"] == "flood"]) >= 3
    assert all(s["rssKiB"] > 0 for s in memory["samples"])
    rss = memory["rssKiB"]
    assert rss["peak"] >= max(rss["before"], rss["floodEnd"], rss["after"])
    assert memory["agentAnsweredAfterwards"] is True

    assert "| polite client | p50 | p90 | p99 | p99.9 |" in completed.stdout
    assert "| t (s) | phase | VmRSS | of it anonymous | state folder | notifications queued |" in completed.stdout

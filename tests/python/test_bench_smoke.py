"""tools/bench --smoke: the benchmark still works end to end (tiny counts, debug binaries). Not a speed test:
no figure is compared with a goal here, only that every section measured something."""

import json
import os
import subprocess
import sys
import tempfile

import pytest

from agent_harness import REPO, bin_dir

SECTIONS = ["latency", "throughput", "hol", "economy", "http", "footprint", "growth", "steady"]


def test_bench_smoke_runs_every_section_and_leaves_the_doc_alone():
    doc = os.path.join(REPO, "docs", "BENCHMARKS.md")
    doc_before = open(doc, "rb").read() if os.path.exists(doc) else None
    with tempfile.TemporaryDirectory(prefix="pf-bench-smoke-") as folder:
        results_path = os.path.join(folder, "results.json")
        env = dict(os.environ, PREFLIGHT_BIN_DIR=bin_dir())
        completed = subprocess.run(
            [sys.executable, os.path.join(REPO, "tools", "bench"), "--smoke", "--json", results_path],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            # Only a guard against a hang, not a speed limit: on the 2-core machine busy with two builds
            # the smoke run took 56 s, and the 60 s this once was failed it.
            timeout=300,
        )
        assert completed.returncode == 0, completed.stderr[-4000:] + completed.stdout[-2000:]
        results = json.load(open(results_path))

    assert results["mode"] == "smoke"
    assert results["error"] is None
    assert sorted(results["sections"]) == sorted(SECTIONS)
    for section, result in results["sections"].items():
        assert result["rows"], f"{section} produced no row"
        for row in result["rows"]:
            assert row["agent"] not in ("", "—", None), f"{section}: {row['measurement']} measured nothing"
            assert row["result"] in ("pass", "FAIL", "n/a"), row

    # Counting, not timing: these hold at any speed.
    economy = results["sections"]["economy"]["details"]
    assert economy["prefetch20"]["calls"] == 1
    assert economy["coalesced"]["calls"] == 1
    assert economy["notifications"]["notificationsDelivered"] == economy["notifications"]["loads"]
    assert results["sections"]["hol"]["details"]["validRuns"] >= 1
    # The goal's floods (Target a plausible round trip away: the simulator's latency fault, lifted after) and the
    # diagnostic's (the simulator answering at once on loopback), at every DEALER count; where the CPU went in each
    # was read: the agent's I/O thread always works, and each load wrote its display's journal line at least
    # (about 90 bytes).
    throughput = results["sections"]["throughput"]["details"]
    away = {key: summary for key, summary in throughput.items() if key.isdigit()}
    loopback = {key[len("loopback"):]: summary for key, summary in throughput.items() if key.startswith("loopback")}
    assert away and sorted(away) == sorted(loopback), throughput
    for summary in list(away.values()) + list(loopback.values()):
        assert summary["agent"] > 0 and summary["cpuPerLoadMicroseconds"]["io"] > 0, throughput
        assert summary["writtenBytesPerLoad"] >= 80, throughput
        # The load client's own CPU was read for both floods of a pair (the raw echo's and the agent's).
        assert min(summary["clientMicrosecondsPerReply"].values()) > 0, throughput
    goal_rows = [row for row in results["sections"]["throughput"]["rows"] if row["goal"] == "≥ 0.7x raw"]
    assert len(goal_rows) == len(away) and all("ms away" in row["measurement"] for row in goal_rows), goal_rows
    # And what became of the runs' display notifications is reported: some were sent, whatever the queue dropped.
    assert throughput["notifications"]["sent"] > 0, throughput["notifications"]
    assert any(row["measurement"].startswith("diagnostic: display notifications over these runs")
               for row in results["sections"]["throughput"]["rows"])
    steady = results["sections"]["steady"]["details"]
    assert steady["sent"] == steady["loads"] and steady["droppedOverflow"] == 0

    # The table went to stdout; the doc is written only by a full run (or --write).
    assert "| section | measurement | reference | agent | ratio | goal | result |" in completed.stdout
    assert (open(doc, "rb").read() if os.path.exists(doc) else None) == doc_before


def test_bench_pages_reads_the_idle_agents_resident_pages_by_section():
    """tools/bench --pages (docs/BENCHMARKS.md): /proc/PID/pagemap of an idle agent, by section of its binary."""
    completed = subprocess.run(
        [sys.executable, os.path.join(REPO, "tools", "bench"), "--pages", "--smoke"],
        cwd=REPO,
        env=dict(os.environ, PREFLIGHT_BIN_DIR=bin_dir()),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        timeout=300,  # a guard against a hang only
    )
    assert completed.returncode == 0, completed.stderr[-4000:] + completed.stdout[-2000:]
    sections = dict(
        (parts[1], int(parts[0].replace(",", "")))
        for parts in (line.split() for line in completed.stdout.splitlines())
        if len(parts) == 2 and parts[0].replace(",", "").isdigit()
    )
    assert sections.get(".text", 0) > 0 and sections.get(".rodata", 0) > 0, completed.stdout
    assert "KiB" in completed.stdout.split(".text by 256 KiB stretch")[1], completed.stdout


@pytest.mark.parametrize("away", [False, True], ids=["loopback", "target-away"])
def test_bench_compare_floods_two_builds_side_by_side_and_leaves_the_doc_alone(away):
    """tools/bench --bin-dir A --compare B [--target-away] (docs/BENCHMARKS.md): both agents up at once, each on its
    own simulator and state folder, flooded in turns against one raw echo; per DEALER count each build's ratio, its
    CPU a load by thread, and B's ratio over A's in the same rounds; with --target-away each simulator answers
    Delivery calls 200 ms late during the floods. The same build on both sides here: what is checked is that both
    were measured, not how fast."""
    doc = os.path.join(REPO, "docs", "BENCHMARKS.md")
    doc_before = open(doc, "rb").read() if os.path.exists(doc) else None
    with tempfile.TemporaryDirectory(prefix="pf-bench-compare-") as folder:
        results_path = os.path.join(folder, "compare.json")
        completed = subprocess.run(
            [sys.executable, os.path.join(REPO, "tools", "bench"), "--smoke", "--bin-dir", bin_dir(),
             "--compare", bin_dir(), "--json", results_path]
            # The loopback run's client also tries every socket on every pass (--client-sockets sweep), the
            # target-away one's only those libzmq signalled (the default).
            + (["--target-away"] if away else ["--client-sockets", "sweep"]),
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            timeout=300,  # a guard against a hang only
        )
        assert completed.returncode == 0, completed.stderr[-4000:] + completed.stdout[-2000:]
        report = json.load(open(results_path))

    # Two agents, each on its own socket (two set up over one folder once shared one, and measured the first twice).
    assert report["pids"]["A"] != report["pids"]["B"] and report["endpoints"]["A"] != report["endpoints"]["B"], report
    assert sorted(report["clients"], key=int) == ["1", "4", "16", "64"], report
    assert report["targetAwayMs"] == (200 if away else 0), report
    assert report["clientSockets"] == ("ready" if away else "sweep"), report
    for clients, summary in report["clients"].items():
        for label in ("A", "B"):
            assert len(summary[label]["ratios"]) == report["rounds"] >= 1, summary
            assert summary[label]["ratio"] > 0, summary
            # Each agent was the one flooded in its turn: its own I/O thread worked (the other agent's would not
            # count here), and its simulator's CPU was read.
            assert summary[label]["cpuPerLoadMicroseconds"]["io"] > 0, summary
            assert summary[label]["cpuPerLoadMicroseconds"]["simulator"] >= 0, summary
            assert min(summary[label]["clientMicrosecondsPerReply"].values()) > 0, summary
        assert summary["BoverA"] > 0, summary
    assert "| DEALERs | build | ratio to raw (median) |" in completed.stdout
    assert (open(doc, "rb").read() if os.path.exists(doc) else None) == doc_before

"""`preflightctl auth login | status | authorize | logout` as a technician uses them: a real preflightd, preflight-sim
as Adobe Pass, and the simulator's control call playing the person who signs in on a phone."""

import os
import queue
import re
import shutil
import subprocess
import tempfile
import threading

import pytest

from agent_harness import Simulator, bin_dir, read_log, start_pass_agent, stop_agent

REQUESTOR = "acme-requestor"
MVPD = "Cablevision"


@pytest.fixture
def box():
    folder = tempfile.mkdtemp(prefix="pf-cs-", dir="/tmp")
    sim = Simulator(folder)
    agent = start_pass_agent(folder, sim, signInPollInterval=1)
    yield folder, sim, agent
    stop_agent(agent)
    violations = sim.call("GET", "/_sim/violations")
    sim.stop()
    shutil.rmtree(folder, ignore_errors=True)
    assert violations["count"] == 0, violations


def ctl(agent, *args):
    """Runs preflightctl with the agent's config (so --requestor may be left out); (exit code, stdout, stderr)."""
    done = subprocess.run([os.path.join(bin_dir(), "preflightctl"), "--config", agent.config_path, *args],
                          capture_output=True, text=True, timeout=60)
    return done.returncode, done.stdout, done.stderr


def decode_qr(lines):
    """The text of the QR code in `lines` (half blocks; printed inverted: a block is a light module)."""
    from pyzbar import pyzbar

    top = {"█": 1, "▀": 1, "▄": 0, " ": 0}
    bottom = {"█": 1, "▀": 0, "▄": 1, " ": 0}
    rows = []
    for line in lines:
        rows.append([top[c] for c in line])
        rows.append([bottom[c] for c in line])
    width = max(len(row) for row in rows)
    scale, margin = 6, 4
    pixels = bytearray()
    for row in [[1] * width] * margin + rows + [[1] * width] * margin:
        padded = [1] * margin + row + [1] * (width - len(row)) + [1] * margin
        line = bytes(255 if light else 0 for light in padded for _ in range(scale))
        pixels += line * scale
    found = pyzbar.decode((bytes(pixels), (width + 2 * margin) * scale, len(pixels) // ((width + 2 * margin) * scale)))
    return [symbol.data.decode() for symbol in found]


def test_login_shows_the_code_url_and_a_qr_code_and_returns_once_signed_in(box):
    folder, sim, agent = box
    process = subprocess.Popen([os.path.join(bin_dir(), "preflightctl"), "--config", agent.config_path, "auth", "login",
                                "--mvpd", MVPD], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in process.stdout], daemon=True).start()
    shown = []
    code = None
    while code is None:
        line = lines.get(timeout=30)
        shown.append(line.rstrip("\n"))
        match = re.match(r"\s+Code: ([A-Z0-9]+) \(valid for 30m 0s\)$", line.rstrip("\n"))
        if match:
            code = match.group(1)
    url = f"{sim.url}/api/v2/authenticate/{REQUESTOR}/{code}"
    assert shown[0] == f"Sign in to {REQUESTOR} with {MVPD}:"
    assert shown[1] == f"  1. On a phone or computer, open {url}"
    # The QR code follows, between blank lines: a phone scanning it opens the same URL.
    qr = []
    assert lines.get(timeout=30).strip() == ""
    while True:
        line = lines.get(timeout=30).rstrip("\n")
        if not line.strip():
            break
        qr.append(line[2:])
    assert decode_qr(qr) == [url]
    sim.call("POST", f"/_sim/pass/sessions/{code}/signin", {})
    assert process.wait(timeout=60) == 0, process.stderr.read()
    last = lines.get(timeout=30)
    assert last.startswith(f"Signed in with {MVPD} until "), last
    assert code not in read_log(folder)

    status, out, _ = ctl(agent, "auth", "status")
    assert status == 0 and re.search(rf"Signed in\s+yes, with {MVPD}", out), out
    # Signed in already: login says so and exits 0 at once.
    status, out, _ = ctl(agent, "auth", "login")
    assert status == 0 and out.startswith(f"Already signed in to {REQUESTOR} with {MVPD} until "), out


def test_authorize_masks_the_media_token_unless_asked(box):
    folder, sim, agent = box
    sim.call("POST", "/_sim/pass/login", {"serviceProvider": REQUESTOR, "mvpd": MVPD, "ttlSeconds": 3600})
    status, out, _ = ctl(agent, "auth", "authorize", "movie-1")
    assert status == 0, out
    token_row = re.search(r"Media token\s+…(\S{4}) \((\d+) characters; --show-token prints it\)", out)
    assert token_row, out
    assert re.search(r"Authorized\s+yes", out) and re.search(r"Source\s+mvpd", out)
    status, out, _ = ctl(agent, "--json", "auth", "authorize", "movie-1", "--show-token")
    import json

    token = json.loads(out)["mediaToken"]["serializedToken"]
    assert status == 0 and len(token) == int(token_row.group(2)) and token.endswith(token_row.group(1))
    assert token not in read_log(folder)
    sim.call("PUT", "/_sim/pass/decisions", {"serviceProvider": REQUESTOR, "decisions": {
        "movie-2": {"authorized": False, "error": "authorization_denied_by_mvpd"}}})
    status, out, _ = ctl(agent, "auth", "authorize", "movie-2")
    assert status == 1 and re.search(r"Authorized\s+no", out) and "authorization_denied_by_mvpd" in out


def test_logout_prints_the_browser_step_and_status_then_says_not_signed_in(box):
    folder, sim, agent = box
    sim.call("POST", "/_sim/pass/login", {"serviceProvider": REQUESTOR, "mvpd": MVPD, "ttlSeconds": 3600})
    status, out, _ = ctl(agent, "auth", "logout")
    assert status == 0 and out.startswith(f"Signed out of {REQUESTOR} ({MVPD}).\nTo finish at the provider, open https://"), out
    status, out, _ = ctl(agent, "auth", "status", "--fresh")
    assert status == 1 and "authentication_session_missing" in out


def test_the_requestor_must_be_named_when_the_box_serves_several(box):
    folder, sim, agent = box
    config = open(agent.config_path).read().replace(f'["{REQUESTOR}"]', f'["{REQUESTOR}", "other"]')
    other = os.path.join(folder, "two.json")
    open(other, "w").write(config)
    done = subprocess.run([os.path.join(bin_dir(), "preflightctl"), "--config", other, "auth", "status"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and f"name the requestor with --requestor (configured: {REQUESTOR}, other)" in done.stderr


def test_status_tells_of_a_pending_sign_in_without_its_code(box):
    folder, sim, agent = box
    status, out, _ = ctl(agent, "auth", "login", "--no-wait", "--no-qr")
    code = re.search(r"Code: (\S+)", out).group(1)
    status, out, _ = ctl(agent, "auth", "status")
    assert status == 1 and re.search(r"Sign-in pending\s+provider chosen on the second screen", out), out
    status, json_out, _ = ctl(agent, "--json", "auth", "status")
    assert code not in out and code not in json_out

"""preflightctl against a real agent and preflight-sim.

Human output is pinned by golden files (tests/python/golden/ctl_*.txt) after `mask()` replaces what varies from
run to run; `PREFLIGHT_UPDATE_GOLDEN=1` rewrites them. JSON output is parsed and checked, and every exit code is
provoked: 0 ok, 1 agent error, 2 usage, 3 not reachable, 4 not permitted.
"""

import difflib
import json
import os
import re
import select
import shutil
import signal
import subprocess
import tempfile
import time
from types import SimpleNamespace

import pytest

from agent_harness import (
    TEST_SOFTWARE_STATEMENT,
    Simulator,
    bin_dir,
    read_log,
    request,
    start_agent,
    stop_agent,
    wait_until,
)

GOLDEN_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden")
UPDATE_GOLDEN = os.environ.get("PREFLIGHT_UPDATE_GOLDEN") == "1"

# "850ms", "12s", "4m 10s", "2h 5m", "3d 4h", "0.08ms", "1.25s", "312 µs", "12 ms".
DURATION = r"(?:\d+d \d+h|\d+h \d+m|\d+m \d+s|\d+(?:\.\d+)?(?:ms|µs|s)|\d+ (?:µs|ms))"


def ctl_binary():
    return os.path.join(bin_dir(), "preflightctl")


def run_ctl(*args, timeout=30):
    return subprocess.run([ctl_binary(), *args], capture_output=True, text=True, timeout=timeout)


class Ctl:
    """Runs preflightctl with the fixture's --config and keeps every output (for the secrets test)."""

    def __init__(self, env):
        self.env = env
        self.outputs = []

    def __call__(self, *args, code=0, config=True):
        result = run_ctl(*(["--config", self.env.agent.config_path] if config else []), *args)
        self.outputs += [result.stdout, result.stderr]
        assert result.returncode == code, (
            f"preflightctl {' '.join(args)} exited {result.returncode}, expected {code}\n"
            f"stdout: {result.stdout}\nstderr: {result.stderr}"
        )
        return result

    def json(self, *args, code=0):
        stdout = self(*args, "--json", code=code).stdout
        assert stdout.count("\n") == 1, f"--json prints one line: {stdout!r}"
        return json.loads(stdout)


def mask(text, folder):
    """Replaces what varies between runs with placeholders: the fixture folder, ports, pids, tntIds, times,
    durations and ages, request counts. The padding before a duration in a right-aligned column (whose width
    varies with the value) collapses to two spaces."""
    text = text.replace(folder, "<dir>")
    text = re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:<port>", text)
    text = re.sub(r"\b[0-9a-f]{32}\.\d+_\d+\b", "<tntId>", text)
    text = re.sub(r"^(PID +)\d+$", r"\g<1><pid>", text, flags=re.M)
    text = re.sub(r"^(Requests +)\d+$", r"\g<1><n>", text, flags=re.M)
    text = re.sub(r"\b\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\b", "<datetime>", text)
    text = re.sub(r"\b\d\d:\d\d:\d\d\.\d{3}\b", "<time>", text)
    # In a right-aligned column (followed by another column) the padding varies with the value's width.
    text = re.sub(r" {2,}(?=" + DURATION + r"  )", "  ", text)
    text = re.sub(r"(?<![\w.+/])" + DURATION + r"(?![\w.])", "<dur>", text)
    return text


def drop_pass_lines(text):
    """The fixture's agent has no reachable Adobe Pass and registers with it in the background, so its Pass rows
    in `status` depend on timing: they are left out here (test_auth_commands checks them with a real Pass)."""
    return "".join(
        line for line in text.splitlines(keepends=True) if not re.match(r"(Adobe Pass|Requestors?|Upstream pass) ", line)
    )


class Golden:
    def __init__(self, folder):
        self.folder = folder
        self.mismatches = []

    def check(self, name, text):
        masked = drop_pass_lines(mask(text, self.folder))
        path = os.path.join(GOLDEN_DIR, f"ctl_{name}.txt")
        if UPDATE_GOLDEN:
            os.makedirs(GOLDEN_DIR, exist_ok=True)
            with open(path, "w") as handle:
                handle.write(masked)
            return
        expected = open(path).read() if os.path.exists(path) else ""
        if masked != expected:
            diff = difflib.unified_diff(
                expected.splitlines(True), masked.splitlines(True), f"golden/ctl_{name}.txt", "actual"
            )
            self.mismatches.append("".join(diff) or f"golden/ctl_{name}.txt missing")

    def assert_all_match(self):
        assert not self.mismatches, "human output differs (PREFLIGHT_UPDATE_GOLDEN=1 rewrites):\n" + "\n".join(
            self.mismatches
        )


def queue_drained(agent):
    status = request(agent.admin, "notifications.status")["result"]
    return status["queued"] == 0 and status["sent"] >= 1


# The display notification of the cached `logo` rides on the execute call of the `nothing` miss (2 calls in
# all, as the golden files say); a long batch age keeps the background sender from taking it first on a
# loaded machine.
@pytest.mark.target_settings(notificationBatchAge=30)
def test_human_output_matches_golden_files(target_env):
    ctl, golden = Ctl(target_env), Golden(target_env.folder)
    ctl("stats", "--reset")  # the harness's pings are not part of the picture
    golden.check("status_fresh", ctl("status").stdout)
    golden.check("offers_list_empty", ctl("offers", "list").stdout)
    golden.check(
        "offers_prefetch",
        ctl("offers", "prefetch", "logo", "buttonColor", "nothing", "--param", "status=platinum",
            "--profile", "age=20-32").stdout,
    )
    golden.check("offers_list", ctl("offers", "list").stdout)
    golden.check("offers_show_logo", ctl("offers", "show", "logo").stdout)
    golden.check("offers_show_buttonColor", ctl("offers", "show", "buttonColor").stdout)
    golden.check("offers_show_missing", ctl("offers", "show", "nope", code=1).stderr)
    golden.check("stats", ctl("stats").stdout)
    golden.check("offers_load", ctl("offers", "load", "logo", "nothing", "--default", "BlueWhale").stdout)
    wait_until("the display notification to be confirmed", lambda: queue_drained(target_env.agent))
    golden.check("notifications", ctl("notifications").stdout)
    golden.check("notifications_flush", ctl("notifications", "flush").stdout)
    golden.check("status", ctl("status").stdout)
    golden.check("config_show", ctl("config", "show").stdout)
    golden.check("offers_clear_one", ctl("offers", "clear", "logo").stdout)
    golden.check("offers_clear_missing", ctl("offers", "clear", "logo").stdout)
    golden.check("offers_clear_all", ctl("offers", "clear").stdout)
    golden.check("ping", ctl("ping").stdout)
    golden.check("stats_reset", ctl("stats", "--reset").stdout)
    golden.assert_all_match()


def test_upstream_failure_shows_in_status_notifications_and_defaults(target_env):
    ctl, golden, agent = Ctl(target_env), Golden(target_env.folder), target_env.agent
    ctl("offers", "prefetch", "logo")
    target_env.sim.call("POST", "/_sim/faults", {"path": "/rest/v1/delivery", "status": 503})
    failed = ctl("offers", "prefetch", "buttonColor", code=1)
    golden.check("offers_prefetch_failed", failed.stdout + failed.stderr)
    golden.check("offers_load_default", ctl("offers", "load", "logo", "nothing", "--default", "BlueWhale").stdout)
    wait_until(
        "a failed notification attempt",
        lambda: request(agent.admin, "notifications.status")["result"]["failedAttempts"] >= 1,
    )
    status = ctl("status").stdout
    assert re.search(r"^Upstream target +http://127\.0\.0\.1:\d+  FAILING: status \S+ ago \(HTTP 503", status, re.M)
    assert re.search(r"^Defaults served +status 1$", status, re.M), status
    assert re.search(r"^Notifications +1 queued \(oldest \S+ ago\), 0 sent, last error: HTTP 503", status, re.M)
    queue = ctl("notifications").stdout
    assert re.search(r"^Queued +1$", queue, re.M) and re.search(r"^Last error +HTTP 503.* ago\)$", queue, re.M)
    target_env.sim.call("DELETE", "/_sim/faults")
    flushed = ctl("notifications", "flush").stdout
    # The agent's own retry (after a backoff of about a second) may have sent it first.
    assert flushed in ("Target confirmed 1 notification; 0 still queued.\n",
                       "Nothing to flush: no notifications were queued.\n"), flushed
    assert target_env.sim.call("GET", "/_sim/target/notifications")["count"] == 1
    golden.assert_all_match()


def test_json_output_is_the_agents_result(target_env):
    ctl, agent = Ctl(target_env), target_env.agent
    assert ctl.json("ping")["version"]
    status = ctl.json("status")
    assert status["pid"] == agent.process.pid and status["endpoints"]["admin"] == agent.admin
    prefetched = ctl.json("offers", "prefetch", "logo", "buttonColor", "--param", "status=platinum")
    assert prefetched == {"success": True, "mboxes": [{"name": "logo", "cached": True},
                                                      {"name": "buttonColor", "cached": True}]}
    target_request = target_env.sim.requests("delivery")[-1]["body"]
    assert [m["parameters"] for m in target_request["prefetch"]["mboxes"]] == [{"status": "platinum"}] * 2
    offers = ctl.json("offers", "list")["offers"]
    assert sorted(o["name"] for o in offers) == ["buttonColor", "logo"]
    assert ctl.json("offers", "show", "buttonColor")["options"][0]["content"] == {"color": "blue"}
    # Shell completion of offer names asks the agent (the words are the command line typed so far).
    words = ["preflightctl", "--config", agent.config_path, "offers", "show", "b"]
    completion = subprocess.run(
        [ctl_binary(), "---completion", "offers", "show", "--", "positional@0", "5", "1", *words],
        capture_output=True, text=True, timeout=30, env={**os.environ, "SAP_SHELL": "bash"},
    )
    assert completion.returncode == 0 and completion.stdout.split() == ["buttonColor"], completion
    loaded = ctl.json("offers", "load", "logo", "nothing", "--default", "x", "--profile", "age=20-32")
    assert [(c["name"], c["source"]) for c in loaded["contents"]] == [("logo", "cache"), ("nothing", "default")]
    stats = ctl.json("stats")
    assert stats["commands"]["loadRequests"]["count"] == 1 and stats["offers"]["hits"] == 1
    assert set(ctl.json("notifications")) >= {"queued", "inFlight", "sent", "lastError"}
    assert set(ctl.json("notifications", "flush")) == {"confirmed", "queued", "lastError"}
    shown = ctl.json("config", "show")
    assert shown["pass"]["softwareStatement"] == f"(redacted, {len(TEST_SOFTWARE_STATEMENT)} characters)"
    # `call` sends any command of the table with JSON arguments and prints the agent's result.
    assert json.loads(ctl("call", "offers.show", '{"name": "buttonColor"}').stdout)["name"] == "buttonColor"
    assert json.loads(ctl("call", "ping").stdout)["version"]
    # Its completion lists the command table's wire names.
    script = run_ctl("--generate-completion-script", "bash").stdout
    assert all(name in script for name in ("offers.show", "notifications.flush", "loadRequests", "auth.clear"))
    assert ctl.json("offers", "clear", "logo") == {"cleared": 1}
    assert ctl.json("offers", "clear") == {"cleared": 1}
    assert ctl.json("stats", "--reset")["commands"]
    # Options before or after the subcommand are the same.
    before = run_ctl("--json", "--config", agent.config_path, "offers", "list")
    assert before.returncode == 0 and json.loads(before.stdout) == {"offers": []}


def test_exit_codes_and_messages(target_env):
    ctl, agent = Ctl(target_env), target_env.agent
    ctl("ping")  # 0
    missing = ctl("offers", "show", "nope", code=1)
    assert "invalid_argument" in missing.stderr and "nope" in missing.stderr
    called = ctl("call", "offers.show", '{"name": "nope"}', code=1)
    assert "invalid_argument" in called.stderr and "nope" in called.stderr
    for args in (
        ["offers", "list", "--bogus"],
        ["no-such-command"],
        ["ping", "--timeout", "soon"],
        ["offers", "prefetch", "logo", "--param", "no-equals-sign"],
        ["offers", "load", "logo"],  # --default is required
        ["offers", "prefetch"],
        ["watch", "--count", "0"],
        ["call", "no.such.command"],
        ["call", "offers.show", "not json"],
        ["call", "offers.show", "[1]"],
    ):
        assert ctl(*args, code=2).stderr, args
    # Admin commands on the app endpoint are refused by the agent: not permitted.
    refused = run_ctl("--endpoint", agent.app, "status")
    assert refused.returncode == 4 and "not_permitted" in refused.stderr
    # No socket file: not reachable, and the message names the endpoint.
    nowhere = f"ipc://{target_env.folder}/run/nowhere.sock"
    for args in (["--endpoint", nowhere, "status"], ["offers", "load", "logo", "--default", "x", "--app-endpoint",
                                                     nowhere], ["watch", "--events-endpoint", nowhere]):
        result = ctl(*args, code=3)
        assert nowhere in result.stderr, result.stderr
    # The agent stopped: every endpoint of the config is unreachable.
    stop_agent(agent)
    assert agent.admin in ctl("status", code=3).stderr
    assert agent.app in ctl("offers", "prefetch", "logo", code=3).stderr
    assert agent.events in ctl("watch", "--count", "1", code=3).stderr


REQUESTOR = "espn"
MVPD = "Comcast_SSO"


@pytest.fixture
def pass_env():
    """preflight-sim as Target and Adobe Pass, a user signed in for REQUESTOR, and an agent serving it."""
    folder = tempfile.mkdtemp(prefix="pf-ctl-", dir="/tmp")
    sim = Simulator(folder)
    sim.call("POST", "/_sim/pass/login", {"serviceProvider": REQUESTOR, "mvpd": MVPD})
    sim.call("PUT", "/_sim/pass/decisions", {"decisions": {
        "espn-live": True, "espn-ppv": {"authorized": False, "error": "preauthorization_denied_by_mvpd"}}})
    agent = start_agent(folder, target={"serverURL": sim.url}, pass_={
        "serverURL": sim.url, "softwareStatement": TEST_SOFTWARE_STATEMENT, "requestors": [REQUESTOR]})
    setup = SimpleNamespace(folder=folder, sim=sim, agent=agent)

    def configured():
        requestor = request(agent.admin, "auth.list")["result"]["requestors"].get(REQUESTOR, {})
        return requestor.get("configuration", {}).get("state") == "configured"

    wait_until("the requestor's configuration from Adobe Pass", configured)
    yield setup
    stop_agent(agent)
    violations = sim.call("GET", "/_sim/violations")
    sim.stop()
    shutil.rmtree(folder, ignore_errors=True)
    assert violations["count"] == 0, violations


def test_auth_commands(pass_env):
    ctl, golden = Ctl(pass_env), Golden(pass_env.folder)
    golden.check("auth_preauthorize", ctl("auth", "preauthorize", "--requestor", REQUESTOR, "espn-live",
                                          "espn-ppv").stdout)
    decided = ctl.json("auth", "preauthorize", "--requestor", REQUESTOR, "espn-live", "--no-local-cache")
    assert decided == {"outcome": "response", "resources": [{"id": "espn-live", "authorized": True, "source": "mvpd"}]}

    listed = ctl.json("auth", "list")
    espn = listed["requestors"][REQUESTOR]
    assert espn["session"]["state"] == "authenticated" and espn["session"]["mvpd"] == MVPD
    assert [d["resource"] for d in espn["decisions"]] == ["espn-live"]
    human = ctl("auth", "list").stdout
    assert re.search(r"^registration\.state +registered$", human, re.M), human
    assert re.search(r"^Requestor espn\n  configuration\.state +configured$", human, re.M), human
    assert re.search(r"^  session\.state +authenticated$", human, re.M), human
    assert re.search(r"^  decisions:\n    MVPD +RESOURCE +AGE\n    Comcast_SSO +espn-live +\S+ ago$", human, re.M)
    status = ctl("status").stdout
    assert re.search(r"^Adobe Pass +registration registered, access token valid$", status, re.M), status
    assert re.search(r"^Requestor espn +configuration configured, session authenticated \(mvpd Comcast_SSO\), "
                     r"cached decisions 1$", status, re.M), status

    golden.check("auth_clear", ctl("auth", "clear", "--requestor", REQUESTOR).stdout)
    again = ctl("auth", "preauthorize", "--requestor", REQUESTOR, "espn-live").stdout
    assert re.search(r"^espn-live +yes$", again, re.M), again

    # The user signed out: Adobe Pass says the profile is gone, then the agent knows the session is.
    pass_env.sim.call("POST", "/_sim/pass/logout", {"serviceProvider": REQUESTOR})
    golden.check("auth_preauthorize_profile_missing",
                 ctl("auth", "preauthorize", "--requestor", REQUESTOR, "espn-live", "--no-local-cache").stdout)
    golden.check("auth_preauthorize_session_missing",
                 ctl("auth", "preauthorize", "--requestor", REQUESTOR, "espn-live", code=1).stderr)
    golden.check("auth_preauthorize_not_configured",
                 ctl("auth", "preauthorize", "--requestor", "nbc", "nbc-live", code=1).stderr)
    failed = json.loads(ctl("auth", "preauthorize", "--requestor", "nbc", "x", "--json", code=1).stdout)
    assert failed["outcome"] == "failure" and failed["status"]["code"] == "requestor_not_configured"

    assert "not a requestor" in ctl("auth", "clear", "--requestor", "nbc", code=1).stderr
    assert "--yes" in ctl("auth", "clear", "--registration", code=2).stderr
    assert ctl.json("auth", "clear", "--registration", "--yes")["registration"] is True
    assert ctl.json("auth", "list")["registration"]["state"] == "none"
    golden.assert_all_match()
    everything = "\n".join(ctl.outputs) + read_log(pass_env.folder)
    assert TEST_SOFTWARE_STATEMENT not in everything and TEST_SOFTWARE_STATEMENT[:24] not in everything


def start_watch(env, *args):
    return subprocess.Popen([ctl_binary(), "--config", env.agent.config_path, "watch", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def clear_until_exits(env, watch, deadline=20.0):
    """PUB drops events sent before the subscription reaches the agent: publish until watch has had its fill."""
    end = time.monotonic() + deadline
    while watch.poll() is None and time.monotonic() < end:
        request(env.agent.admin, "offers.clear")
        try:
            watch.wait(timeout=0.05)
        except subprocess.TimeoutExpired:
            pass
    if watch.poll() is None:
        watch.kill()
        raise AssertionError("watch saw no event within the deadline")
    return watch.communicate()


def test_watch_prints_events_as_json_lines_and_text(target_env):
    watch = start_watch(target_env, "--count", "1", "--json", "--topic", "offers.")
    stdout, stderr = clear_until_exits(target_env, watch)
    assert watch.returncode == 0, stderr
    event = json.loads(stdout)
    assert event["topic"] == "offers.cleared" and event["cleared"] == 0 and "uptimeMs" in event

    watch = start_watch(target_env, "--count", "2", "--topic", "offers.cleared")
    stdout, stderr = clear_until_exits(target_env, watch)
    assert watch.returncode == 0, stderr
    assert re.fullmatch(r"(\d\d:\d\d:\d\d\.\d{3} offers\.cleared cleared=0\n){2}", stdout), stdout

    # --timeout ends a quiet watch with 0; a topic nothing publishes prints nothing.
    quiet = run_ctl("--config", target_env.agent.config_path, "watch", "--topic", "no.such.topic", "--timeout", "0.3")
    assert quiet.returncode == 0 and quiet.stdout == ""

    # Ctrl-C ends watch with 0.
    watch = start_watch(target_env, "--topic", "offers.")
    # A printed event proves watch subscribed, and so installed its signal handler before.
    deadline = time.monotonic() + 20
    ready = []
    while watch.poll() is None and time.monotonic() < deadline and not ready:
        request(target_env.agent.admin, "offers.clear")
        ready = select.select([watch.stdout], [], [], 0.05)[0]
    assert ready, "watch printed no event"
    assert "offers.cleared" in watch.stdout.readline()
    watch.send_signal(signal.SIGINT)
    watch.wait(timeout=10)
    assert watch.returncode == 0, watch.stderr.read()


def test_config_check_runs_preflightd(tmp_path):
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"agent": {"stateDirectory": str(tmp_path / "state")},
                                "target": {"clientCode": "acme"}}))
    valid = run_ctl("config", "check", str(good))
    assert valid.returncode == 0 and "configuration is valid" in valid.stdout, valid
    # Without a file: the one named by --config.
    assert run_ctl("--config", str(good), "config", "check").returncode == 0
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"target": {"clientCode": "acme", "timeout": "soon"}}))
    invalid = run_ctl("config", "check", str(bad))
    assert invalid.returncode == 1 and "target.timeout" in invalid.stderr, invalid
    verdict = run_ctl("config", "check", str(bad), "--json")
    assert verdict.returncode == 1
    assert json.loads(verdict.stdout)["valid"] is False
    assert any("target.timeout" in m for m in json.loads(verdict.stdout)["messages"])
    # Without preflightd beside it, preflightctl says what it needs.
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(ctl_binary(), alone / "preflightctl")
    result = subprocess.run([str(alone / "preflightctl"), "config", "check", str(bad)], capture_output=True,
                            text=True, timeout=30)
    assert result.returncode == 3 and "needs preflightd" in result.stderr


def test_no_secret_in_any_output(target_env):
    """Every command, human and JSON, with the fixture's config (pass.softwareStatement set), and the agent's
    log: the software statement appears nowhere."""
    ctl = Ctl(target_env)
    for args, code in (
        (["status"], 0), (["ping"], 0), (["stats"], 0), (["offers", "prefetch", "logo"], 0),
        (["offers", "list"], 0), (["offers", "show", "logo"], 0), (["offers", "load", "logo", "--default", "x"], 0),
        (["notifications"], 0), (["notifications", "flush"], 0), (["config", "show"], 0), (["offers", "clear"], 0),
        (["auth", "list"], 0), (["auth", "clear"], 0),
        (["auth", "preauthorize", "--requestor", "espn", "r1"], 1), (["watch", "--timeout", "0.2"], 0),
    ):
        for extra in ([], ["--json"]):
            result = run_ctl("--config", target_env.agent.config_path, *args, *extra)
            ctl.outputs += [result.stdout, result.stderr]
            assert result.returncode == code, (args, result.stderr)
    for args in (["config", "check", target_env.agent.config_path], ["config", "check", "--json"]):
        result = run_ctl("--config", target_env.agent.config_path, *args)
        assert result.returncode == 0, result.stderr
        ctl.outputs += [result.stdout, result.stderr]
    everything = "\n".join(ctl.outputs) + read_log(target_env.folder)
    assert "redacted" in everything
    assert TEST_SOFTWARE_STATEMENT not in everything
    assert TEST_SOFTWARE_STATEMENT[:24] not in everything


def test_help_and_completion_scripts():
    help_text = run_ctl("--help")
    assert help_text.returncode == 0
    for command in ("status", "stats", "offers", "auth", "notifications", "watch", "config", "call"):
        assert re.search(rf"^  {command} ", help_text.stdout, re.M), command
    for shell in ("bash", "zsh", "fish"):
        script = run_ctl("--generate-completion-script", shell)
        assert script.returncode == 0 and "preflightctl" in script.stdout and "prefetch" in script.stdout
    assert run_ctl("help", "offers", "prefetch").returncode == 0

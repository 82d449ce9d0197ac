"""docs/APPS.md is true: its Swift programs are the files the build compiles, and its Swift and Python programs,
run against a real preflightd with preflight-sim as Target and Adobe Pass, print what the guide says they print
and put on the wire (and get back) the JSON the guide shows.

The guide marks what is checked with an HTML comment on the line before a fenced block:
`<!-- example: Examples/X/main.swift -->` (a Swift program, byte for byte that file), `<!-- example: python NAME -->`
(a Python program, run as it is), `<!-- output: NAME -->` (what the programs named NAME print), `<!-- wire: CMD -->`
and `<!-- reply: CMD -->` (a request body and its reply, ids aside), `<!-- package-manifest -->` (an app's
Package.swift)."""

import json
import os
import pty
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time

import pytest

from agent_harness import REPO, bin_dir, read_log, wait_until
from test_examples import ExamplesSetup, RecordingProxy, env  # noqa: F401  (env: the fixture, re-used)

GUIDE = os.path.join(REPO, "docs", "APPS.md")
PYTHON_CLIENT = os.path.join(REPO, "tools", "examples", "python", "preflight_client.py")
PYTHON_SIGN_IN = os.path.join(REPO, "tools", "examples", "python", "sign_in.py")
SWIFT_EXAMPLES = {
    "prefetch-and-load": "example-prefetch-and-load",
    "preauthorize": "example-preauthorize",
    "sign-in": "example-sign-in",
    "watch-events": "example-watch-events",
}
# The sample values of the guide's sign-in output, where a run prints its own.
GUIDE_CODE = "UXD6NWP"
GUIDE_SIGN_IN_PAGE = "https://sp.auth.adobe.com/api/v2/authenticate/"
GUIDE_TOKEN_END = "\u2026Pg=="

LANGUAGES = ["swift", "python"]


def guide_blocks():
    """[(marker or None, language, text)] for every fenced block of the guide, in order."""
    lines = open(GUIDE, encoding="utf-8").read().split("\n")
    blocks = []
    index = 0
    while index < len(lines):
        opening = re.match(r"^(\s*)```(\w*)\s*$", lines[index])
        if not opening:
            index += 1
            continue
        indent, language = opening.group(1), opening.group(2)
        marker = None
        if index > 0:
            comment = re.match(r"^\s*<!--\s*(.*?)\s*-->\s*$", lines[index - 1])
            marker = comment.group(1) if comment else None
        body = []
        index += 1
        while not re.match(rf"^{indent}```\s*$", lines[index]):
            body.append(lines[index][len(indent):])
            index += 1
        blocks.append((marker, language, "\n".join(body) + "\n"))
        index += 1
    return blocks


def block(marker):
    found = [text for mark, _, text in guide_blocks() if mark == marker]
    assert len(found) == 1, f"docs/APPS.md has {len(found)} blocks marked {marker!r}"
    return found[0]


def printed(marker):
    return block(f"output: {marker}").splitlines()


def write_config(folder, app, events=None):
    """An agent configuration file as an example reads it: only the endpoints matter to the clients."""
    path = os.path.join(folder, "app-config.json")
    agent = {"appEndpoint": app}
    if events is not None:
        agent["eventsEndpoint"] = events
    with open(path, "w") as handle:
        json.dump({"agent": agent, "pass": {"requestors": ["acme-requestor"]}}, handle)
    return path


def example_command(language, name, folder):
    """The command that runs the guide's program `name`: the Swift executable the build made from Examples/, or
    the guide's Python block saved next to a copy of preflight_client.py, as the guide tells an app to do."""
    if language == "swift":
        return [os.path.join(bin_dir(), SWIFT_EXAMPLES[name])]
    app = os.path.join(folder, "python-app")
    os.makedirs(app, exist_ok=True)
    shutil.copy(PYTHON_CLIENT, app)
    script = os.path.join(app, f"{name.replace('-', '_')}.py")
    with open(script, "w") as handle:
        handle.write(block(f"example: python {name}"))
    return [sys.executable, script]


def run(language, name, folder, config):
    done = subprocess.run(example_command(language, name, folder) + [config], capture_output=True, text=True,
                          timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout.splitlines()


def without_id(message):
    return {key: value for key, value in message.items() if key != "id"}


def swift_wire(body):
    """What the guide says the Swift client sends instead: `purchasedProductIds` as the comma-separated string
    its [String: String] parameters hold (key order is not compared: JSON objects have none)."""
    for mbox in body.get("args", {}).get("mboxes", []):
        ids = mbox.get("orderParameters", {}).get("purchasedProductIds")
        if isinstance(ids, list):
            mbox["orderParameters"]["purchasedProductIds"] = ", ".join(ids)
    return body


# --- The guide's text --------------------------------------------------------------------------------------


def test_every_program_in_the_guide_is_checked():
    for marker, language, text in guide_blocks():
        if language == "swift":
            assert marker == "package-manifest" or (marker or "").startswith("example: Examples/"), text[:80]
        if language == "python":
            assert (marker or "").startswith("example: python "), text[:80]
    named = {marker for marker, _, _ in guide_blocks() if marker}
    assert {f"example: python {name}" for name in SWIFT_EXAMPLES} <= named


def test_the_swift_programs_in_the_guide_are_the_files_the_build_compiles():
    examples = [(marker, text) for marker, _, text in guide_blocks() if (marker or "").startswith("example: Ex")]
    assert len(examples) == len(SWIFT_EXAMPLES)
    package = open(os.path.join(REPO, "Package.swift")).read()
    for marker, text in examples:
        path = marker[len("example: "):]
        with open(os.path.join(REPO, path), encoding="utf-8") as handle:
            assert text == handle.read(), f"docs/APPS.md's copy of {path} differs from the file"
        folder = os.path.dirname(path)
        target = re.search(rf'name: "([^"]+)",\s*dependencies: \["PreflightClient"\],\s*path: "{folder}"', package)
        assert target and target.group(1) in SWIFT_EXAMPLES.values(), f"no executable target builds {path}"
        assert os.access(os.path.join(bin_dir(), target.group(1)), os.X_OK)


def test_the_python_sign_in_program_is_the_one_in_tools_examples():
    with open(PYTHON_SIGN_IN, encoding="utf-8") as handle:
        assert block("example: python sign-in") == handle.read()


def test_the_guides_package_manifest_names_the_library_product_and_a_tools_version_it_builds_with():
    manifest = block("package-manifest")
    package = open(os.path.join(REPO, "Package.swift")).read()
    product = re.search(r'\.product\(name: "([^"]+)", package: "([^"]+)"\)', manifest)
    assert product and f'.library(name: "{product.group(1)}"' in package
    # The identity of `.package(path: "../preflight")` is the folder's name.
    assert re.search(rf'\.package\(path: "[^"]*/{product.group(2)}"\)', manifest)
    ours = re.match(r"// swift-tools-version:(\d+)\.(\d+)", package).groups()
    theirs = re.match(r"// swift-tools-version:(\d+)\.(\d+)", manifest).groups()
    assert tuple(map(int, theirs)) >= tuple(map(int, ours))


# --- The programs against a real agent ---------------------------------------------------------------------


def run_recorded(env, language, program):
    """Runs a guide program against the agent through a recording proxy; its output lines and the proxy."""
    proxy = RecordingProxy(env.folder, env.agent.app)
    try:
        return run(language, program, env.folder, write_config(env.folder, proxy.endpoint)), proxy
    finally:
        proxy.close()


@pytest.mark.parametrize("language", LANGUAGES)
def test_prefetch_and_load_prints_and_sends_what_the_guide_shows(env, language):
    lines, proxy = run_recorded(env, language, "prefetch-and-load")
    assert lines == printed("prefetch-and-load")

    wire = [json.loads(block("wire: prefetch")), json.loads(block("wire: loadRequests"))]
    expected = [without_id(body) for body in wire]
    if language == "swift":
        expected = [swift_wire(body) for body in expected]
    assert [without_id(body) for body in proxy.bodies] == expected
    replies = [json.loads(block("reply: prefetch")), json.loads(block("reply: loadRequests"))]
    assert [without_id(reply) for reply in proxy.replies] == [without_id(reply) for reply in replies]
    assert [reply["id"] for reply in proxy.replies] == [body["id"] for body in proxy.bodies]
    # Served from the cache: one prefetch call to Target and no execute call.
    deliveries = env.sim.requests("delivery")
    assert len([d for d in deliveries if "prefetch" in d["body"]]) == 1
    assert all("execute" not in d["body"] for d in deliveries)


@pytest.mark.parametrize("language", LANGUAGES)
def test_preauthorize_prints_and_sends_what_the_guide_shows(env, language):
    env.login_and_wait_configured()
    calls_before = len(env.sim.requests("preauthorize"))
    lines, proxy = run_recorded(env, language, "preauthorize")
    assert lines == printed("preauthorize")
    assert [without_id(body) for body in proxy.bodies] == [without_id(json.loads(block("wire: preauthorize")))]
    assert [without_id(reply) for reply in proxy.replies] == [without_id(json.loads(block("reply: preauthorize")))]
    # LOCAL_CACHE disabled: Adobe Pass was asked.
    assert len(env.sim.requests("preauthorize")) == calls_before + 1


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_denial_prints_adobes_enhanced_error(env, language):
    denial = {"status": 403, "code": "preauthorization_denied_by_mvpd",
              "message": "The MVPD has returned a \"Deny\" decision when requesting pre-authorization.",
              "action": "none"}
    env.sim.call("PUT", "/_sim/pass/decisions",
                 {"serviceProvider": "acme-requestor", "decisions": {"resource2": {"authorized": False, "error": denial}}})
    env.login_and_wait_configured()
    lines = run(language, "preauthorize", env.folder, env.agent.config_path)
    assert lines == ["resource1: authorized", f"resource2: denied ({denial['code']}: {denial['message']})",
                     "resource3: authorized"]


@pytest.mark.parametrize("language", LANGUAGES)
def test_before_the_login_preauthorize_prints_the_failure_the_guide_names(env, language):
    def logged_out_failure():
        lines = run(language, "preauthorize", env.folder, env.agent.config_path)
        assert len(lines) == 1 and lines[0].startswith("failure: ")
        # Right after the start: requestor_not_configured (retry) until the requestor's configuration arrived.
        return lines[0].startswith("failure: authentication_session_missing (authentication): ")

    wait_until("authentication_session_missing", logged_out_failure, timeout=60)


@pytest.mark.parametrize("language", LANGUAGES)
def test_without_an_agent_the_programs_print_defaults_and_network_error(language):
    folder = tempfile.mkdtemp(prefix="pf-guide-", dir="/tmp")
    try:
        config = write_config(folder, f"ipc://{folder}/run/app.sock", f"ipc://{folder}/run/events.sock")
        assert run(language, "prefetch-and-load", folder, config) == printed("prefetch-and-load offline")
        lines = run(language, "preauthorize", folder, config)
        assert len(lines) == 1 and lines[0].startswith("failure: network_error (none): "), lines
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.parametrize("language", LANGUAGES)
def test_watch_events_prints_the_event_a_prefetch_causes(env, language):
    # A terminal for stdout, as a person runs it: output is line-buffered there, not held back as in a pipe.
    controller, terminal = pty.openpty()
    watcher = subprocess.Popen(example_command(language, "watch-events", env.folder) + [env.agent.config_path],
                               stdout=terminal, stderr=subprocess.PIPE)
    os.close(terminal)
    received = b""
    try:
        with env.client() as client:
            # PUB drops what is published before the subscription arrives: prefetch until a line is printed.
            def printed_a_line():
                nonlocal received
                assert watcher.poll() is None, watcher.stderr.read().decode()
                assert client.prefetch(["logo"])
                while select.select([controller], [], [], 0.05)[0]:
                    received += os.read(controller, 4096)
                return b"\n" in received

            wait_until("the example to print an event", printed_a_line, timeout=60)
    finally:
        watcher.kill()
        watcher.wait()
        watcher.stderr.close()
        os.close(controller)
    topic, _, body = received.decode().splitlines()[0].partition(" ")
    assert topic == "offers.prefetched"
    event = json.loads(body)
    assert event["topic"] == "offers.prefetched" and event["mboxes"] == ["logo"] and event["cached"] == ["logo"]


# --- The sign-in program, with a person on a second screen --------------------------------------------------


class Program:
    """A guide program running with its stdout on a terminal, as a person runs it (lines come as they are
    printed), read while it runs. stderr goes to a file, so that nothing the program writes can block it."""

    def __init__(self, command, folder):
        self.controller, terminal = pty.openpty()
        self.errors = open(os.path.join(folder, "program.stderr"), "w+")
        self.process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=terminal, stderr=self.errors,
                                        env={**os.environ, "PYTHONIOENCODING": "utf-8"})
        os.close(terminal)
        self.output = b""
        self.ended = False

    def _read(self, timeout):
        """Reads what is there within `timeout` seconds; marks the end of the output (EIO once the program and
        every child closed the terminal)."""
        if self.ended or not select.select([self.controller], [], [], timeout)[0]:
            return
        try:
            chunk = os.read(self.controller, 4096)
        except OSError:
            chunk = b""
        if chunk:
            self.output += chunk
        else:
            self.ended = True

    @property
    def lines(self):
        return self.output.decode("utf-8", errors="replace").splitlines()

    def wait_for_line(self, pattern, timeout=90):
        """The first match of `pattern` on a whole line, once the program has printed it."""
        found = []

        def printed():
            self._read(0.05)
            found[:] = [match for match in map(re.compile(pattern).fullmatch, self.lines) if match]
            assert found or not self.ended, f"ended without {pattern!r}: {self.lines} {self.stderr()}"
            return bool(found)

        wait_until(f"the program to print {pattern!r}", printed, timeout=timeout)
        return found[0]

    def finish(self, timeout=90):
        """Everything it printed, once it has exited (it is killed past `timeout`)."""
        deadline = time.monotonic() + timeout
        while not self.ended and time.monotonic() < deadline:
            self._read(0.1)
        try:
            self.process.wait(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
        return self.lines

    def stderr(self):
        self.errors.seek(0)
        return self.errors.read()

    def close(self):
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        os.close(self.controller)
        self.errors.close()


def sign_in_expected(code, sim_url, token):
    """The guide's sign-in output with this run's code, sign-in page (the simulator's) and token."""
    return [line.replace(GUIDE_SIGN_IN_PAGE, f"{sim_url}/api/v2/authenticate/").replace(GUIDE_CODE, code)
            .replace(GUIDE_TOKEN_END, "\u2026" + token[-4:]) for line in printed("sign-in")]


@pytest.mark.parametrize("language", LANGUAGES)
def test_sign_in_shows_the_code_then_plays_and_logs_out_once_the_user_signed_in(env, language):
    env.wait_configured()
    proxy = RecordingProxy(env.folder, env.agent.app)
    program = Program(example_command(language, "sign-in", env.folder)
                      + [write_config(env.folder, proxy.endpoint, env.agent.events)], env.folder)
    try:
        shown = program.wait_for_line(r"Sign in at (\S+) with code (\S+)")
        code = shown.group(2)
        assert shown.group(1) == f"{env.sim.url}/api/v2/authenticate/acme-requestor/{code}"
        # The person on the second screen: opens the page and signs in with their TV provider.
        env.sim.call("POST", f"/_sim/pass/sessions/{code}/signin", {"mvpd": "Cablevision"})
        lines = program.finish()
        assert program.process.returncode == 0, (lines, program.stderr())
    finally:
        program.close()
        proxy.close()

    tokens = [reply["result"]["mediaToken"]["serializedToken"] for reply in proxy.replies
              if "mediaToken" in reply.get("result", {})]
    assert len(tokens) == 1
    assert lines == sign_in_expected(code, env.sim.url, tokens[0])
    # What the guide says the agent receives, in order.
    wire = [json.loads(line) for line in block("wire: sign-in").splitlines()]
    assert [without_id(body) for body in proxy.bodies] == [without_id(body) for body in wire]
    assert all(reply["ok"] for reply in proxy.replies), proxy.replies
    # The code and the token went to the app only.
    log = read_log(env.folder)
    assert code not in log and tokens[0] not in log


@pytest.mark.parametrize("language", LANGUAGES)
def test_sign_in_ends_with_status_1_when_the_sign_in_is_given_up(env, language):
    env.wait_configured()
    program = Program(example_command(language, "sign-in", env.folder) + [env.agent.config_path], env.folder)
    try:
        code = program.wait_for_line(r"Sign in at \S+ with code (\S+)").group(1)
        # Another app gives the sign-in up: auth.failed, reason cancelled.
        with env.client() as client:
            assert client.cancel_authentication() is True
        lines = program.finish()
        assert program.process.returncode == 1, (lines, program.stderr())
    finally:
        program.close()
    assert lines == [f"Sign in at {env.sim.url}/api/v2/authenticate/acme-requestor/{code} with code {code}",
                     "Sign-in failed: cancelled"]


@pytest.mark.parametrize("language", LANGUAGES)
def test_sign_in_when_signed_in_already_plays_at_once(env, language):
    env.login_and_wait_configured()
    env.sim.call("PUT", "/_sim/pass/logoutFlow", {"mvpd": "Cablevision", "browserStep": False})
    program = Program(example_command(language, "sign-in", env.folder) + [env.agent.config_path], env.folder)
    try:
        lines = program.finish()
        assert program.process.returncode == 0, (lines, program.stderr())
    finally:
        program.close()
    assert len(lines) == 3, lines
    assert lines[0] == "Signed in with Cablevision"
    assert re.fullmatch(r"Playing movie-1 \(token \u2026\S{4}\)", lines[1]), lines
    assert lines[2] == "Signed out"


@pytest.mark.parametrize("language", LANGUAGES)
def test_without_an_agent_sign_in_prints_network_error_and_ends_with_status_1(language):
    folder = tempfile.mkdtemp(prefix="pf-guide-", dir="/tmp")
    try:
        config = write_config(folder, f"ipc://{folder}/run/app.sock", f"ipc://{folder}/run/events.sock")
        done = subprocess.run(example_command(language, "sign-in", folder) + [config], capture_output=True,
                              text=True, timeout=180)
        assert done.returncode == 1, done.stdout + done.stderr
        lines = done.stdout.splitlines()
        assert len(lines) == 1 and lines[0].startswith("failure: network_error (none): "), lines
    finally:
        shutil.rmtree(folder, ignore_errors=True)

"""Fixtures that start a real preflightd (and, where needed, preflight-sim) for the Python tests."""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid

import pytest
import zmq

# A JWT-shaped secret the tests search every output for.
TEST_SOFTWARE_STATEMENT = "eyJhbGciOiJub25lIn0.eyJ0ZXN0IjoicHJlZmxpZ2h0LXNlY3JldCJ9.c2VjcmV0LXNpZ25hdHVyZQ"

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "tools", "simulator"))
from preflight_sim.cli import shared_dir  # noqa: E402  (the one reading of $PREFLIGHT_SHARED)

# Adobe's files, read in place: `specs/` and `conformance/target-sdk-testing/` ($PREFLIGHT_SHARED, else ../shared).
CONFORMANCE = shared_dir() / "conformance" / "target-sdk-testing"


def bin_dir():
    override = os.environ.get("PREFLIGHT_BIN_DIR")
    if override:
        return override
    return subprocess.check_output(["swift", "build", "--show-bin-path"], cwd=REPO, text=True).strip()


def wait_until(what, condition, timeout=20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.005)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


class Agent:
    def __init__(self, folder, process, config_path):
        self.folder = folder
        self.process = process
        self.config_path = config_path
        self.app = f"ipc://{folder}/run/app.sock"
        self.admin = f"ipc://{folder}/run/admin.sock"
        self.events = f"ipc://{folder}/run/events.sock"


def request(endpoint, cmd, args=None, req_id="1", timeout_ms=5000):
    """One request over a fresh REQ socket, the simplest thing an app can do."""
    context = zmq.Context.instance()
    socket = context.socket(zmq.REQ)
    socket.setsockopt(zmq.LINGER, 0)
    socket.setsockopt(zmq.RCVTIMEO, timeout_ms)
    socket.connect(endpoint)
    try:
        body = {"v": 1, "id": req_id, "cmd": cmd}
        if args is not None:
            body["args"] = args
        socket.send(json.dumps(body).encode())
        return json.loads(socket.recv())
    finally:
        socket.close()


def ok(reply):
    """The result of a successful reply; a failed one fails the test, showing the reply."""
    assert reply["ok"] is True, reply
    return reply["result"]


def start_agent(folder, target=None, pass_=None, agent_extra=None, env=None, wait=True):
    """Starts preflightd with its sockets and state under `folder`; returns once it answers."""
    config = {
        "agent": {
            "appEndpoint": f"ipc://{folder}/run/app.sock",
            "adminEndpoint": f"ipc://{folder}/run/admin.sock",
            "eventsEndpoint": f"ipc://{folder}/run/events.sock",
            "stateDirectory": f"{folder}/state",
            **(agent_extra or {}),
        },
        "target": {"clientCode": "acme", "serverURL": "http://127.0.0.1:9", **(target or {})},
        "pass": {"serverURL": "http://127.0.0.1:9", **(pass_ or {})},
    }
    config_path = os.path.join(folder, "preflight.json")
    with open(config_path, "w") as handle:
        json.dump(config, handle)
    log = open(os.path.join(folder, "preflightd.log"), "a")
    process = subprocess.Popen(
        [os.path.join(bin_dir(), "preflightd"), "--config", config_path],
        stderr=log,
        stdout=log,
        env={**os.environ, **(env or {})},
    )
    log.close()
    handle = Agent(folder, process, config_path)
    if not wait:
        return handle

    def answers():
        if process.poll() is not None:
            raise AssertionError(f"preflightd exited with {process.returncode}: {read_log(folder)}")
        if not os.path.exists(f"{folder}/run/admin.sock"):
            return False
        try:
            return request(handle.admin, "ping", timeout_ms=500)["ok"]
        except zmq.error.Again:
            return False

    wait_until("preflightd to answer", answers)
    return handle


def start_pass_agent(folder, sim, requestors=("acme-requestor",), agent_extra=None, **pass_extra):
    """A preflightd with preflight-sim as Target and Adobe Pass, serving `requestors` as box `test-box-0001`."""
    return start_agent(
        folder,
        target={"serverURL": sim.url},
        pass_={
            "serverURL": sim.url,
            "softwareStatement": TEST_SOFTWARE_STATEMENT,
            "requestors": list(requestors),
            "deviceIdentifier": "test-box-0001",
            **pass_extra,
        },
        agent_extra=agent_extra,
    )


def stop_agent(handle, sig=signal.SIGTERM):
    if handle.process.poll() is None:
        handle.process.send_signal(sig)
        try:
            handle.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            handle.process.kill()
            handle.process.wait()
    return handle.process.returncode


def read_log(folder):
    try:
        with open(os.path.join(folder, "preflightd.log")) as handle:
            return handle.read()
    except OSError:
        return ""


def same_as_documented(documented, actual, varies, path="result"):
    """Asserts that `actual` (a reply) has the keys of `documented` (a doc's example) in the same order, and its
    values, except where `varies(path, documented, actual)` says the value differs from run to run: it then
    checks what it can (its type, a range) and returns True."""
    if isinstance(documented, dict):
        assert isinstance(actual, dict) and list(actual) == list(documented), (path, documented, actual)
        for key in documented:
            same_as_documented(documented[key], actual[key], varies, f"{path}.{key}")
    elif isinstance(documented, list):
        assert isinstance(actual, list) and len(actual) == len(documented), (path, documented, actual)
        for index, (d, a) in enumerate(zip(documented, actual)):
            same_as_documented(d, a, varies, f"{path}[{index}]")
    elif not varies(path, documented, actual):
        assert actual == documented, (path, documented, actual)


class Events:
    """A subscriber to the agent's events endpoint, collecting what arrives under `prefix`."""

    def __init__(self, agent, prefix=b"", confirm=False):
        self.socket = zmq.Context.instance().socket(zmq.SUB)
        self.socket.setsockopt(zmq.LINGER, 0)
        self.socket.setsockopt(zmq.SUBSCRIBE, prefix)
        self.socket.connect(agent.events)
        self.seen = []
        if confirm:
            self.confirm(agent)

    def confirm(self, agent):
        """Returns once the subscription is known to work (a SUB joins asynchronously, and PUB drops what
        is published before): clears the agent's prefetch cache until its `offers.cleared` arrives."""
        self.socket.setsockopt(zmq.SUBSCRIBE, b"offers.cleared")

        def heard():
            assert request(agent.app, "clearPrefetchCache")["ok"]
            return any(topic == "offers.cleared" for topic, _ in self.drain())

        wait_until("the events subscription", heard)
        self.socket.setsockopt(zmq.UNSUBSCRIBE, b"offers.cleared")
        self.seen.clear()

    def drain(self):
        while self.socket.poll(50):
            topic, body = self.socket.recv_multipart()
            self.seen.append((topic.decode(), json.loads(body)))
        return self.seen

    def bodies(self, topic):
        """The bodies of `topic` seen so far (draining first)."""
        return [body for seen, body in self.drain() if seen == topic]

    def wait_for(self, topic, condition=lambda body: True, timeout=20.0):
        """The first body of `topic` that meets `condition`, waiting for it."""
        found = []

        def arrived():
            found[:] = [body for body in self.bodies(topic) if condition(body)]
            return bool(found)

        wait_until(f"event {topic}", arrived, timeout=timeout)
        return found[0]

    def close(self):
        self.socket.close()


class Simulator:
    """preflight-sim on an ephemeral loopback port, with helpers for its control API.

    With `tls=(certificate, key)` it also serves over TLS on a second port (`tls_url`)."""

    def __init__(self, folder, tls=None):
        port_file = os.path.join(folder, "sim.port")
        self.log = open(os.path.join(folder, "sim.log"), "w")
        command = [os.path.join(REPO, "tools", "preflight-sim"), "--port", "0", "--port-file", port_file, "--quiet"]
        tls_port_file = os.path.join(folder, "sim-tls.port")
        if tls is not None:
            command += ["--tls-cert", tls[0], "--tls-key", tls[1], "--tls-port-file", tls_port_file]
        self.process = subprocess.Popen(command, stderr=self.log, stdout=self.log)
        wait_until("preflight-sim to listen", lambda: os.path.exists(port_file) and open(port_file).read().strip())
        self.port = int(open(port_file).read().strip())
        self.url = f"http://127.0.0.1:{self.port}"
        self.tls_port = int(open(tls_port_file).read().strip()) if tls is not None else None
        self.tls_url = f"https://127.0.0.1:{self.tls_port}" if tls is not None else None
        # Target's edgeHost must resolve here: with serverURL set, the agent keeps scheme and port.
        self.call("PUT", "/_sim/target/edgeHost", {"edgeHost": "127.0.0.1"})

    def call(self, method, path, body=None):
        import requests

        response = requests.request(method, self.url + path, json=body, timeout=10)
        response.raise_for_status()
        return response.json() if response.content else None

    def requests(self, operation=None):
        entries = self.call("GET", "/_sim/requests")["requests"]
        return [entry for entry in entries if operation is None or entry.get("operation") == operation]

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=20)
        self.log.close()


def agent_in_own_folder(prefix="pf-py-"):
    """Yields a preflightd (upstreams unreachable) in a folder of its own; stops it and removes the folder."""
    folder = tempfile.mkdtemp(prefix=prefix, dir="/tmp")
    handle = start_agent(folder)
    yield handle
    stop_agent(handle)
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def agent():
    """A preflightd of its own (upstreams unreachable), stopped and cleaned up after the test."""
    yield from agent_in_own_folder()

"""Upstream faults (issue #7), for Target and Adobe Pass alike: each ends in the documented fallback,
the agent keeps serving, and afterwards no descriptor, connection, thread or piece of work has leaked.

Each test is one service x one fault, with its own folder, simulator and agent:

1. warm up: successful calls, so that everything the agent creates lazily (event-loop threads, the
   connection pool) exists; the simulator then closes the pool's idle keep-alive connections (as a
   server's keep-alive timeout would) and the baseline is counted with no connection upstream;
2. the fault: scripted in the simulator on the one path the call takes, or, for faults of the
   connection itself (refused, unresolvable host, TLS), a SIGHUP reload pointing the service at a
   broken address; several apps call at once and each must get the documented fallback, with a
   generous deadline for the reply (no timing assertion beyond "it answered");
3. the fault goes, a call succeeds again;
4. the counts must come back to the baseline (waited for, with a generous deadline): descriptors
   other than ipc sockets exactly, all descriptors at most the baseline's (this test's own admin
   connections close a moment after each request); the agent's TCP sockets (any state, any
   port): none at all, so none ESTABLISHED or CLOSE_WAIT, once the simulator has closed idle
   keep-alive connections; named threads (main, I/O, NIO, libzmq) exactly, libdispatch
   workers at most the baseline's (they are reaped after a few idle seconds); in-flight work
   (`status` ipc.inFlight, `stats` notifications.inFlight) 0; and the simulator holds no connection
   the agent abandoned (a body still trickling into a socket nobody reads).

`python3 -m pytest -rP tests/python/test_upstream_faults.py` prints one line of figures per test.
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time

import pytest
import zmq

from agent_harness import TEST_SOFTWARE_STATEMENT, Simulator, ok, read_log, request, start_agent, stop_agent

# target.timeout and pass.timeout, seconds: long enough for a healthy call on a busy 2-core machine.
UPSTREAM_TIMEOUT = 2
# pass.answerDeadline: room for two timeouts, and for a 429 with Retry-After: 1 to be retried a few times.
ANSWER_DEADLINE = 5
# How long an app waits for a reply: generous, this is "it answered", not a latency test.
REPLY_DEADLINE_MS = 60_000
# How long the counts may take to come back (idle sockets closed, threads parked).
SETTLE_DEADLINE = 60
APPS = 4
# UpstreamCircuit's threshold: calls in a row without an answer before an upstream is down.
CIRCUIT_THRESHOLD = 3

REQUESTOR = "acme-requestor"
MVPD = "Cablevision"
DELIVERY = "/rest/v1/delivery"
PREAUTHORIZE = f"/api/v2/{REQUESTOR}/decisions/preauthorize/{MVPD}"
# RFC 6761: .invalid never resolves. Here the resolver says so at once (NXDOMAIN: `getent hosts
# x.invalid` returns in milliseconds), so no test waits on a DNS timeout. Were a resolver to hang
# instead, each call would still end at the agent's own deadline (the upstream timeout); the Target
# case would then see reason `timeout` rather than `network` and fail saying so, never hang.
UNRESOLVABLE_HOST = "upstream.preflight.invalid"

# Faults of the connection itself: the service is pointed at a broken address by a SIGHUP reload.
CONNECTION_FAULTS = ["refused", "unresolvable", "tls"]
# Faults the simulator plays on the call's own path; the agent keeps its configuration.
SIM_FAULTS = {
    "slow-headers": {"slowHeadersBytesPerSecond": 10},
    "slowloris": {"trickleBytesPerSecond": 10},
    "reset-mid-body": {"resetMidBody": True},
    "5xx": {"status": 503},
    "429": {"status": 429, "retryAfter": 1},
    "malformed": {"malformed": True},
    "truncated": {"truncated": True},
    "oversized": {"oversizedBytes": 8 << 20},
    "endless": {"endlessBody": True},
}
FAULTS = CONNECTION_FAULTS + list(SIM_FAULTS)

# Target: every miss gets its default content; `stats` counts the reason (PROTOCOL.md `defaultsByReason`).
TARGET_REASON = {
    "refused": "network",
    "unresolvable": "network",
    "tls": "network",
    "slow-headers": "timeout",
    "slowloris": "timeout",
    "reset-mid-body": "network",
    "5xx": "status",
    "429": "status",
    "malformed": "unparseable",
    "truncated": "network",
    "oversized": "network",
    "endless": "network",
}

# Adobe Pass: the documented failure codes (PROTOCOL.md, preauthorize). A server the agent cannot
# reach at all leaves the requestor unconfigured; a failing decision call is a network error; an
# Adobe error body on a 5xx is passed through as a top-level status (outcome "response").
PASS_CODE = {
    "refused": "requestor_not_configured",
    "unresolvable": "requestor_not_configured",
    "tls": "requestor_not_configured",
    "slow-headers": "network_error",
    "slowloris": "network_error",
    "reset-mid-body": "network_error",
    "5xx": "internal_server_error",
    "429": "network_error",
    "malformed": "server_response_format_unknown",
    "truncated": "network_error",
    "oversized": "network_error",
    "endless": "network_error",
}


def call(endpoint, cmd, args=None):
    """One request that must be answered before the generous deadline."""
    try:
        return request(endpoint, cmd, args, timeout_ms=REPLY_DEADLINE_MS)
    except zmq.error.Again:
        raise AssertionError(f"{cmd} got no reply within {REPLY_DEADLINE_MS} ms") from None


def poll(what, condition, timeout=SETTLE_DEADLINE, interval=0.1):
    """wait_until with a gentler pace (conditions here make HTTP and admin calls) and the last value."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        done, last = condition()
        if done:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}; last: {last}")


# -- what the agent holds, from /proc ----------------------------------------------------------------

TCP_STATES = {"01": "ESTABLISHED", "02": "SYN_SENT", "03": "SYN_RECV", "04": "FIN_WAIT1", "05": "FIN_WAIT2",
              "06": "TIME_WAIT", "07": "CLOSE", "08": "CLOSE_WAIT", "09": "LAST_ACK", "0A": "LISTEN",
              "0B": "CLOSING"}


def descriptors(pid):
    """(open descriptors, their kinds for a failure message, socket inodes)."""
    inodes = set()
    kinds = {}
    count = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue  # closed while listing
        count += 1
        if target.startswith("socket:["):
            inodes.add(target[len("socket:["):-1])
        kind = target.split("[")[0] if "[" in target else os.path.basename(target)
        kinds[kind] = kinds.get(kind, 0) + 1
    return count, kinds, inodes


def tcp_sockets(inodes):
    """(state, remote port) of each TCP socket among `inodes`, IPv4 and IPv6."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as handle:
                lines = handle.readlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[9] in inodes:
                found.append((TCP_STATES.get(fields[3], fields[3]), int(fields[2].rsplit(":", 1)[1], 16)))
    return found


def threads(pid):
    """(named threads, libdispatch workers). The named ones (main, the I/O thread, NIO's event loops,
    libzmq's) must come back exactly; libdispatch's workers (`…-qos…`) come and go with load and are
    reaped after a few idle seconds, so they must come back to at most the baseline's."""
    named = []
    workers = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/comm") as handle:
                name = handle.read().strip()
        except OSError:
            continue  # the thread ended while listing
        if "-qos" in name:
            workers += 1
        else:
            named.append(name)
    return sorted(named), workers


def unix_socket_count(inodes):
    """How many of `inodes` are AF_UNIX sockets (reported; the ipc endpoints and apps' connections)."""
    with open("/proc/net/unix") as handle:
        unix = {line.split()[6] for line in handle.readlines()[1:] if len(line.split()) > 6}
    return len(inodes & unix)


def counts(env):
    """What the agent holds now: descriptors, TCP sockets by state, threads, in-flight work."""
    pid = env.agent.process.pid
    fds, kinds, inodes = descriptors(pid)
    tcp = tcp_sockets(inodes)
    status = ok(call(env.agent.admin, "status"))
    stats = ok(call(env.agent.admin, "stats"))
    named, workers = threads(pid)
    # Sockets that are not TCP: the ipc endpoints, apps' connections, and this test's own admin
    # connections, which libzmq closes a moment after the client left (one may vanish from
    # /proc/net/unix between reading the descriptors and reading that table).
    other_sockets = len(inodes) - len(tcp)
    return {
        "fds": fds,
        "unixSockets": unix_socket_count(inodes),
        "otherFds": fds - other_sockets,
        "fdKinds": kinds,
        "threads": len(named) + workers,
        "namedThreads": len(named),
        "threadNames": named,
        "dispatchWorkers": workers,
        "tcp": len(tcp),
        "established": sum(1 for state, _ in tcp if state == "ESTABLISHED"),
        "closeWait": sum(1 for state, _ in tcp if state == "CLOSE_WAIT"),
        "upstreamPorts": sorted({port for _, port in tcp}),
        "inFlight": status["ipc"]["inFlight"],
        "notificationsInFlight": stats["notifications"]["inFlight"],
    }


def settled(env, baseline=None):
    """Idle keep-alive connections closed by the simulator, then: no TCP socket left in the agent, no
    work in flight, no connection the simulator still serves; and with a baseline, the same descriptor
    and thread counts."""

    previous = []

    def check():
        env.sim.call("POST", "/_sim/connections/close-idle")
        now = counts(env)
        held = env.sim.call("GET", "/_sim/connections")
        now["simOpen"] = held["open"]
        quiet = now["tcp"] == 0 and now["inFlight"] == 0 and now["notificationsInFlight"] == 0 and held["open"] == 0
        if baseline is None:
            # The baseline: the same descriptor and thread counts twice in a row, so that no write
            # of a state file or other passing work is caught in it.
            same = ("fds", "otherFds", "namedThreads", "dispatchWorkers")
            steady = bool(previous) and all(previous[-1][key] == now[key] for key in same)
            previous.append(now)
            quiet = quiet and steady
        else:
            quiet = (quiet and now["otherFds"] == baseline["otherFds"] and now["fds"] <= baseline["fds"]
                     and now["namedThreads"] == baseline["namedThreads"]
                     and now["dispatchWorkers"] <= baseline["dispatchWorkers"])
        return quiet, now

    return poll("the agent to settle" + (f" back to its baseline {baseline}" if baseline else ""), check)


# -- the environment of one test -------------------------------------------------------------------


def self_signed_certificate(folder):
    """A certificate for 127.0.0.1 that nothing trusts, made now in the test's folder (never committed)."""
    cert, key = os.path.join(folder, "sim-cert.pem"), os.path.join(folder, "sim-key.pem")
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "1",
         "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True,
    )
    return cert, key


class FaultEnv:
    def __init__(self, service, fault):
        self.service = service
        self.fault = fault
        self.folder = tempfile.mkdtemp(prefix=f"pf-uf-{service}-{fault}-", dir="/tmp")
        self.sim = None
        self.agent = None
        self.closed_port = None
        self.loads = 0

    def start(self):
        tls = self_signed_certificate(self.folder) if self.fault == "tls" else None
        self.sim = Simulator(self.folder, tls=tls)
        self.sim.call("POST", "/_sim/pass/login", {"serviceProvider": REQUESTOR, "mvpd": MVPD, "ttlSeconds": 3600})
        self.agent = start_agent(
            self.folder,
            target={"serverURL": self.sim.url, "timeout": UPSTREAM_TIMEOUT},
            pass_={
                "serverURL": self.sim.url,
                "softwareStatement": TEST_SOFTWARE_STATEMENT,
                "requestors": [REQUESTOR],
                "deviceIdentifier": "test-box-0001",
                "timeout": UPSTREAM_TIMEOUT,
                "answerDeadline": ANSWER_DEADLINE,
                "pacingInterval": 0.05,
                "pacingBurst": 100,
            },
        )

    def wait_for_pass_startup(self):
        """Registration, token and configuration done (and their state files written) in the background."""

        def ready():
            listed = ok(call(self.agent.admin, "auth.list"))
            done = (
                listed["registration"]["state"] == "registered"
                and listed["accessToken"]["state"] == "valid"
                and listed["requestors"][REQUESTOR]["configuration"]["state"] == "configured"
            )
            return done, listed

        poll("Adobe Pass start-up", ready)

    def stop(self):
        if self.agent is not None:
            stop_agent(self.agent)
        violations = self.sim.call("GET", "/_sim/violations") if self.sim is not None else {"count": 0}
        if self.sim is not None:
            self.sim.stop()
        if self.closed_port is not None:
            self.closed_port.close()
        log = read_log(self.folder)
        shutil.rmtree(self.folder, ignore_errors=True)
        return violations, log

    # -- calls -----------------------------------------------------------------------------------

    def target_load(self, default):
        """A miss (never prefetched, distinct parameters per call): one Delivery call of its own."""
        self.loads += 1
        args = {"requests": [{"name": "hero", "defaultContent": default, "mboxParameters": {"call": str(self.loads)}}]}
        return ok(call(self.agent.app, "loadRequests", args))["contents"][0]

    def preauthorize(self, resource):
        args = {"requestor": REQUESTOR, "resources": [resource], "disabledFeatures": ["LOCAL_CACHE"]}
        return ok(call(self.agent.app, "preauthorize", args))

    def healthy_call(self):
        """One call that works end to end (Pass: once the requestor is configured again)."""
        if self.service == "target":
            # A fault that left calls unanswered may have marked Target down: the agent probes it and
            # resumes within seconds, so poll rather than expect the very next call to go out.
            def loaded():
                content = self.target_load("unused")
                return content["source"] == "network", content

            poll("a load from the network", loaded)
            return

        def answered():
            result = self.preauthorize("healthy")
            return result.get("outcome") == "response" and result.get("resources") == [
                {"id": "healthy", "authorized": True, "source": "mvpd"}
            ], result

        poll("a successful preauthorize", answered)

    # -- faults ----------------------------------------------------------------------------------

    def broken_url(self):
        if self.fault == "refused":
            # Bound and never listening: a connection to it is refused (RST), and no one else gets the port.
            self.closed_port = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            self.closed_port.bind(("127.0.0.1", 0))
            return f"http://127.0.0.1:{self.closed_port.getsockname()[1]}"
        if self.fault == "unresolvable":
            return f"http://{UNRESOLVABLE_HOST}:{self.sim.port}"
        assert self.fault == "tls"
        return self.sim.tls_url

    def point_service_at(self, url):
        section = "pass" if self.service == "pass" else "target"
        with open(self.agent.config_path) as handle:
            config = json.load(handle)
        config[section]["serverURL"] = url
        with open(self.agent.config_path, "w") as handle:
            json.dump(config, handle)
        os.kill(self.agent.process.pid, signal.SIGHUP)
        poll(
            f"{section}.serverURL to become {url}",
            lambda: (ok(call(self.agent.admin, "config.show"))[section]["serverURL"] == url, None),
        )

    def inject(self):
        if self.fault in CONNECTION_FAULTS:
            self.point_service_at(self.broken_url())
        else:
            path = DELIVERY if self.service == "target" else PREAUTHORIZE
            self.sim.call("POST", "/_sim/faults", {"path": path, "match": "exact", **SIM_FAULTS[self.fault]})

    def upstream_calls(self):
        """Calls the simulator received on the operation under test."""
        return len(self.sim.requests("delivery" if self.service == "target" else "preauthorize"))

    def check_the_fault_was_met(self, calls_before):
        """The fallback came from the fault, not from something else going wrong."""
        if self.fault in CONNECTION_FAULTS:
            # Nothing reached the simulator's plain port meanwhile (a learned Target edge host, say).
            assert self.upstream_calls() == calls_before, f"{self.fault}: calls still reached the simulator"
            if self.fault == "tls":
                assert self.sim.call("GET", "/_sim/connections")["tlsHandshakeFailures"] >= 1
        else:
            faults = self.sim.call("GET", "/_sim/faults")["faults"]
            assert faults and faults[0]["hits"] >= 1, faults

    def remove(self):
        if self.fault in CONNECTION_FAULTS:
            self.point_service_at(self.sim.url)
        else:
            self.sim.call("DELETE", "/_sim/faults")


@pytest.fixture
def fault_env(request):
    service, fault = request.param
    env = FaultEnv(service, fault)
    yield env
    violations, log = env.stop()
    assert violations["count"] == 0, violations
    assert TEST_SOFTWARE_STATEMENT not in log


def concurrently(count, work):
    """`work(index)` from `count` apps at once; every reply, in index order."""
    replies = [None] * count
    errors = []

    def app(index):
        try:
            replies[index] = work(index)
        except BaseException as error:  # noqa: BLE001 - reported below, with the others
            errors.append(error)

    apps = [threading.Thread(target=app, args=(index,)) for index in range(count)]
    for thread in apps:
        thread.start()
    for thread in apps:
        thread.join()
    if errors:
        raise errors[0]
    return replies


def check_target_fallback(env):
    before = ok(call(env.agent.admin, "stats"))["offers"]["defaultsByReason"]
    contents = concurrently(APPS, lambda index: env.target_load(f"default-{index}"))
    for index, content in enumerate(contents):
        assert content == {"name": "hero", "content": f"default-{index}", "source": "default"}, (env.fault, content)
    after = ok(call(env.agent.admin, "stats"))["offers"]["defaultsByReason"]
    reason = TARGET_REASON[env.fault]
    grown = {key: after.get(key, 0) - before.get(key, 0) for key in after if after.get(key, 0) != before.get(key, 0)}
    if reason in ("network", "timeout"):
        # Calls that get no answer count toward Target's circuit: after three in a row it is down, and a
        # call that only starts then is refused at once, `upstreamDown` (PROTOCOL.md), with no call made.
        # The apps start together, but on a loaded machine one can start after three have failed (an
        # unresolvable host fails in milliseconds): both are the documented fallback.
        assert set(grown) <= {reason, "upstreamDown"} and sum(grown.values()) == APPS, (env.fault, grown)
        assert grown.get(reason, 0) >= min(APPS, CIRCUIT_THRESHOLD), (env.fault, grown)
    else:
        assert grown == {reason: APPS}, (env.fault, grown)
    health = ok(call(env.agent.admin, "status"))["upstreams"]["target"]
    assert health["lastErrorCode"] == reason, health
    return reason


def check_pass_fallback(env):
    results = concurrently(APPS, lambda index: env.preauthorize(f"resource-{index}"))
    code = PASS_CODE[env.fault]
    for result in results:
        assert result["resources"] == [], (env.fault, result)
        status = result["status"]
        assert status["code"] == code, (env.fault, result)
        assert status["message"], result
        if env.fault == "5xx":
            # Adobe's own error body on a 503: passed through, the app sees Adobe's status and action.
            assert result["outcome"] == "response" and status["status"] == 503, result
        else:
            assert result["outcome"] == "failure" and status["status"] == 0, result
            assert status["action"] == ("retry" if code == "requestor_not_configured" else "none"), result
    if code == "requestor_not_configured":
        # The message says why: the last attempt's error, not a guess.
        assert any(word in results[0]["status"]["message"] for word in ("network", "connection", "failed")), results[0]
    return code


@pytest.mark.parametrize(
    "fault_env",
    [(service, fault) for service in ("target", "pass") for fault in FAULTS],
    ids=[f"{service}-{fault}" for service in ("target", "pass") for fault in FAULTS],
    indirect=True,
)
def test_fault_ends_in_the_fallback_and_leaks_nothing(fault_env):
    env = fault_env
    env.start()
    env.wait_for_pass_startup()
    # Warm up twice: the second call runs on what the first one created.
    env.healthy_call()
    env.healthy_call()
    baseline = settled(env)

    env.inject()
    calls_before = env.upstream_calls()
    started = time.monotonic()
    outcome = check_target_fallback(env) if env.service == "target" else check_pass_fallback(env)
    answered_in = time.monotonic() - started
    env.check_the_fault_was_met(calls_before)
    env.remove()
    env.healthy_call()

    after = settled(env, baseline)
    assert after["otherFds"] == baseline["otherFds"] and after["fds"] <= baseline["fds"], (baseline, after)
    assert after["namedThreads"] == baseline["namedThreads"], (baseline, after)
    assert after["dispatchWorkers"] <= baseline["dispatchWorkers"], (baseline, after)
    assert after["established"] == after["closeWait"] == 0 and after["inFlight"] == 0, after
    assert env.agent.process.poll() is None, "the agent died"
    print(
        f"UPSTREAM-FAULT {env.service} {env.fault}: {outcome}; {APPS} apps answered in {answered_in:.1f}s; "
        f"fds {baseline['fds']}->{after['fds']} (descriptors other than ipc sockets: "
        f"{baseline['otherFds']}->{after['otherFds']}), threads {baseline['threads']}->{after['threads']}, "
        f"TCP {after['tcp']} (ESTABLISHED {after['established']}, CLOSE_WAIT {after['closeWait']}), "
        f"in flight {after['inFlight']}, simulator connections open {after['simOpen']}"
    )

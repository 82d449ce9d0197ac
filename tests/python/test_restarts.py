"""Restarts (issue #7): SIGKILL under load, corrupt state files, and a power cut while the state folder is
being written. A real preflightd on preflight-sim, each test with its own folder, sockets and port.

What an app must do across a restart: keep its DEALER (libzmq reconnects by itself), give every request a
timeout, and on a timeout send the request again with a new id; match replies by id and ignore one whose
request it already gave up on. A request the dead agent had read is lost with it; one sent while the
agent was down waits in the DEALER's queue and is answered after the start (tested below).
"""

import json
import os
import shutil
import signal
import tempfile
import threading
import time

import pytest
import zmq

from agent_harness import TEST_SOFTWARE_STATEMENT, Simulator, ok, read_log, request, start_agent, stop_agent, wait_until

REQUESTOR = "acme-requestor"
MVPD = "Cablevision"
DELIVERY = "/rest/v1/delivery"


class Setup:
    def __init__(self):
        self.folder = tempfile.mkdtemp(prefix="pf-rs-", dir="/tmp")
        self.sim = Simulator(self.folder)
        self.agent = None
        self.kill_windows = []  # (first, last) simulator sequence numbers a SIGKILL may have torn a request in

    @property
    def state(self):
        return os.path.join(self.folder, "state")

    def last_seq(self):
        return self.sim.call("GET", "/_sim/requests?since=999999999999")["lastSeq"]

    def kill(self):
        """SIGKILL; a request the agent was writing at that moment reaches the simulator torn."""
        first = self.last_seq() + 1
        stop_agent(self.agent, signal.SIGKILL)
        self.kill_windows.append([first, None])

    def start(self, **target_extra):
        self.agent = start_agent(
            self.folder,
            target={"serverURL": self.sim.url, "notificationBatchAge": 0.2, "timeout": 2, **target_extra},
            pass_={
                "serverURL": self.sim.url,
                "softwareStatement": TEST_SOFTWARE_STATEMENT,
                "requestors": [REQUESTOR],
                "deviceIdentifier": "restart-box-0001",
            },
        )
        if self.kill_windows and self.kill_windows[-1][1] is None:
            # The dead agent's torn request is logged once the simulator sees the connection close: by now.
            self.kill_windows[-1][1] = self.last_seq()
        return self.agent

    def torn_by_a_kill(self, violation):
        """A Delivery request cut off by a SIGKILL: headers with a Content-Length, the body missing or cut."""
        if violation["kind"] != "request" or not any(a <= violation["seq"] <= b for a, b in self.kill_windows):
            return False
        if not set(violation["messages"]) <= {"body: a DeliveryRequest is required", "body: not valid JSON"}:
            return False
        entry = self.sim.call("GET", f"/_sim/requests?since={violation['seq'] - 1}")["requests"][0]
        return entry["seq"] == violation["seq"] and int(entry["headers"].get("content-length") or 0) > 0

    def admin(self, cmd, args=None):
        return ok(request(self.agent.admin, cmd, args, timeout_ms=30000))

    def preauthorize(self, resources, disabled=None):
        args = {"requestor": REQUESTOR, "resources": resources}
        if disabled:
            args["disabledFeatures"] = disabled
        return ok(request(self.agent.app, "preauthorize", args, timeout_ms=30000))

    def wait_pass_ready(self):
        """The requestor configured and a permit answered (the registration made or reused)."""

        def permitted():
            result = self.preauthorize(["probe"], disabled=["LOCAL_CACHE"])
            resources = result.get("resources") or []
            return bool(resources) and resources[0].get("authorized") is True

        wait_until("a permitted preauthorize", permitted, timeout=60)

    def notifications(self):
        return self.sim.call("GET", "/_sim/target/notifications")["notifications"]

    def registrations(self):
        return len(self.sim.requests("register"))

    def close(self):
        if self.agent:
            stop_agent(self.agent)
        violations = [v for v in self.sim.call("GET", "/_sim/violations")["violations"] if not self.torn_by_a_kill(v)]
        self.sim.stop()
        log = read_log(self.folder)
        shutil.rmtree(self.folder, ignore_errors=True)
        assert violations == []
        assert TEST_SOFTWARE_STATEMENT not in log


@pytest.fixture
def setup():
    handle = Setup()
    yield handle
    handle.close()


class App(threading.Thread):
    """One app on one DEALER, kept open across the agent's restart: cached loads (each tagged with a unique
    mbox parameter, so its display notification can be found at Target), an uncached load and a
    preauthorize, one at a time; on a timeout it moves on with a new id."""

    TIMEOUT_S = 3.0

    def __init__(self, index, endpoint, stop):
        super().__init__(daemon=True)
        self.index = index
        self.endpoint = endpoint
        self.stop = stop
        self.lock = threading.Lock()
        self.sent = 0
        self.timeouts = 0
        self.late = 0
        self.replies = []  # (monotonic time, kind, reply)
        self.cached_tags = []  # tags whose load was answered from the cache
        self.sent_tags = []
        self.error = None

    def run(self):
        socket = zmq.Context.instance().socket(zmq.DEALER)
        socket.setsockopt(zmq.LINGER, 0)
        socket.connect(self.endpoint)
        try:
            number = 0
            while not self.stop.is_set():
                kind = ("cached", "uncached", "cached", "preauthorize")[number % 4]
                request_id = f"app{self.index}-{number}"
                tag = None
                if kind == "cached":
                    tag = f"t{self.index}-{number}"
                    name = "logo" if number % 8 == 0 else "buttonColor"
                    body = {"cmd": "loadRequests", "args": {"requests": [
                        {"name": name, "defaultContent": "d", "mboxParameters": {"tag": tag}}]}}
                elif kind == "uncached":
                    body = {"cmd": "loadRequests", "args": {"requests": [{"name": "hero", "defaultContent": "d"}]}}
                else:
                    body = {"cmd": "preauthorize", "args": {"requestor": REQUESTOR, "resources": [f"channel{self.index}"]}}
                number += 1
                socket.send_multipart([b"", json.dumps({"v": 1, "id": request_id, **body}).encode()])
                with self.lock:
                    self.sent += 1
                    if tag:
                        self.sent_tags.append(tag)
                deadline = time.monotonic() + self.TIMEOUT_S
                while True:
                    left = deadline - time.monotonic()
                    if left <= 0 or not socket.poll(int(left * 1000) + 1):
                        with self.lock:
                            self.timeouts += 1
                        break
                    reply = json.loads(socket.recv_multipart()[-1])
                    if reply.get("id") != request_id:
                        with self.lock:
                            self.late += 1
                        continue
                    with self.lock:
                        self.replies.append((time.monotonic(), kind, reply))
                        if tag and reply.get("ok") and reply["result"]["contents"][0]["source"] == "cache":
                            self.cached_tags.append(tag)
                    break
        except Exception as error:  # reported by the test
            self.error = error
        finally:
            socket.close()

    def snapshot(self):
        with self.lock:
            return {"sent": self.sent, "replies": len(self.replies), "timeouts": self.timeouts, "late": self.late,
                    "cachedTags": list(self.cached_tags), "sentTags": list(self.sent_tags)}

    def replies_after(self, moment, kind=None):
        with self.lock:
            return [r for t, k, r in self.replies if t >= moment and (kind is None or k == kind)]


def test_sigkill_under_load_loses_no_notification_reuses_the_registration_and_apps_reconnect(setup):
    sim = setup.sim
    setup.start()
    sim.call("POST", "/_sim/pass/login", {"serviceProvider": REQUESTOR, "mvpd": MVPD, "ttlSeconds": 3600})
    setup.wait_pass_ready()
    assert setup.registrations() == 1
    assert ok(request(setup.agent.app, "prefetch", {"mboxes": [{"name": "logo"}, {"name": "buttonColor"}]}))["success"]

    stop = threading.Event()
    apps = [App(index, setup.agent.app, stop) for index in range(4)]
    for app in apps:
        app.start()
    try:
        # Target up: notifications flow while the apps load.
        wait_until("notifications delivered under load", lambda: len(setup.notifications()) >= 10, timeout=60)
        # Target down: notifications accumulate in the queue and its journal; loads go on.
        seq = sim.call("GET", "/_sim/requests?since=999999999999")["lastSeq"]
        sim.call("POST", "/_sim/faults", {"path": DELIVERY, "status": 503})

        def accumulating_and_settled():
            # Several calls refused since the fault, so none that Target carried out is still being answered;
            # and every notification Target recorded is confirmed in the agent (its ack journaled). A kill
            # now can neither lose a notification nor make the agent resend one Target already has.
            refused = [r for r in sim.call("GET", f"/_sim/requests?since={seq}&service=target")["requests"]
                       if r["path"] == DELIVERY and r.get("fault")]
            status = setup.admin("notifications.status")
            return len(refused) >= 3 and status["queued"] >= 30 and status["sent"] == len(setup.notifications())

        wait_until("notifications to accumulate while Target is down", accumulating_and_settled, timeout=60)
        cached_before = sum(len(a.snapshot()["cachedTags"]) for a in apps)
        wait_until("more loads (the kill lands mid-load)",
                   lambda: sum(len(a.snapshot()["cachedTags"]) for a in apps) >= cached_before + 8, timeout=60)

        setup.kill()
        at_kill = [a.snapshot() for a in apps]
        # Each of these loads was answered from the cache, so its notification was journaled first.
        acknowledged = {tag for snap in at_kill for tag in snap["cachedTags"]}
        assert len(acknowledged) >= 30
        delivered_before_kill = len(setup.notifications())
        assert os.path.exists(os.path.join(setup.folder, "run", "app.sock"))  # SIGKILL leaves the socket file

        sim.call("DELETE", "/_sim/faults")
        setup.start()  # same folder: same sockets, same state directory
        restarted = time.monotonic()

        # The cache starts empty, as the SDK's does on a new launch: nothing listed, a load is a miss.
        assert setup.admin("offers.list")["offers"] == []
        miss = ok(request(setup.agent.app, "loadRequests", {"requests": [{"name": "logo", "defaultContent": "d"}]}))
        assert miss["contents"][0]["source"] == "network"

        # The apps' DEALERs, open all along, are answered by the new agent.
        wait_until("every app answered after the restart",
                   lambda: all(len(a.replies_after(restarted)) >= 4 for a in apps), timeout=60)
        wait_until("every app preauthorized after the restart",
                   lambda: all(any(r.get("ok") for r in a.replies_after(restarted, "preauthorize")) for a in apps),
                   timeout=60)
        for app in apps:
            for reply in app.replies_after(restarted, "cached"):  # after the restart, never from the cache
                assert not reply.get("ok") or reply["result"]["contents"][0]["source"] != "cache", reply

        # Spooled notifications are delivered.
        def all_acknowledged_delivered():
            tags = {(n.get("parameters") or {}).get("tag") for n in setup.notifications()}
            return acknowledged <= tags

        wait_until("every acknowledged notification at Target", all_acknowledged_delivered, timeout=60)
    finally:
        stop.set()
        for app in apps:
            app.join(timeout=30)
    for app in apps:
        assert app.error is None, app.error

    wait_until("the queue to drain",
               lambda: (lambda s: s["queued"] == 0 and s["inFlight"] == 0)(setup.admin("notifications.status")),
               timeout=60)
    status = setup.admin("notifications.status")
    assert status["replayedFromJournal"] > 0
    notes = setup.notifications()
    ids = [n["id"] for n in notes]
    tags = [(n.get("parameters") or {}).get("tag") for n in notes]
    sent_tags = {tag for app in apps for tag in app.snapshot()["sentTags"]}
    assert len(ids) == len(set(ids)), "a notification reached Target twice"
    assert len(tags) == len(set(tags)), "a load was notified twice"
    assert acknowledged <= set(tags), "a notification acknowledged as queued was lost"
    assert set(tags) <= sent_tags
    assert all(n["tokensIssued"] and n["type"] == "display" for n in notes)

    # The registration is reused: one DCR registration in all.
    assert setup.registrations() == 1
    assert len(sim.call("GET", "/_sim/pass/state")["registrations"]) == 1

    totals = [a.snapshot() for a in apps]
    print(
        f"\nSIGKILL under load: {len(acknowledged)} notifications acknowledged as queued before the kill "
        f"({delivered_before_kill} delivered before it, {status['replayedFromJournal']} replayed from the journal), "
        f"{len(ids)} at Target in all, lost {len(acknowledged - set(tags))}, duplicates {len(ids) - len(set(ids))}; "
        f"registrations {setup.registrations()}; apps sent {sum(t['sent'] for t in totals)} requests, "
        f"{sum(t['timeouts'] for t in totals)} timed out around the kill and were retried, "
        f"{sum(t['late'] for t in totals)} late replies ignored"
    )


def test_requests_sent_while_the_agent_is_down_are_answered_after_it_starts(setup):
    """What the transport does for an app across a restart: libzmq keeps the DEALER's queue and reconnects."""
    setup.start()
    dealer = zmq.Context.instance().socket(zmq.DEALER)
    dealer.setsockopt(zmq.LINGER, 0)
    dealer.connect(setup.agent.app)
    try:
        dealer.send_multipart([b"", b'{"v":1,"id":"before","cmd":"ping"}'])
        assert dealer.poll(10000) and json.loads(dealer.recv_multipart()[-1])["id"] == "before"
        setup.kill()
        for index in range(3):
            dealer.send_multipart([b"", json.dumps({"v": 1, "id": f"down{index}", "cmd": "ping"}).encode()])
        setup.start()
        answered = []
        wait_until("the queued requests to be answered",
                   lambda: (dealer.poll(100) and answered.append(json.loads(dealer.recv_multipart()[-1])["id"]))
                   or len(answered) == 3, timeout=30)
        assert sorted(answered) == ["down0", "down1", "down2"]
    finally:
        dealer.close()


def _journal_entries(path):
    """(adds in order, acked ids) of the complete lines of a notification journal, as the agent reads it."""
    adds, acks = [], set()
    with open(path, "rb") as handle:
        for line in handle.read().split(b"\n"):
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if "add" in entry:
                adds.append(entry["add"]["id"])
            elif "a" in entry:  # a display's short line, referring to its offer's "def" line
                adds.append(entry["i"]["id"])
            for acked in entry.get("ack", []):
                acks.add(acked)
    return adds, acks


def _spool_notifications_while_target_is_down(setup, loads):
    """Registration and visitor file written, `loads` notifications journaled and not delivered, then a SIGKILL."""
    sim = setup.sim
    setup.start()
    sim.call("POST", "/_sim/pass/login", {"serviceProvider": REQUESTOR, "mvpd": MVPD, "ttlSeconds": 3600})
    setup.wait_pass_ready()
    assert ok(request(setup.agent.app, "prefetch", {"mboxes": [{"name": "logo"}]}))["success"]
    tnt_id = setup.admin("status")["target"]["visitor"]["tntId"]
    assert tnt_id
    sim.call("POST", "/_sim/faults", {"path": DELIVERY, "status": 503})
    for index in range(loads):
        load = {"requests": [{"name": "logo", "defaultContent": "d", "mboxParameters": {"tag": f"spool{index}"}}]}
        assert ok(request(setup.agent.app, "loadRequests", load))["contents"][0]["source"] == "cache"
    setup.kill()
    sim.call("DELETE", "/_sim/faults")
    assert len(setup.notifications()) == 0
    for name in ("target-visitor.json", "pass-registration.json", "target-notifications.journal"):
        assert os.path.exists(os.path.join(setup.state, name)), name
    return tnt_id


def _write(path, data, mode=0o600):
    with open(path, "wb") as handle:
        handle.write(data)
    os.chmod(path, mode)


def test_corrupt_state_files_are_moved_aside_with_a_log_line_and_the_agent_starts(setup):
    _spool_notifications_while_target_is_down(setup, loads=4)
    journal = os.path.join(setup.state, "target-notifications.journal")
    adds, acks = _journal_entries(journal)
    expected = [i for i in adds if i not in acks]
    assert len(expected) == 4
    # The visitor file as zeros (what a file system without data ordering can leave), the registration
    # half-written, and a torn last journal line.
    _write(os.path.join(setup.state, "target-visitor.json"), b"\0" * 96)
    _write(os.path.join(setup.state, "pass-registration.json"), b'{"client_id": "abc", "client_sec')
    with open(journal, "ab") as handle:
        handle.write(b'{"add":{"id":"torn-by-the-crash","type":"disp')

    log_before = len(read_log(setup.folder))
    setup.start()
    setup.wait_pass_ready()
    log = read_log(setup.folder)[log_before:]
    names = os.listdir(setup.state)
    assert any(n.startswith("target-visitor.json.corrupt-") for n in names), names
    assert any(n.startswith("pass-registration.json.corrupt-") for n in names), names
    assert "target-visitor.json" in log and "moved aside" in log, log
    assert "pass-registration.json" in log and "corrupt" in log, log
    # The unreadable registration is replaced by a new one (mode 0600); the spool is delivered, torn line aside.
    assert setup.registrations() == 2
    assert os.stat(os.path.join(setup.state, "pass-registration.json")).st_mode & 0o777 == 0o600
    wait_until("the spooled notifications at Target", lambda: len(setup.notifications()) >= len(expected), timeout=60)
    ids = [n["id"] for n in setup.notifications()]
    assert sorted(ids) == sorted(expected)

    # Never a crash loop: the next start finds readable files and moves nothing else aside.
    stop_agent(setup.agent)
    corrupt_before = sorted(n for n in os.listdir(setup.state) if ".corrupt-" in n)
    setup.start()
    setup.wait_pass_ready()
    assert sorted(n for n in os.listdir(setup.state) if ".corrupt-" in n) == corrupt_before
    assert setup.registrations() == 2


def test_a_power_cut_mid_write_leaves_a_readable_state_folder(setup):
    """The agent replaces state files by temp file, fsync, rename, folder fsync, and appends to the journal
    (fsync each second). A power cut can then leave only: the old file plus a partial temporary file next to
    it, and a journal whose tail is torn (possibly padded with zeros). Each of those is made here by hand."""
    tnt_id = _spool_notifications_while_target_is_down(setup, loads=5)
    state = setup.state
    journal = os.path.join(state, "target-notifications.journal")
    # Partial temporary files from a write that never reached its rename (another process id).
    visitor = open(os.path.join(state, "target-visitor.json"), "rb").read()
    registration = open(os.path.join(state, "pass-registration.json"), "rb").read()
    dead = _dead_pids(3)
    temporaries = [f"target-visitor.json.tmp-{dead[0]}", f"pass-registration.json.tmp-{dead[1]}",
                   f"target-notifications.journal.tmp-{dead[2]}"]
    _write(os.path.join(state, temporaries[0]), visitor[: len(visitor) // 2])
    _write(os.path.join(state, temporaries[1]), registration[: len(registration) // 3])
    _write(os.path.join(state, temporaries[2]), b'{"add":{"id":"never-renamed"')
    # A temporary file of a process that is alive (this test) may be in the middle of its write: left alone.
    _write(os.path.join(state, f"target-visitor.json.tmp-{os.getpid()}"), b"{")
    # The journal's last line cut in half and the rest of its block zeros.
    data = open(journal, "rb").read()
    lines = data.rstrip(b"\n").split(b"\n")
    assert len(lines) >= 5
    torn = b"\n".join(lines[:-1]) + b"\n" + lines[-1][: len(lines[-1]) // 2] + b"\0" * 512
    _write(journal, torn)
    adds, acks = _journal_entries(journal)
    expected = [i for i in adds if i not in acks]
    displays = [line for line in lines if not line.startswith(b'{"def":')]  # the offer is defined once
    assert len(expected) == len(displays) - 1  # the torn entry is the one a power cut may lose

    setup.start()
    setup.wait_pass_ready()
    # The complete files were used as they were: the same visitor, the registration reused.
    assert setup.admin("status")["target"]["visitor"]["tntId"] == tnt_id
    assert setup.registrations() == 1
    assert not [n for n in os.listdir(state) if ".corrupt-" in n]
    # The dead writers' temporary files are gone, each with a line in the log; the live one's is not.
    assert not [n for n in temporaries if os.path.exists(os.path.join(state, n))]
    assert os.path.exists(os.path.join(state, f"target-visitor.json.tmp-{os.getpid()}"))
    log = read_log(setup.folder)
    assert all(f"removed a temporary file an earlier run left mid-write file={state}/{n}" in log for n in temporaries), log
    wait_until("the intact spool at Target", lambda: len(setup.notifications()) >= len(expected), timeout=60)
    wait_until("the queue to drain", lambda: setup.admin("notifications.status")["queued"] == 0, timeout=60)
    assert sorted(n["id"] for n in setup.notifications()) == sorted(expected)
    # What the agent keeps is readable again: the journal was rewritten without the torn tail.
    for name in ("target-visitor.json", "pass-registration.json"):
        json.load(open(os.path.join(state, name)))
    for line in open(journal, "rb").read().split(b"\n"):
        if line:
            json.loads(line)


def _dead_pids(count):
    """Process ids with no process behind them now (ids of writers that died mid-write)."""
    found = []
    for pid in range(4_000_000, 3_000_000, -7919):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            found.append(pid)
        except PermissionError:
            pass
        if len(found) == count:
            return found
    raise AssertionError("no free process ids found")


def flood_cached_loads(setup, loads, window=200, each=None):
    """`loads` loads of the prefetched "logo", pipelined on one DEALER with `window` in flight, each answered from
    the cache; `each(answered)` after each reply."""
    dealer = zmq.Context.instance().socket(zmq.DEALER)
    dealer.setsockopt(zmq.LINGER, 0)
    dealer.connect(setup.agent.app)
    body = {"v": 1, "cmd": "loadRequests", "args": {"requests": [{"name": "logo", "defaultContent": "d"}]}}
    sent, cached = 0, 0
    try:
        while cached < loads:
            while sent < loads and sent - cached < window:
                dealer.send_multipart([b"", json.dumps({**body, "id": str(sent)}).encode()])
                sent += 1
            assert dealer.poll(30000), "no reply within 30 s"
            reply = json.loads(dealer.recv_multipart()[-1])
            assert ok(reply)["contents"][0]["source"] == "cache"
            cached += 1
            if each:
                each(cached)
    finally:
        dealer.close()


def test_the_notification_journal_stays_bounded_while_target_is_down(setup):
    capacity = 100  # the smallest the configuration allows
    setup.start(notificationQueueCapacity=capacity)
    assert ok(request(setup.agent.app, "prefetch", {"mboxes": [{"name": "logo"}]}))["success"]
    setup.sim.call("POST", "/_sim/faults", {"path": DELIVERY, "status": 503})
    loads = 3000
    flood_cached_loads(setup, loads)
    status = setup.admin("notifications.status")
    # `queued` counts what is in flight too (PROTOCOL.md): adding `inFlight` again failed whenever the
    # status arrived while a (refused) batch was out, which a loaded machine makes likely.
    assert status["queued"] <= capacity and status["inFlight"] <= status["queued"]
    assert status["droppedOverflow"] >= loads - capacity - 50
    # The queue holds at most 100 notifications; 3,000 loads' history is not needed to restore them.
    # The sender's loop compacts the journal to what is queued once it holds over 1,000 lines.
    def compacted():
        with open(os.path.join(setup.state, "target-notifications.journal"), "rb") as handle:
            return handle.read().count(b"\n") <= 1000 + 2 * capacity
    wait_until("the journal to be compacted", compacted, timeout=60)


def test_the_journal_is_compacted_while_loads_outpace_target(setup):
    """Loads arriving faster than Target confirms keep a batch due for as long as they last: the sender
    compacts the journal (and fsyncs it) between its batches, not only once it has caught up. It did not:
    a flood with Target answering grew the journal without bound (114 MB in 2 s in tools/bench)."""
    capacity = 100
    setup.start(notificationQueueCapacity=capacity, notificationBatchSize=1)
    assert ok(request(setup.agent.app, "prefetch", {"mboxes": [{"name": "logo"}]}))["success"]
    # Each Delivery request takes 20 ms: the sender confirms at most 50 displays a second, far fewer than
    # the loads below make, so a batch is due from the first load to the last.
    setup.sim.call("POST", "/_sim/faults", {"path": DELIVERY, "latencyMs": 20})
    journal = os.path.join(setup.state, "target-notifications.journal")

    def journal_lines():
        with open(journal, "rb") as handle:
            return handle.read().count(b"\n")

    loads = 40000
    lines = []  # the journal's length every 500 loads of the flood's second half

    def look(cached):
        if cached > loads // 2 and cached % 500 == 0:
            lines.append(journal_lines())

    flood_cached_loads(setup, loads, each=look)
    # The flood outran the sender from start to end: most of it was dropped at capacity.
    assert setup.admin("notifications.status")["droppedOverflow"] >= loads // 2
    # Uncompacted, the journal only grows while the flood lasts (an add line a load); compacted once over
    # 1,000 lines (the queue is 100) between batches, it shrinks again and again.
    assert any(later < earlier for earlier, later in zip(lines, lines[1:])), f"never compacted: {lines}"

"""Hostile and broken input over the wire: each answered as PROTOCOL.md says while everyone else is served."""

import json
import os
import shutil
import tempfile
import threading

import pytest
import zmq

from agent_harness import Simulator, request, start_agent, stop_agent, wait_until


def raw(endpoint, body, timeout_ms=10000):
    """One body over a fresh DEALER, exactly as given (bytes), and the decoded reply."""
    socket = zmq.Context.instance().socket(zmq.DEALER)
    socket.setsockopt(zmq.LINGER, 0)
    socket.setsockopt(zmq.RCVTIMEO, timeout_ms)
    socket.connect(endpoint)
    try:
        socket.send_multipart([b"", body])
        frames = socket.recv_multipart()
        assert frames[0] == b""
        return json.loads(frames[-1])
    finally:
        socket.close()


def open_fds(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


HOSTILE = [
    ("nested 20,000 deep", b"[" * 20000 + b"]" * 20000, "malformed_request"),
    ("nested object 20,000 deep", b'{"a":' * 20000 + b"1" + b"}" * 20000, "malformed_request"),
    ("invalid UTF-8", b'{"v":1,"id":"\xff\xfe","cmd":"ping"}', "malformed_request"),
    ("overlong UTF-8", b'{"v":1,"id":"\xc0\xaf","cmd":"ping"}', "malformed_request"),
    ("raw NUL byte", b'{"v":1,"id":"a\x00b","cmd":"ping"}', "malformed_request"),
    ("duplicate keys", b'{"v":1,"id":"d","cmd":"ping","cmd":"status"}', "malformed_request"),
    ("id a number", b'{"v":1,"id":7,"cmd":"ping"}', "malformed_request"),
    ("v a string", b'{"v":"1","id":"x","cmd":"ping"}', "malformed_request"),
    ("args a string", b'{"v":1,"id":"x","cmd":"prefetch","args":"mboxes"}', "invalid_argument"),
    ("mboxes a string", b'{"v":1,"id":"x","cmd":"prefetch","args":{"mboxes":"logo"}}', "invalid_argument"),
    ("resources numbers", b'{"v":1,"id":"x","cmd":"preauthorize","args":{"requestor":"r","resources":[1,2]}}',
     "invalid_argument"),
    ("10,000 mboxes", json.dumps({"v": 1, "id": "x", "cmd": "prefetch",
                                  "args": {"mboxes": [{"name": f"m{i}"} for i in range(10000)]}}).encode(),
     "invalid_argument"),
    ("a 900 KB name", json.dumps({"v": 1, "id": "x", "cmd": "loadRequests",
                                  "args": {"requests": [{"name": "n" * 900_000, "defaultContent": ""}]}}).encode(),
     "invalid_argument"),
    ("over the size limit", b'{"v":1,"id":"x","cmd":"ping","pad":"' + b"p" * (1 << 20) + b'"}', "payload_too_large"),
    ("a number where an object goes", b"12345", "malformed_request"),
    ("trailing garbage", b'{"v":1,"id":"x","cmd":"ping"} trailing', "malformed_request"),
]


@pytest.mark.parametrize("name,body,code", HOSTILE, ids=[case[0] for case in HOSTILE])
def test_hostile_body_gets_its_code_and_the_agent_keeps_serving(agent, name, body, code):
    reply = raw(agent.app, body)
    assert reply["ok"] is False and reply["error"]["code"] == code, (name, reply)
    assert request(agent.app, "ping")["ok"] is True


def test_a_dealer_that_never_reads_does_not_block_or_bloat_the_agent(agent):
    flooder = zmq.Context.instance().socket(zmq.DEALER)
    flooder.setsockopt(zmq.LINGER, 0)
    flooder.setsockopt(zmq.SNDHWM, 0)
    flooder.setsockopt(zmq.RCVHWM, 1)
    flooder.connect(agent.app)
    body = json.dumps({"v": 1, "id": "f", "cmd": "ping"}).encode()
    try:
        rss_before = rss_kib(agent.process.pid)
        for _ in range(50_000):
            flooder.send_multipart([b"", body])
        # Everyone else is served while the flood sits unread at the high-water mark.
        wait_until(
            "the flood to be read by the agent",
            lambda: request(agent.admin, "status")["result"]["ipc"]["requests"] >= 50_000,
            timeout=60,
        )
        assert request(agent.app, "ping")["ok"] is True
        status = request(agent.admin, "status")["result"]
        assert status["ipc"]["repliesDroppedAtHighWaterMark"] > 0
        assert rss_kib(agent.process.pid) - rss_before < 64 * 1024
    finally:
        flooder.close()


def test_thousands_of_connect_disconnect_cycles_leak_nothing(agent):
    body = json.dumps({"v": 1, "id": "c", "cmd": "ping"}).encode()

    def cycles(count, first_index=0):
        # A short-lived context per batch: terminating it frees the client's descriptors at once, so
        # the test itself stays far below the process's open-file limit (1,024 on CI).
        for start in range(first_index, first_index + count, 100):
            context = zmq.Context()
            for index in range(start, min(start + 100, first_index + count)):
                socket = context.socket(zmq.REQ if index % 2 else zmq.DEALER)
                socket.setsockopt(zmq.LINGER, 0)
                socket.connect(agent.app)
                if index % 4 == 0:  # every fourth disappears without waiting for its reply
                    socket.send(body) if index % 2 else socket.send_multipart([b"", body])
                socket.close()
            context.term()

    cycles(100)  # warm up: let libzmq in the agent reach its steady number of descriptors
    assert request(agent.app, "ping")["ok"] is True
    before = open_fds(agent.process.pid)
    cycles(2000, first_index=100)
    assert request(agent.app, "ping")["ok"] is True
    wait_until("descriptors to settle", lambda: open_fds(agent.process.pid) <= before + 4, timeout=30)


@pytest.fixture
def overload_env():
    folder = tempfile.mkdtemp(prefix="pf-ov-", dir="/tmp")
    sim = Simulator(folder)
    agent = start_agent(
        folder,
        target={"serverURL": sim.url, "timeout": 5},
        agent_extra={"maxInFlight": 6, "maxInFlightPerPeer": 3},
    )
    yield sim, agent
    stop_agent(agent)
    sim.stop()
    shutil.rmtree(folder, ignore_errors=True)


def test_network_work_beyond_the_limits_is_overloaded_while_cache_hits_flow(overload_env):
    sim, agent = overload_env
    assert request(agent.app, "prefetch", {"mboxes": [{"name": "logo"}]})["ok"]
    sim.call("POST", "/_sim/faults", {"path": "/rest/v1/delivery", "hangMs": 3000})
    greedy = zmq.Context.instance().socket(zmq.DEALER)
    greedy.setsockopt(zmq.LINGER, 0)
    greedy.setsockopt(zmq.RCVTIMEO, 15000)
    greedy.connect(agent.app)
    try:
        # One connection asks for 5 distinct misses: 3 are admitted, 2 refused at once.
        for index in range(5):
            load = {"requests": [{"name": f"miss{index}", "defaultContent": "d"}]}
            greedy.send_multipart([b"", json.dumps({"v": 1, "id": f"g{index}", "cmd": "loadRequests", "args": load}).encode()])
        early = [json.loads(greedy.recv_multipart()[-1]) for _ in range(2)]
        assert all(r["error"]["code"] == "overloaded" for r in early), early
        assert all(r["error"]["action"] == "retry-after" and r["error"]["retryAfterMs"] > 0 for r in early)
        # Another app still gets its places, and a cached answer needs none.
        other = []
        thread = threading.Thread(
            target=lambda: other.append(request(agent.app, "loadRequests",
                                                {"requests": [{"name": "other", "defaultContent": "o"}]}, timeout_ms=15000))
        )
        thread.start()
        cached = request(agent.app, "loadRequests", {"requests": [{"name": "logo", "defaultContent": "x"}]})
        assert cached["result"]["contents"][0]["source"] == "cache"
        thread.join()
        assert other[0]["ok"] is True
        late = [json.loads(greedy.recv_multipart()[-1]) for _ in range(3)]
        assert all(r["ok"] for r in late)
        assert request(agent.admin, "status")["result"]["ipc"]["refusedOverloaded"] == 2
    finally:
        greedy.close()
        sim.call("DELETE", "/_sim/faults")

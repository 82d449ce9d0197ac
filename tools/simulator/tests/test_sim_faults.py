"""Scripted faults, observed with plain sockets and http.client so transport failures stay visible."""

from __future__ import annotations

import http.client
import json
import socket
import time

import pytest

from simharness import clean_sim, sim  # noqa: F401 - fixtures
from simharness import access_token, delivery_url, mobile_context, pass_headers, requires_specs

BODY = json.dumps({"context": mobile_context(), "prefetch": {"mboxes": [{"index": 1, "name": "logo"}]}})
HEADERS = {"Content-Type": "application/json"}


def wait_for(condition, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def deliver(sim, timeout: float = 5.0) -> tuple[http.client.HTTPResponse, bytes, http.client.HTTPConnection]:
    conn = http.client.HTTPConnection("127.0.0.1", sim.port, timeout=timeout)
    conn.request("POST", delivery_url(), body=BODY, headers=HEADERS)
    response = conn.getresponse()
    return response, response.read(), conn


def test_latency_delays_the_answer_but_not_its_content(sim):
    sim.fault(path="/rest/v1/delivery", latencyMs=300)
    started = time.monotonic()
    response, body, conn = deliver(sim)
    assert time.monotonic() - started >= 0.3
    assert response.status == 200 and json.loads(body)["prefetch"]["mboxes"][0]["options"]
    conn.close()
    entry = sim.last_request()
    assert entry["fault"] and entry["status"] == 200 and entry["durationMs"] >= 300


def test_status_fault_with_body_headers_and_retry_after(sim):
    fault_id = sim.fault(path="/rest/v1/delivery", status=503, body={"status": 503, "message": "maintenance"},
                         headers={"X-Sim": "yes"}, retryAfter=7)
    response, body, conn = deliver(sim)
    conn.close()
    assert response.status == 503 and json.loads(body) == {"status": 503, "message": "maintenance"}
    assert response.getheader("X-Sim") == "yes" and response.getheader("Retry-After") == "7"
    entry = sim.last_request()
    assert entry["fault"] == fault_id and entry["status"] == 503
    assert sim.get("/_sim/stats").json()["prefetched"] == {}, "a replaced response must not be processed"


def test_status_fault_defaults_to_the_service_error_shape(sim):
    sim.fault(path="/rest/v1/delivery", status=500)
    response, body, conn = deliver(sim)
    conn.close()
    assert response.status == 500 and json.loads(body)["status"] == 500

    token = access_token(sim)
    sim.fault(path="/api/v2/", status=500)
    r = sim.get("/api/v2/REF30/profiles", headers=pass_headers(token))
    assert r.status_code == 500 and r.json()["code"] == "internal_server_error" and r.json()["status"] == 500
    sim.delete("/_sim/faults")
    sim.fault(path="/api/v2/", status=429, retryAfter=2)
    r = sim.get("/api/v2/REF30/profiles", headers=pass_headers(token))
    assert r.status_code == 429 and r.headers["Content-Type"] == "text/html" and r.headers["Retry-After"] == "2"


def test_target_message_fault(sim):
    sim.fault(path="/rest/v1/delivery", message="Invalid token")
    response, body, conn = deliver(sim)
    conn.close()
    assert response.status == 400 and json.loads(body) == {"status": 400, "message": "Invalid token"}
    sim.delete("/_sim/faults")
    sim.fault(path="/rest/v1/delivery", status=200, message="Partial outage")
    response, body, conn = deliver(sim)
    conn.close()
    assert response.status == 200 and json.loads(body) == {"status": 200, "message": "Partial outage"}


def test_malformed_is_200_with_a_body_that_is_not_json(sim):
    sim.fault(path="/rest/v1/delivery", malformed=True)
    response, body, conn = deliver(sim)
    conn.close()
    assert response.status == 200
    with pytest.raises(ValueError):
        json.loads(body)


def test_truncated_promises_more_bytes_than_it_sends(sim):
    sim.fault(path="/rest/v1/delivery", truncated=True)
    conn = http.client.HTTPConnection("127.0.0.1", sim.port, timeout=5)
    conn.request("POST", delivery_url(), body=BODY, headers=HEADERS)
    response = conn.getresponse()
    assert response.status == 200
    with pytest.raises(http.client.IncompleteRead):
        response.read()
    conn.close()


def test_drop_closes_without_any_response(sim):
    sim.fault(path="/rest/v1/delivery", drop=True)
    conn = http.client.HTTPConnection("127.0.0.1", sim.port, timeout=5)
    conn.request("POST", delivery_url(), body=BODY, headers=HEADERS)
    with pytest.raises((http.client.RemoteDisconnected, ConnectionResetError)):
        conn.getresponse()
    conn.close()
    entry = sim.last_request()
    assert entry["status"] is None and entry["fault"]


def test_reset_mid_body_aborts_the_connection(sim):
    sim.fault(path="/rest/v1/delivery", resetMidBody=True)
    sock = socket.create_connection(("127.0.0.1", sim.port), timeout=5)
    request = (f"POST {delivery_url()} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               f"Content-Length: {len(BODY)}\r\n\r\n{BODY}").encode()
    sock.sendall(request)
    received = b""
    with pytest.raises(ConnectionResetError):
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break  # an orderly close would end the loop and fail the pytest.raises
            received += chunk
    sock.close()
    head, _, partial = received.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200")
    length = int([l for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")][0].split(b":")[1])
    assert 0 < len(partial) < length


def test_hang_reads_the_request_then_closes_without_answering(sim):
    sim.fault(path="/rest/v1/delivery", hangMs=400)
    conn = http.client.HTTPConnection("127.0.0.1", sim.port, timeout=5)
    started = time.monotonic()
    conn.request("POST", delivery_url(), body=BODY, headers=HEADERS)
    with pytest.raises((http.client.RemoteDisconnected, ConnectionResetError)):
        conn.getresponse()
    assert time.monotonic() - started >= 0.4
    conn.close()
    assert sim.last_request()["status"] is None


def test_hang_trips_a_client_timeout(sim):
    sim.fault(path="/rest/v1/delivery", hangMs=1500)
    conn = http.client.HTTPConnection("127.0.0.1", sim.port, timeout=0.3)
    conn.request("POST", delivery_url(), body=BODY, headers=HEADERS)
    with pytest.raises(socket.timeout):
        conn.getresponse()
    conn.close()


def test_trickle_sends_the_body_slowly(sim):
    sim.fault(path="/rest/v1/delivery", trickleBytesPerSecond=2000)
    started = time.monotonic()
    response, body, conn = deliver(sim)
    conn.close()
    elapsed = time.monotonic() - started
    assert response.status == 200 and json.loads(body)["status"] == 200
    assert elapsed >= len(body) / 2000 * 0.8


def test_count_limited_fault_disappears_after_n_requests(sim):
    fault_id = sim.fault(path="/rest/v1/delivery", match="exact", status=502, count=2)
    statuses = []
    for _ in range(3):
        response, _, conn = deliver(sim)
        conn.close()
        statuses.append(response.status)
    assert statuses == [502, 502, 200]
    assert sim.get("/_sim/faults").json()["faults"] == []
    assert [e["fault"] for e in sim.requests_log()] == [fault_id, fault_id, None]


def test_exact_and_prefix_matching_and_deletion(sim):
    exact = sim.fault(path="/rest/v1", match="exact", status=500)
    response, _, conn = deliver(sim)
    conn.close()
    assert response.status == 200, "an exact fault must not match a longer path"
    prefix = sim.fault(path="/rest/v1", status=500)
    response, _, conn = deliver(sim)
    conn.close()
    assert response.status == 500
    assert sim.delete(f"/_sim/faults/{prefix}").status_code == 200
    assert sim.delete(f"/_sim/faults/{prefix}").status_code == 404
    assert [f["id"] for f in sim.get("/_sim/faults").json()["faults"]] == [exact]
    assert sim.delete("/_sim/faults").json() == {"cleared": 1}
    assert sim.post("/_sim/faults", json={"path": "/x"}).status_code == 400
    assert sim.post("/_sim/faults", json={"path": "/x", "status": "500"}).status_code == 400
    assert sim.post("/_sim/faults", json={"path": "/x", "explode": True}).status_code == 400


@requires_specs
def test_faulted_requests_are_still_validated_and_logged(sim):
    fault_id = sim.fault(path="/rest/v1/delivery", drop=True)
    conn = http.client.HTTPConnection("127.0.0.1", sim.port, timeout=5)
    conn.request("POST", delivery_url(), body=json.dumps({"context": {"channel": "tv"}}), headers=HEADERS)
    with pytest.raises((http.client.RemoteDisconnected, ConnectionResetError)):
        conn.getresponse()
    conn.close()
    entry = sim.last_request()
    assert entry["fault"] == fault_id and entry["valid"] is False
    assert sim.violations()[-1]["kind"] == "request"



def test_slow_headers_send_the_head_one_byte_at_a_time(sim):
    sim.fault(path="/rest/v1/delivery", slowHeadersBytesPerSecond=20)
    sock = socket.create_connection(("127.0.0.1", sim.port), timeout=5)
    request = (f"POST {delivery_url()} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               f"Content-Length: {len(BODY)}\r\n\r\n{BODY}").encode()
    sock.sendall(request)
    first = sock.recv(65536)
    # A client waiting for the whole head waits for every byte of it: after half a second there are ~10.
    time.sleep(0.5)
    received = first + sock.recv(65536)
    sock.close()
    assert len(first) == 1 and first == b"H"
    assert 2 <= len(received) < 40 and b"\r\n\r\n" not in received
    assert sim.last_request()["status"] == 200, "a transport fault: the request was carried out"


def test_slow_headers_at_a_fast_rate_still_deliver_the_answer(sim):
    sim.fault(path="/rest/v1/delivery", slowHeadersBytesPerSecond=5000)
    response, body, conn = deliver(sim)
    conn.close()
    assert response.status == 200 and json.loads(body)["prefetch"]["mboxes"][0]["options"]


def test_oversized_body_is_valid_json_of_exactly_that_size(sim):
    size = 8 * 1024 * 1024
    fault_id = sim.fault(path="/rest/v1/delivery", oversizedBytes=size)
    response, body, conn = deliver(sim, timeout=30)
    conn.close()
    assert response.status == 200 and int(response.getheader("Content-Length")) == size
    assert len(body) == size and set(json.loads(body)) == {"padding"}
    entry = sim.last_request()
    assert entry["fault"] == fault_id and entry["status"] == 200
    assert sim.get("/_sim/stats").json()["prefetched"] == {}, "a replaced response must not be processed"


def test_oversized_body_stops_when_the_client_leaves(sim):
    sim.fault(path="/rest/v1/delivery", oversizedBytes=512 * 1024 * 1024)
    conn = http.client.HTTPConnection("127.0.0.1", sim.port, timeout=5)
    conn.request("POST", delivery_url(), body=BODY, headers=HEADERS)
    response = conn.getresponse()
    assert response.read(1024 * 1024)
    response.close()
    conn.close()
    wait_for(lambda: sim.get("/_sim/connections").json()["open"] == 0)


def test_endless_body_is_chunked_and_never_ends(sim):
    wait_for(lambda: sim.get("/_sim/connections").json()["open"] == 0)
    sim.fault(path="/rest/v1/delivery", endlessBody=True)
    conn = http.client.HTTPConnection("127.0.0.1", sim.port, timeout=5)
    conn.request("POST", delivery_url(), body=BODY, headers=HEADERS)
    response = conn.getresponse()
    assert response.status == 200 and response.getheader("Transfer-Encoding") == "chunked"
    assert response.getheader("Content-Length") is None
    taken = 0
    while taken < 16 * 1024 * 1024:
        piece = response.read(1024 * 1024)
        assert piece, "the endless body ended"
        taken += len(piece)
    assert sim.get("/_sim/connections").json()["busy"] == 1
    response.close()
    conn.close()
    wait_for(lambda: sim.get("/_sim/connections").json()["open"] == 0)


def test_new_fault_fields_are_checked(sim):
    assert sim.post("/_sim/faults", json={"path": "/x", "oversizedBytes": 13}).status_code == 400
    assert sim.post("/_sim/faults", json={"path": "/x", "slowHeadersBytesPerSecond": 0}).status_code == 400
    assert sim.post("/_sim/faults", json={"path": "/x", "endlessBody": "yes"}).status_code == 400
    described = sim.post("/_sim/faults", json={"path": "/x", "endlessBody": True, "oversizedBytes": 14,
                                                "slowHeadersBytesPerSecond": 3}).json()
    assert described["endlessBody"] is True and described["oversizedBytes"] == 14
    assert described["slowHeadersBytesPerSecond"] == 3


def test_connections_idle_busy_and_close_idle(sim):
    # The test's own control connection is not counted; earlier tests' connections are gone by now.
    wait_for(lambda: sim.get("/_sim/connections").json()["open"] == 0)
    idle = http.client.HTTPConnection("127.0.0.1", sim.port, timeout=5)
    idle.request("POST", delivery_url(), body=BODY, headers=HEADERS)
    assert idle.getresponse().read()
    wait_for(lambda: sim.get("/_sim/connections").json()["idle"] == 1)
    sim.fault(path="/rest/v1/delivery", trickleBytesPerSecond=10)
    busy = http.client.HTTPConnection("127.0.0.1", sim.port, timeout=5)
    busy.request("POST", delivery_url(), body=BODY, headers=HEADERS)
    trickling = busy.getresponse()
    counts = sim.get("/_sim/connections").json()
    assert (counts["open"], counts["idle"], counts["busy"]) == (2, 1, 1)
    assert sim.post("/_sim/connections/close-idle").json() == {"closed": 1}
    # The idle connection got an orderly close: the client reads end-of-stream.
    assert idle.sock.recv(1) == b""
    idle.close()
    trickling.close()
    busy.close()
    wait_for(lambda: sim.get("/_sim/connections").json()["open"] == 0)


def test_no_response_violations_in_this_module(sim):
    sim.collect_response_violations()
    assert sim.response_violations == []


def test_a_request_whose_body_never_fully_arrives_never_happened(sim):
    """A client that closes mid-body (an agent stopping, a box losing power) sent no request: a real server
    discards it, so the simulator neither logs, checks nor carries it out."""
    before = len(sim.requests_log())
    for framing in (b"Content-Length: 200\r\n\r\n" + BODY.encode()[:40],
                    b"Transfer-Encoding: chunked\r\n\r\n20\r\n" + BODY.encode()[:10]):
        raw = socket.create_connection(("127.0.0.1", sim.port), timeout=5)
        raw.sendall(f"POST {delivery_url()} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n".encode()
                    + framing)
        raw.shutdown(socket.SHUT_WR)
        assert raw.recv(1024) == b""  # closed without an answer
        raw.close()
    response, _, conn = deliver(sim)  # the simulator still serves the next client
    conn.close()
    assert response.status == 200
    assert len(sim.requests_log()) == before + 1
    assert sim.violations() == []

"""pyzmq, the reference non-Swift client, against a real preflightd."""

import json
import uuid

import zmq

from agent_harness import request


def test_ping_from_a_pyzmq_req_socket(agent):
    reply = request(agent.app, "ping", req_id="py-1")
    assert reply["ok"] is True
    assert reply["id"] == "py-1"
    assert reply["v"] == 1
    assert isinstance(reply["result"]["version"], str)
    assert reply["result"]["uptimeMs"] >= 0


def test_pipelined_dealer_replies_are_correlated_by_id(agent):
    socket = zmq.Context.instance().socket(zmq.DEALER)
    socket.setsockopt(zmq.LINGER, 0)
    socket.setsockopt(zmq.RCVTIMEO, 10000)
    socket.connect(agent.app)
    try:
        ids = [f"d{index}" for index in range(100)]
        for req_id in ids:
            socket.send_multipart([b"", json.dumps({"v": 1, "id": req_id, "cmd": "ping"}).encode()])
        seen = set()
        for _ in ids:
            delimiter, body = socket.recv_multipart()
            assert delimiter == b""
            seen.add(json.loads(body)["id"])
        assert seen == set(ids)
    finally:
        socket.close()


def test_errors_have_code_message_field_and_action(agent):
    reply = request(agent.app, "prefetch", {"mboxes": [{"name": ""}]}, req_id="bad")
    assert reply["ok"] is False
    assert reply["id"] == "bad"
    assert reply["error"]["code"] == "invalid_argument"
    assert reply["error"]["field"] == "mboxes[0].name"
    assert reply["error"]["action"] == "none"
    assert reply["error"]["message"]


def test_admin_commands_are_refused_on_the_app_endpoint(agent):
    assert request(agent.app, "status")["error"]["code"] == "not_permitted"
    status = request(agent.admin, "status")
    assert status["ok"] is True
    assert status["result"]["pid"] == agent.process.pid

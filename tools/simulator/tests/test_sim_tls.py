"""The TLS listener: the same simulator behind a certificate made at test time (never committed)."""

from __future__ import annotations

import http.client
import json
import shutil
import socket
import ssl
import subprocess
import sys
import time

import pytest

from simharness import SIM, SimProcess, delivery_url, mobile_context

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl makes the test certificate")

BODY = json.dumps({"context": mobile_context(), "prefetch": {"mboxes": [{"index": 1, "name": "logo"}]}})


def self_signed(folder):
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out",
                    str(cert), "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True)
    return cert, key


@pytest.fixture
def tls_sim(tmp_path):
    cert, key = self_signed(tmp_path)
    process = SimProcess(tmp_path / "sim", "--quiet", "--tls-cert", str(cert), "--tls-key", str(key),
                         "--tls-port-file", str(tmp_path / "sim" / "tls-port"))
    process.tls_port = int((tmp_path / "sim" / "tls-port").read_text().strip())
    process.cert = cert
    yield process
    process.stop()


def connections(sim):
    return sim.get("/_sim/connections").json()


def wait_for(condition, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_a_client_that_trusts_the_certificate_is_served(tls_sim):
    context = ssl.create_default_context(cafile=str(tls_sim.cert))
    conn = http.client.HTTPSConnection("127.0.0.1", tls_sim.tls_port, timeout=10, context=context)
    conn.request("POST", delivery_url(), body=BODY, headers={"Content-Type": "application/json"})
    response = conn.getresponse()
    assert response.status == 200 and json.loads(response.read())["prefetch"]["mboxes"][0]["options"]
    conn.request("GET", "/_sim/requests")
    assert json.loads(conn.getresponse().read())["requests"][-1]["operation"] == "delivery"
    conn.close()
    assert connections(tls_sim)["tlsHandshakes"] == 1


def test_a_client_that_does_not_trust_it_fails_the_handshake(tls_sim):
    context = ssl.create_default_context()
    with socket.create_connection(("127.0.0.1", tls_sim.tls_port), timeout=10) as raw:
        with pytest.raises(ssl.SSLCertVerificationError):
            context.wrap_socket(raw, server_hostname="127.0.0.1")
    wait_for(lambda: connections(tls_sim)["tlsHandshakeFailures"] == 1)
    assert tls_sim.requests_log() == []
    assert "Traceback" not in tls_sim.stderr()


def test_plain_http_to_the_tls_port_gets_no_answer(tls_sim):
    with socket.create_connection(("127.0.0.1", tls_sim.tls_port), timeout=10) as raw:
        raw.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        try:
            answer = raw.recv(65536)  # a TLS alert, or nothing
        except ConnectionResetError:
            answer = b""
        assert not answer.startswith(b"HTTP/")
    wait_for(lambda: connections(tls_sim)["tlsHandshakeFailures"] == 1)
    # The plain port still serves.
    assert tls_sim.get("/health").json()["status"] == "ok"


def test_a_certificate_needs_its_key(tmp_path):
    cert, _ = self_signed(tmp_path)
    result = subprocess.run([sys.executable, str(SIM), "--port", "0", "--tls-cert", str(cert)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "--tls-cert and --tls-key go together" in result.stderr

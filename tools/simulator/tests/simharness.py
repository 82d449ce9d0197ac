"""Test harness for preflight-sim: the simulator runs as a real process on an ephemeral loopback port.

Not a conftest.py: other suites run in the same pytest session (tests/python) have their own
`conftest` module, and two of them cannot be imported by that name. Test modules import the
fixtures from here instead.
"""

from __future__ import annotations

import base64
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

REPO = Path(__file__).resolve().parents[3]
SIM = REPO / "tools" / "preflight-sim"
sys.path.insert(0, str(REPO / "tools" / "simulator"))
from preflight_sim.cli import shared_dir  # noqa: E402  (the one reading of $PREFLIGHT_SHARED)

SHARED = shared_dir()
SPECS = SHARED / "specs"
STARTUP_DEADLINE_S = 30.0

requires_specs = pytest.mark.skipif(not SPECS.is_dir(),
                                    reason=f"{SPECS} is absent: validation tests need the shared specs folder")


class SimProcess:
    """One preflight-sim process plus an HTTP session (keep-alive) to talk to it."""

    def __init__(self, workdir: Path, *args: str):
        workdir.mkdir(parents=True, exist_ok=True)
        self.port_file = workdir / "port"
        self.stderr_path = workdir / "sim.stderr"
        self._stderr = self.stderr_path.open("w+")
        self.proc = subprocess.Popen([sys.executable, str(SIM), "--port", "0", "--port-file", str(self.port_file),
                                      *args], stdout=subprocess.DEVNULL, stderr=self._stderr)
        deadline = time.monotonic() + STARTUP_DEADLINE_S
        while not self.port_file.exists():
            if self.proc.poll() is not None:
                raise RuntimeError(f"preflight-sim exited with {self.proc.returncode}:\n{self.stderr()}")
            if time.monotonic() > deadline:
                self.proc.kill()
                raise RuntimeError(f"preflight-sim did not write its port file in time:\n{self.stderr()}")
            time.sleep(0.02)
        self.port = int(self.port_file.read_text().strip())
        self.base = f"http://127.0.0.1:{self.port}"
        self.http = requests.Session()
        self.response_violations: list[dict] = []

    def url(self, path: str) -> str:
        return self.base + path

    def get(self, path: str, **kw) -> requests.Response:
        return self.http.get(self.url(path), timeout=10, **kw)

    def post(self, path: str, **kw) -> requests.Response:
        return self.http.post(self.url(path), timeout=10, **kw)

    def put(self, path: str, **kw) -> requests.Response:
        return self.http.put(self.url(path), timeout=10, **kw)

    def delete(self, path: str, **kw) -> requests.Response:
        return self.http.delete(self.url(path), timeout=10, **kw)

    def violations(self) -> list[dict]:
        return self.get("/_sim/violations").json()["violations"]

    def requests_log(self, **params) -> list[dict]:
        return self.get("/_sim/requests", params=params).json()["requests"]

    def last_request(self) -> dict:
        return self.requests_log()[-1]

    def fault(self, **spec) -> str:
        r = self.post("/_sim/faults", json=spec)
        assert r.status_code == 201, r.text
        return r.json()["id"]

    def collect_response_violations(self) -> None:
        self.response_violations += [v for v in self.violations() if v["kind"] == "response"]

    def reset(self) -> None:
        assert self.post("/_sim/reset").status_code == 200

    def stderr(self) -> str:
        self._stderr.flush()
        return self.stderr_path.read_text()

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 10.0) -> int:
        self.http.close()
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._stderr.close()
        return self.proc.returncode


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    process = SimProcess(tmp_path_factory.mktemp("sim"), "--quiet")
    yield process
    process.stop()


@pytest.fixture(autouse=True)
def clean_sim(request):
    """Between tests: remember any response self-check failure, then return the simulator to its start."""
    yield
    if "sim" in request.fixturenames:
        process = request.getfixturevalue("sim")
        if process.proc.poll() is None:
            process.collect_response_violations()
            process.reset()


# Adobe Pass helpers ---------------------------------------------------------------------------

DEVICE_INFO = {"primaryHardwareType": "SetTopBox", "model": "PF-100", "version": "1.0", "manufacturer": "Acme",
               "osName": "Linux", "osVersion": "6.1", "connectionType": "LAN"}
X_DEVICE_INFO = base64.b64encode(json.dumps(DEVICE_INFO).encode()).decode()
DEVICE_ID = "fingerprint " + base64.b64encode(b"ba23d141-d715-561c-94f4-e9e4c966b1eb").decode()
SOFTWARE_STATEMENT = ("eyJhbGciOiJSUzI1NiJ9."
                      + base64.urlsafe_b64encode(b'{"software_id":"preflight-test"}').decode().rstrip("=")
                      + ".c2lnbmF0dXJl")


def pass_headers(token: str | None, **extra: str) -> dict:
    headers = {"X-Device-Info": X_DEVICE_INFO, "AP-Device-Identifier": DEVICE_ID, "Accept": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    headers.update(extra)
    return headers


def register(sim: SimProcess) -> dict:
    r = sim.post("/o/client/register", json={"software_statement": SOFTWARE_STATEMENT,
                                             "redirect_uri": "adobepass://tv.preflight"},
                 headers={"X-Device-Info": X_DEVICE_INFO})
    assert r.status_code == 201, r.text
    return r.json()


def access_token(sim: SimProcess, client: dict | None = None) -> str:
    client = client or register(sim)
    r = sim.post("/o/client/token", data={"client_id": client["client_id"], "client_secret": client["client_secret"],
                                          "grant_type": "client_credentials"},
                 headers={"X-Device-Info": X_DEVICE_INFO})
    assert r.status_code == 201, r.text
    return r.json()["access_token"]


# Target helpers -------------------------------------------------------------------------------

def epoch_ms() -> int:
    """Now, in epoch milliseconds: a notification timestamp Target accepts (the simulator's clock unmoved)."""
    return int(time.time() * 1000)


def delivery_url(session: str = "a1b2c3d4e5f6", client: str = "demo") -> str:
    return f"/rest/v1/delivery?client={client}&sessionId={session}&version=5.0.0"


def mobile_context() -> dict:
    return {
        "channel": "mobile",
        "mobilePlatform": {"deviceType": "phone", "platformType": "android", "version": "14"},
        "application": {"id": "com.example.preflight", "name": "Preflight", "version": "1.2.3"},
        "screen": {"width": 1920, "height": 1080, "colorDepth": 24, "orientation": "landscape"},
        "userAgent": "Mozilla/5.0 (Linux; Android 14; PF-100)",
        "timeOffsetInMinutes": 60,
    }

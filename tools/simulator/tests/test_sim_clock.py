"""The simulator's own clock: the real world's time set apart from the machine's (a box whose clock is wrong)."""

from __future__ import annotations

import http.client
import json
import socket
import time
from email.utils import parsedate_to_datetime

from simharness import clean_sim, sim  # noqa: F401 - fixtures
from simharness import SimProcess, access_token, delivery_url, mobile_context, pass_headers, requires_specs

pytestmark = requires_specs

SP = "REF30"
# A box that booted at 2000-01-01 while the world is at today: the world is 26-odd years ahead of it. Played
# here the other way round: the simulator's time is set ahead of the machine's by about 26 years.
YEARS_26_MS = 26 * 365 * 24 * 3600 * 1000
SLACK_MS = 5000


def machine_ms() -> float:
    return time.time() * 1000.0


def date_ms(header: str | None) -> float:
    assert header, "no Date header"
    return parsedate_to_datetime(header).timestamp() * 1000.0


def assert_near(value: float, expected: float, slack: float = SLACK_MS) -> None:
    assert abs(value - expected) <= slack, (value, expected, value - expected)


def set_offset(sim, offset: int) -> dict:
    r = sim.put("/_sim/clock", json={"offsetMs": offset})
    assert r.status_code == 200, r.text
    return r.json()


def raw_exchange(sim, data: bytes) -> bytes:
    """Sends raw bytes and returns the status line and headers of the answer."""
    with socket.create_connection(("127.0.0.1", sim.port), timeout=5) as raw:
        raw.sendall(data)
        received = b""
        while b"\r\n\r\n" not in received:
            piece = raw.recv(4096)
            if not piece:
                break
            received += piece
    return received.split(b"\r\n\r\n", 1)[0]


def header_of(head: bytes, name: str) -> str | None:
    for line in head.decode("latin-1").split("\r\n")[1:]:
        key, _, value = line.partition(":")
        if key.strip().lower() == name.lower():
            return value.strip()
    return None


def test_the_clock_starts_at_the_machine_time(sim):
    clock = sim.get("/_sim/clock").json()
    assert clock["offsetMs"] == 0
    assert_near(clock["nowMs"], machine_ms())
    assert_near(date_ms(clock["date"]), machine_ms())


def test_offset_or_now_sets_the_clock_and_reset_returns_it_to_zero(sim):
    ahead = set_offset(sim, YEARS_26_MS)
    assert ahead["offsetMs"] == YEARS_26_MS
    assert_near(ahead["nowMs"], machine_ms() + YEARS_26_MS)
    assert sim.get("/_sim/clock").json()["offsetMs"] == YEARS_26_MS

    r = sim.put("/_sim/clock", json={"now": 946684800000})  # 2000-01-01T00:00:00Z
    assert r.status_code == 200, r.text
    assert_near(r.json()["nowMs"], 946684800000)
    assert_near(r.json()["offsetMs"], 946684800000 - machine_ms())
    assert r.json()["date"].startswith("Sat, 01 Jan 2000 00:00:0")

    behind = set_offset(sim, -1000)
    assert behind["offsetMs"] == -1000
    sim.reset()
    assert sim.get("/_sim/clock").json()["offsetMs"] == 0


def test_bad_clock_input_is_refused_and_changes_nothing(sim):
    set_offset(sim, 1234)
    for body in ({}, {"offsetMs": 1, "now": 2}, {"offsetMs": "1"}, {"offsetMs": True}, {"offsetMs": 1.5},
                 {"offsetMs": None}, {"now": -1}, {"now": 10 ** 15}, {"offsetMs": -10 ** 14}, {"offset": 1},
                 [1], "x"):
        r = sim.put("/_sim/clock", json=body)
        assert r.status_code == 400, (body, r.text)
        assert r.json()["error"], body
    r = sim.put("/_sim/clock", data=b"{nope", headers={"Content-Type": "application/json"})
    assert r.status_code == 400 and "JSON" in r.json()["error"]
    assert "exactly one" in sim.put("/_sim/clock", json={"offsetMs": 1, "now": 2}).json()["error"]
    assert sim.get("/_sim/clock").json()["offsetMs"] == 1234
    assert sim.put("/_sim/clock", json={"offsetMs": 5.0}).json()["offsetMs"] == 5


def test_every_response_is_dated_by_the_simulator_clock(sim):
    set_offset(sim, YEARS_26_MS)
    expected = machine_ms() + YEARS_26_MS
    # Control paths and /health.
    assert_near(date_ms(sim.get("/_sim/clock").headers.get("Date")), expected)
    assert_near(date_ms(sim.get("/health").headers.get("Date")), expected)
    assert_near(date_ms(sim.get("/_sim/no-such-thing").headers.get("Date")), expected)
    # Adobe paths: an answer, an error, an unknown path.
    body = {"context": mobile_context(), "prefetch": {"mboxes": [{"index": 1, "name": "logo"}]}}
    assert_near(date_ms(sim.post(delivery_url(), json=body).headers.get("Date")), expected)
    assert_near(date_ms(sim.post(delivery_url(), json={}).headers.get("Date")), expected)
    assert_near(date_ms(sim.get(f"/api/v2/{SP}/configuration").headers.get("Date")), expected)
    assert_near(date_ms(sim.get("/rest/v9/nothing").headers.get("Date")), expected)
    # A status fault, a malformed body, and an endless body (its head is written on its own).
    sim.fault(path="/rest/v1/delivery", status=503, count=1)
    r = sim.post(delivery_url(), json=body)
    assert r.status_code == 503
    assert_near(date_ms(r.headers.get("Date")), expected)
    sim.fault(path="/rest/v1/delivery", malformed=True, count=1)
    assert_near(date_ms(sim.post(delivery_url(), json=body).headers.get("Date")), expected)
    sim.fault(path="/rest/v1/delivery", endlessBody=True, count=1)
    conn = http.client.HTTPConnection("127.0.0.1", sim.port, timeout=5)
    conn.request("POST", delivery_url(), body=json.dumps(body), headers={"Content-Type": "application/json"})
    response = conn.getresponse()
    assert response.getheader("Transfer-Encoding") == "chunked"
    assert_near(date_ms(response.getheader("Date")), expected)
    response.close()
    conn.close()
    # Answers the HTTP layer writes itself: a bad Content-Length, a header line too long for it.
    head = raw_exchange(sim, b"POST /rest/v1/delivery HTTP/1.1\r\nHost: x\r\nContent-Length: nope\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400"), head
    assert_near(date_ms(header_of(head, "Date")), expected)
    # One header line of 65,537 bytes (one over http.server's limit), and nothing after it: the server has read
    # every byte sent when it answers, so its close cannot turn into a reset that loses the answer.
    head = raw_exchange(sim, b"GET /health HTTP/1.1\r\nX-Long: " + b"x" * (65537 - 10) + b"\r\n")
    assert head.startswith(b"HTTP/1.1 431"), head[:100]
    assert_near(date_ms(header_of(head, "Date")), expected)


def test_date_headers_are_imf_fixdate(sim):
    sim.put("/_sim/clock", json={"now": 946684800000 + 9 * 3600 * 1000 + 5 * 1000})
    date = sim.get("/health").headers["Date"]
    # IMF-fixdate: "Sat, 01 Jan 2000 09:00:05 GMT" (allow the second to tick).
    assert date[:25] == "Sat, 01 Jan 2000 09:00:0" + date[24] and date.endswith(" GMT") and len(date) == 29, date


def test_the_request_log_and_notifications_are_timed_by_the_simulator_clock(sim):
    set_offset(sim, -YEARS_26_MS)
    expected = machine_ms() - YEARS_26_MS
    now = int(sim.get("/_sim/clock").json()["nowMs"])
    body = {"context": mobile_context(), "notifications": [
        {"id": "n1", "type": "display", "timestamp": now, "mbox": {"name": "logo"}}]}
    r = sim.post(delivery_url(), json=body)
    assert r.status_code == 200, r.text
    assert_near(sim.last_request()["time"], expected)
    assert_near(sim.get("/_sim/target/notifications").json()["notifications"][0]["receivedAt"], expected)


def test_adobe_pass_dates_follow_the_simulator_clock(sim):
    """A box 26 years slow gets `notBefore`/`notAfter` 26 years ahead of its own clock: the real world's."""
    set_offset(sim, YEARS_26_MS)
    world = machine_ms() + YEARS_26_MS
    client = sim.post("/o/client/register", json={"software_statement": "eyJhbGciOiJSUzI1NiJ9.e30.c2ln",
                                                  "redirect_uri": "adobepass://tv"},
                      headers={"X-Device-Info": pass_headers(None)["X-Device-Info"]}).json()
    assert_near(client["client_id_issued_at"] * 1000, world)
    r = sim.post("/o/client/token", data={"client_id": client["client_id"], "client_secret": client["client_secret"],
                                          "grant_type": "client_credentials"},
                 headers={"X-Device-Info": pass_headers(None)["X-Device-Info"]})
    assert_near(r.json()["created_at"], world)
    token = r.json()["access_token"]

    login = sim.post("/_sim/pass/login", json={"serviceProvider": SP, "mvpd": "Cablevision", "ttlSeconds": 3600})
    assert_near(login.json()["login"]["notBefore"], world)
    assert_near(login.json()["login"]["notAfter"], world + 3600 * 1000)
    profile = sim.get(f"/api/v2/{SP}/profiles", headers=pass_headers(token)).json()["profiles"]["Cablevision"]
    assert_near(profile["notBefore"], world)
    assert_near(profile["notAfter"], world + 3600 * 1000)
    decision = sim.post(f"/api/v2/{SP}/decisions/authorize/Cablevision", json={"resources": ["r1"]},
                        headers=pass_headers(token)).json()["decisions"][0]
    assert_near(decision["notBefore"], world)
    assert_near(decision["token"]["notAfter"], world + 420_000)
    assert sim.violations() == []


def test_moving_the_clock_expires_profiles_and_access_tokens(sim):
    token = access_token(sim)  # expires in 3600 s
    sim.post("/_sim/pass/login", json={"serviceProvider": SP, "mvpd": "Cablevision", "ttlSeconds": 600})
    assert "Cablevision" in sim.get(f"/api/v2/{SP}/profiles", headers=pass_headers(token)).json()["profiles"]
    set_offset(sim, 601 * 1000)
    assert sim.get(f"/api/v2/{SP}/profiles", headers=pass_headers(token)).json()["profiles"] == {}
    assert sim.get("/_sim/pass/state").json()["tokensValid"] == 1
    set_offset(sim, 3601 * 1000)
    r = sim.get(f"/api/v2/{SP}/profiles", headers=pass_headers(token))
    assert r.status_code == 401 and sim.last_request()["note"] == "expired access token"
    assert sim.get("/_sim/pass/state").json()["tokensValid"] == 0
    set_offset(sim, 0)
    assert sim.get(f"/api/v2/{SP}/profiles", headers=pass_headers(token)).status_code == 200


def test_clock_offset_flag_sets_the_starting_offset_and_reset_returns_to_it(tmp_path):
    process = SimProcess(tmp_path / "sim", "--quiet", "--clock-offset-ms", str(-YEARS_26_MS))
    try:
        assert process.get("/_sim/clock").json()["offsetMs"] == -YEARS_26_MS
        assert_near(date_ms(process.get("/health").headers["Date"]), machine_ms() - YEARS_26_MS)
        set_offset(process, 0)
        process.reset()
        assert process.get("/_sim/clock").json()["offsetMs"] == -YEARS_26_MS
    finally:
        assert process.stop() == 0


def test_clock_offset_flag_out_of_range_is_refused(tmp_path):
    workdir = tmp_path / "sim"
    try:
        SimProcess(workdir, "--quiet", "--clock-offset-ms", str(-10 ** 14))
    except RuntimeError as exc:
        assert "exited with 2" in str(exc) and "--clock-offset-ms" in str(exc)
    else:
        raise AssertionError("the simulator started with a clock before 1970")

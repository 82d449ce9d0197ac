"""`edgeHost`: served exactly as configured, however wrong, for tests of an agent that must refuse or survive it."""

from __future__ import annotations

from simharness import clean_sim, sim  # noqa: F401 - fixtures
from simharness import SimProcess, delivery_url, mobile_context, requires_specs

pytestmark = requires_specs

DEFAULT = "mboxedge35.tt.omtrdc.net"
PREFETCH = {"context": mobile_context(), "prefetch": {"mboxes": [{"index": 1, "name": "logo"}]}}

# What an agent must not take as a host name to send requests to, and host names that do not resolve.
HOSTILE = [
    "http://evil:1/x",         # scheme, port and path
    "https://mboxedge35.tt.omtrdc.net",
    "user@host",               # user part
    "user:pass@host",
    "host:8080",               # port
    "[::1]:8080",
    "127.0.0.1",
    "host/path?q=1#f",         # path, query, fragment
    "edge.invalid",            # RFC 6761: never resolves
    "nonexistent-edge.tt.omtrdc.net",
    "",                        # empty
    " mboxedge35.tt.omtrdc.net ",
    "two words",
    "host\r\nX-Injected: 1",   # control characters (JSON-escaped in the body)
    "edge..tt.omtrdc.net",
    "-leading-hyphen.example",
    "ünïcode.example",
    "a" * 64 + ".example",     # a label longer than DNS allows
    "x" * 300,                 # a name longer than DNS allows
]


def served_edge_host(sim) -> tuple[bool, str | None]:
    r = sim.post(delivery_url(), json=PREFETCH)
    assert r.status_code == 200, r.text
    body = r.json()
    return "edgeHost" in body, body.get("edgeHost")


def test_any_string_is_accepted_and_served_exactly(sim):
    for host in HOSTILE:
        r = sim.put("/_sim/target/edgeHost", json={"edgeHost": host})
        assert r.status_code == 200 and r.json() == {"edgeHost": host}, (host, r.text)
        assert sim.get("/_sim/target/edgeHost").json() == {"edgeHost": host}
        assert served_edge_host(sim) == (True, host), host
    # The spec types edgeHost as a string and no more: every one of those answers is a valid response.
    assert sim.violations() == []


def test_null_answers_without_edge_host(sim):
    r = sim.put("/_sim/target/edgeHost", json={"edgeHost": None})
    assert r.status_code == 200 and r.json() == {"edgeHost": None}
    assert served_edge_host(sim) == (False, None)
    assert sim.violations() == []


def test_what_is_not_a_string_is_refused_and_changes_nothing(sim):
    sim.put("/_sim/target/edgeHost", json={"edgeHost": "kept.example"})
    for bad in ({}, {"edgeHost": 1}, {"edgeHost": ["a"]}, {"edgeHost": {"host": "a"}}, {"edgeHost": True},
                {"edgeHost": "a", "port": 1}, ["a"], "a"):
        r = sim.put("/_sim/target/edgeHost", json=bad)
        assert r.status_code == 400 and r.json()["error"], bad
    assert sim.get("/_sim/target/edgeHost").json() == {"edgeHost": "kept.example"}


def test_reset_returns_to_the_default(sim):
    sim.put("/_sim/target/edgeHost", json={"edgeHost": "edge.invalid"})
    sim.reset()
    assert sim.get("/_sim/target/edgeHost").json() == {"edgeHost": DEFAULT}
    assert served_edge_host(sim) == (True, DEFAULT)


def test_the_command_line_takes_any_string_and_reset_returns_to_it(tmp_path):
    process = SimProcess(tmp_path / "sim", "--quiet", "--edge-host", "http://evil:1/x")
    try:
        assert served_edge_host(process) == (True, "http://evil:1/x")
        process.put("/_sim/target/edgeHost", json={"edgeHost": "edge.invalid"})
        process.reset()
        assert process.get("/_sim/target/edgeHost").json() == {"edgeHost": "http://evil:1/x"}
    finally:
        assert process.stop() == 0

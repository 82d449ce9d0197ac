"""Command line: parse options, load specs and offers, serve until SIGTERM/SIGINT."""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import ssl
import sys
import tempfile
import threading
from pathlib import Path

from preflight_sim import VERSION, target
from preflight_sim.clock import ClockError
from preflight_sim.server import SimServer
from preflight_sim.simulator import Simulator
from preflight_sim.validation import SpecError, SpecSet

LOCAL_HOSTS = {"127.0.0.1": socket.AF_INET, "localhost": socket.AF_INET, "::1": socket.AF_INET6}


def shared_dir() -> Path:
    """The folder with Adobe's files the tests and the simulator read in place (`specs/`, `conformance/`):
    `$PREFLIGHT_SHARED` when set, else `shared/` beside the repository."""
    if os.environ.get("PREFLIGHT_SHARED"):
        return Path(os.environ["PREFLIGHT_SHARED"]).resolve()
    # <repo>/tools/simulator/preflight_sim/cli.py -> <repo>/../shared
    repo_root = Path(__file__).resolve().parent.parent.parent.parent
    return (repo_root.parent / "shared").resolve()


def default_specs_dir() -> Path:
    return shared_dir() / "specs"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="preflight-sim",
        description="Local stand-in for Adobe Target (Delivery API) and Adobe Pass (DCR + REST API v2), "
                    "validating traffic against the official OpenAPI files.")
    parser.add_argument("--port", type=int, default=8088, help="TCP port (0 picks a free one; default 8088)")
    parser.add_argument("--host", default="127.0.0.1", help="127.0.0.1 (default), ::1 or localhost only")
    parser.add_argument("--specs", type=Path, default=None,
                        help="folder with target-delivery/ and adobe-pass/ (default: $PREFLIGHT_SHARED/specs, else <repo>/../shared/specs)")
    parser.add_argument("--offers", type=Path, default=None, help="JSON file of Target offers per mbox")
    parser.add_argument("--edge-host", default=target.EDGE_HOST,
                        help=f"edgeHost Target responses name, any string, served as given "
                             f"(default {target.EDGE_HOST})")
    parser.add_argument("--clock-offset-ms", type=int, default=0,
                        help="the simulator's time is the machine's plus this many ms (negative: behind; default 0)")
    parser.add_argument("--port-file", type=Path, default=None, help="write the listening port here once ready")
    parser.add_argument("--quiet", action="store_true", help="no per-request log lines on stderr")
    parser.add_argument("--tls-cert", type=Path, default=None,
                        help="PEM certificate (chain) for a second, TLS listener serving the same simulator")
    parser.add_argument("--tls-key", type=Path, default=None, help="PEM private key of --tls-cert")
    parser.add_argument("--tls-port", type=int, default=0, help="TLS listener port (default 0: a free one)")
    parser.add_argument("--tls-port-file", type=Path, default=None,
                        help="write the TLS listener's port here once ready")
    parser.add_argument("--notification-log", type=int, default=target.NOTIFICATION_LOG_SIZE, metavar="N",
                        help="Target notifications kept for GET /_sim/target/notifications, the newest "
                             f"(default {target.NOTIFICATION_LOG_SIZE}; every one is counted)")
    parser.add_argument("--version", action="version", version=f"preflight-sim {VERSION}")
    return parser.parse_args(argv)


def write_port_file(path: Path, port: int) -> None:
    path = path.resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=str(path.parent))
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(f"{port}\n")
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def load_offers(path: Path | None) -> dict[str, dict]:
    if path is None:
        return target.normalize_offers(target.DEFAULT_OFFERS)
    with path.open(encoding="utf-8") as fh:
        return target.normalize_offers(json.load(fh))


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    log = sys.stderr

    family = LOCAL_HOSTS.get(args.host)
    if family is None:
        log.write(f"preflight-sim: refusing to bind {args.host!r}: only 127.0.0.1, ::1 or localhost\n")
        return 2
    host = "127.0.0.1" if args.host == "localhost" else args.host
    if not 0 <= args.port <= 65535:
        log.write("preflight-sim: --port must be 0..65535\n")
        return 2

    if args.notification_log < 1:
        log.write("preflight-sim: --notification-log must be at least 1\n")
        return 2
    if (args.tls_cert is None) != (args.tls_key is None):
        log.write("preflight-sim: --tls-cert and --tls-key go together\n")
        return 2
    if not 0 <= args.tls_port <= 65535:
        log.write("preflight-sim: --tls-port must be 0..65535\n")
        return 2
    tls_context = None
    if args.tls_cert is not None:
        tls_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        try:
            tls_context.load_cert_chain(str(args.tls_cert), str(args.tls_key))
        except (OSError, ssl.SSLError) as exc:
            log.write(f"preflight-sim: cannot load the TLS certificate or key: {exc}\n")
            return 2

    specs_dir = args.specs.resolve() if args.specs is not None else default_specs_dir()
    try:
        specs = SpecSet(specs_dir)
    except SpecError as exc:
        log.write(f"preflight-sim: cannot load specs from {specs_dir}: {exc}\n")
        return 2
    if specs.validating:
        specs.warm()
        log.write(f"preflight-sim: validating against {specs_dir}\n")
        for overlay in specs.overlays:
            log.write(f"preflight-sim: spec overlay: {overlay}\n")
    else:
        log.write(f"preflight-sim: WARNING: specs folder {specs_dir} not found: running UNVALIDATED "
                  "(no request or response is checked against the OpenAPI files)\n")

    try:
        offers = load_offers(args.offers)
    except (OSError, ValueError) as exc:
        log.write(f"preflight-sim: cannot load offers from {args.offers}: {exc}\n")
        return 2

    problems = target.offer_problems(specs, offers)
    if problems:
        log.write(f"preflight-sim: offers from {args.offers or 'built-in defaults'} are invalid: {problems[0]}\n")
        return 2

    try:
        sim = Simulator(specs, offers, quiet=args.quiet, offers_source=str(args.offers) if args.offers else None,
                        edge_host=args.edge_host, clock_offset_ms=args.clock_offset_ms,
                        notification_log_size=args.notification_log)
    except ClockError as exc:
        log.write(f"preflight-sim: --clock-offset-ms: {exc}\n")
        return 2
    try:
        server = SimServer((host, args.port), sim, family)
    except OSError as exc:
        log.write(f"preflight-sim: cannot listen on {host}:{args.port}: {exc}\n")
        return 1
    port = server.server_address[1]
    tls_server = None
    if tls_context is not None:
        try:
            tls_server = SimServer((host, args.tls_port), sim, family, tls=tls_context)
        except OSError as exc:
            log.write(f"preflight-sim: cannot listen (TLS) on {host}:{args.tls_port}: {exc}\n")
            server.server_close()
            return 1

    stop = threading.Event()

    def on_signal(signum, frame) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    shown = f"[{host}]" if ":" in host else host
    if tls_server is not None:
        threading.Thread(target=tls_server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True).start()
        tls_port = tls_server.server_address[1]
        if args.tls_port_file is not None:
            write_port_file(args.tls_port_file, tls_port)
        log.write(f"preflight-sim {VERSION} listening on https://{shown}:{tls_port}\n")
    # The plain port file last: whoever waits for it finds the TLS one written too.
    if args.port_file is not None:
        write_port_file(args.port_file, port)
    log.write(f"preflight-sim {VERSION} listening on http://{shown}:{port}\n")
    log.flush()

    while not stop.wait(0.5):
        pass
    for listener in (server, tls_server):
        if listener is not None:
            listener.shutdown()
            listener.server_close()
    log.write("preflight-sim: stopped\n")
    log.flush()
    return 0

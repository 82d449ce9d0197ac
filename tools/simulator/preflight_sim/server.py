"""HTTP/1.1 front end: keep-alive, one write per response, faults applied at the transport."""

from __future__ import annotations

import os
import socket
import ssl
import struct
import sys
import time
import traceback
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from preflight_sim import VERSION, control, pass_, target
from preflight_sim.exchange import Request, Response, flatten_qs
from preflight_sim.faults import Fault
from preflight_sim.outcome import Outcome
from preflight_sim.simulator import Route, Simulator

MAX_BODY = 16 * 1024 * 1024
MALFORMED_BODY = b"<html><body>upstream proxy error: this is not JSON {\"status\":"
# Oversized and endless bodies go out in pieces of this size, each written as soon as the client takes it.
PIECE = 64 * 1024


class BadRequest(Exception):
    pass


class IncompleteRequest(Exception):
    """The client closed the connection before sending the whole body: as on a real server, the request never
    happened (nothing is logged, checked or carried out), however much of it arrived."""


class SimServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, address, sim: Simulator, family=socket.AF_INET, tls: ssl.SSLContext | None = None):
        self.address_family = family
        self.sim = sim
        self.tls = tls
        super().__init__(address, SimHandler)

    def finish_request(self, request, client_address) -> None:
        """Runs in the connection's own thread: the TLS handshake (if any), then the handler."""
        registry = self.sim.connections
        if self.tls is not None:
            request.settimeout(30)
            try:
                request = self.tls.wrap_socket(request, server_side=True)
            except (ssl.SSLError, OSError):
                # The client refused our certificate, spoke something that is not TLS, or went away.
                registry.tls_handshake(ok=False)
                return
            registry.tls_handshake(ok=True)
            request.settimeout(None)
        key = registry.opened(request)
        try:
            self.RequestHandlerClass(request, client_address, self, key)
        finally:
            registry.closed(key)
            if self.tls is not None:
                try:
                    request.close()
                except OSError:
                    pass

    def handle_error(self, request, client_address) -> None:
        # A client that goes away mid-exchange is a normal event here, not a traceback on stderr.
        if isinstance(sys.exc_info()[1], (ConnectionError, ssl.SSLError, TimeoutError)):
            return
        super().handle_error(request, client_address)


class SimHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = f"preflight-sim/{VERSION}"
    sys_version = ""
    server: SimServer

    def __init__(self, request, client_address, server, key: int) -> None:
        self.connection_key = key
        super().__init__(request, client_address, server)

    def handle_one_request(self) -> None:
        # Idle until the next request line arrives (a keep-alive connection waiting in a client's pool).
        self.server.sim.connections.mark(self.connection_key, busy=False)
        super().handle_one_request()

    def setup(self) -> None:
        super().setup()
        try:
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass

    def date_time_string(self, timestamp: float | None = None) -> str:
        """The `Date` header, from the simulator's clock. Overrides the base class so that the answers it
        writes itself (a request line it cannot parse, say) carry the simulator's time too."""
        if timestamp is not None:
            return super().date_time_string(timestamp)
        return self.server.sim.clock.http_date()

    def log_message(self, format: str, *args) -> None:  # noqa: A002 - signature from the base class
        pass

    def do_GET(self) -> None:
        self._dispatch()

    do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = do_GET

    # reading ---------------------------------------------------------------------------------

    def _read_body(self) -> bytes:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            chunks = []
            total = 0
            while True:
                line = self.rfile.readline(1024)
                if not line:
                    raise IncompleteRequest()
                try:
                    size = int(line.split(b";", 1)[0].strip() or b"0", 16)
                except ValueError as exc:
                    raise BadRequest("bad chunk size") from exc
                if size == 0:
                    while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                        pass
                    break
                total += size
                if total > MAX_BODY:
                    raise BadRequest("body too large")
                chunk = self.rfile.read(size)
                if len(chunk) < size:
                    raise IncompleteRequest()
                chunks.append(chunk)
                self.rfile.readline(1024)
            return b"".join(chunks)
        length = self.headers.get("Content-Length")
        if not length:
            return b""
        try:
            n = int(length)
        except ValueError as exc:
            raise BadRequest("bad Content-Length") from exc
        if n < 0 or n > MAX_BODY:
            raise BadRequest("bad Content-Length")
        body = self.rfile.read(n)
        if len(body) < n:
            raise IncompleteRequest()
        return body

    def _request(self) -> Request:
        parts = urlsplit(self.path)
        headers: dict[str, str] = {}
        for name, value in self.headers.items():
            key = name.lower()
            headers[key] = f"{headers[key]}, {value}" if key in headers else value
        return Request(
            method=self.command,
            path=parts.path or "/",
            query=flatten_qs(parse_qs(parts.query, keep_blank_values=True)),
            headers=headers,
            raw_body=self._read_body(),
            client=self.client_address[0],
        )

    # dispatch --------------------------------------------------------------------------------

    def _dispatch(self) -> None:
        started = time.monotonic()
        sim = self.server.sim
        to_control = self.path == "/health" or self.path.startswith("/_sim")
        sim.connections.mark(self.connection_key, busy=True, control=to_control)
        try:
            req = self._request()
        except IncompleteRequest:
            self.close_connection = True
            return
        except BadRequest as exc:
            self.close_connection = True
            self._send(Response.json(400, {"error": str(exc)}))
            return
        if req.path == "/health" or req.path == "/_sim" or req.path.startswith("/_sim/"):
            try:
                response = control.handle(sim, req)
            except Exception as exc:  # a simulator bug in the control API
                traceback.print_exc(file=sys.stderr)
                response = Response.json(500, {"error": f"preflight-sim internal error: {type(exc).__name__}: {exc}"})
            self._send(response)
            self._log_line(req, response.status, started)
            return
        try:
            self._upstream(sim, req, started)
        except Exception as exc:  # a simulator bug: say so loudly rather than hang up silently
            traceback.print_exc(file=sys.stderr)
            sim.log.record_internal_error(req.path, f"{type(exc).__name__}: {exc}")
            self.close_connection = True
            self._send(Response.json(500, {"error": f"preflight-sim internal error: {type(exc).__name__}: {exc}"}))

    def _upstream(self, sim: Simulator, req: Request, started: float) -> None:
        route, params, allowed = sim.router.match(req.method, req.path)
        trailing_slash = params.pop("_trailing_slash", False)
        service = route.service if route else sim.router.service_for(req.path)
        entry = sim.log.begin(method=req.method, path=req.path, query=req.query, headers=req.headers,
                              body=req.logged_body(), service=service,
                              operation=route.operation if route else None)
        fault = sim.faults.take(req.path)
        if fault is not None:
            sim.log.mark_fault(entry, fault.id)
        if trailing_slash:
            sim.log.add_violations(entry, "request", [f"advisory: {req.path}: the spec path has no trailing slash "
                                                      f"({route.full_template})"])

        if route is None:
            sim.log.add_violations(entry, "request", [_no_operation(req, allowed)])
            outcome: Outcome | None = Outcome(_not_found(service, req, allowed), [])
        elif fault is not None and fault.replaces_response:
            sim.log.add_violations(entry, "request", route.check(sim, req, params))
            outcome = None
        else:
            if fault is not None and fault.latency_ms:
                time.sleep(fault.latency_ms / 1000.0)
            outcome = route.handle(sim, req, params, entry["seq"])
            sim.log.add_violations(entry, "request", outcome.violations)
            if outcome.validate_response:
                sim.log.add_violations(entry, "response", self_check(sim, route, outcome.response))

        note = outcome.response.note if outcome is not None else None

        def record(status: int | None) -> None:
            # Recorded before the bytes go out, so a client that reads the log right after its
            # response (or its broken connection) sees the final entry.
            sim.log.finish(entry, status, started, note=note)
            self._log_line(req, status, started, fault)

        if fault is None:
            record(outcome.response.status)
            self._send(outcome.response)
        else:
            self._apply_fault(fault, service, outcome, record)

    # faults ----------------------------------------------------------------------------------

    def _apply_fault(self, fault: Fault, service: str | None, outcome: Outcome | None, record) -> None:
        """Answer as the fault says; `record(status)` is called before anything is sent (None: no response)."""
        if fault.replaces_response:
            if fault.latency_ms:
                time.sleep(fault.latency_ms / 1000.0)
            if fault.hang_ms:
                time.sleep(fault.hang_ms / 1000.0)
                record(None)
                self._close_now()
                return
            if fault.drop:
                record(None)
                self._close_now()
                return
            if fault.oversized_bytes:
                record(200)
                self._send_oversized(fault.oversized_bytes)
                return
            if fault.endless_body:
                record(200)
                self._send_endless()
                return
            if fault.malformed:
                response = Response(200, MALFORMED_BODY, "application/json;charset=UTF-8")
            else:
                response = _fault_response(fault, service)
        else:
            response = outcome.response
        response.headers.update(fault.headers)
        if fault.retry_after is not None:
            response.headers["Retry-After"] = str(fault.retry_after)

        body = response.body
        record(response.status)
        if fault.truncated:
            self.close_connection = True
            head = self._head(response, content_length=len(body) + max(64, len(body)))
            self._write(head + body[: len(body) // 2])
        elif fault.reset_mid_body:
            head = self._head(response)
            self._write(head + body[: len(body) // 2])
            self._reset_now()
        elif fault.trickle_bps or fault.slow_headers_bps:
            head = self._head(response)
            if fault.slow_headers_bps:
                # Slowloris on the head: one byte at a time, the status line and headers never complete
                # within a client's timeout unless the rate allows it.
                if not self._trickle(head, fault.slow_headers_bps, step=1):
                    return
            elif not self._write(head):
                return
            if fault.trickle_bps:
                self._trickle(body, fault.trickle_bps, step=max(1, fault.trickle_bps // 10))
            else:
                self._write(body)
        else:
            self._send(response)

    def _trickle(self, data: bytes, bytes_per_second: int, step: int) -> bool:
        """Writes `data` `step` bytes at a time at `bytes_per_second`; False once the client is gone."""
        for i in range(0, len(data), step):
            if not self._write(data[i:i + step]):
                return False
            time.sleep(step / bytes_per_second)
        return True

    def _send_oversized(self, size: int) -> None:
        """200 with a JSON body of exactly `size` bytes (`{"padding":"xxx…"}`) and its Content-Length,
        written piece by piece: no client that caps what it reads should sit there while it all goes out."""
        self.close_connection = True
        prefix, suffix = b'{"padding":"', b'"}'
        response = Response(200, b"", "application/json;charset=UTF-8")
        if not self._write(self._head(response, content_length=size) + prefix):
            return
        remaining = size - len(prefix) - len(suffix)
        piece = b"x" * PIECE
        while remaining > 0:
            if not self._write(piece[:remaining]):
                return
            remaining -= min(remaining, PIECE)
        self._write(suffix)

    def _send_endless(self) -> None:
        """200 with a chunked JSON-looking body that never ends: pieces go out until the client leaves."""
        self.close_connection = True
        head = (f"HTTP/1.1 200 OK\r\nDate: {self.date_time_string()}\r\nServer: {self.server_version}\r\n"
                "Content-Type: application/json;charset=UTF-8\r\nTransfer-Encoding: chunked\r\n"
                "Connection: close\r\n\r\n").encode("latin-1")
        opening = b'{"padding":"'
        if not self._write(head + b"%x\r\n%s\r\n" % (len(opening), opening)):
            return
        chunk = b"%x\r\n%s\r\n" % (PIECE, b"x" * PIECE)
        while self._write(chunk):
            pass

    def _close_now(self) -> None:
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _reset_now(self) -> None:
        """Abort the connection with a TCP RST (SO_LINGER 0), not an orderly FIN."""
        self.close_connection = True
        try:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
        # close() would only drop a reference while rfile/wfile hold the socket: close the fd itself.
        try:
            os.close(self.connection.detach())
        except OSError:
            pass

    # writing ---------------------------------------------------------------------------------

    def _head(self, response: Response, content_length: int | None = None) -> bytes:
        reason = _reason(response.status)
        lines = [f"HTTP/1.1 {response.status} {reason}",
                 f"Date: {self.date_time_string()}",
                 f"Server: {self.server_version}"]
        if response.content_type:
            lines.append(f"Content-Type: {response.content_type}")
        length = len(response.body) if content_length is None else content_length
        if self.command == "HEAD" and content_length is None:
            length = len(response.body)
        lines.append(f"Content-Length: {length}")
        for name, value in response.headers.items():
            lines.append(f"{name}: {value}")
        if self.close_connection:
            lines.append("Connection: close")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    def _write(self, data: bytes) -> bool:
        try:
            self.wfile.write(data)
            return True
        except OSError:
            self.close_connection = True
            return False

    def _send(self, response: Response) -> None:
        body = b"" if self.command == "HEAD" else response.body
        self._write(self._head(response) + body)

    def _log_line(self, req: Request, status: int | None, started: float, fault: Fault | None = None) -> None:
        if self.server.sim.quiet:
            return
        ms = (time.monotonic() - started) * 1000.0
        suffix = f" fault={fault.id}" if fault is not None else ""
        sys.stderr.write(f"{req.method} {req.path} {status if status is not None else '-'} {ms:.1f}ms{suffix}\n")
        sys.stderr.flush()


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Unknown"


def _no_operation(req: Request, allowed: list[str]) -> str:
    if allowed:
        return f"{req.method} {req.path}: the spec declares only {', '.join(sorted(set(allowed)))} for this path"
    return f"{req.method} {req.path}: no operation in the spec matches this path"


def _not_found(service: str | None, req: Request, allowed: list[str]) -> Response:
    status = 405 if allowed else 404
    headers = {"Allow": ", ".join(sorted(set(allowed)))} if allowed else {}
    if service == "target":
        return Response.json(status, {"status": status, "message": _no_operation(req, allowed)}, headers)
    if service == "pass":
        body = pass_.enhanced_error("internal_server_error", status=status,
                                    message="Method not allowed" if allowed else "Not found")
        return Response.json(status, body, headers)
    if service == "dcr":
        return Response.json(status, {"error": "invalid_request"}, headers)
    return Response.json(status, {"error": "not found" if not allowed else "method not allowed"}, headers)


def _fault_response(fault: Fault, service: str | None) -> Response:
    status = fault.status if fault.status is not None else (400 if fault.message is not None else 500)
    if fault.body is not None:
        if isinstance(fault.body, str):
            return Response(status, fault.body.encode("utf-8"), fault.content_type or "text/plain; charset=utf-8")
        response = Response.json(status, fault.body)
        if fault.content_type:
            response.content_type = fault.content_type
        return response
    if service == "target" or fault.message is not None:
        response = target.fault_body(status, fault.message)
    elif service in ("dcr", "pass"):
        response = pass_.fault_body(service, status)
    else:
        response = Response.json(status, {"status": status, "message": "simulated fault"})
    if fault.content_type:
        response.content_type = fault.content_type
    return response


def self_check(sim: Simulator, route: Route, response: Response) -> list[str]:
    """The simulator's own response checked against the operation's response schema."""
    specs = sim.specs
    if not specs.validating or not response.has_document:
        return []
    op = specs.operation(route.service, route.method, route.template)
    if op is None:
        return []
    declared, ref = specs.response_ref(op, response.status)
    if not declared:
        if route.service != "pass":
            return [f"status {response.status} is not declared for {route.method} {route.full_template}"]
        # Adobe Pass answers request-level failures with the Enhanced Error Codes object whatever
        # the status (403 for a missing profile is documented but not declared in the spec).
        ref = specs.schema_ref("pass", "ErrorInformation")
    return specs.validate(ref, response.document)

"""The client connections the simulator holds open, so a test can see what a client left behind.

Each accepted connection (plain or TLS) is registered while its handler runs. A connection is *idle*
while it waits for the next request (a client's keep-alive pool), *busy* from a request line to the
end of its response (including a fault still trickling bytes out). Connections whose latest request
went to the control API are the test's own and are not counted.
"""

from __future__ import annotations

import socket
import threading


class ConnectionRegistry:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: dict[int, dict] = {}
        self._ids = 0
        self.accepted = 0
        self.tls_handshakes = 0
        self.tls_handshake_failures = 0

    def opened(self, sock: socket.socket) -> int:
        with self._lock:
            self._ids += 1
            self.accepted += 1
            self._open[self._ids] = {"socket": sock, "busy": False, "control": False}
            return self._ids

    def closed(self, key: int) -> None:
        with self._lock:
            self._open.pop(key, None)

    def mark(self, key: int, *, busy: bool, control: bool | None = None) -> None:
        with self._lock:
            entry = self._open.get(key)
            if entry is not None:
                entry["busy"] = busy
                if control is not None:
                    entry["control"] = control

    def tls_handshake(self, ok: bool) -> None:
        with self._lock:
            if ok:
                self.tls_handshakes += 1
            else:
                self.tls_handshake_failures += 1

    def reset_counters(self) -> None:
        with self._lock:
            self.accepted = 0
            self.tls_handshakes = 0
            self.tls_handshake_failures = 0

    def describe(self) -> dict:
        with self._lock:
            clients = [e for e in self._open.values() if not e["control"]]
            busy = sum(1 for e in clients if e["busy"])
            return {"open": len(clients), "idle": len(clients) - busy, "busy": busy, "accepted": self.accepted,
                    "tlsHandshakes": self.tls_handshakes, "tlsHandshakeFailures": self.tls_handshake_failures}

    def close_idle(self) -> int:
        """Closes (FIN) every idle client connection, as a server's keep-alive timeout would."""
        with self._lock:
            idle = [e["socket"] for e in self._open.values() if not e["busy"] and not e["control"]]
        for sock in idle:
            try:
                # The plain socket's shutdown, also for TLS: SSLSocket.shutdown would drop the TLS
                # state under the handler thread that is reading from it.
                socket.socket.shutdown(sock, socket.SHUT_RDWR)
            except OSError:
                pass
        return len(idle)

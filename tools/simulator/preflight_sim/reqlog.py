"""The request log, the contract-violation list and the counters, all behind one lock."""

from __future__ import annotations

import threading
import time
from collections import Counter, deque
from typing import Any

from preflight_sim.clock import Clock

MAX_ENTRIES = 20000  # oldest entries go first; violations are kept in full


class RequestLog:
    """Every request to an Adobe path, in arrival order, with what the simulator made of it."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._seq = 0
        self._entries: deque[dict] = deque(maxlen=MAX_ENTRIES)  # a list's trim moved the other 20,000 each time
        self._violations: list[dict] = []
        self.operations: Counter[str] = Counter()
        self.faults_applied = 0

    def begin(self, *, method: str, path: str, query: dict, headers: dict, body: Any,
              service: str | None, operation: str | None) -> dict:
        with self._lock:
            self._seq += 1
            entry = {
                "seq": self._seq,
                "time": self._clock.now_ms(),
                "method": method,
                "path": path,
                "query": query,
                "headers": headers,
                "body": body,
                "service": service,
                "operation": operation,
                "valid": True,
                "violations": [],
                "status": None,
                "fault": None,
                "note": None,
                "durationMs": None,
            }
            self._entries.append(entry)
            if operation:
                self.operations[operation] += 1
            return entry

    def add_violations(self, entry: dict, kind: str, messages: list[str]) -> None:
        if not messages:
            return
        with self._lock:
            if kind == "request":
                entry["valid"] = False
            entry["violations"].extend(messages if kind == "request" else [f"response: {m}" for m in messages])
            self._violations.append({
                "seq": entry["seq"],
                "kind": kind,
                "service": entry["service"],
                "operation": entry["operation"],
                "messages": list(messages),
            })

    def record_internal_error(self, path: str, message: str) -> None:
        """A crash while handling a request counts as a response violation (a simulator bug)."""
        with self._lock:
            self._violations.append({"seq": self._seq, "kind": "response", "service": None,
                                     "operation": path, "messages": [f"simulator internal error: {message}"]})

    def mark_fault(self, entry: dict, fault_id: str) -> None:
        with self._lock:
            entry["fault"] = fault_id
            self.faults_applied += 1

    def finish(self, entry: dict, status: int | None, started: float, *, note: str | None = None) -> None:
        with self._lock:
            entry["status"] = status
            entry["durationMs"] = round((time.monotonic() - started) * 1000.0, 3)
            if note is not None:
                entry["note"] = note

    def entries(self, since: int = 0, service: str | None = None) -> list[dict]:
        with self._lock:
            return [dict(e, violations=list(e["violations"])) for e in self._entries
                    if e["seq"] > since and (service is None or e["service"] == service)]

    def violations(self) -> list[dict]:
        with self._lock:
            return [dict(v, messages=list(v["messages"])) for v in self._violations]

    def clear(self) -> None:
        """Forget entries and violations; sequence numbers keep growing so `since` stays usable."""
        with self._lock:
            self._entries.clear()
            self._violations.clear()

    def clear_violations(self) -> None:
        with self._lock:
            self._violations.clear()

    def last_seq(self) -> int:
        with self._lock:
            return self._seq

    def counts(self) -> dict:
        with self._lock:
            return {
                "requests": len(self._entries),
                "operations": dict(self.operations),
                "violations": len(self._violations),
                "requestViolations": sum(1 for v in self._violations if v["kind"] == "request"),
                "responseViolations": sum(1 for v in self._violations if v["kind"] == "response"),
                "faultsApplied": self.faults_applied,
            }

    def reset_counters(self) -> None:
        with self._lock:
            self.operations.clear()
            self.faults_applied = 0

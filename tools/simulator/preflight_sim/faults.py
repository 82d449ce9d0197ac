"""Scriptable faults: per path, optionally for the next N matching requests only.

Two families:
- *replacing* faults (`status`, `message`, `malformed`, `drop`, `hangMs`, `oversizedBytes`,
  `endlessBody`): the simulator does not carry out the request (no state changes: nothing
  registered, no notification recorded), as when a server or a proxy in front of it fails;
- *transport* faults (`latencyMs` alone, `truncated`, `resetMidBody`, `trickleBytesPerSecond`,
  `slowHeadersBytesPerSecond`): the request is carried out and the network then misbehaves, so the
  client may not learn that it succeeded.
The request is validated and logged either way, with `fault` set to the fault id.
"""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass, field
from typing import Any

EFFECT_KEYS = ("latencyMs", "status", "malformed", "truncated", "drop", "resetMidBody",
               "trickleBytesPerSecond", "hangMs", "message", "slowHeadersBytesPerSecond", "oversizedBytes",
               "endlessBody")
ALLOWED_KEYS = set(EFFECT_KEYS) | {"path", "match", "count", "body", "contentType", "headers", "retryAfter"}


# `{"padding":""}` is the smallest body `oversizedBytes` can shape as JSON.
MIN_OVERSIZED_BYTES = 14


class FaultError(ValueError):
    pass


@dataclass
class Fault:
    id: str
    path: str
    match: str = "prefix"
    count: int | None = None
    latency_ms: int = 0
    status: int | None = None
    body: Any = None
    content_type: str | None = None
    headers: dict = field(default_factory=dict)
    malformed: bool = False
    truncated: bool = False
    drop: bool = False
    reset_mid_body: bool = False
    trickle_bps: int | None = None
    hang_ms: int | None = None
    message: str | None = None
    retry_after: int | None = None
    slow_headers_bps: int | None = None
    oversized_bytes: int | None = None
    endless_body: bool = False
    hits: int = 0

    def matches(self, path: str) -> bool:
        return path == self.path if self.match == "exact" else path.startswith(self.path)

    @property
    def replaces_response(self) -> bool:
        return bool(self.drop or self.hang_ms or self.malformed or self.status is not None or self.message is not None
                    or self.oversized_bytes or self.endless_body)

    def describe(self) -> dict:
        out: dict[str, Any] = {"id": self.id, "path": self.path, "match": self.match, "hits": self.hits}
        if self.count is not None:
            out["count"] = self.count
        for key, value in (("latencyMs", self.latency_ms or None), ("status", self.status), ("body", self.body),
                           ("contentType", self.content_type), ("headers", self.headers or None),
                           ("malformed", self.malformed or None), ("truncated", self.truncated or None),
                           ("drop", self.drop or None), ("resetMidBody", self.reset_mid_body or None),
                           ("trickleBytesPerSecond", self.trickle_bps), ("hangMs", self.hang_ms),
                           ("message", self.message), ("retryAfter", self.retry_after),
                           ("slowHeadersBytesPerSecond", self.slow_headers_bps),
                           ("oversizedBytes", self.oversized_bytes), ("endlessBody", self.endless_body or None)):
            if value is not None:
                out[key] = value
        return out


def _int(spec: dict, key: str, minimum: int = 0) -> int | None:
    if key not in spec or spec[key] is None:
        return None
    value = spec[key]
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise FaultError(f"{key} must be an integer >= {minimum}")
    return value


def _bool(spec: dict, key: str) -> bool:
    value = spec.get(key, False)
    if not isinstance(value, bool):
        raise FaultError(f"{key} must be a boolean")
    return value


class FaultStore:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._faults: list[Fault] = []
        self._ids = itertools.count(1)

    def add(self, spec: Any) -> Fault:
        if not isinstance(spec, dict):
            raise FaultError("fault must be a JSON object")
        unknown = set(spec) - ALLOWED_KEYS
        if unknown:
            raise FaultError(f"unknown fault fields: {', '.join(sorted(unknown))}")
        path = spec.get("path")
        if not isinstance(path, str) or not path.startswith("/"):
            raise FaultError("path must be a string starting with /")
        match = spec.get("match", "prefix")
        if match not in ("prefix", "exact"):
            raise FaultError("match must be 'prefix' or 'exact'")
        if not any(spec.get(k) not in (None, False, 0) for k in EFFECT_KEYS):
            raise FaultError(f"a fault needs at least one of: {', '.join(EFFECT_KEYS)}")
        status = _int(spec, "status", 100)
        if status is not None and status > 599:
            raise FaultError("status must be 100..599")
        message = spec.get("message")
        if message is not None and not isinstance(message, str):
            raise FaultError("message must be a string")
        content_type = spec.get("contentType")
        if content_type is not None and not isinstance(content_type, str):
            raise FaultError("contentType must be a string")
        headers = spec.get("headers") or {}
        if not isinstance(headers, dict) or \
                not all(isinstance(k, str) and isinstance(v, (str, int)) for k, v in headers.items()):
            raise FaultError("headers must be an object of strings")
        fault = Fault(
            id=f"f{next(self._ids)}",
            path=path,
            match=match,
            count=_int(spec, "count", 1),
            latency_ms=_int(spec, "latencyMs") or 0,
            status=status,
            body=spec.get("body"),
            content_type=content_type,
            headers={k: str(v) for k, v in headers.items()},
            malformed=_bool(spec, "malformed"),
            truncated=_bool(spec, "truncated"),
            drop=_bool(spec, "drop"),
            reset_mid_body=_bool(spec, "resetMidBody"),
            trickle_bps=_int(spec, "trickleBytesPerSecond", 1),
            hang_ms=_int(spec, "hangMs", 1),
            message=message,
            retry_after=_int(spec, "retryAfter"),
            slow_headers_bps=_int(spec, "slowHeadersBytesPerSecond", 1),
            oversized_bytes=_int(spec, "oversizedBytes", MIN_OVERSIZED_BYTES),
            endless_body=_bool(spec, "endlessBody"),
        )
        with self._lock:
            self._faults.append(fault)
        return fault

    def take(self, path: str) -> Fault | None:
        """The first fault matching `path`, consuming one use of a count-limited fault."""
        with self._lock:
            for fault in self._faults:
                if fault.matches(path):
                    fault.hits += 1
                    if fault.count is not None:
                        fault.count -= 1
                        if fault.count <= 0:
                            self._faults.remove(fault)
                    return fault
        return None

    def remove(self, fault_id: str) -> bool:
        with self._lock:
            for fault in self._faults:
                if fault.id == fault_id:
                    self._faults.remove(fault)
                    return True
        return False

    def clear(self) -> int:
        with self._lock:
            n = len(self._faults)
            self._faults.clear()
            return n

    def describe(self) -> list[dict]:
        with self._lock:
            return [f.describe() for f in self._faults]

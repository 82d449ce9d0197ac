"""The simulator's one clock: the real world's time as the services see it.

The agent under test runs on the same machine as the simulator, so "the box's clock is wrong" is
played the other way round: the real time (this clock) is elsewhere, by an offset added to the
machine's clock. Everything the services date (the `Date` header, Adobe Pass `notBefore`/`notAfter`,
token expiry, the request log, notification checks) reads this clock. Durations (timeouts, latency,
rate-limit windows) use the monotonic clock and are not affected.
"""

from __future__ import annotations

import math
import threading
import time
from email.utils import formatdate

# The simulator's now must stay a date an HTTP `Date` header can carry (RFC 9110 IMF-fixdate: years
# 1970..9999 here, as the header is made from epoch seconds).
MIN_NOW_MS = 0
MAX_NOW_MS = 253402300799999  # 9999-12-31T23:59:59.999Z


class ClockError(ValueError):
    pass


class Clock:
    def __init__(self, offset_ms: int = 0):
        self._lock = threading.Lock()
        self._offset_ms = 0
        self.set_offset(offset_ms)

    @property
    def offset_ms(self) -> int:
        with self._lock:
            return self._offset_ms

    def now_ms(self) -> float:
        """Milliseconds since the epoch, as the simulated services see it."""
        with self._lock:
            return time.time() * 1000.0 + self._offset_ms

    def http_date(self) -> str:
        """The `Date` header value for now (IMF-fixdate)."""
        return formatdate(self.now_ms() / 1000.0, usegmt=True)

    def set_offset(self, offset_ms: int) -> None:
        """Raises ClockError (nothing changed) when now would leave the range a `Date` header can carry."""
        now = time.time() * 1000.0 + offset_ms
        if not MIN_NOW_MS <= now <= MAX_NOW_MS:
            raise ClockError(f"offsetMs {offset_ms} puts the simulator's time outside 1970-01-01..9999-12-31")
        with self._lock:
            self._offset_ms = offset_ms

    def set_now(self, now_ms: int) -> None:
        """Sets the offset so that the simulator's now is `now_ms` (epoch milliseconds)."""
        if not MIN_NOW_MS <= now_ms <= MAX_NOW_MS:
            raise ClockError(f"now {now_ms} is outside 1970-01-01..9999-12-31 (epoch milliseconds)")
        # Rounded up: the clock reads `now_ms` at the earliest, never a moment before it (offsets are whole ms).
        self.set_offset(math.ceil(now_ms - time.time() * 1000.0))

    def describe(self) -> dict:
        with self._lock:
            offset = self._offset_ms
        now = time.time() * 1000.0 + offset
        return {"nowMs": int(now), "offsetMs": offset, "date": formatdate(now / 1000.0, usegmt=True)}

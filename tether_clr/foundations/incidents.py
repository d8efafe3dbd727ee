"""Logging an infrastructure incident once, not once per request.

A database restart fails every request for a while: a server that logged a
traceback for each of them would write megabytes of the same text and bury the
one line an operator needs. :class:`IncidentLog` logs the first failure of an
incident with its cause (and its traceback), then at most one summary line per
``interval`` seconds while the failures go on, and one line when the next
success ends the incident. Descriptions are cut to a bounded length, so what a
failure's message carries (never trusted) cannot grow the log without bound.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from tether_clr.foundations.text import describe_exception

__all__ = ["IncidentLog", "RateLimitFilter", "rate_limit_logger"]

_MAX_DESCRIPTION = 500


def _describe(exc: BaseException) -> str:
    text = describe_exception(exc)
    return text if len(text) <= _MAX_DESCRIPTION else text[:_MAX_DESCRIPTION] + "..."


class IncidentLog:
    """``IncidentLog(logger, what, *, interval=30.0)``: one incident's lines in ``logger``.

    :meth:`failed` on each failure: the first of an incident is logged at ERROR
    with its traceback; later ones are counted and summed up at WARNING at most
    once per ``interval`` seconds (no traceback). :meth:`recovered` on a success:
    it ends an open incident with one WARNING line (and costs a flag check
    otherwise), once ``settle`` seconds have passed since the last failure (default
    0: at once), so failures interleaved with successes stay one incident. Thread-safe: stores fail on worker threads, servers on their
    event loops.
    """

    def __init__(
        self, logger: logging.Logger, what: str, *, interval: float = 30.0, settle: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if isinstance(interval, bool) or not isinstance(interval, int | float) or not interval > 0:
            raise ValueError(f"interval must be a positive number of seconds, got {interval!r}")
        if isinstance(settle, bool) or not isinstance(settle, int | float) or not settle >= 0:
            raise ValueError(f"settle must be a non-negative number of seconds, got {settle!r}")
        self.settle = float(settle)
        self._last_failure = 0.0
        self.logger = logger
        self.what = what
        self.interval = float(interval)
        self._clock = clock
        self._lock = threading.Lock()
        self._open = False
        self._started = 0.0
        self._last_line = 0.0
        self._failures = 0
        self._unreported = 0

    @property
    def open(self) -> bool:
        """Whether an incident is going on (a failure with no success since)."""
        return self._open

    def failed(self, exc: BaseException) -> None:
        """Count a failure; log it if it starts an incident or a summary is due."""
        now = self._clock()
        with self._lock:
            self._failures += 1
            self._last_failure = now
            if not self._open:
                self._open, self._started, self._last_line, self._failures, self._unreported = True, now, now, 1, 0
                first = True
            else:
                self._unreported += 1
                first = False
                if now - self._last_line < self.interval:
                    return
                count, self._unreported, self._last_line = self._unreported, 0, now
                elapsed = now - self._started
        if first:
            self.logger.error("%s: %s (further failures are summed up every %gs)", self.what, _describe(exc),
                              self.interval, exc_info=exc)  # fmt: skip
        else:
            self.logger.warning("%s: still failing: %d more failure(s), %.0fs since the first; last: %s",
                                self.what, count, elapsed, _describe(exc))  # fmt: skip

    def recovered(self) -> None:
        """End the incident, if one is open, with one line."""
        if not self._open:
            return
        now = self._clock()
        with self._lock:
            if not self._open or now - self._last_failure < self.settle:
                return  # failures and successes interleave (one client failing among others): still one incident
            self._open = False
            failures, elapsed = self._failures, now - self._started
        self.logger.warning("%s: recovered after %d failure(s) over %.1fs", self.what, failures, elapsed)


class RateLimitFilter(logging.Filter):
    """A logging filter for a library's own lines that repeat through an outage (psycopg_pool logs every
    failed reconnection): each message template passes once, then at most once per ``interval`` seconds,
    saying how many like it were dropped since. Thread-safe; keeps one entry per template."""

    def __init__(self, interval: float = 30.0, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        if isinstance(interval, bool) or not isinstance(interval, int | float) or not interval > 0:
            raise ValueError(f"interval must be a positive number of seconds, got {interval!r}")
        self.interval = float(interval)
        self._clock = clock
        self._lock = threading.Lock()
        self._seen: dict[str, list[float | int]] = {}  # template -> [last passed at, dropped since]

    def filter(self, record: logging.LogRecord) -> bool:
        key = str(record.msg)[:200]
        now = self._clock()
        with self._lock:
            seen = self._seen.get(key)
            if seen is None:
                if len(self._seen) >= 1000:  # a bounded table, whatever a library logs
                    self._seen.clear()
                self._seen[key] = [now, 0]
                return True
            if now - seen[0] < self.interval:
                seen[1] += 1
                return False
            dropped, seen[0], seen[1] = int(seen[1]), now, 0
        if dropped:  # no "%" in the added text: the record's own args still format it
            record.msg = f"{record.msg} [{dropped} more like this in the last {self.interval:g}s]"
        return True


_limited: set[str] = set()
_limited_lock = threading.Lock()


def rate_limit_logger(name: str, interval: float = 30.0) -> None:
    """Put a :class:`RateLimitFilter` on the logger ``name`` (once per process; later calls do nothing)."""
    with _limited_lock:
        if name in _limited:
            return
        _limited.add(name)
    logging.getLogger(name).addFilter(RateLimitFilter(interval))

"""Transient database faults: which are retried, for how long, and what a caller gets when they last.

Both session stores and both control stores run every operation through
:func:`run_with_retries`. A fault is retried only when a retry cannot apply a
write twice:

* **Safe to run again**: nothing was sent, or what was sent was rolled back.
  No connection could be had (the pool's bounded wait, a refused connect,
  ``57P03`` cannot connect now), the connection was lost or the server shut
  down (``08xxx``, ``57P01``, ``57P02``) *before* the commit was sent (the
  server rolls an unfinished transaction back), a serialization failure
  (``40001``) or deadlock (``40P01``), which roll the transaction back, and a
  locked or busy SQLite file (nothing is committed while it is locked).
* **Outcome unknown**: the connection was lost while the commit (or, in
  autocommit mode, the one statement that is its own transaction) was in
  flight. The store raises :class:`OutcomeUnknown` for it, and the operation is
  resolved by *reading back* whether it was applied (every write that must not
  run twice carries an id the store can look up); it is run again only if it
  was not. An operation with no read-back that is not idempotent is never run
  again: the caller gets :class:`~tether_clr.foundations.errors.StoreUnavailableError`.
* **Never retried**: everything else (constraint violations, a refused lease,
  programming errors, a cancelled statement), raised as it is.

When the retries run out (``deadline`` seconds since the first attempt, with a
backoff from ``first_delay`` doubling to ``max_delay``), the caller gets
``StoreUnavailableError`` with a fixed message, the cause chained; the failure
goes to the store's :class:`~tether_clr.foundations.incidents.IncidentLog`
(logged once per incident, then rate-limited), and the next success closes it.

No driver is imported here: psycopg's errors are recognised by their
``sqlstate`` and their classes' names, so SQLite-only installs need nothing
more.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from tether_clr.foundations.errors import StoreUnavailableError
from tether_clr.foundations.incidents import IncidentLog

__all__ = [
    "Applied",
    "OutcomeUnknown",
    "RetryPolicy",
    "STORE_UNAVAILABLE",
    "is_connection_lost",
    "is_transient",
    "run_with_retries",
]

_T = TypeVar("_T")

STORE_UNAVAILABLE = "the store cannot reach its database"
"""The fixed message of every :class:`StoreUnavailableError` the stores raise (no driver, host or SQL)."""

# Connection lost or server going away: the transaction in flight was not committed, unless its commit was sent.
_GONE = frozenset({"57P01", "57P02"})  # admin_shutdown, crash_shutdown
# Rolled back by the server, connection intact (or none made): always safe to run again.
_ROLLED_BACK = frozenset({"57P03", "40001", "40P01"})  # cannot_connect_now, serialization_failure, deadlock_detected


class OutcomeUnknown(Exception):
    """Raised by a store when the connection was lost while a commit was in flight: read back, never write twice."""


@dataclass(frozen=True)
class Applied(Generic[_T]):
    """What a read-back found: the write was applied, and this is what the operation returns."""

    value: _T


@dataclass(frozen=True)
class RetryPolicy:
    """``RetryPolicy(deadline=3.0, first_delay=0.05, max_delay=0.5)``: how long transient faults are retried.

    ``deadline``: seconds after the first attempt past which no attempt starts
    (each attempt is itself bounded by the pool's connection wait); the delay
    between attempts starts at ``first_delay`` and doubles up to ``max_delay``.
    """

    deadline: float = 3.0
    first_delay: float = 0.05
    max_delay: float = 0.5

    def __post_init__(self) -> None:
        for name in ("deadline", "first_delay", "max_delay"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
                raise ValueError(f"{name} must be a non-negative number of seconds, got {value!r}")


def _sqlstate(exc: BaseException) -> str | None:
    state = getattr(exc, "sqlstate", None)
    return state if isinstance(state, str) else None


def _is_psycopg(exc: BaseException, *names: str) -> bool:
    return any(
        cls.__module__.split(".")[0] in ("psycopg", "psycopg_pool") and cls.__name__ in names for cls in type(exc).__mro__
    )


def is_connection_lost(exc: BaseException) -> bool:
    """Whether ``exc`` says the connection broke or the server went away (what makes a commit in flight unknown)."""
    state = _sqlstate(exc)
    if state is not None:
        return state in _GONE or state.startswith("08")
    # psycopg raises OperationalError without a SQLSTATE when the socket breaks (no answer from the server).
    return _is_psycopg(exc, "OperationalError", "InterfaceError")


def is_transient(exc: BaseException) -> bool:
    """Whether ``exc`` is a fault that passes (see the module docstring); says nothing of whether a retry is safe."""
    if isinstance(exc, OutcomeUnknown):
        return True
    if isinstance(exc, sqlite3.OperationalError):
        text = str(exc).lower()
        return "locked" in text or "busy" in text
    if _is_psycopg(exc, "PoolTimeout", "TooManyRequests"):
        return True
    state = _sqlstate(exc)
    if state is not None and state in _ROLLED_BACK:
        return True
    return is_connection_lost(exc)


_UNIQUE_VIOLATION = "23505"


def _settled(read_back: Callable[[], Applied[_T] | None]) -> Applied[_T] | None:
    """One read-back that may not raise a transient fault: ``None`` (not known to be applied) when it cannot run."""
    try:
        return read_back()
    except Exception as exc:
        if is_transient(exc):
            return None
        raise


def run_with_retries(
    action: Callable[[], _T],
    *,
    incidents: IncidentLog,
    policy: RetryPolicy,
    read_back: Callable[[], Applied[_T] | None] | None = None,
    idempotent: bool = False,
    closed: Callable[[], bool] = lambda: False,
    sleep: Callable[[float], None] = time.sleep,
) -> _T:
    """Run ``action``, retrying transient faults while ``policy`` allows; :class:`StoreUnavailableError` past it.

    ``action`` raises :class:`OutcomeUnknown` when its commit's outcome is
    unknown. Then ``read_back`` (itself retried on transient faults) says
    whether it was applied: :class:`Applied` ends the operation with its value,
    ``None`` runs ``action`` again. Without ``read_back``, an ``idempotent``
    action is simply run again and any other one fails (never written twice).
    ``closed``: stop retrying once the store is closed. An unknown outcome always gets at least one
    read-back, even out of time, and an attempt that finds its write id already taken (the lost commit
    landed after a read-back looked) is read back too: an applied write is never reported as refused,
    and never written twice. While ``incidents`` is open (an earlier operation
    ran out of retries and none has succeeded since) a single attempt is made: the database is known to be
    away, so each waiting call is refused at once instead of after its own full deadline.
    """
    # While an incident is open (the last operation found the database unreachable and none has reached it
    # since) one attempt is made, not a retry loop: a queue of calls fails fast, the first success closes it.
    deadline = time.monotonic() + (0.0 if incidents.open else policy.deadline)
    delay = policy.first_delay
    unknown = False  # an attempt's commit may have been applied: read back before running it again
    was_unknown = False  # some attempt's outcome was unknown (a later attempt may collide with its write id)
    last: BaseException | None = None
    while True:
        try:
            if unknown and not idempotent:
                if read_back is None:
                    raise StoreUnavailableError(STORE_UNAVAILABLE) from last  # cannot tell: never write twice
                found = read_back()
                if found is not None:
                    incidents.recovered()
                    return found.value
                unknown = False
            result = action()
        except StoreUnavailableError as exc:
            incidents.failed(exc.__cause__ or exc)
            raise
        except Exception as exc:
            if was_unknown and read_back is not None and _sqlstate(exc) == _UNIQUE_VIOLATION:
                # The write id is taken: the attempt whose answer was lost did commit, after the read-back
                # (on another connection) looked. Its result is read back, never written a second time.
                found = _settled(read_back)
                if found is not None:
                    incidents.recovered()
                    return found.value
            if not is_transient(exc):
                raise
            last = exc
            if isinstance(exc, OutcomeUnknown):
                unknown = was_unknown = True
            remaining = deadline - time.monotonic()
            if remaining <= 0 or closed():
                incidents.failed(exc)
                if unknown and not idempotent and read_back is not None:
                    # Out of time (or failing fast in an incident), but one read-back is always made: an
                    # applied write is reported applied, not refused as if it had never happened.
                    found = _settled(read_back)
                    if found is not None:
                        return found.value
                    raise StoreUnavailableError(STORE_UNAVAILABLE + " (a write's outcome is unknown)") from exc
                raise StoreUnavailableError(STORE_UNAVAILABLE) from exc
            sleep(min(delay, remaining))
            delay = min(delay * 2, policy.max_delay)
            continue
        incidents.recovered()
        return result

"""The session log: an append-only event log per session, its stores, and crash repair.

``SqliteSessionStore(path)`` is the embedded default; ``PostgresSessionStore(dsn)``
lets several processes or hosts share one log. ``store.sink(session, turn, step)``
is the batch sink of one step; ``await store.repair(session)`` closes what a crash
left open. See README, "Session log".
"""

from .events import (
    EVENT_KINDS,
    Durability,
    SessionEvent,
    SessionLeasedError,
    call_fingerprint,
)
from .postgres import PostgresSessionStore
from .repair import INTERRUPTED, plan_repair
from .resume import CANCELLED, SessionResumer  # importing it installs it behind ToolRegistry.resume
from .sqlite import SqliteSessionStore
from .store import SessionSink, SessionStore
from .verify import log_violations

__all__ = [
    "CANCELLED",
    "Durability",
    "EVENT_KINDS",
    "INTERRUPTED",
    "PostgresSessionStore",
    "SessionEvent",
    "SessionLeasedError",
    "SessionResumer",
    "SessionSink",
    "SessionStore",
    "SqliteSessionStore",
    "call_fingerprint",
    "log_violations",
    "plan_repair",
]

"""Sinks: where a batch durably records declared calls and their outcomes.

The SQLite log is the embedded default. Because every call is recorded before
its body can start and every outcome only after the result policies passed, the
log answers the question that matters after a crash: which calls may have run
without a recorded outcome (:meth:`SqliteToolLog.pending_calls`).
"""

from __future__ import annotations

import sqlite3
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio.to_thread

from .outcomes import ToolCall, ToolExecutionOutcome, ToolFailure, ToolFailureCodes

__all__ = ["InMemoryToolLog", "LoggedCall", "SqliteToolLog"]


@dataclass(frozen=True, slots=True)
class LoggedCall:
    """A declared call as the log stored it (scopes and contexts are not persisted)."""

    call_id: str
    name: str
    arguments: str
    parent_call_id: str | None


class InMemoryToolLog:
    """A sink that keeps everything in lists; for tests and examples.

    ``events`` interleaves both kinds as ``("declared", call_id)`` and
    ``("outcome", call_id)`` so order guarantees can be checked.
    """

    def __init__(self) -> None:
        self.calls: list[ToolCall] = []
        self.outcomes: list[ToolExecutionOutcome] = []
        self.events: list[tuple[str, str]] = []

    async def call_declared(self, call: ToolCall) -> None:
        self.calls.append(call)
        self.events.append(("declared", call.call_id))

    async def outcome_ready(self, outcome: ToolExecutionOutcome) -> None:
        self.outcomes.append(outcome)
        self.events.append(("outcome", outcome.call_id))


_SCHEMA = """
CREATE TABLE IF NOT EXISTS tool_calls (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    call_id TEXT NOT NULL,
    name TEXT NOT NULL,
    arguments TEXT NOT NULL,
    parent_call_id TEXT,
    declared_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS tool_outcomes (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    call_id TEXT NOT NULL,
    name TEXT NOT NULL,
    value TEXT NOT NULL,
    failure_code TEXT,
    failure_message TEXT,
    recorded_at TEXT NOT NULL,
    failure_reason TEXT
);
CREATE INDEX IF NOT EXISTS tool_outcomes_call_id ON tool_outcomes(call_id);
"""


# Columns added after the first release; a log created before them gets them on open.
_LATER_COLUMNS: tuple[tuple[str, str, str], ...] = (("tool_outcomes", "failure_reason", "TEXT"),)


def _add_missing_columns(db: sqlite3.Connection) -> None:
    for table, column, kind in _LATER_COLUMNS:
        present = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
        if column not in present:
            db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


class SqliteToolLog:
    """A durable sink on SQLite (WAL, synchronous=FULL: a returned write survives a crash).

    Each outcome row keeps the failure code, message and ``failure_reason``
    (the machine-readable refinement, e.g. ``scope_revoked``); a log file made
    before that column existed gains it when opened.

    Writes run in a worker thread so the event loop keeps serving overlapping
    bodies while SQLite syncs to disk.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.executescript(_SCHEMA)
        _add_missing_columns(self._db)

    def _write(self, sql: str, params: tuple[Any, ...]) -> None:
        with self._lock:
            self._db.execute(sql, params)

    async def call_declared(self, call: ToolCall) -> None:
        await anyio.to_thread.run_sync(
            self._write,
            "INSERT INTO tool_calls (call_id, name, arguments, parent_call_id, declared_at) VALUES (?, ?, ?, ?, ?)",
            (call.call_id, call.name, call.arguments, call.parent_call_id, _now()),
        )

    async def outcome_ready(self, outcome: ToolExecutionOutcome) -> None:
        failure = outcome.failure
        await anyio.to_thread.run_sync(
            self._write,
            "INSERT INTO tool_outcomes (call_id, name, value, failure_code, failure_message, failure_reason, recorded_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                outcome.call_id,
                outcome.name,
                outcome.value_json,
                None if failure is None else str(failure.code),
                None if failure is None else failure.message,
                None if failure is None else failure.reason,
                _now(),
            ),
        )

    def _rows(self, sql: str) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._db.execute(sql).fetchall()

    def declared_calls(self) -> list[LoggedCall]:
        rows = self._rows("SELECT call_id, name, arguments, parent_call_id FROM tool_calls ORDER BY seq")
        return [LoggedCall(*row) for row in rows]

    def outcomes(self) -> list[ToolExecutionOutcome]:
        rows = self._rows(
            "SELECT call_id, name, value, failure_code, failure_message, failure_reason FROM tool_outcomes ORDER BY seq"
        )
        return [
            ToolExecutionOutcome(
                call_id, name, value, None if code is None else ToolFailure(ToolFailureCodes(code), message, reason)
            )
            for call_id, name, value, code, message, reason in rows
        ]

    def pending_calls(self) -> list[LoggedCall]:
        """Calls declared without a recorded outcome: after a crash, these may have run."""
        rows = self._rows(
            "SELECT c.call_id, c.name, c.arguments, c.parent_call_id FROM tool_calls c "
            "WHERE NOT EXISTS (SELECT 1 FROM tool_outcomes o WHERE o.call_id = c.call_id) ORDER BY c.seq"
        )
        return [LoggedCall(*row) for row in rows]

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> SqliteToolLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

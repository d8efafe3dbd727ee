"""Sinks: where a batch durably records declared calls and their outcomes.

The SQLite log is the embedded default. Because every call is recorded before
its body can start and every outcome only after the result policies passed, the
log answers the question that matters after a crash: which calls may have run
without a recorded outcome (:meth:`SqliteToolLog.pending_calls`).

Outcomes are paired with their own declaration, not with a call id: providers
reuse ids (``call_0``, ``call_1``...) in every step, so an id alone would let an
outcome of a later step hide a call that crashed in an earlier one. Each row
stores the :class:`~tether_clr.Declaration` (batch run and position) that
``execute_batch`` names while the sink is awaited; a row written outside a batch
(or by an older version of this library) has none and is paired by call id.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio.to_thread

from tether_clr.execution.ports import Declaration, current_declaration
from tether_clr.foundations.text import safe_text_or_value
from tether_clr.records.content import parts_from_json, parts_to_json
from tether_clr.records.outcomes import (
    ToolCall,
    ToolExecutionOutcome,
    ToolFailure,
    ToolFailureCodes,
)

__all__ = ["InMemoryToolLog", "LoggedCall", "SqliteToolLog"]

logger = logging.getLogger("tether_clr")


@dataclass(frozen=True, slots=True)
class LoggedCall:
    """A declared call as the log stored it (scopes and contexts are not persisted).

    ``batch_id`` and ``position`` identify the declaration when it was made by
    ``execute_batch``; they are None otherwise.
    """

    call_id: str
    name: str
    arguments: str
    parent_call_id: str | None
    batch_id: str | None = None
    position: int | None = None


def _pending(declared: Iterable[tuple[Declaration | None, LoggedCall]], answered: set[Declaration], answered_ids: set[str]) -> list[LoggedCall]:
    return [
        call
        for declaration, call in declared
        if (declaration not in answered if declaration is not None else call.call_id not in answered_ids)
    ]


class InMemoryToolLog:
    """A sink that keeps everything in lists; for tests and examples.

    ``events`` interleaves both kinds as ``("declared", call_id)`` and
    ``("outcome", call_id)`` so order guarantees can be checked.
    """

    def __init__(self) -> None:
        self.calls: list[ToolCall] = []
        self.outcomes: list[ToolExecutionOutcome] = []
        self.events: list[tuple[str, str]] = []
        self._declared: list[tuple[Declaration | None, LoggedCall]] = []
        self._answered: set[Declaration] = set()
        self._answered_ids: set[str] = set()

    async def call_declared(self, call: ToolCall) -> None:
        declaration = current_declaration()
        self.calls.append(call)
        self.events.append(("declared", call.call_id))
        self._declared.append((declaration, _logged(call, declaration)))

    async def outcome_ready(self, outcome: ToolExecutionOutcome) -> None:
        declaration = current_declaration()
        self.outcomes.append(outcome)
        self.events.append(("outcome", outcome.call_id))
        if declaration is None:
            self._answered_ids.add(outcome.call_id)
        else:
            self._answered.add(declaration)

    def pending_calls(self) -> list[LoggedCall]:
        """Calls declared without a recorded outcome, in declaration order (paired as the SQLite log pairs them)."""
        return _pending(self._declared, self._answered, self._answered_ids)


def _logged(call: ToolCall, declaration: Declaration | None) -> LoggedCall:
    return LoggedCall(
        call.call_id,
        call.name,
        call.arguments,
        call.parent_call_id,
        None if declaration is None else declaration.batch_id,
        None if declaration is None else declaration.index,
    )


_SCHEMA_VERSION = 4  # 2: tool_outcomes.failure_reason; 3: tool_outcomes.content; 4: tool_outcomes.attempts

_TABLES = (
    """CREATE TABLE IF NOT EXISTS tool_calls (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    call_id TEXT NOT NULL,
    name TEXT NOT NULL,
    arguments TEXT NOT NULL,
    parent_call_id TEXT,
    declared_at TEXT NOT NULL,
    batch_id TEXT,
    position INTEGER
)""",
    """CREATE TABLE IF NOT EXISTS tool_outcomes (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    call_id TEXT NOT NULL,
    name TEXT NOT NULL,
    value TEXT NOT NULL,
    failure_code TEXT,
    failure_message TEXT,
    recorded_at TEXT NOT NULL,
    batch_id TEXT,
    position INTEGER,
    failure_reason TEXT,
    content TEXT,
    attempts INTEGER
)""",
)
# Columns added after the first release: (table, column, type). An older file gets them by ALTER TABLE.
_ADDED_COLUMNS = (
    ("tool_calls", "batch_id", "TEXT"),
    ("tool_calls", "position", "INTEGER"),
    ("tool_outcomes", "batch_id", "TEXT"),
    ("tool_outcomes", "position", "INTEGER"),
    ("tool_outcomes", "failure_reason", "TEXT"),
    ("tool_outcomes", "content", "TEXT"),
    ("tool_outcomes", "attempts", "INTEGER"),
)
_INDEXES = (
    "CREATE INDEX IF NOT EXISTS tool_outcomes_call_id ON tool_outcomes(call_id)",
    "CREATE INDEX IF NOT EXISTS tool_outcomes_declaration ON tool_outcomes(batch_id, position)",
)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def retry_while_locked(action: Callable[[], None], path: str, open_timeout: float) -> None:
    """Run ``action`` (opening a SQLite file), retrying while another connection holds it locked.

    SQLite's busy timeout does not cover every step of an open (switching to
    WAL, creating tables), so concurrent openers retry here, for at most
    ``open_timeout`` seconds, then raise ``sqlite3.OperationalError``.
    """
    deadline = time.monotonic() + open_timeout
    delay = 0.005
    while True:
        try:
            action()
            return
        except sqlite3.OperationalError as exc:
            remaining = deadline - time.monotonic()
            if not _is_busy(exc):
                raise
            if remaining <= 0:
                raise sqlite3.OperationalError(
                    f"{path} stayed locked by another connection for {open_timeout} s while opening: {exc}"
                ) from exc
            logger.debug("%s is locked (%s); retrying the open", path, exc)
            time.sleep(min(delay, remaining))
            delay = min(delay * 2, 0.1)


class SqliteToolLog:
    """A durable sink on SQLite (WAL, synchronous=FULL: a returned write survives a crash).

    Each outcome row keeps the failure code, message and ``failure_reason``
    (the machine-readable refinement, e.g. ``scope_revoked``), and ``attempts``
    (how many attempts a retried call took); a log file made before those
    columns existed gains them when opened (older rows read as 1 attempt).

    Writes run in a worker thread so the event loop keeps serving overlapping
    bodies while SQLite syncs to disk.

    Opening is safe against other processes opening or writing the same file:
    switching to WAL and creating or migrating the tables are retried while the
    file is locked (SQLite's busy timeout does not cover every step of that),
    for at most ``open_timeout`` seconds (default 10), after which
    ``sqlite3.OperationalError`` is raised. ``busy_timeout`` (default 5 s) is how
    long one statement waits for another connection's lock. A file written by
    an older version is migrated in place (columns added; nothing rewritten).

    Text that is not valid Unicode is written with each lone surrogate as
    ``\\udXXX`` (see docs/hostile-input.md), so a record is never refused.
    """

    def __init__(self, path: str | Path, *, busy_timeout: float = 5.0, open_timeout: float = 10.0) -> None:
        self.path = str(path)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=busy_timeout)
        try:
            self._open(open_timeout)
        except BaseException:
            self._db.close()
            raise

    def _open(self, open_timeout: float) -> None:
        retry_while_locked(self._prepare, self.path, open_timeout)

    def _prepare(self) -> None:
        """WAL, full sync, and the current tables; in one write transaction, so concurrent openers agree."""
        db = self._db
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")
        if db.execute("PRAGMA user_version").fetchone()[0] >= _SCHEMA_VERSION:
            return
        db.execute("BEGIN IMMEDIATE")
        try:
            for statement in _TABLES:
                db.execute(statement)
            for table, column, kind in _ADDED_COLUMNS:
                columns = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
                if column not in columns:
                    db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")
            for statement in _INDEXES:
                db.execute(statement)
            db.execute(f"PRAGMA user_version = {_SCHEMA_VERSION}")
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def _write(self, sql: str, params: tuple[Any, ...]) -> None:
        with self._lock:
            self._db.execute(sql, params)

    async def call_declared(self, call: ToolCall) -> None:
        declaration = current_declaration()
        await anyio.to_thread.run_sync(
            self._write,
            "INSERT INTO tool_calls (call_id, name, arguments, parent_call_id, declared_at, batch_id, position) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                safe_text_or_value(call.call_id),
                safe_text_or_value(call.name),
                safe_text_or_value(call.arguments),
                safe_text_or_value(call.parent_call_id),
                _now(),
                None if declaration is None else declaration.batch_id,
                None if declaration is None else declaration.index,
            ),
        )

    async def outcome_ready(self, outcome: ToolExecutionOutcome) -> None:
        declaration = current_declaration()
        failure = outcome.failure
        await anyio.to_thread.run_sync(
            self._write,
            "INSERT INTO tool_outcomes (call_id, name, value, failure_code, failure_message, failure_reason, recorded_at, "
            "batch_id, position, content, attempts) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                safe_text_or_value(outcome.call_id),
                safe_text_or_value(outcome.name),
                safe_text_or_value(outcome.value_json),
                None if failure is None else str(failure.code),
                None if failure is None else safe_text_or_value(failure.message),
                None if failure is None else failure.reason,
                _now(),
                None if declaration is None else declaration.batch_id,
                None if declaration is None else declaration.index,
                None if outcome.explicit_content is None else json.dumps(parts_to_json(outcome.explicit_content)),
                outcome.attempts,
            ),
        )

    def _rows(self, sql: str) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._db.execute(sql).fetchall()

    def declared_calls(self) -> list[LoggedCall]:
        rows = self._rows("SELECT call_id, name, arguments, parent_call_id, batch_id, position FROM tool_calls ORDER BY seq")
        return [LoggedCall(*row) for row in rows]

    def outcomes(self) -> list[ToolExecutionOutcome]:
        rows = self._rows(
            "SELECT call_id, name, value, failure_code, failure_message, failure_reason, content, attempts "
            "FROM tool_outcomes ORDER BY seq"
        )
        return [
            ToolExecutionOutcome(
                call_id, name, value, None if code is None else ToolFailure(ToolFailureCodes(code), message, reason),
                None if content is None else parts_from_json(json.loads(content)), attempts or 1,
            )
            for call_id, name, value, code, message, reason, content, attempts in rows
        ]

    def pending_calls(self) -> list[LoggedCall]:
        """Calls declared without a recorded outcome, in declaration order: after a crash, these may have run.

        An outcome answers the declaration with its batch run and position; a
        declaration without them (made outside ``execute_batch``, or by an older
        version) is answered by any such outcome with its call id.
        """
        rows = self._rows(
            "SELECT c.call_id, c.name, c.arguments, c.parent_call_id, c.batch_id, c.position FROM tool_calls c "
            "WHERE NOT EXISTS (SELECT 1 FROM tool_outcomes o WHERE "
            "(c.batch_id IS NOT NULL AND o.batch_id = c.batch_id AND o.position = c.position) "
            "OR (c.batch_id IS NULL AND o.batch_id IS NULL AND o.call_id = c.call_id)) "
            "ORDER BY c.seq"
        )
        return [LoggedCall(*row) for row in rows]

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> SqliteToolLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

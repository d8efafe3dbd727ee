"""What both control stores share: the schema, the commit transaction and reading the log back.

Two tables, created by the store on first use (the same schema in SQLite and
PostgreSQL, but for the clock's column type):

* ``catalog_control_head``: one row, the last revision given out. A commit
  begins by incrementing it (``UPDATE ... RETURNING``), which in PostgreSQL
  locks the row until the transaction ends and in SQLite runs under the
  database's write lock (``BEGIN IMMEDIATE``): writers are serialized, so
  revisions are gapless and commit in revision order, and a reader that asks
  for ``revision > last_applied`` never skips one that commits later. A
  rolled-back or killed writer's increment is rolled back with it.
* ``catalog_control_changes``: one row per change (revision, kind, subject,
  logical name, version, JSON data, actor, reason, the store's clock).

The commit reads the subject's latest change *inside* the transaction and
checks the new one against it (:func:`~tether_clr.catalog.control_state.admit`),
so two writers cannot both move a version from the same status.

Commits and reads run through
:func:`~tether_clr.recording.transient.run_with_retries`: transient faults are
retried within the store's ``retry`` deadline where that is safe; a commit
whose outcome is unknown (the connection lost while it was in flight) is read
back by its write id and never committed twice; past the deadline the caller
gets :class:`~tether_clr.foundations.errors.StoreUnavailableError`.

Layer 5½ (``tether_clr.control``, above recording): it implements the
catalog's :class:`~tether_clr.catalog.control.CatalogControl` protocol.
"""

from __future__ import annotations

import json
import logging
import threading
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from tether_clr.catalog.control import ControlChange, ControlFeed, check_actor
from tether_clr.catalog.control_state import admit, decode_metadata
from tether_clr.catalog.kill_switches import KillSwitch
from tether_clr.foundations.incidents import IncidentLog
from tether_clr.recording.transient import Applied, RetryPolicy, run_with_retries

__all__ = ["CHANNEL", "Execute", "SqlCatalogControl", "change_from_row", "schema"]

logger = logging.getLogger("tether_clr")

CHANNEL = "tether_catalog_control"
"""The PostgreSQL notification channel a commit notifies (payload: the revision)."""

Execute = Callable[[str, tuple[Any, ...]], list[tuple[Any, ...]]]
"""Runs one statement (``?`` placeholders) in the current transaction; returns the fetched rows."""

_COLUMNS = "revision, kind, logical_name, version, data, actor, reason, at"
SELECT_CHANGES = f"SELECT {_COLUMNS} FROM catalog_control_changes WHERE revision > ? ORDER BY revision"
_SELECT_LATEST = f"SELECT {_COLUMNS} FROM catalog_control_changes WHERE subject = ? ORDER BY revision DESC LIMIT 1"
_NEXT_REVISION = "UPDATE catalog_control_head SET revision = revision + 1 WHERE id = 1 RETURNING revision"


def schema(real: str) -> tuple[str, ...]:
    """The DDL, with the dialect's floating-point type for the clock column."""
    return (
        "CREATE TABLE IF NOT EXISTS catalog_control_head (id INTEGER PRIMARY KEY CHECK (id = 1), revision BIGINT NOT NULL)",
        "INSERT INTO catalog_control_head (id, revision) VALUES (1, 0) ON CONFLICT (id) DO NOTHING",
        "CREATE TABLE IF NOT EXISTS catalog_control_changes ("
        " revision BIGINT PRIMARY KEY, kind TEXT NOT NULL, subject TEXT NOT NULL, logical_name TEXT NOT NULL,"
        f" version TEXT, data TEXT NOT NULL, actor TEXT NOT NULL, reason TEXT NOT NULL, at {real} NOT NULL)",
        "CREATE INDEX IF NOT EXISTS catalog_control_by_subject ON catalog_control_changes (subject, revision)",
    )


def change_from_row(row: Sequence[Any]) -> ControlChange:
    """One ``catalog_control_changes`` row (in :data:`_COLUMNS` order) as a committed change."""
    revision, kind, logical_name, version, data, actor, reason, at = row
    return ControlChange(kind, logical_name, version, json.loads(data), actor, reason, int(revision), float(at))


def _check_data(change: ControlChange) -> None:
    """Refuse data no host could apply, or an actor :func:`~tether_clr.catalog.control.check_actor` refuses,
    before it is written (``ValueError``)."""
    check_actor(change.actor)
    try:
        if change.kind == "metadata":
            decode_metadata(change.data["changes"])
        elif change.kind == "kill":
            KillSwitch.from_json(change.data["switch"])
        elif change.kind == "pin" and change.version is None:
            raise ValueError("a pin names the version it pins")
    except (KeyError, TypeError) as exc:
        raise ValueError(f"malformed {change.kind} change: {exc!r}") from exc


class _NoChange(Exception):
    """Raised inside a commit's transaction to roll it back: the change changes nothing."""


class SqlCatalogControl(ABC):
    """The shared part of :class:`~tether_clr.PostgresCatalogControl` and :class:`~tether_clr.SqliteCatalogControl`.

    Safe from any thread: SQLite has one connection behind a lock, PostgreSQL a
    pool; each :meth:`feed` opens its own. ``retry``: how long transient faults
    are retried (:class:`~tether_clr.recording.transient.RetryPolicy`).
    ``close()`` closes the store's connection(s).
    """

    _NOW: str  # SQL for the store's clock, in seconds since the epoch

    def __init__(self, *, retry: RetryPolicy | None = None) -> None:
        self._lock = threading.Lock()
        self._closed = False
        self.retry = retry if retry is not None else RetryPolicy()
        self._incidents = IncidentLog(logger, "control store")
        self._local = threading.local()  # the write id of the commit this thread runs

    # ------------------------------------------------------------- dialect
    @abstractmethod
    def _transaction(self) -> AbstractContextManager[Execute]:
        """One write transaction: commits on exit, rolls back on an exception."""

    @abstractmethod
    def _read(self, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        """One read, outside any write transaction."""

    @abstractmethod
    def _notify(self, execute: Execute, revision: int) -> None:
        """Wake the feeds when the transaction commits (PostgreSQL's NOTIFY; nothing for SQLite)."""

    @abstractmethod
    def feed(self) -> ControlFeed: ...

    @abstractmethod
    def _close_connection(self) -> None: ...

    def _inserted(self, execute: Execute, change: ControlChange) -> None:
        """Called inside the commit's transaction after the row is inserted, before it commits (a seam for crash tests)."""

    def _serialized(self) -> AbstractContextManager[Any]:
        """What an operation holds besides its connection: the store's lock (SQLite's one connection); a pool's
        dialect returns a null context."""
        return self._lock

    def _read_back(self, write_id: str) -> Applied[ControlChange | None] | None:
        """The change the commit ``write_id`` applied, after its outcome was unknown; None: it was not applied.

        Only a dialect whose commits can have an unknown outcome records write ids (PostgreSQL); this
        default cannot tell, and the commit then fails rather than risk committing twice.
        """
        return None

    def _write_id(self) -> str | None:
        found: str | None = getattr(self._local, "write_id", None)
        return found

    # ------------------------------------------------------------- the log
    def commit(self, change: ControlChange) -> ControlChange | None:
        """Commit ``change`` in one transaction and return it with its revision and time; ``None`` if it changes nothing.

        ``ValueError`` (nothing written) when it cannot follow the subject's
        latest committed change, or carries data no host could apply.
        """
        if not isinstance(change, ControlChange):
            raise TypeError(f"change must be a ControlChange, got {type(change).__name__}")
        _check_data(change)
        write_id = uuid.uuid4().hex

        def attempt() -> ControlChange | None:
            self._local.write_id = write_id
            try:
                return self._commit_once(change)
            finally:
                self._local.write_id = None

        return run_with_retries(
            attempt, incidents=self._incidents, policy=self.retry, read_back=lambda: self._read_back(write_id),
            closed=lambda: self._closed,
        )

    def _commit_once(self, change: ControlChange) -> ControlChange | None:
        with self._held():
            try:
                with self._transaction() as execute:
                    revision = int(execute(_NEXT_REVISION, ())[0][0])
                    found = execute(_SELECT_LATEST, (change.subject,))
                    if not admit(change, change_from_row(found[0]) if found else None):
                        raise _NoChange
                    row = execute(
                        "INSERT INTO catalog_control_changes (revision, kind, subject, logical_name, version, data, actor,"
                        f" reason, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, {self._NOW}) RETURNING at",
                        (revision, change.kind, change.subject, change.logical_name, change.version, change.data_json,
                         change.actor, change.reason),
                    )  # fmt: skip
                    self._notify(execute, revision)
                    self._inserted(execute, change)
            except _NoChange:
                return None
        return change.committed(revision, float(row[0][0]))

    def changes(self, after: int = 0) -> list[ControlChange]:
        """Every committed change with ``revision > after``, in revision order."""
        def attempt() -> list[tuple[Any, ...]]:
            with self._held():
                return self._read(SELECT_CHANGES, (int(after),))

        rows = run_with_retries(
            attempt, incidents=self._incidents, policy=self.retry, idempotent=True, closed=lambda: self._closed
        )
        return [change_from_row(row) for row in rows]

    @contextmanager
    def _held(self) -> Iterator[None]:
        """The store's lock (SQLite) or nothing (a pool), refusing a closed store."""
        with self._serialized():
            if self._closed:
                raise RuntimeError("the control store is closed")
            yield

    def close(self) -> None:
        """Close the store's connection (feeds close on their own); idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._close_connection()

    def __enter__(self) -> SqlCatalogControl:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

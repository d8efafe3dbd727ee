"""The control store for several processes of one machine: one SQLite file, WAL.

Writers are serialized by SQLite's write lock (every commit is ``BEGIN
IMMEDIATE``); each feed is its own connection and polls (SQLite has no
notifications), so a change reaches an attached host within its poll
interval, a quarter of its ``max_staleness``. Several hosts need
:class:`~tether_clr.PostgresCatalogControl`.
"""

from __future__ import annotations

import sqlite3
import threading
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from tether_clr.catalog.control import ControlChange
from tether_clr.control.sql import SELECT_CHANGES, Execute, SqlCatalogControl, change_from_row, schema
from tether_clr.recording.sqlite_wal import immediate_transaction, prepare_wal
from tether_clr.recording.tool_log import retry_while_locked

__all__ = ["SqliteCatalogControl"]

_SCHEMA = schema("REAL")


def _connect(path: str, busy_timeout: float) -> sqlite3.Connection:
    return sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=busy_timeout)


class SqliteCatalogControl(SqlCatalogControl):
    """``SqliteCatalogControl(path, *, busy_timeout=5.0, open_timeout=10.0)``: the control log in a SQLite file.

    Commits are ``synchronous=FULL`` (a committed change survives power loss).
    Opening retries while another process holds the file locked, for at most
    ``open_timeout`` seconds.
    """

    _NOW = "((julianday('now') - 2440587.5) * 86400.0)"

    def __init__(self, path: str | Path, *, busy_timeout: float = 5.0, open_timeout: float = 10.0) -> None:
        super().__init__()
        self.path = str(path)
        self._busy_timeout = busy_timeout
        self._db = _connect(self.path, busy_timeout)
        try:
            retry_while_locked(self._prepare, self.path, open_timeout)
        except BaseException:
            self._db.close()
            raise

    def _prepare(self) -> None:
        prepare_wal(self._db, "FULL", _SCHEMA)

    def _transaction(self) -> AbstractContextManager[Execute]:
        return immediate_transaction(self._db)

    def _read(self, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        return self._db.execute(sql, params).fetchall()

    def _notify(self, execute: Execute, revision: int) -> None:
        """SQLite has no notifications: feeds poll."""

    def feed(self) -> SqliteFeed:
        return SqliteFeed(self.path, self._busy_timeout)

    def _close_connection(self) -> None:
        self._db.close()

    def __repr__(self) -> str:
        return f"SqliteCatalogControl({self.path!r})"


class SqliteFeed:
    """One reader's connection to the file; :meth:`wait` just sleeps (``close`` wakes it)."""

    def __init__(self, path: str, busy_timeout: float) -> None:
        self._db = _connect(path, busy_timeout)
        self._closed = threading.Event()

    def changes(self, after: int) -> list[ControlChange]:
        return [change_from_row(row) for row in self._db.execute(SELECT_CHANGES, (int(after),)).fetchall()]

    def wait(self, timeout: float) -> None:
        self._closed.wait(timeout)

    def close(self) -> None:
        self._closed.set()
        self._db.close()

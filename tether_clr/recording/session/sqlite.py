"""The embedded session store: one SQLite file, WAL, one writer, group commit.

Several processes of one machine may share the file (SQLite's locks serialize
their writers; each write transaction is ``BEGIN IMMEDIATE``); several hosts
need :class:`~tether_clr.PostgresSessionStore`.
"""

from __future__ import annotations

import sqlite3
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from tether_clr.recording.session.ddl import schema
from tether_clr.recording.session.events import Durability
from tether_clr.recording.session.sql_store import Execute, SqlSessionStore
from tether_clr.recording.sqlite_wal import immediate_transaction, prepare_wal
from tether_clr.recording.tool_log import retry_while_locked

__all__ = ["SqliteSessionStore"]

_SCHEMA = schema("INTEGER PRIMARY KEY AUTOINCREMENT", "REAL")


class SqliteSessionStore(SqlSessionStore):
    """``SqliteSessionStore(path, *, lease_seconds=5, durability="full", group_commit=True)``.

    ``durability="full"`` is ``PRAGMA synchronous=FULL`` (each commit is synced
    to disk: it survives power loss); ``"process"`` is ``synchronous=NORMAL`` in
    WAL mode (a commit survives the crash of the process; the last ones may be
    lost if the machine loses power). Opening retries while another process holds
    the file locked, for at most ``open_timeout`` seconds.
    """

    _NOW = "((julianday('now') - 2440587.5) * 86400.0)"
    _FOR_UPDATE = ""  # BEGIN IMMEDIATE already holds the database's write lock

    def __init__(
        self,
        path: str | Path,
        *,
        lease_seconds: float = 5.0,
        durability: Durability = "full",
        group_commit: bool = True,
        busy_timeout: float = 5.0,
        open_timeout: float = 10.0,
    ) -> None:
        super().__init__(lease_seconds=lease_seconds, durability=durability, group_commit=group_commit)
        self.path = str(path)
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=busy_timeout)
        try:
            retry_while_locked(self._prepare, self.path, open_timeout)
        except BaseException:
            self._db.close()
            raise

    def _prepare(self) -> None:
        prepare_wal(self._db, "FULL" if self.durability == "full" else "NORMAL", _SCHEMA)

    def _transaction(self) -> AbstractContextManager[Execute]:
        return immediate_transaction(self._db)

    def _insert_many(self, sql: str, rows: list[tuple[Any, ...]]) -> None:
        self._db.executemany(sql, rows)

    def _close_connection(self) -> None:
        self._db.close()

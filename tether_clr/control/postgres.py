"""The control store for several hosts: PostgreSQL through psycopg 3, with LISTEN/NOTIFY.

A commit is one transaction on the store's connection; it ends with
``pg_notify('tether_catalog_control', revision)``, which PostgreSQL delivers
to every listening connection when (and only if) the transaction commits.
Each feed (one per attached host) is its own autocommit connection that
``LISTEN``\\ s on the channel: :meth:`PostgresFeed.wait` returns on the first
notification, or after the poll interval when none comes (the fallback, and
the heartbeat that keeps a host's view fresh). The payload is never trusted:
a woken host reads ``revision > last_applied`` in order, so a lost, late,
duplicated or reordered notification changes nothing but latency.

Creating the tables is serialized by an advisory lock, so processes may open
one database at once. psycopg is the optional extra ``postgres``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tether_clr.catalog.control import ControlChange
from tether_clr.control.sql import CHANNEL, SELECT_CHANGES, Execute, SqlCatalogControl, change_from_row, schema

__all__ = ["PostgresCatalogControl"]

_SCHEMA = schema("DOUBLE PRECISION")
_PLACEHOLDER = re.compile(r"\?")


def _connect(dsn: str) -> Any:
    try:
        import psycopg
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("PostgresCatalogControl needs psycopg 3: pip install 'tether_clr[postgres]'") from exc
    return psycopg.connect(dsn, autocommit=True, connect_timeout=10)


def _pg(sql: str) -> str:
    return _PLACEHOLDER.sub("%s", sql)


class PostgresCatalogControl(SqlCatalogControl):
    """``PostgresCatalogControl(dsn)``: the control log in a PostgreSQL database (a libpq DSN or URL).

    Commits run at ``synchronous_commit=on``: a committed change is on the
    server's disk before the commit returns. A broken connection is opened
    again at the next commit or read (the one that found it broken raised).
    """

    _NOW = "extract(epoch from clock_timestamp())::float8"

    def __init__(self, dsn: str) -> None:
        super().__init__()
        self.dsn = dsn
        self._db = _connect(dsn)
        try:
            self._db.execute("SET synchronous_commit TO on")
            with self._db.transaction():
                self._db.execute("SELECT pg_advisory_xact_lock(hashtext('tether_clr.catalog_control'))")
                for statement in _SCHEMA:
                    self._db.execute(statement)
        except BaseException:
            self._db.close()
            raise

    def _connection(self) -> Any:
        """The store's connection, opened again if the last one broke (the server restarted, the network cut)."""
        if self._db.closed or self._db.broken:
            self._db.close()
            self._db = _connect(self.dsn)
            self._db.execute("SET synchronous_commit TO on")
        return self._db

    @contextmanager
    def _transaction(self) -> Iterator[Execute]:
        db = self._connection()

        def execute(sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
            cursor = db.execute(_pg(sql), params)
            return cursor.fetchall() if cursor.description is not None else []

        with db.transaction():
            yield execute

    def _read(self, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        return list(self._connection().execute(_pg(sql), params).fetchall())

    def _notify(self, execute: Execute, revision: int) -> None:
        execute("SELECT pg_notify(?, ?)", (CHANNEL, str(revision)))

    def feed(self) -> PostgresFeed:
        return PostgresFeed(self.dsn)

    def _close_connection(self) -> None:
        self._db.close()

    def __repr__(self) -> str:
        return "PostgresCatalogControl(...)"  # the DSN may hold a password


class PostgresFeed:
    """One listening connection: reads the log and waits for the channel's notifications."""

    def __init__(self, dsn: str) -> None:
        self._db = _connect(dsn)
        try:
            self._db.execute(f"LISTEN {CHANNEL}")
        except BaseException:
            self._db.close()
            raise

    def changes(self, after: int) -> list[ControlChange]:
        rows = self._db.execute(_pg(SELECT_CHANGES), (int(after),)).fetchall()
        return [change_from_row(row) for row in rows]

    def wait(self, timeout: float) -> None:
        """Return at the first notification (or one received while reading), or after ``timeout`` seconds."""
        for _ in self._db.notifies(timeout=timeout, stop_after=1):
            pass

    def close(self) -> None:
        self._db.close()

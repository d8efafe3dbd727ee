"""The shared session store: PostgreSQL through psycopg 3, for several processes or hosts.

psycopg's ``AsyncConnection`` runs only on asyncio; this library promises trio
too, so the store drives a psycopg connection from worker threads
(``anyio.to_thread``), exactly as the SQLite store does: its API is async, the
event loop never blocks on the server. Leases are timed by the server's clock,
so hosts with skewed clocks agree on when a lease runs out. psycopg is the
optional extra ``postgres`` (``pip install 'tether_clr[postgres]'``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .events import Durability
from .store import Execute, SqlSessionStore, schema

__all__ = ["PostgresSessionStore"]

_SCHEMA = schema("BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY", "DOUBLE PRECISION")

_PLACEHOLDER = re.compile(r"\?")


class PostgresSessionStore(SqlSessionStore):
    """``PostgresSessionStore(dsn, *, lease_seconds=5, durability="full", group_commit=True)``.

    ``durability="full"`` keeps ``synchronous_commit=on`` (a commit returns once
    the server flushed it to disk); ``"process"`` sets it ``off`` for this
    connection (a commit survives the crash of the writing process, which has
    handed it to the server, but the server's last commits may be lost if its
    machine fails). Creating the tables is serialized by an advisory lock, so
    processes may open one database at once.
    """

    _NOW = "extract(epoch from clock_timestamp())::float8"
    _FOR_UPDATE = " FOR UPDATE"

    def __init__(
        self, dsn: str, *, lease_seconds: float = 5.0, durability: Durability = "full", group_commit: bool = True
    ) -> None:
        super().__init__(lease_seconds=lease_seconds, durability=durability, group_commit=group_commit)
        try:
            import psycopg
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError("PostgresSessionStore needs psycopg 3: pip install 'tether_clr[postgres]'") from exc
        self._db = psycopg.connect(dsn, autocommit=True)
        try:
            self._db.execute(f"SET synchronous_commit TO {'on' if durability == 'full' else 'off'}")
            with self._db.transaction():
                self._db.execute("SELECT pg_advisory_xact_lock(hashtext('tether_clr.session_store'))")
                for statement in _SCHEMA:
                    self._db.execute(statement)
        except BaseException:
            self._db.close()
            raise

    @contextmanager
    def _transaction(self) -> Iterator[Execute]:
        db = self._db

        def execute(sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
            cursor = db.execute(_PLACEHOLDER.sub("%s", sql), params)  # type: ignore[arg-type]
            return cursor.fetchall() if cursor.description is not None else []

        with db.transaction():
            yield execute

    def _insert_many(self, sql: str, rows: list[tuple[Any, ...]]) -> None:
        if rows:
            with self._db.cursor() as cursor:
                cursor.executemany(_PLACEHOLDER.sub("%s", sql), rows)  # pipelined: one round trip

    def _close_connection(self) -> None:
        self._db.close()

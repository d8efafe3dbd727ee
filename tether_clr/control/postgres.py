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

The store's own commits and reads draw their connections from a pool
(:mod:`tether_clr.recording.pg_pool`: health-checked, bounded waits), so a
server restart costs an operation in flight a retry, never the process its
store. Each commit records a write id in ``catalog_control_writes`` in its own
transaction, so a commit whose answer was lost is read back, never committed
twice. A feed's connection is its own (a pool does not hold listening
connections); when it breaks, the attached host closes it and asks for a new
feed (:class:`~tether_clr.catalog.attachment.ControlAttachment`), going
``control_stale`` meanwhile.

Creating the tables is serialized by an advisory lock, so processes may open
one database at once. psycopg is the optional extra ``postgres``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tether_clr.catalog.control import ControlChange
from tether_clr.control.sql import CHANNEL, SELECT_CHANGES, Execute, SqlCatalogControl, change_from_row, schema
from tether_clr.recording.pg_pool import PooledStore, connect_once, open_pool, pg_sql, transaction
from tether_clr.recording.transient import Applied, RetryPolicy

__all__ = ["PostgresCatalogControl"]

_WRITES = (
    "CREATE TABLE IF NOT EXISTS catalog_control_writes (write_id TEXT PRIMARY KEY, revision BIGINT NOT NULL)"
)
_SCHEMA = (*schema("DOUBLE PRECISION"), _WRITES)
_WHAT = "PostgresCatalogControl"


class PostgresCatalogControl(PooledStore, SqlCatalogControl):
    """``PostgresCatalogControl(dsn, *, max_connections=4, connect_wait=2.0, retry=None)``: the control log in a
    PostgreSQL database (a libpq DSN or URL).

    Commits run at ``synchronous_commit=on``: a committed change is on the
    server's disk before the commit returns. ``max_connections``: the pool's
    size; ``connect_wait``: how long an operation waits for a connection before
    that attempt fails (retried within ``retry``'s deadline, then
    :class:`~tether_clr.StoreUnavailableError`). A broken connection is
    replaced by the pool; nothing needs reopening.
    """

    _NOW = "extract(epoch from clock_timestamp())::float8"

    def __init__(
        self, dsn: str, *, max_connections: int = 4, connect_wait: float = 2.0, retry: RetryPolicy | None = None
    ) -> None:
        super().__init__(retry=retry)
        self.dsn = dsn
        self._connect_wait = connect_wait
        with connect_once(dsn, connect_wait=connect_wait, what=_WHAT) as db, db.transaction():
            db.execute("SELECT pg_advisory_xact_lock(hashtext('tether_clr.catalog_control'))")
            for statement in _SCHEMA:
                db.execute(statement)
        self._pool = open_pool(
            dsn, name="tether_clr.catalog_control", max_connections=max_connections, connect_wait=connect_wait,
            synchronous_commit="on", what=_WHAT,
        )  # fmt: skip

    @contextmanager
    def _transaction(self) -> Iterator[Execute]:
        with self._pool.connection() as db, transaction(db) as execute:
            yield execute

    def _read(self, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        with self._pool.connection() as db:
            return list(db.execute(pg_sql(sql), params).fetchall())

    def _notify(self, execute: Execute, revision: int) -> None:
        """Wake the feeds at commit, and record the commit's write id (what :meth:`_read_back` looks up)."""
        execute("SELECT pg_notify(?, ?)", (CHANNEL, str(revision)))
        write_id = self._write_id()
        if write_id is not None:
            execute("INSERT INTO catalog_control_writes (write_id, revision) VALUES (?, ?)", (write_id, revision))

    def _read_back(self, write_id: str) -> Applied[ControlChange | None] | None:
        rows = self._read(
            "SELECT c.revision, c.kind, c.logical_name, c.version, c.data, c.actor, c.reason, c.at "
            "FROM catalog_control_writes w JOIN catalog_control_changes c ON c.revision = w.revision WHERE w.write_id = ?",
            (write_id,),
        )
        return Applied(change_from_row(rows[0])) if rows else None

    def feed(self) -> PostgresFeed:
        return PostgresFeed(self.dsn, self._connect_wait)

    def _close_connection(self) -> None:
        self._pool.close(timeout=1.0)

    def __repr__(self) -> str:
        return "PostgresCatalogControl(...)"  # the DSN may hold a password


class PostgresFeed:
    """One listening connection of its own: reads the log and waits for the channel's notifications.

    A feed does not reconnect: when its connection breaks, ``changes`` or
    ``wait`` raise, and the attached host closes it and asks the store for a
    new one (going ``control_stale`` if that takes longer than its bound).
    """

    def __init__(self, dsn: str, connect_wait: float = 2.0) -> None:
        self._db = connect_once(dsn, connect_wait=connect_wait, what=_WHAT)
        try:
            self._db.execute(f"LISTEN {CHANNEL}")
        except BaseException:
            self._db.close()
            raise

    def changes(self, after: int) -> list[ControlChange]:
        rows = self._db.execute(pg_sql(SELECT_CHANGES), (int(after),)).fetchall()
        return [change_from_row(row) for row in rows]

    def wait(self, timeout: float) -> None:
        """Return at the first notification (or one received while reading), or after ``timeout`` seconds."""
        for _ in self._db.notifies(timeout=timeout, stop_after=1):
            pass

    def close(self) -> None:
        self._db.close()

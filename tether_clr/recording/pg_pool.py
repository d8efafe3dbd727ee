"""The connection pool both PostgreSQL stores use: psycopg_pool, health-checked, bounded waits.

A pool (``min_size=1``, ``max_size=max_connections``) lets concurrent
operations use different connections, and replaces a connection that broke (a
server restart, a network cut) with a fresh one on the next request: nothing
needs a restart of the process. Every connection is autocommit (a store opens
its own transactions) and set up by ``configure`` (``synchronous_commit``).

**Health check.** Before a connection is handed out, :func:`_check` looks at
its socket without a round trip: an idle, healthy connection has nothing to
read, while one whose server went away has its end-of-stream or its
``FATAL`` notice waiting. Only then is the pool's own check run (an empty query),
which discards the dead connection and takes another. A connection the check
cannot see dead (a silent network partition) fails at its first use, which the
stores classify (:mod:`tether_clr.recording.transient`).

**Bounded waits.** ``connect_wait``: how long an operation waits for a
connection before it fails (``PoolTimeout``, retried by the store within its
deadline); ``connect_timeout`` bounds one connection attempt. The pool gives up
a background reconnection after ``connect_wait`` seconds and starts a new one
at the next request, so after the database returns the next operation finds a
connection within about a second, not after psycopg_pool's growing backoff.
"""

from __future__ import annotations

import re
import select
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

from tether_clr.foundations.incidents import rate_limit_logger
from tether_clr.recording.transient import OutcomeUnknown, is_connection_lost

__all__ = ["connect_once", "open_pool"]


def _check(conn: Any) -> None:
    """The pool's health check: free for a healthy idle connection, a round trip only for a suspicious one."""
    if conn.closed or conn.broken:
        raise _pool_module().PoolTimeout("the connection is closed")  # any exception discards it
    try:
        readable, _, _ = select.select([conn.fileno()], [], [], 0)
    except (OSError, ValueError):
        readable = [True]
    if readable:
        _pool_module().ConnectionPool.check_connection(conn)


def _pool_module() -> Any:
    import psycopg_pool

    return psycopg_pool


def open_pool(
    dsn: str, *, name: str, max_connections: int, connect_wait: float, synchronous_commit: str, what: str
) -> Any:
    """A new, open ``psycopg_pool.ConnectionPool`` on ``dsn`` (ImportError naming the extra without psycopg)."""
    if isinstance(max_connections, bool) or not isinstance(max_connections, int) or max_connections < 1:
        raise ValueError(f"max_connections must be a positive int, got {max_connections!r}")
    if isinstance(connect_wait, bool) or not isinstance(connect_wait, int | float) or not connect_wait > 0:
        raise ValueError(f"connect_wait must be a positive number of seconds, got {connect_wait!r}")
    try:
        import psycopg  # noqa: F401
        import psycopg_pool
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(f"{what} needs psycopg 3 and psycopg_pool: pip install 'tether_clr[postgres]'") from exc

    def configure(conn: Any) -> None:
        conn.execute(f"SET synchronous_commit TO {synchronous_commit}")

    pool = psycopg_pool.ConnectionPool(
        dsn,
        name=name,
        min_size=1,
        max_size=max_connections,
        open=False,
        kwargs={"autocommit": True, "connect_timeout": max(2, int(connect_wait + 0.999))},
        configure=configure,
        check=_check,
        timeout=connect_wait,
        reconnect_timeout=connect_wait,
    )
    # psycopg_pool logs every failed reconnection (several a second while the server is down): at most
    # one line per message every 30 s, so an outage cannot fill the server's log.
    rate_limit_logger("psycopg.pool")
    pool.open(wait=False)  # the store has connected once already (its schema); the pool fills in the background
    return pool


def connect_once(dsn: str, *, connect_wait: float, what: str) -> Any:
    """One plain autocommit connection (what a store creates its schema on): a wrong DSN raises psycopg's own error."""
    try:
        import psycopg
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(f"{what} needs psycopg 3 and psycopg_pool: pip install 'tether_clr[postgres]'") from exc
    return psycopg.connect(dsn, autocommit=True, connect_timeout=max(2, int(connect_wait + 0.999)))


_PLACEHOLDER = re.compile(r"\?")


def pg_sql(sql: str) -> str:
    """The stores' SQL (``?`` placeholders, SQLite's) as psycopg takes it (``%s``)."""
    return _PLACEHOLDER.sub("%s", sql)


@contextmanager
def transaction(db: Any) -> Iterator[Callable[[str, tuple[Any, ...]], list[tuple[Any, ...]]]]:
    """One transaction on the pooled connection ``db``, yielding ``execute(sql, params)`` (``?`` placeholders;
    the fetched rows); :class:`OutcomeUnknown` when the connection is lost while its commit is in flight."""

    def execute(sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        cursor = db.execute(pg_sql(sql), params)
        return cursor.fetchall() if cursor.description is not None else []

    committing = False
    try:
        with db.transaction():
            yield execute
            committing = True
    except Exception as exc:
        if committing and is_connection_lost(exc):
            raise OutcomeUnknown("the connection was lost while a commit was in flight") from exc
        raise


class PooledStore:
    """What both PostgreSQL stores share about their pool: ``pool`` for monitoring, and no store-wide lock
    (each operation takes a pooled connection of its own, so sessions' and hosts' writes run side by side)."""

    _pool: Any

    @property
    def pool(self) -> Any:
        """The ``psycopg_pool.ConnectionPool`` the store draws its connections from (``get_stats()`` for monitoring)."""
        return self._pool

    def _serialized(self) -> AbstractContextManager[Any]:
        return nullcontext()  # each operation has a connection of its own

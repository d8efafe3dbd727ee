"""Session stores for tests: SQLite in a folder, PostgreSQL in a throw-away schema (no pytest needed).

:func:`store_location` makes a place
for one test's store and removes it afterwards: a file path in a folder, or a
DSN whose ``search_path`` is a fresh schema, dropped with everything in it when
the block ends, so tests sharing one database never see each other's sessions.
:func:`open_session_store` opens a store there (again, from another process
too: the location is a plain string).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

from tether_clr.recording.session.postgres import PostgresSessionStore
from tether_clr.recording.session.sql_store import SqlSessionStore
from tether_clr.recording.session.sqlite import SqliteSessionStore

__all__ = ["POSTGRES_DSN_VARIABLE", "StoreKind", "open_session_store", "postgres_problem", "store_location"]

StoreKind = Literal["sqlite", "postgres"]

POSTGRES_DSN_VARIABLE = "TETHER_POSTGRES_DSN"
"""The environment variable naming the PostgreSQL server the ``postgres`` stores live on."""

_SCHEMA_PREFIX = "tether_test_"


def postgres_problem() -> str | None:
    """Why the PostgreSQL stores cannot run here (no DSN, no psycopg, no server), or None when they can."""
    dsn = os.environ.get(POSTGRES_DSN_VARIABLE)
    if not dsn:
        return f"no PostgreSQL server: set {POSTGRES_DSN_VARIABLE}"
    try:
        import psycopg
    except ImportError:
        return "PostgreSQL stores need psycopg 3: pip install 'tether_clr[postgres]'"
    try:
        psycopg.connect(dsn, connect_timeout=5).close()
    except Exception as exc:  # any failure to reach it is the reason, stated
        return f"PostgreSQL at {POSTGRES_DSN_VARIABLE} is unreachable: {exc}"
    return None


@contextmanager
def store_location(kind: StoreKind, folder: str | Path, dsn: str | None = None) -> Iterator[str]:
    """A fresh place for one store: ``folder/session.sqlite``, or a DSN on ``dsn`` (default:
    ``$TETHER_POSTGRES_DSN``) whose ``search_path`` is a new schema, dropped (cascading) on exit."""
    if kind == "sqlite":
        yield str(Path(folder) / "session.sqlite")
        return
    if kind != "postgres":
        raise ValueError(f"a store kind is 'sqlite' or 'postgres', got {kind!r}")
    dsn = dsn if dsn is not None else os.environ.get(POSTGRES_DSN_VARIABLE)
    if not dsn:
        raise RuntimeError(f"no PostgreSQL server: set {POSTGRES_DSN_VARIABLE}")
    import psycopg
    from psycopg import conninfo, sql

    schema = f"{_SCHEMA_PREFIX}{uuid.uuid4().hex[:20]}"
    options = conninfo.conninfo_to_dict(dsn).get("options")
    located = conninfo.make_conninfo(dsn, options=f"{options or ''} -c search_path={schema}".strip())
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
        try:
            yield located
        finally:
            admin.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


def open_session_store(kind: StoreKind, location: str, **options: Any) -> SqlSessionStore:
    """The store of ``kind`` at ``location`` (from :func:`store_location`); ``options`` go to its constructor."""
    if kind == "sqlite":
        return SqliteSessionStore(location, **options)
    return PostgresSessionStore(location, **options)

"""Both control stores for parametrized tests: SQLite in a temporary folder, PostgreSQL from ``$TETHER_POSTGRES_DSN``.

Every PostgreSQL case gets a schema of its own (``search_path`` in the DSN), so
each test starts from an empty control log although the database is shared.
Without a reachable server the PostgreSQL cases skip, saying why, unless
``TETHER_REQUIRE_POSTGRES=1`` (see :mod:`tests.support.session_stores`).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tether_clr.control.sql import SqlCatalogControl

from tests.support.session_stores import postgres_dsn
from tether_clr import PostgresCatalogControl, SqliteCatalogControl

STORES = ["sqlite", "postgres"]


@contextmanager
def control_spec(kind: str, tmp_path: Path) -> Iterator[str]:
    """What a process needs to open one fresh control store: a file path, or a DSN with its own schema."""
    if kind == "sqlite":
        yield str(tmp_path / "control.sqlite")
        return
    import psycopg
    from psycopg.conninfo import make_conninfo

    base = postgres_dsn()
    schema = f"ctl_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(base, autocommit=True) as db:
        db.execute(f"CREATE SCHEMA {schema}")
    try:
        yield make_conninfo(base, options=f"-c search_path={schema}")
    finally:
        with psycopg.connect(base, autocommit=True) as db:
            db.execute(f"DROP SCHEMA {schema} CASCADE")


def open_control(kind: str, spec: str) -> SqlCatalogControl:
    if kind == "sqlite":
        return SqliteCatalogControl(spec)
    return PostgresCatalogControl(spec)

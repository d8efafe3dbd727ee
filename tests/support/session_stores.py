"""Both session stores for parametrized tests: SQLite in a temporary folder, PostgreSQL from ``$TETHER_POSTGRES_DSN``.

The fixtures (``kind``, ``spec``, ``store``) are in ``tests/recording/session/conftest.py``.

Without a reachable server the PostgreSQL cases skip, saying why, unless
``TETHER_REQUIRE_POSTGRES=1`` (CI), where they fail.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

import pytest
from tether_clr.recording.session.sql_store import SqlSessionStore

from tether_clr import PostgresSessionStore, SqliteSessionStore

STORES = ["sqlite", "postgres"]


def postgres_dsn() -> str:
    """The DSN of the test server, or skip (fail under TETHER_REQUIRE_POSTGRES=1) saying why."""
    dsn = os.environ.get("TETHER_POSTGRES_DSN")
    reason = None
    if not dsn:
        reason = "no PostgreSQL server: set TETHER_POSTGRES_DSN (./tasks.sh test and .ci/run start one)"
    else:
        try:
            import psycopg

            psycopg.connect(dsn, connect_timeout=5).close()
        except Exception as exc:  # any failure to reach it is a reason to skip, stated
            reason = f"PostgreSQL at TETHER_POSTGRES_DSN is unreachable: {exc}"
    if reason is not None:
        if os.environ.get("TETHER_REQUIRE_POSTGRES") == "1":
            pytest.fail(f"TETHER_REQUIRE_POSTGRES=1 but {reason}")
        pytest.skip(reason)
    assert dsn is not None
    return dsn


def store_spec(kind: str, tmp_path: Path) -> str:
    """What a child process needs to open the same store: a file path or a DSN."""
    return str(tmp_path / "session.sqlite") if kind == "sqlite" else postgres_dsn()


def open_store(kind: str, spec: str, **options: Any) -> SqlSessionStore:
    if kind == "sqlite":
        return SqliteSessionStore(spec, **options)
    return PostgresSessionStore(spec, **options)


def new_session() -> str:
    """A fresh session id: the PostgreSQL database is shared by every test."""
    return f"s-{uuid.uuid4().hex}"


def expire_lease(store: SqlSessionStore, session_id: str) -> None:
    """Let the session's lease run out now, as it would ``lease_seconds`` after its writer died."""
    with store._write() as execute:
        execute("UPDATE session_leases SET expires = 0 WHERE session_id = ?", (session_id,))

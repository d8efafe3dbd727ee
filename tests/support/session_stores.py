"""The session stores of the tests, on the test kit (``tether_clr.testing.stores``).

The fixtures (``kind``, ``spec``, ``store``) are in ``tests/recording/session/conftest.py``,
aliases of the kit's ``session_store_kind``, ``session_store_location`` and ``session_store``:
SQLite in a temporary folder, PostgreSQL (when ``$TETHER_POSTGRES_DSN`` is set) in a throw-away
schema per test. Without a reachable server the PostgreSQL cases skip, saying why, unless
``TETHER_REQUIRE_POSTGRES=1`` (CI), where they fail.
"""

from __future__ import annotations

import uuid
from typing import Any

from tether_clr.recording.session.sql_store import SqlSessionStore
from tether_clr.testing.plugin import postgres_dsn_or_skip as postgres_dsn
from tether_clr.testing.stores import open_session_store

__all__ = ["expire_lease", "new_session", "open_store", "postgres_dsn"]


def open_store(kind: str, spec: str, **options: Any) -> SqlSessionStore:
    """The store of ``kind`` at ``spec`` (a file path or a DSN), as a child process opens it again."""
    return open_session_store(kind, spec, **options)  # type: ignore[arg-type]


def new_session() -> str:
    """A fresh session id, for tests that open several sessions in one store."""
    return f"s-{uuid.uuid4().hex}"


def expire_lease(store: SqlSessionStore, session_id: str) -> None:
    """Let the session's lease run out now, as it would ``lease_seconds`` after its writer died."""
    with store._write() as execute:
        execute("UPDATE session_leases SET expires = 0 WHERE session_id = ?", (session_id,))

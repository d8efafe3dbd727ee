"""Fixtures of the session tests, on the test kit's (tether_clr.testing.plugin): each test that takes
``store`` (or ``kind``, ``spec``) runs once per store: SQLite in ``tmp_path``, and PostgreSQL in a
throw-away schema when ``TETHER_POSTGRES_DSN`` is set.

The short names stay because these tests read better with them: ``kind`` is the kit's
``session_store_kind``, ``spec`` its ``session_store_location`` (what a child process opens the
same store from), ``store`` its ``session_store``.
"""

from __future__ import annotations

import pytest
from tether_clr.recording.session.sql_store import SqlSessionStore


@pytest.fixture
def kind(session_store_kind: str) -> str:
    return session_store_kind


@pytest.fixture
def spec(session_store_location: str) -> str:
    return session_store_location


@pytest.fixture
def store(session_store: SqlSessionStore) -> SqlSessionStore:
    return session_store

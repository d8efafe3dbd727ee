"""Fixtures of the session tests: each test that takes ``store`` runs once per store (SQLite, PostgreSQL)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tether_clr.recording.session.sql_store import SqlSessionStore

from tests.support.session_stores import STORES, open_store, store_spec


@pytest.fixture(params=STORES)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def spec(kind: str, tmp_path: Path) -> str:
    return store_spec(kind, tmp_path)


@pytest.fixture
def store(kind: str, spec: str) -> Iterator[SqlSessionStore]:
    with open_store(kind, spec) as opened:
        yield opened

"""Fixtures of the control-plane tests: ``kind`` runs a test once per store (SQLite, PostgreSQL); ``spec`` is a
fresh store of that kind (a file path or a DSN with its own schema); ``control`` is one open connection to it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tether_clr.control.sql import SqlCatalogControl

from tests.support.control_stores import STORES, control_spec, open_control


@pytest.fixture(params=STORES)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def spec(kind: str, tmp_path: Path) -> Iterator[str]:
    with control_spec(kind, tmp_path) as found:
        yield found


@pytest.fixture
def control(kind: str, spec: str) -> Iterator[SqlCatalogControl]:
    with open_control(kind, spec) as opened:
        yield opened

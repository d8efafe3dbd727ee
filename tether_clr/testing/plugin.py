"""The pytest plugin of ``tether_clr[testing]``, loaded by pytest through the ``pytest11`` entry point.

Fixtures (each a plain, synchronous fixture, so it works under the anyio pytest
plugin with either backend):

* ``tether_registry``: a fresh :class:`~tether_clr.testing.KitRegistry` (a registry and its root scope);
* ``session_store``: a session store of its own, SQLite in ``tmp_path``, and
  PostgreSQL as well when ``TETHER_POSTGRES_DSN`` is set (the test runs once
  per store), in a throw-away schema dropped after the test;
  ``session_store_kind`` (``"sqlite"`` / ``"postgres"``) and
  ``session_store_location`` (the file path or the DSN naming the schema, to
  open the same store again, from a child process say) come with it;
* ``recording_sink``: a :class:`~tether_clr.testing.RecordingSink`;
* ``scripted_approvals``: a :class:`~tether_clr.testing.ScriptedApprovals` with no script yet
  (``scripted_approvals.script({...})``); it rejects what it was not told to answer.

A PostgreSQL store that cannot run (no server, no psycopg) skips its test,
saying why, unless ``TETHER_REQUIRE_POSTGRES=1``, where it fails. This module
imports the kit only inside the fixtures, so loading the plugin costs a run
that uses none of them nothing.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tether_clr.recording.session.sql_store import SqlSessionStore
    from tether_clr.testing.approvals import ScriptedApprovals
    from tether_clr.testing.harness import KitRegistry
    from tether_clr.testing.sinks import RecordingSink
    from tether_clr.testing.stores import StoreKind


def _kinds() -> list[str]:
    wanted = bool(os.environ.get("TETHER_POSTGRES_DSN")) or os.environ.get("TETHER_REQUIRE_POSTGRES") == "1"
    return ["sqlite", "postgres"] if wanted else ["sqlite"]


def postgres_dsn_or_skip() -> str:
    """``$TETHER_POSTGRES_DSN`` when its server can be used; else skip the test saying why
    (fail it under ``TETHER_REQUIRE_POSTGRES=1``)."""
    from tether_clr.testing.stores import postgres_problem

    problem = postgres_problem()
    if problem is not None:
        if os.environ.get("TETHER_REQUIRE_POSTGRES") == "1":
            pytest.fail(f"TETHER_REQUIRE_POSTGRES=1 but {problem}")
        pytest.skip(problem)
    return os.environ["TETHER_POSTGRES_DSN"]


@pytest.fixture
def tether_registry() -> KitRegistry:
    """A fresh registry and its root scope (session ``test-session``, owner ``tester``)."""
    from tether_clr.testing.harness import KitRegistry

    return KitRegistry()


@pytest.fixture(params=_kinds())
def session_store_kind(request: pytest.FixtureRequest) -> StoreKind:
    """``"sqlite"``, and ``"postgres"`` too when ``TETHER_POSTGRES_DSN`` is set: the stores ``session_store`` runs on."""
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def session_store_location(session_store_kind: StoreKind, tmp_path: Path) -> Iterator[str]:
    """Where this test's store lives: ``tmp_path/session.sqlite``, or a DSN on a fresh schema (dropped afterwards)."""
    from tether_clr.testing.stores import store_location

    if session_store_kind == "postgres":
        postgres_dsn_or_skip()
    with store_location(session_store_kind, tmp_path) as location:
        yield location


@pytest.fixture
def session_store(session_store_kind: StoreKind, session_store_location: str) -> Iterator[SqlSessionStore]:
    """A session store of this test's own (see ``session_store_location``), closed afterwards."""
    from tether_clr.testing.stores import open_session_store

    with open_session_store(session_store_kind, session_store_location) as store:
        yield store


@pytest.fixture
def recording_sink() -> RecordingSink:
    """A sink that records every call and hook in order (``recording_sink.lines()``)."""
    from tether_clr.testing.sinks import RecordingSink

    return RecordingSink()


@pytest.fixture
def scripted_approvals() -> ScriptedApprovals:
    """An approval provider to script (``scripted_approvals.script({"c1": "approved"})``); it records every question."""
    from tether_clr.testing.approvals import ScriptedApprovals

    return ScriptedApprovals()

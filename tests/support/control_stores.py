"""Both control stores for parametrized tests: SQLite in a temporary folder, PostgreSQL from ``$TETHER_POSTGRES_DSN``.

Every PostgreSQL case gets a schema of its own (``search_path`` in the DSN), so
each test starts from an empty control log although the database is shared.
Without a reachable server the PostgreSQL cases skip, saying why, unless
``TETHER_REQUIRE_POSTGRES=1`` (see :mod:`tests.support.session_stores`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tether_clr.control.sql import SqlCatalogControl

from tests.support.session_stores import postgres_dsn
from tether_clr import ControlAttachment, PostgresCatalogControl, SqliteCatalogControl, ToolRegistry
from tether_clr.testing import store_location

STORES = ["sqlite", "postgres"]


@contextmanager
def control_spec(kind: str, tmp_path: Path) -> Iterator[str]:
    """What a process needs to open one fresh control store: a file path, or a DSN with its own schema
    (the kit's :func:`~tether_clr.testing.store_location`, dropped on exit)."""
    if kind == "sqlite":
        yield str(tmp_path / "control.sqlite")
        return
    with store_location("postgres", tmp_path, postgres_dsn()) as located:
        yield located


def open_control(kind: str, spec: str) -> SqlCatalogControl:
    if kind == "sqlite":
        return SqliteCatalogControl(spec)
    return PostgresCatalogControl(spec)


@contextmanager
def attached_hosts(kind: str, spec: str, actors: tuple[str, ...]) -> Iterator[list[ToolRegistry]]:
    """One host registry per actor, each attached to its own connection to the store ``spec`` names; detached
    and closed on exit."""
    from tests.support.control_hosts import host_registry

    opened: list[tuple[SqlCatalogControl, ControlAttachment]] = []
    registries = []
    try:
        for actor in actors:
            registry = host_registry()
            store = open_control(kind, spec)
            opened.append((store, registry.attach_control(store, max_staleness=1.0, actor=actor)))
            registries.append(registry)
        yield registries
    finally:
        for store, attachment in opened:
            attachment.dispose()
            store.close()


def attachment_of(registry: ToolRegistry) -> ControlAttachment:
    """The registry's attachment (it must be attached)."""
    attachment = registry.control
    assert attachment is not None
    return attachment

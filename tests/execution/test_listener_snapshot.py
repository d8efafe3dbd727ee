"""The listener snapshot is shared across batches until a listener changes.

A registry hands every batch the same immutable snapshot (so its per-scope
chains are computed once, not per batch) and replaces it when a listener is
registered or disposed; a batch keeps the snapshot it took.
"""

from __future__ import annotations

import gc
from typing import Any

import pytest

from tether_clr import AgentPipelineScope, PythonFunction, ToolCall, ToolRegistry

pytestmark = pytest.mark.anyio


def _guard_named(name: str, seen: list[str]) -> Any:
    def guard(execution: Any) -> None:
        seen.append(name)

    return guard


def test_the_snapshot_is_shared_until_a_listener_is_registered_or_disposed() -> None:
    registry = ToolRegistry()
    first = registry.listener_snapshot()
    assert registry.listener_snapshot() is first
    registration = registry.register_guard(None, lambda execution: None)
    second = registry.listener_snapshot()
    assert second is not first and len(second.chain("guard", None)) == 1
    assert len(first.chain("guard", None)) == 0  # a snapshot taken before never changes
    registration.dispose()
    assert registry.listener_snapshot() is not second
    assert registry.listener_snapshot().chain("guard", None) == ()


async def test_a_listener_registered_between_batches_applies_to_the_next_batch() -> None:
    registry = ToolRegistry()
    registry.register(PythonFunction.from_callable(lambda: 1, name="one", run_sync_in_thread=False))
    seen: list[str] = []
    view = registry.seal()
    await registry.execute_batch([ToolCall("c1", "one")], view)
    registration = registry.register_guard(None, _guard_named("a", seen))
    await registry.execute_batch([ToolCall("c2", "one")], view)
    registration.dispose()
    await registry.execute_batch([ToolCall("c3", "one")], view)
    assert seen == ["a"]


def test_a_new_scope_at_a_reused_id_gets_its_own_chain() -> None:
    registry = ToolRegistry()
    root = AgentPipelineScope()
    scoped = root.child()
    registry.register_guard(scoped, lambda execution: None)
    snapshot = registry.listener_snapshot()
    assert len(snapshot.chain("guard", scoped)) == 1
    for _ in range(50):  # scopes made and dropped: one of them may reuse a dead scope's id
        other = root.child()
        assert snapshot.chain("guard", other) == ()
        del other
        gc.collect()
    assert len(snapshot.chain("guard", scoped)) == 1

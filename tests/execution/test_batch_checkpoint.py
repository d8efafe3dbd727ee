"""A cancelled host task is cancelled by the batch before anything is declared, even when every call is instant.

Inline (single-call) groups deliver an outcome that is already there without
waiting on an event, so a batch of instant tools runs to the end without a
single event-loop iteration; the batch looks at its caller's cancel scopes
before it declares anything (``checkpoint_if_cancelled``), so a cancelled host
task is cancelled there and nothing is recorded, with or without a sink.
"""

from __future__ import annotations

import anyio
import pytest

from tether_clr import PythonFunction, ToolCall, ToolExecutionOutcome, ToolRegistry

pytestmark = pytest.mark.anyio


class _Recorder:
    def __init__(self) -> None:
        self.declared: list[str] = []
        self.outcomes: list[str] = []

    async def call_declared(self, call: ToolCall) -> None:
        self.declared.append(call.call_id)

    async def outcome_ready(self, outcome: ToolExecutionOutcome) -> None:
        self.outcomes.append(outcome.call_id)


def _registry() -> ToolRegistry:
    registry = ToolRegistry()
    registry.register(PythonFunction.from_callable(lambda: "ok", name="instant", run_sync_in_thread=False))
    return registry


async def test_a_cancelled_host_task_cancels_a_batch_of_instant_tools_before_anything_is_declared() -> None:
    registry, sink = _registry(), _Recorder()
    calls = [ToolCall(f"c{i}", "instant") for i in range(3)]
    with anyio.CancelScope() as scope:
        scope.cancel()
        await registry.execute_batch(calls, registry.seal(), sink=sink)
    assert scope.cancelled_caught
    assert sink.declared == [] and sink.outcomes == []


async def test_a_cancelled_host_task_runs_no_call_of_a_batch_without_a_sink() -> None:
    ran: list[str] = []
    registry = ToolRegistry()
    registry.register(PythonFunction.from_callable(lambda: ran.append("body"), name="instant", run_sync_in_thread=False))
    for size in (1, 3):
        with anyio.CancelScope() as scope:
            scope.cancel()
            await registry.execute_batch([ToolCall(f"c{i}", "instant") for i in range(size)], registry.seal())
        assert scope.cancelled_caught
    assert ran == []


async def test_instant_calls_are_still_delivered_in_model_order() -> None:
    registry, sink = _registry(), _Recorder()
    calls = [ToolCall(f"c{i}", "instant") for i in range(5)]
    outcomes = await registry.execute_batch(calls, registry.seal(), sink=sink)
    assert [o.call_id for o in outcomes] == sink.outcomes == sink.declared == [f"c{i}" for i in range(5)]

"""The optional sink hooks: when execute_batch calls them, and that their failures are raised, never disguised."""

from __future__ import annotations

from typing import Any

import pytest

from tether_clr import (
    AgentPipelineScope,
    ApprovalResult,
    InMemoryToolLog,
    ResultPolicyError,
    SinkError,
    ToolRegistry,
    current_declaration,
)

from tests.support import Approver, add, asking, call, codes, echo_registry

pytestmark = pytest.mark.anyio


class HookedSink(InMemoryToolLog):
    """Records every hook with the declaration it was told about."""

    def __init__(self, failing: str | None = None) -> None:
        super().__init__()
        self.hooks: list[str] = []
        self.failing = failing

    def _note(self, text: str) -> None:
        if self.failing is not None and text.startswith(self.failing):
            raise OSError("disk full")
        self.hooks.append(text)

    async def batch_started(self, calls: list[Any]) -> None:
        self._note(f"started {[c.call_id for c in calls]}")

    async def call_declared(self, call: Any) -> None:
        self._note(f"declared {call.call_id}")
        await super().call_declared(call)

    async def approval_asked(self, execution: Any, reason: str | None) -> None:
        declaration = current_declaration()
        self._note(f"asked {execution.call_id} at {None if declaration is None else declaration.index}")

    async def approval_decided(self, execution: Any, result: Any) -> None:
        self._note(f"decided {execution.call_id} {result.value}")

    async def flush(self) -> None:
        self._note("flush")

    async def outcome_ready(self, outcome: Any) -> None:
        self._note(f"outcome {outcome.call_id}")
        await super().outcome_ready(outcome)

    async def batch_finished(self) -> None:
        self._note("finished")


async def test_hooks_frame_the_batch_and_a_flush_precedes_every_group_s_first_body() -> None:
    bodies: list[str] = []
    registry = echo_registry(bodies, sync=True)
    sink = HookedSink()
    calls = [call("a", "echo", {"text": "a"}), call("b", "echo", {"text": "b"}), call("c", "solo", {"text": "c"})]
    outcomes = await registry.execute_batch(calls, registry.seal(), sink=sink)
    assert codes(outcomes) == [None, None, None]
    hooks = sink.hooks
    assert hooks[0] == "started ['a', 'b', 'c']" and hooks[-1] == "finished"
    assert hooks[1:3] == ["declared a", "declared b"]  # the group is declared before anything is authorized
    assert hooks[3] == "flush"
    c_declared = hooks.index("declared c")
    assert hooks[c_declared + 1] == "flush"
    assert [h for h in hooks if h.startswith("outcome")] == ["outcome a", "outcome b", "outcome c"]


async def test_approval_hooks_surround_the_provider_and_name_the_call() -> None:
    registry = ToolRegistry()
    add(registry, lambda: "ok", "t")

    registry.register_pre_execute_listener(None, asking("check"))
    registry.approval = Approver(
        decide=lambda execution: ApprovalResult.APPROVED if execution.call_id == "x" else ApprovalResult.REJECTED
    )
    scope = AgentPipelineScope(session_id="s", owner="o")
    sink = HookedSink()
    outcomes = await registry.execute_batch([call("x", "t"), call("y", "t")], registry.seal(scope), sink=sink)
    assert codes(outcomes) == [None, "DENIED"]
    assert [h for h in sink.hooks if h.startswith(("asked", "decided"))] == [
        "asked x at 0", "decided x approved", "asked y at 1", "decided y rejected"
    ]


@pytest.mark.parametrize("failing", ["started", "flush", "asked", "decided", "finished"])
async def test_a_failing_hook_is_raised_as_a_sink_error_and_stops_bodies_it_precedes(failing: str) -> None:
    bodies: list[str] = []
    registry = echo_registry(bodies, sync=True)
    registry.register_pre_execute_listener(None, asking("check"))
    registry.approval = Approver(ApprovalResult.APPROVED)
    scope = AgentPipelineScope(session_id="s", owner="o")
    with pytest.raises(SinkError, match="disk full"):
        await registry.execute_batch([call("a", "solo", {"text": "a"})], registry.seal(scope), sink=HookedSink(failing))
    assert bodies == ([] if failing != "finished" else ["a"])


async def test_batch_finished_is_told_when_the_batch_raises_and_never_hides_why() -> None:
    bodies: list[str] = []
    registry = echo_registry(bodies, sync=True)

    def reject(execution: Any, outcome: Any) -> None:
        raise RuntimeError("policy says no")

    registry.register_result_policy(None, reject)
    sink = HookedSink(failing="finished")
    with pytest.raises(ResultPolicyError, match="policy says no"):
        await registry.execute_batch([call("a", "solo", {"text": "a"})], registry.seal(), sink=sink)
    sink = HookedSink()
    with pytest.raises(ResultPolicyError):
        await registry.execute_batch([call("a", "solo", {"text": "a"})], registry.seal(), sink=sink)
    assert sink.hooks[-1] == "finished"

"""The optional sink hooks: when execute_batch calls them, and that their failures are raised, never disguised.

Written with the test kit: ``recording_sink`` records every hook with the declaration it was told
about, and ``RecordingSink(fail_on=hook)`` makes one hook fail.
"""

from __future__ import annotations

from typing import Any

import pytest

from tether_clr import (
    AgentPipelineScope,
    ApprovalResult,
    ResultPolicyError,
    SinkError,
    ToolRegistry,
)
from tether_clr.testing import RecordingSink, ScriptedApprovals

from tests.support import add, asking, call, codes, echo_registry

pytestmark = pytest.mark.anyio

FRAME = ("batch_started", "call_declared", "flush", "approval_asked", "approval_decided", "outcome_ready", "batch_finished")


async def test_hooks_frame_the_batch_and_a_flush_precedes_every_group_s_first_body(recording_sink: RecordingSink) -> None:
    bodies: list[str] = []
    registry = echo_registry(bodies, sync=True)
    calls = [call("a", "echo", {"text": "a"}), call("b", "echo", {"text": "b"}), call("c", "solo", {"text": "c"})]
    outcomes = await registry.execute_batch(calls, registry.seal(), sink=recording_sink)
    assert codes(outcomes) == [None, None, None]
    hooks = recording_sink.lines(*FRAME)
    assert hooks[0] == "batch_started a b c" and hooks[-1] == "batch_finished"
    assert hooks[1:3] == ["call_declared a", "call_declared b"]  # the group is declared before anything is authorized
    assert hooks[3] == "flush"
    c_declared = hooks.index("call_declared c")
    assert hooks[c_declared + 1] == "flush"
    assert recording_sink.lines("outcome_ready") == ["outcome_ready a ok", "outcome_ready b ok", "outcome_ready c ok"]


async def test_approval_hooks_surround_the_provider_and_name_the_call(recording_sink: RecordingSink) -> None:
    registry = ToolRegistry()
    add(registry, lambda: "ok", "t")

    registry.register_pre_execute_listener(None, asking("check"))
    registry.approval = ScriptedApprovals({"x": "approved", "y": "rejected"})
    scope = AgentPipelineScope(session_id="s", owner="o")
    outcomes = await registry.execute_batch([call("x", "t"), call("y", "t")], registry.seal(scope), sink=recording_sink)
    assert codes(outcomes) == [None, "DENIED"]
    assert recording_sink.lines("approval_asked", "approval_decided") == [
        "approval_asked x", "approval_decided x approved", "approval_asked y", "approval_decided y rejected"
    ]
    assert [record.declaration.index for record in recording_sink.of("approval_asked")] == [0, 1]  # type: ignore[union-attr]


@pytest.mark.parametrize("failing", ["batch_started", "flush", "approval_asked", "approval_decided", "batch_finished"])
async def test_a_failing_hook_is_raised_as_a_sink_error_and_stops_bodies_it_precedes(failing: str) -> None:
    bodies: list[str] = []
    registry = echo_registry(bodies, sync=True)
    registry.register_pre_execute_listener(None, asking("check"))
    registry.approval = ScriptedApprovals(default=ApprovalResult.APPROVED)
    scope = AgentPipelineScope(session_id="s", owner="o")
    with pytest.raises(SinkError, match="disk full"):
        await registry.execute_batch([call("a", "solo", {"text": "a"})], registry.seal(scope), sink=RecordingSink(fail_on=failing))
    assert bodies == ([] if failing != "batch_finished" else ["a"])


async def test_batch_finished_is_told_when_the_batch_raises_and_never_hides_why(recording_sink: RecordingSink) -> None:
    bodies: list[str] = []
    registry = echo_registry(bodies, sync=True)

    def reject(execution: Any, outcome: Any) -> None:
        raise RuntimeError("policy says no")

    registry.register_result_policy(None, reject)
    with pytest.raises(ResultPolicyError, match="policy says no"):
        await registry.execute_batch([call("a", "solo", {"text": "a"})], registry.seal(), sink=RecordingSink(fail_on="batch_finished"))
    with pytest.raises(ResultPolicyError):
        await registry.execute_batch([call("a", "solo", {"text": "a"})], registry.seal(), sink=recording_sink)
    assert recording_sink.lines()[-1] == "batch_finished"

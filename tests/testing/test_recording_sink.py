"""The recording sink: the timeline of a batch, in order, and a wrapper that changes nothing about its inner sink."""

from __future__ import annotations

import pytest

from tether_clr import InMemoryToolLog, RequestContext, SessionStore, StepLoop, ToolPostDecision
from tether_clr.testing import KitRegistry, ProbeTool, RecordingSink, ScriptedApprovals, assert_outcomes, tool_call

pytestmark = pytest.mark.anyio


async def test_the_timeline_has_every_hook_in_the_order_the_batch_called_them(
    tether_registry: KitRegistry, recording_sink: RecordingSink, scripted_approvals: ScriptedApprovals
) -> None:
    tether_registry.add(ProbeTool("read", safe=True))
    tether_registry.add(ProbeTool("delete", requires_approval=True))

    async def note(execution: object, outcome: object, next_: object) -> ToolPostDecision:
        return ToolPostDecision.accept(add_context="read twice")

    tether_registry.registry.register_post_execute_listener(None, note)
    tether_registry.registry.approval = scripted_approvals.script({"delete": "approved"})
    await tether_registry.run([tool_call("c1", "read"), tool_call("c2", "delete")], sink=recording_sink)
    assert recording_sink.lines() == [
        "batch_started c1 c2",
        "call_declared c1",
        "flush",
        "contexts_added read twice",
        "outcome_ready c1 ok",
        "call_declared c2",
        "approval_from_grant c2 none",
        "approval_asked c2",
        "approval_decided c2 approved",
        "flush",
        "contexts_added read twice",
        "outcome_ready c2 ok",
        "batch_finished",
    ]
    declared = recording_sink.of("call_declared")
    assert [record.declaration.index for record in declared] == [0, 1]  # type: ignore[union-attr]
    assert [c.call_id for c in recording_sink.calls] == ["c1", "c2"]
    assert [o.call_id for o in recording_sink.outcomes] == ["c1", "c2"]


async def test_lines_filters_by_hook_and_refuses_a_name_that_is_no_hook(recording_sink: RecordingSink) -> None:
    assert recording_sink.lines("call_declared") == []
    with pytest.raises(ValueError, match="no such sink hook"):
        recording_sink.lines("call_declard")


async def test_wrapping_a_sink_forwards_everything_and_has_only_its_hooks(tether_registry: KitRegistry) -> None:
    inner = InMemoryToolLog()
    sink = RecordingSink(inner)
    assert sink.batch_started is None and sink.flush is None and sink.parks_approvals is False  # type: ignore[comparison-overlap]
    tether_registry.add(ProbeTool("echo"))
    outcomes = await tether_registry.run([tool_call("c1", "echo")], sink=sink)
    assert_outcomes(outcomes, {"c1": None})
    assert sink.lines() == ["call_declared c1", "outcome_ready c1 ok"]
    assert inner.events == [("declared", "c1"), ("outcome", "c1")]


async def test_a_wrapped_session_sink_can_still_park_a_call(
    tether_registry: KitRegistry, session_store: SessionStore, scripted_approvals: ScriptedApprovals
) -> None:
    tether_registry.add(ProbeTool("delete", requires_approval=True))
    tether_registry.registry.approval = scripted_approvals.script(["deferred"])
    loop = StepLoop(tether_registry.registry, session_store, "s1", RequestContext("acme", "alice"), scope=tether_registry.scope)
    wrapped: list[RecordingSink] = []

    def wrap(inner: object) -> RecordingSink:
        wrapped.append(RecordingSink(inner))  # type: ignore[arg-type]
        return wrapped[-1]

    await loop.begin_turn()
    step = await loop.run_step([tool_call("c1", "delete")], wrap_sink=wrap)
    assert step.suspended is not None and wrapped[0].parks_approvals
    assert "approval_decided c1 deferred" in wrapped[0].lines()
    assert wrapped[0].outcomes == []

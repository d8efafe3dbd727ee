"""The Tether course's five ToolPipelineTests, ported with the test kit (tether_clr.testing).

Each test is named for its C# original (snake_case) and carries that name in its docstring;
docs/porting.md shows them side by side with the C# names, and tests/test_docs.py checks that
the guide shows these functions exactly as they are here.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from tether_clr import ApprovalResult, ResultPolicyError, ToolPostDecision, ToolPreDecision
from tether_clr.testing import (
    KitRegistry,
    ProbeTool,
    RecordingSink,
    ScriptedApprovals,
    assert_body_not_run,
    assert_model_order,
    assert_outcomes,
    tool_call,
)

pytestmark = pytest.mark.anyio

NUMBERS = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"], "additionalProperties": False}


async def test_unknown_invalid_and_throwing_calls_have_stable_failures(
    tether_registry: KitRegistry, recording_sink: RecordingSink
) -> None:
    """C#: Unknown_invalid_and_throwing_calls_have_stable_failures"""

    def explode(arguments: dict[str, Any]) -> Any:
        raise KeyError("stock")

    double = ProbeTool("double", schema=NUMBERS, body=lambda arguments: arguments["n"] * 2)
    broken = ProbeTool("broken", body=explode)
    tether_registry.add(double)
    tether_registry.add(broken)

    calls = [
        tool_call("c1", "double", {"n": 21}),
        tool_call("c2", "nowhere", {"n": 1}),
        tool_call("c3", "double", '{"n": '),  # the model's text is not JSON
        tool_call("c4", "double", {"n": "twenty"}),  # does not match the schema
        tool_call("c5", "double", {"n": 1, "extra": True}),  # names an argument the schema does not list
        tool_call("c6", "broken", {}),
    ]
    outcomes = await tether_registry.run(calls, sink=recording_sink)  # failures are outcomes: nothing is raised

    assert_outcomes(outcomes, {"c1": None, "c2": "UNKNOWN_TOOL", "c3": "INVALID_ARGS", "c4": "INVALID_ARGS",
                               "c5": "INVALID_ARGS", "c6": "TOOL_ERROR"}, log=recording_sink)
    assert outcomes[0].value == 42  # type: ignore[index]
    assert outcomes[5].failure.message.startswith("KeyError: ")  # type: ignore[index, union-attr]
    assert double.arguments == [{"n": 21}]  # no invalid call reached the body
    assert_model_order(calls, recording_sink)  # every call declared and answered, in the model's order


async def test_pre_waterfall_short_circuits_and_ask_fails_closed_without_approval(
    tether_registry: KitRegistry, scripted_approvals: ScriptedApprovals
) -> None:
    """C#: Pre_waterfall_short_circuits_and_ask_fails_closed_without_approval"""
    delete = ProbeTool("delete")
    tether_registry.add(delete)
    reached: list[str] = []

    async def deny_root(execution: Any, next_: Any) -> ToolPreDecision:
        reached.append(f"outer {execution.call_id}")
        if execution.arguments.get("path") == "/":
            return ToolPreDecision.deny("never the root")  # short-circuits: the inner listener is not called
        return await next_()

    async def ask_always(execution: Any, next_: Any) -> ToolPreDecision:
        reached.append(f"inner {execution.call_id}")
        return ToolPreDecision.ask("deleting needs a person")

    tether_registry.registry.register_pre_execute_listener(None, deny_root)
    tether_registry.registry.register_pre_execute_listener(None, ask_always)

    # No approval provider: an ask cannot be put to anyone, so it fails closed.
    refused = await tether_registry.run([tool_call("c1", "delete", {"path": "/"}), tool_call("c2", "delete", {"path": "/tmp/x"})])
    assert_outcomes(refused, {"c1": "DENIED", "c2": "DENIED"})
    assert reached == ["outer c1", "outer c2", "inner c2"]
    assert_body_not_run(delete)

    # A provider that approves lets the asked call run; the denied one is never asked about.
    tether_registry.registry.approval = scripted_approvals.script({"c2": ApprovalResult.APPROVED})
    allowed = await tether_registry.run([tool_call("c1", "delete", {"path": "/"}), tool_call("c2", "delete", {"path": "/tmp/x"})])
    assert_outcomes(allowed, {"c1": "DENIED", "c2": None})
    assert scripted_approvals.asked == ["c2"] and scripted_approvals.questions[0].reason == "deleting needs a person"
    assert delete.arguments == [{"path": "/tmp/x"}]


async def test_post_waterfall_replaces_or_blocks_the_settled_value(
    tether_registry: KitRegistry, recording_sink: RecordingSink
) -> None:
    """C#: Post_waterfall_replaces_or_blocks_the_settled_value"""
    read = ProbeTool("read", body=lambda arguments: {"name": arguments["name"], "text": f"contents of {arguments['name']}"})
    tether_registry.add(read)
    settled: list[Any] = []

    async def redact_or_block(execution: Any, outcome: Any, next_: Any) -> ToolPostDecision:
        settled.append(outcome.value)  # the body's settled value, before any decision
        name = execution.arguments["name"]
        if name == "secrets":
            return ToolPostDecision.block("the value holds a secret")
        if name == "draft":
            return ToolPostDecision.replace({"name": name, "text": "[redacted]"})
        return await next_()

    tether_registry.registry.register_post_execute_listener(None, redact_or_block)
    calls = [tool_call(f"c{i}", "read", {"name": name}) for i, name in enumerate(["todo", "draft", "secrets"], 1)]
    outcomes = await tether_registry.run(calls, sink=recording_sink)

    assert_outcomes(outcomes, {"c1": None, "c2": None, "c3": "BLOCKED"}, log=recording_sink)
    assert read.ran == 3  # a post-execute decision comes after the body: every body ran
    assert [s["text"] for s in settled] == ["contents of todo", "contents of draft", "contents of secrets"]
    assert outcomes[1].value == {"name": "draft", "text": "[redacted]"}  # type: ignore[index]
    assert [o.value for o in recording_sink.outcomes][:2] == [{"name": "todo", "text": "contents of todo"},
                                                               {"name": "draft", "text": "[redacted]"}]
    assert "secret" in recording_sink.outcomes[2].failure.message  # type: ignore[union-attr]


async def test_result_policy_failure_is_awaited_before_sink_and_telemetry(
    tether_registry: KitRegistry, recording_sink: RecordingSink
) -> None:
    """C#: Result_policy_failure_is_awaited_before_sink_and_telemetry"""
    tether_registry.add(ProbeTool("export", body=lambda arguments: {"rows": 3, "token": "sk-123"}))
    order: list[str] = []

    async def no_tokens(execution: Any, outcome: Any) -> None:
        order.append(f"policy starts {execution.call_id}")
        await anyio.sleep(0)  # the policy awaits: the batch must wait for it, not race past it
        order.append(f"policy ends {execution.call_id} ({len(recording_sink.outcomes)} delivered)")
        if "token" in (outcome.value or {}):
            raise PermissionError("the result leaks a token")

    tether_registry.registry.register_result_policy(None, no_tokens)
    tether_registry.registry.register_result_listener(None, lambda outcome: order.append(f"telemetry {outcome.call_id}"))

    with pytest.raises(ResultPolicyError) as failure:
        await tether_registry.run([tool_call("c1", "export", {})], sink=recording_sink)

    assert order == ["policy starts c1", "policy ends c1 (0 delivered)"]  # no telemetry saw the rejected outcome
    assert recording_sink.lines("call_declared", "outcome_ready") == ["call_declared c1"]  # nor the sink
    assert failure.value.outcome.call_id == "c1" and failure.value.delivered == ()
    assert isinstance(failure.value.__cause__, PermissionError)


async def test_result_policy_failure_runs_terminal_cleanup_for_every_dispatched_call(
    tether_registry: KitRegistry, recording_sink: RecordingSink
) -> None:
    """C#: Result_policy_failure_runs_terminal_cleanup_for_every_dispatched_call"""
    work = ProbeTool("work", safe=True, gated=True)
    tether_registry.add(work)
    cleaned: list[str] = []

    async def lease(dispatch: Any, next_: Any) -> Any:
        try:
            return await next_()
        finally:
            cleaned.append(dispatch.execution.call_id)  # the terminal cleanup of every dispatched call

    async def reject_c0(execution: Any, outcome: Any) -> None:
        if execution.call_id == "c0":
            raise RuntimeError("c0 may not return this")

    tether_registry.registry.register_execute_listener(None, lease)
    tether_registry.registry.register_result_policy(None, reject_c0)
    calls = [tool_call(f"c{i}", "work", {"i": i}) for i in range(4)]
    raised: list[ResultPolicyError] = []

    async def run() -> None:
        with pytest.raises(ResultPolicyError) as failure:
            await tether_registry.run(calls, sink=recording_sink, max_parallelism=3)
        raised.append(failure.value)

    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(run)
            await work.wait_started(3)  # c0, c1 and c2 are in flight; c3 waits for a free slot
            work.release(0)  # c0 finishes, and its result policy fails while c1 and c2 still run

    assert sorted(cleaned) == ["c0", "c1", "c2"]  # every dispatched call was cleaned up, and only those
    assert [call.ending for call in work.calls] == ["returned", "cancelled", "cancelled"]
    assert work.ran == 3  # c3 was never dispatched
    assert raised[0].outcome.call_id == "c0" and recording_sink.outcomes == []

"""One call through the pipeline: stable failures, the waterfalls, approval, guards,
policies and observers (ports the intent of Tether's ToolPipelineTests)."""

from __future__ import annotations

import logging
from typing import Any

import anyio
import pytest

from tests.support import Approver, BlockingApprover, add, asking, call, codes, run_one, session_scope
from tether_clr import (
    AgentPipelineScope,
    ApprovalResult,
    CancellationSource,
    InMemoryToolLog,
    ResultPolicyError,
    ToolArgumentError,
    ToolDispatch,
    ToolExecution,
    ToolExecutionOutcome,
    ToolFailureCodes,
    ToolPostDecision,
    ToolPreDecision,
    ToolRegistry,
)

pytestmark = pytest.mark.anyio


# --------------------------------------------------------------- stable failures
async def test_unknown_tool_gets_unknown_tool_failure() -> None:
    registry = ToolRegistry()
    outcome = await run_one(registry, call("c1", "nope"))
    assert outcome.failure.code is ToolFailureCodes.UNKNOWN_TOOL
    assert outcome.is_error and outcome.value == {"message": outcome.failure.message}
    assert "nope" in outcome.failure.message


async def test_malformed_json_gets_invalid_args_and_execution_sees_raw_text() -> None:
    registry = ToolRegistry()
    ran: list[int] = []
    add(registry, lambda x: ran.append(x), "t")
    seen: list[ToolExecution] = []
    registry.register_result_policy(None, lambda e, o: seen.append(e))
    outcome = await run_one(registry, call("c1", "t", "{not json"))
    assert outcome.failure.code is ToolFailureCodes.INVALID_ARGS
    assert seen[0].arguments == "{not json"
    assert ran == []


async def test_non_object_json_gets_invalid_args() -> None:
    registry = ToolRegistry()
    add(registry, lambda: 1, "t")
    outcome = await run_one(registry, call("c1", "t", "[1, 2]"))
    assert outcome.failure.code is ToolFailureCodes.INVALID_ARGS


async def test_schema_mismatch_gets_invalid_args_without_running_body() -> None:
    registry = ToolRegistry()
    ran: list[int] = []
    add(registry, lambda count: ran.append(count), "t")

    def typed(count: int) -> int:
        ran.append(count)
        return count

    add(registry, typed, "typed")
    wrong_type = await run_one(registry, call("c1", "typed", {"count": "many"}))
    missing = await run_one(registry, call("c2", "typed", {}))
    extra = await run_one(registry, call("c3", "typed", {"count": 1, "surprise": True}))
    assert codes([wrong_type, missing, extra]) == ["INVALID_ARGS"] * 3
    assert "count" in wrong_type.failure.message
    assert ran == []


async def test_binding_failure_raised_by_tool_gets_invalid_args() -> None:
    registry = ToolRegistry()

    async def picky(value: str) -> str:
        raise ToolArgumentError("value must be a colour")

    add(registry, picky)
    outcome = await run_one(registry, call("c1", "picky", {"value": "x"}))
    assert outcome.failure.code is ToolFailureCodes.INVALID_ARGS
    assert outcome.failure.message == "value must be a colour"


async def test_throwing_tool_gets_tool_error_naming_the_exception() -> None:
    registry = ToolRegistry()

    async def boom() -> None:
        raise KeyError("missing-thing")

    add(registry, boom)
    outcome = await run_one(registry, call("c1", "boom"))
    assert outcome.failure.code is ToolFailureCodes.TOOL_ERROR
    assert outcome.failure.message == "KeyError: 'missing-thing'"


async def test_non_json_result_gets_tool_error() -> None:
    registry = ToolRegistry()
    add(registry, lambda: object(), "weird")
    outcome = await run_one(registry, call("c1", "weird"))
    assert outcome.failure.code is ToolFailureCodes.TOOL_ERROR
    assert "JSON" in outcome.failure.message


async def test_success_value_is_json_and_detached() -> None:
    registry = ToolRegistry()
    add(registry, lambda: {"items": [1, 2]}, "list_items")
    outcome = await run_one(registry, call("c1", "list_items"))
    assert outcome.failure is None and not outcome.is_error
    outcome.value["items"].append(3)
    assert outcome.value == {"items": [1, 2]}


# ---------------------------------------------------------- pre-execute waterfall
async def test_pre_waterfall_runs_in_order_and_deny_short_circuits() -> None:
    registry = ToolRegistry()
    ran: list[str] = []
    add(registry, lambda: ran.append("body"), "t")
    order: list[str] = []

    async def first(execution, next_):
        order.append("first")
        return await next_()

    async def denier(execution, next_):
        order.append("denier")
        return ToolPreDecision.deny("not today")

    async def never(execution, next_):
        order.append("never")
        return await next_()

    registry.register_pre_execute_listener(None, denier)
    registry.register_pre_execute_listener(None, never)
    registry.register_pre_execute_listener(None, first, prepend=True)
    outcome = await run_one(registry, call("c1", "t"))
    assert outcome.failure.code is ToolFailureCodes.DENIED
    assert outcome.failure.message == "not today"
    assert order == ["first", "denier"]
    assert ran == []


async def test_pre_listener_can_override_what_later_listeners_say() -> None:
    registry = ToolRegistry()
    add(registry, lambda: "ran", "t")

    async def outer(execution, next_):
        decision = await next_()
        return ToolPreDecision.deny("outer overrides") if decision.is_allow else decision

    registry.register_pre_execute_listener(None, outer)
    outcome = await run_one(registry, call("c1", "t"))
    assert outcome.failure.code is ToolFailureCodes.DENIED


async def test_pre_listeners_run_outer_scope_first_and_only_for_their_subtree() -> None:
    registry = ToolRegistry()
    root = session_scope()
    child = root.child()
    other = AgentPipelineScope()
    add(registry, lambda: 1, "t")
    order: list[str] = []

    def recorder(label: str):
        async def listener(execution, next_):
            order.append(label)
            return await next_()

        return listener

    registry.register_pre_execute_listener(child, recorder("child"))
    registry.register_pre_execute_listener(other, recorder("other"))
    registry.register_pre_execute_listener(root, recorder("root"))
    registry.register_pre_execute_listener(None, recorder("global"))
    await run_one(registry, call("c1", "t"), child)
    assert order == ["global", "root", "child"]


@pytest.mark.parametrize("bad", ["raise", "wrong_type"])
async def test_broken_pre_listener_fails_closed_with_tool_error(bad: str) -> None:
    registry = ToolRegistry()
    ran: list[int] = []
    add(registry, lambda: ran.append(1), "t")

    async def broken(execution, next_):
        if bad == "raise":
            raise RuntimeError("listener bug")
        return True

    registry.register_pre_execute_listener(None, broken)
    outcome = await run_one(registry, call("c1", "t"))
    assert outcome.failure.code is ToolFailureCodes.TOOL_ERROR
    assert ran == []


def test_deny_requires_a_reason() -> None:
    with pytest.raises(ValueError):
        ToolPreDecision.deny("")
    with pytest.raises(ValueError):
        ToolPostDecision.block("  ")


# ----------------------------------------------------------------------- approval
async def test_ask_without_provider_fails_closed_as_denied() -> None:
    registry = ToolRegistry()
    ran: list[int] = []
    add(registry, lambda: ran.append(1), "t")
    registry.register_pre_execute_listener(None, asking("touches prod"))
    outcome = await run_one(registry, call("c1", "t"), session_scope())
    assert outcome.failure.code is ToolFailureCodes.DENIED
    assert "no approval provider" in outcome.failure.message
    assert ran == []


@pytest.mark.parametrize("scope_kwargs", [{}, {"session_id": "s"}, {"owner": "alice"}])
async def test_ask_without_session_or_owner_is_denied_without_asking(scope_kwargs: dict[str, Any]) -> None:
    registry = ToolRegistry()
    registry.approval = approver = Approver()
    add(registry, lambda: 1, "t")
    registry.register_pre_execute_listener(None, asking("touches prod"))
    outcome = await run_one(registry, call("c1", "t"), AgentPipelineScope(**scope_kwargs))
    assert outcome.failure.code is ToolFailureCodes.DENIED
    assert approver.requests == []


async def test_approved_call_runs_and_provider_sees_reason() -> None:
    registry = ToolRegistry()
    registry.approval = approver = Approver(ApprovalResult.APPROVED)
    add(registry, lambda: "done", "t")
    registry.register_pre_execute_listener(None, asking("touches prod"))
    outcome = await run_one(registry, call("c1", "t"), session_scope())
    assert outcome.value == "done"
    assert [request[:2] for request in approver.requests] == [("c1", "touches prod")]


@pytest.mark.parametrize(
    ("approver", "code"),
    [
        (Approver(ApprovalResult.REJECTED), ToolFailureCodes.DENIED),
        (Approver(ApprovalResult.UNAVAILABLE), ToolFailureCodes.UNAVAILABLE),
        (Approver(error=ConnectionError("approval service down")), ToolFailureCodes.UNAVAILABLE),
        (Approver("yes please"), ToolFailureCodes.UNAVAILABLE),
    ],
)
async def test_approval_outcomes_map_to_stable_codes(approver: Approver, code: ToolFailureCodes) -> None:
    registry = ToolRegistry()
    registry.approval = approver
    ran: list[int] = []
    add(registry, lambda: ran.append(1), "t")
    registry.register_pre_execute_listener(None, asking("touches prod"))
    outcome = await run_one(registry, call("c1", "t"), session_scope())
    assert outcome.failure.code is code
    assert ran == []


async def test_approved_call_still_passes_guards() -> None:
    registry = ToolRegistry()
    registry.approval = Approver(ApprovalResult.APPROVED)
    ran: list[int] = []
    add(registry, lambda: ran.append(1), "t")
    registry.register_pre_execute_listener(None, asking("touches prod"))
    registry.register_guard(None, lambda execution: "frozen for audit")
    outcome = await run_one(registry, call("c1", "t"), session_scope())
    assert outcome.failure.code is ToolFailureCodes.DENIED
    assert outcome.failure.message == "frozen for audit"
    assert ran == []


async def test_cancellation_while_waiting_for_approval_aborts_before_dispatch() -> None:
    registry = ToolRegistry()
    ran: list[int] = []
    add(registry, lambda: ran.append(1), "t")
    registry.register_pre_execute_listener(None, asking("touches prod"))
    source = CancellationSource()
    registry.approval = approver = BlockingApprover()
    result: list[ToolExecutionOutcome] = []
    view = registry.seal(session_scope())

    async def run() -> None:
        result.extend(await registry.execute_batch([call("c1", "t")], view, cancellation=source.token))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            await approver.asked.wait()
            source.cancel("user pressed stop")
    assert codes(result) == ["ABORTED_BEFORE_DISPATCH"]
    assert ran == []


# ------------------------------------------------------------------------- guards
async def test_ancestor_guard_veto_cannot_be_undone_by_child_listeners() -> None:
    registry = ToolRegistry()
    root = session_scope()
    child = root.child()
    ran: list[int] = []
    add(registry, lambda: ran.append(1), "t")
    registry.register_guard(root, lambda e: "root says no")
    registry.register_guard(child, lambda e: None)

    async def child_allows(execution, next_):
        return ToolPreDecision.allow()

    registry.register_pre_execute_listener(child, child_allows, prepend=True)
    outcome = await run_one(registry, call("c1", "t"), child)
    assert outcome.failure.code is ToolFailureCodes.DENIED
    assert outcome.failure.message == "root says no"
    assert ran == []


async def test_guard_of_unrelated_scope_does_not_apply() -> None:
    registry = ToolRegistry()
    add(registry, lambda: "ok", "t")
    registry.register_guard(AgentPipelineScope(), lambda e: "not yours")
    outcome = await run_one(registry, call("c1", "t"), session_scope())
    assert outcome.value == "ok"


@pytest.mark.parametrize("bad_guard", [lambda e: 1 / 0, lambda e: True])
async def test_broken_guard_fails_closed(bad_guard: Any) -> None:
    registry = ToolRegistry()
    ran: list[int] = []
    add(registry, lambda: ran.append(1), "t")
    registry.register_guard(None, bad_guard)
    outcome = await run_one(registry, call("c1", "t"))
    assert outcome.failure.code is ToolFailureCodes.TOOL_ERROR
    assert ran == []


# -------------------------------------------------------------- execute waterfall
async def test_execute_listener_wraps_body_and_may_replace_cancellation() -> None:
    registry = ToolRegistry()
    seen_tokens: list[Any] = []

    async def tool(cancellation) -> str:
        seen_tokens.append(cancellation)
        return "body"

    add(registry, tool, "t")
    order: list[str] = []
    replacement = CancellationSource()

    async def wrapper(dispatch: ToolDispatch, next_):
        order.append("before")
        outcome = await next_(dispatch.with_cancellation(replacement.token))
        order.append("after")
        return outcome

    registry.register_execute_listener(None, wrapper)
    outcome = await run_one(registry, call("c1", "t"))
    assert outcome.value == "body"
    assert order == ["before", "after"]
    assert seen_tokens == [replacement.token]


async def test_execute_listener_cannot_swap_the_execution() -> None:
    registry = ToolRegistry()
    ran: list[int] = []
    add(registry, lambda: ran.append(1), "t")

    async def sneaky(dispatch: ToolDispatch, next_):
        forged = ToolExecution.create("c1", "t", {"admin": True})
        return await next_(ToolDispatch(forged, dispatch.cancellation))

    registry.register_execute_listener(None, sneaky)
    outcome = await run_one(registry, call("c1", "t"))
    assert outcome.failure.code is ToolFailureCodes.TOOL_ERROR
    assert ran == []


async def test_execute_listener_exception_and_wrong_return_become_tool_error() -> None:
    registry = ToolRegistry()
    add(registry, lambda: 1, "t")

    async def wrong(dispatch, next_):
        await next_()
        return "not an outcome"

    registry.register_execute_listener(None, wrong)
    outcome = await run_one(registry, call("c1", "t"))
    assert outcome.failure.code is ToolFailureCodes.TOOL_ERROR
    assert "ToolExecutionOutcome" in outcome.failure.message


# ----------------------------------------------------------- post-execute waterfall
async def test_post_waterfall_replaces_value() -> None:
    registry = ToolRegistry()
    add(registry, lambda: {"secret": "hunter2", "ok": True}, "t")

    async def redact(execution, outcome, next_):
        value = outcome.value
        value.pop("secret", None)
        return ToolPostDecision.replace(value)

    registry.register_post_execute_listener(None, redact)
    sink = InMemoryToolLog()
    outcomes = await registry.execute_batch([call("c1", "t")], registry.seal(), sink=sink)
    assert outcomes[0].value == {"ok": True}
    assert sink.outcomes[0].value == {"ok": True}


async def test_post_waterfall_blocks_and_short_circuits() -> None:
    registry = ToolRegistry()
    add(registry, lambda: "raw", "t")
    later: list[str] = []

    async def blocker(execution, outcome, next_):
        return ToolPostDecision.block("contains PII")

    async def never(execution, outcome, next_):
        later.append("ran")
        return await next_()

    registry.register_post_execute_listener(None, blocker)
    registry.register_post_execute_listener(None, never)
    outcome = await run_one(registry, call("c1", "t"))
    assert outcome.failure.code is ToolFailureCodes.BLOCKED
    assert outcome.failure.message == "contains PII"
    assert later == []


async def test_post_listener_failure_hides_raw_result() -> None:
    registry = ToolRegistry()
    add(registry, lambda: "sensitive", "t")

    async def crashing(execution, outcome, next_):
        raise RuntimeError("redactor crashed")

    registry.register_post_execute_listener(None, crashing)
    outcome = await run_one(registry, call("c1", "t"))
    assert outcome.failure.code is ToolFailureCodes.TOOL_ERROR
    assert "sensitive" not in outcome.value_json


async def test_post_waterfall_does_not_run_for_refused_calls() -> None:
    registry = ToolRegistry()
    seen: list[str] = []

    async def post(execution, outcome, next_):
        seen.append(execution.call_id)
        return await next_()

    registry.register_post_execute_listener(None, post)
    await run_one(registry, call("c1", "missing"))
    assert seen == []


# -------------------------------------------------------- policies and observers
async def test_result_policy_failure_is_awaited_before_sink_and_telemetry() -> None:
    registry = ToolRegistry()
    add(registry, lambda: "value", "t")
    order: list[str] = []

    async def policy(execution, outcome):
        await anyio.sleep(0)
        order.append("policy")
        raise PermissionError("value leaks a secret")

    registry.register_result_policy(None, policy)
    registry.register_result_listener(None, lambda outcome: order.append("listener"))
    sink = InMemoryToolLog()
    with pytest.raises(ResultPolicyError) as info:
        await registry.execute_batch([call("c1", "t")], registry.seal(), sink=sink)
    assert order == ["policy"]
    assert sink.outcomes == []
    assert sink.events == [("declared", "c1")]
    assert info.value.outcome.call_id == "c1"
    assert "value leaks a secret" in str(info.value)
    assert isinstance(info.value.__cause__, PermissionError)


async def test_result_policy_sees_refusals_too() -> None:
    registry = ToolRegistry()
    seen: list[str | None] = []
    registry.register_result_policy(None, lambda e, o: seen.append(o.code))
    await run_one(registry, call("c1", "missing"))
    assert seen == [ToolFailureCodes.UNKNOWN_TOOL]


async def test_invariant_policy_rejects_mismatched_outcome_and_can_be_removed() -> None:
    registry = ToolRegistry()
    add(registry, lambda: 1, "t")

    async def forger(dispatch, next_):
        return ToolExecutionOutcome.success("someone-else", "t", 42)

    registry.register_execute_listener(None, forger)
    with pytest.raises(ResultPolicyError, match="does not match"):
        await run_one(registry, call("c1", "t"))
    registry.invariant_policy.dispose()
    outcome = await run_one(registry, call("c1", "t"))
    assert outcome.call_id == "someone-else"


async def test_invariant_policy_rejects_empty_call_id() -> None:
    registry = ToolRegistry()
    add(registry, lambda: 1, "t")
    with pytest.raises(ResultPolicyError, match="call_id is empty"):
        await run_one(registry, call("", "t"))


async def test_result_listener_failure_is_contained_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    registry = ToolRegistry()
    add(registry, lambda: "fine", "t")
    seen: list[str] = []

    def broken(outcome):
        raise RuntimeError("telemetry down")

    registry.register_result_listener(None, broken)
    registry.register_result_listener(None, lambda outcome: seen.append(outcome.call_id))
    with caplog.at_level(logging.ERROR, logger="tether_clr"):
        outcome = await run_one(registry, call("c1", "t"))
    assert outcome.value == "fine"
    assert seen == ["c1"]
    assert "telemetry down" in caplog.text


async def test_disposed_listener_no_longer_runs() -> None:
    registry = ToolRegistry()
    add(registry, lambda: 1, "t")
    registration = registry.register_guard(None, lambda e: "no")
    assert (await run_one(registry, call("c1", "t"))).failure.code is ToolFailureCodes.DENIED
    registration.dispose()
    registration.dispose()
    assert (await run_one(registry, call("c2", "t"))).failure is None


# -------------------------------------------------------------------- immutability
async def test_stages_get_detached_arguments() -> None:
    registry = ToolRegistry()
    received: list[Any] = []

    async def tool(items: list[int]) -> list[int]:
        received.append(list(items))
        return items

    add(registry, tool, "t")

    async def meddler(execution, next_):
        execution.arguments["items"].append(999)
        return await next_()

    registry.register_pre_execute_listener(None, meddler)
    outcome = await run_one(registry, call("c1", "t", {"items": [1]}))
    assert received == [[1]]
    assert outcome.value == [1]
    with pytest.raises(AttributeError):
        ToolExecution.create("c", "t").call_id = "x"  # type: ignore[misc]


async def test_execution_carries_context_owner_and_parent() -> None:
    registry = ToolRegistry()
    scope = session_scope()
    add(registry, lambda: 1, "t")
    seen: list[ToolExecution] = []
    registry.register_guard(None, lambda e: seen.append(e))
    await run_one(registry, call("c1", "t", {}, scope=scope, parent_call_id="p0", invocation_context={"turn": 3}), scope)
    execution = seen[0]
    assert (execution.owner, execution.parent_call_id, execution.invocation_context) == ("alice", "p0", {"turn": 3})
    assert execution.scope is scope


# ---------------------------------------------------------------------- records
def test_function_result_content_matches_meai_json_shape() -> None:
    ok = ToolExecutionOutcome.success("c1", "t", {"a": 1}).to_function_result()
    assert ok.model_dump(by_alias=True) == {"$type": "functionResult", "callId": "c1", "result": {"a": 1}}
    failed = ToolExecutionOutcome.failed("c2", "t", ToolFailureCodes.DENIED, "nope").to_function_result()
    assert failed.exception == "DENIED: nope"
    assert '"exception"' not in failed.to_json()
    assert failed.to_json() == '{"$type":"functionResult","callId":"c2","result":{"message":"nope"}}'

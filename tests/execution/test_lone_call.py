"""A lone call (one call, no sink) runs straight through the stages (tether_clr/execution/lone.py),
with the outcome, the listeners' view and the audit record a batch with the general machinery gives.

The general path is reached here the way a user reaches it: the same call with a sink (which
records nothing of interest), or as one of two calls."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support import session_scope
from tether_clr import (
    ApprovalResult,
    CancellationSource,
    PythonFunction,
    ResultPolicyError,
    ToolCall,
    ToolError,
    ToolExecution,
    ToolExecutionOutcome,
    ToolPostDecision,
    ToolPreDecision,
    ToolRegistrationOptions,
    ToolRegistry,
)

SCOPE = session_scope()  # approval needs a session and an owner to ask

pytestmark = pytest.mark.anyio


class _Quiet:
    """A sink that records nothing anyone reads: it only sends the batch down the general path."""

    async def call_declared(self, call: ToolCall) -> None:
        return None

    async def outcome_ready(self, outcome: ToolExecutionOutcome) -> None:
        return None


class _Approver:
    async def request(self, execution: ToolExecution, reason: str | None) -> ApprovalResult:
        return ApprovalResult.APPROVED if json.loads(execution.arguments_json).get("ok") else ApprovalResult.REJECTED


def _registry(seen: list[Any]) -> ToolRegistry:
    registry = ToolRegistry()
    registry.approval = _Approver()

    async def produce(n: int = 0, ok: bool = False) -> dict[str, int]:
        return {"n": n}

    def fail(n: int = 0, ok: bool = False) -> None:
        raise ToolError(f"failed with {n}")

    async def replace(n: int = 0, ok: bool = False) -> int:
        return n

    registry.register(PythonFunction.from_callable(produce, name="produce", run_sync_in_thread=False))
    registry.register(PythonFunction.from_callable(fail, name="fail", run_sync_in_thread=False))
    registry.register(PythonFunction.from_callable(replace, name="replace", run_sync_in_thread=False))
    registry.register(
        PythonFunction.from_callable(produce, name="asks", run_sync_in_thread=False), SCOPE,
        ToolRegistrationOptions(requires_approval=True),
    )

    async def pre(execution: ToolExecution, next_: Any) -> ToolPreDecision:
        seen.append(("pre", execution.name, execution.arguments))
        if execution.arguments.get("n") == 3:
            return ToolPreDecision.deny("three is refused")
        return await next_()  # type: ignore[no-any-return]

    def guard(execution: ToolExecution) -> str | None:
        seen.append(("guard", execution.name))
        return "four is vetoed" if execution.arguments.get("n") == 4 else None

    async def post(execution: ToolExecution, outcome: ToolExecutionOutcome, next_: Any) -> ToolPostDecision:
        seen.append(("post", execution.name, outcome.value_json))
        if execution.name == "replace":
            return ToolPostDecision.replace({"replaced": True})
        if execution.arguments.get("n") == 5:
            return ToolPostDecision.block("five is blocked")
        if execution.arguments.get("n") == 2:
            return ToolPostDecision.accept().with_context(f"two was seen by {execution.call_id}")
        return ToolPostDecision.accept()

    registry.register_pre_execute_listener(None, pre)
    registry.register_guard(None, guard)
    registry.register_post_execute_listener(None, post)
    def policy(execution: ToolExecution, outcome: ToolExecutionOutcome) -> None:
        if outcome.failure is None and execution.arguments.get("n") == 6:
            raise ValueError("six is not let through")

    registry.register_result_policy(None, policy)
    registry.register_result_listener(None, lambda outcome: seen.append(("result", outcome.call_id)))
    registry.register_audit_listener(
        lambda record: seen.append(("audit", dataclasses.replace(record, latency_ms=0.0)))
    )
    return registry


ARGUMENTS = st.one_of(
    st.builds(lambda n, ok: json.dumps({"n": n, "ok": ok}), st.integers(0, 6), st.booleans()),
    st.sampled_from(["", "{}", "[]", "{", '{"n": "x"}', '{"n": 1e400}', '"\\ud800"', '{"n": 1, "extra": true}']),
)
NAMES = st.sampled_from(["produce", "fail", "replace", "asks", "missing"])


CALLS = st.lists(st.tuples(NAMES, ARGUMENTS), min_size=1, max_size=3)


async def _outcomes(registry: ToolRegistry, calls: list[ToolCall], sink: Any) -> Any:
    """The batch's outcomes and contexts, or what its ResultPolicyError says was delivered."""
    try:
        outcomes = await registry.execute_batch(calls, registry.seal(SCOPE), sink=sink)
    except ResultPolicyError as fault:
        return ("policy", fault.outcome, fault.delivered)
    return (list(outcomes), outcomes.additional_contexts)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(shapes=CALLS)
async def test_calls_that_run_alone_have_the_outcomes_and_observations_of_the_general_path(
    shapes: list[tuple[str, str]],
) -> None:
    """One call, or EXCLUSIVE calls one after another: the same outcomes, contexts, listener calls and audit
    records as the same batch through the general machinery (reached here with a sink)."""
    lone_seen: list[Any] = []
    general_seen: list[Any] = []
    lone_registry, general_registry = _registry(lone_seen), _registry(general_seen)
    calls = [ToolCall(f"c{i}", name, arguments, SCOPE) for i, (name, arguments) in enumerate(shapes)]
    assert await _outcomes(lone_registry, calls, None) == await _outcomes(general_registry, calls, _Quiet())
    assert lone_seen == general_seen


async def test_a_body_that_changes_its_arguments_changes_nothing_any_other_stage_sees() -> None:
    seen: list[Any] = []
    registry = ToolRegistry()

    async def greedy(items: list[int]) -> int:
        items.append(99)  # the body's own object: nothing after it may see this
        return len(items)

    registry.register(PythonFunction.from_callable(greedy, name="greedy"))

    async def post(execution: ToolExecution, outcome: ToolExecutionOutcome, next_: Any) -> ToolPostDecision:
        seen.append(execution.arguments)
        return ToolPostDecision.accept()

    registry.register_post_execute_listener(None, post)
    registry.register_result_policy(None, lambda execution, outcome: seen.append(execution.arguments_json))
    calls = [ToolCall(f"c{i}", "greedy", '{"items": [1, 2]}') for i in range(2)]
    for batch in ([calls[0]], calls):  # a lone call, then a batch of two
        outcomes = await registry.execute_batch(batch, registry.seal())
        assert [o.value for o in outcomes] == [3] * len(batch)
    assert seen == [{"items": [1, 2]}, '{"items":[1,2]}'] * 3


async def test_a_cancelled_caller_runs_no_lone_call_and_is_cancelled() -> None:
    ran: list[str] = []
    registry = ToolRegistry()
    registry.register(PythonFunction.from_callable(lambda: ran.append("body"), name="instant", run_sync_in_thread=False))
    with anyio.CancelScope() as scope:
        scope.cancel()
        await registry.execute_batch([ToolCall("c1", "instant")], registry.seal())
    assert scope.cancelled_caught and ran == []


async def test_a_lone_call_whose_token_is_cancelled_is_not_dispatched() -> None:
    ran: list[str] = []
    registry = ToolRegistry()
    registry.register(PythonFunction.from_callable(lambda: ran.append("body"), name="instant", run_sync_in_thread=False))
    source = CancellationSource()
    source.cancel("the host gave up")
    outcome, = await registry.execute_batch([ToolCall("c1", "instant")], registry.seal(), cancellation=source.token)
    assert outcome.failure is not None and str(outcome.failure.code) == "ABORTED_BEFORE_DISPATCH"
    assert "the host gave up" in outcome.failure.message and ran == []


async def test_a_result_policy_that_rejects_a_lone_call_raises_with_nothing_delivered() -> None:
    registry = ToolRegistry()
    registry.register(PythonFunction.from_callable(lambda: "ok", name="instant", run_sync_in_thread=False))

    def policy(execution: ToolExecution, outcome: ToolExecutionOutcome) -> None:
        raise ValueError("not this one")

    registry.register_result_policy(None, policy)
    with pytest.raises(ResultPolicyError) as raised:
        await registry.execute_batch([ToolCall("c1", "instant")], registry.seal())
    assert raised.value.delivered == ()
    assert raised.value.outcome is not None and raised.value.outcome.value == "ok"

"""Child calls (programmatic tool calling): a tool body calls other tools, each through the whole pipeline.

Every rule of issue 17 section 4: a child succeeds and returns its value; a
refused or failed one reaches the parent's code as an exception carrying its
outcome; an invisible tool is UNKNOWN_TOOL like a missing one; ``parent_call_id``
is on the execution and the audit record; depth is limited (``too_deep``);
cancelling the parent cancels its children; a child may be a .NET tool.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from tether_clr import (
    AgentPipelineScope,
    CancellationSource,
    CancellationToken,
    ChildCallCancelled,
    ChildCallError,
    ChildCallFailed,
    ChildCallRefused,
    ChildCalls,
    InMemoryToolLog,
    PythonFunction,
    RequestContext,
    ToolAuditRecord,
    ToolCall,
    ToolError,
    ToolExecution,
    ToolMetadata,
    ToolPostDecision,
    ToolRegistrationOptions,
    ToolRegistry,
    current_child_calls,
)
from tether_clr.foundations.children import context_lending

pytestmark = pytest.mark.anyio


async def double(n: int) -> int:
    return 2 * n


def _registry(**options: Any) -> ToolRegistry:
    registry = ToolRegistry(**options)
    registry.register(PythonFunction.from_callable(double))
    return registry


def _tool(fn: Any, name: str | None = None) -> PythonFunction:
    return PythonFunction.from_callable(fn, name=name)


async def test_a_successful_child_returns_its_value_to_the_parent_code() -> None:
    registry = _registry()

    async def twice_doubled(n: int, calls: ChildCalls) -> int:
        return int(await calls.call_tool("double", {"n": await calls.call_tool("double", {"n": n})}))

    registry.register(_tool(twice_doubled))
    [outcome] = await registry.execute_batch([ToolCall("p", "twice_doubled", '{"n": 3}')], registry.seal())
    assert outcome.failure is None and outcome.value == 12


async def test_the_handle_is_no_part_of_the_schema_and_needs_an_async_function() -> None:
    async def code(source: str, calls: ChildCalls) -> None: ...

    tool = _tool(code)
    assert tool.makes_child_calls and set(tool.json_schema["properties"]) == {"source"}
    assert not _tool(double).makes_child_calls

    def blocking(calls: ChildCalls) -> None: ...

    with pytest.raises(TypeError, match="async"):
        _tool(blocking)


async def test_a_child_denied_by_a_guard_reaches_the_parent_as_an_exception_carrying_the_outcome() -> None:
    registry = _registry()
    registry.register_guard(None, lambda execution: "no doubling inside code" if execution.parent_call_id else None)
    caught: list[ChildCallError] = []

    async def parent(calls: ChildCalls) -> str:
        try:
            await calls.call_tool("double", {"n": 1})
        except ChildCallRefused as refused:
            caught.append(refused)
            return "refused"
        return "ran"

    registry.register(_tool(parent))
    [outcome] = await registry.execute_batch([ToolCall("p", "parent")], registry.seal())
    assert outcome.value == "refused"
    [refused] = caught
    assert refused.code == "DENIED" and refused.outcome.call_id == "p/1"
    assert refused.outcome.failure is not None and refused.outcome.failure.message == "no doubling inside code"
    assert isinstance(refused, ToolError)


async def test_an_uncaught_refusal_ends_the_parent_tool_error_with_its_message() -> None:
    registry = _registry()

    async def parent(calls: ChildCalls) -> Any:
        return await calls.call_tool("double", {"n": "not a number"})

    registry.register(_tool(parent))
    [outcome] = await registry.execute_batch([ToolCall("p", "parent")], registry.seal())
    assert outcome.code == "TOOL_ERROR"
    assert outcome.failure is not None and "child call 'p/1' (double) ended INVALID_ARGS" in outcome.failure.message


async def test_a_failed_child_is_child_call_failed_and_a_blocked_one_too() -> None:
    registry = _registry()

    async def broken() -> None:
        raise ToolError("broken inside")

    async def parent(calls: ChildCalls) -> list[str]:
        seen = []
        for name in ("broken", "double"):
            try:
                await calls.call_tool(name, {"n": 1} if name == "double" else {})
            except ChildCallFailed as failed:
                seen.append(f"{failed.code}:{failed.outcome.name}")
        return seen

    async def block_doubles(execution: ToolExecution, outcome: Any, next_: Any) -> ToolPostDecision:
        return ToolPostDecision.block("blocked") if execution.name == "double" else await next_()

    registry.register(_tool(broken))
    registry.register(_tool(parent))
    registry.register_post_execute_listener(None, block_doubles)
    [outcome] = await registry.execute_batch([ToolCall("p", "parent")], registry.seal())
    assert outcome.value == ["TOOL_ERROR:broken", "BLOCKED:double"]


async def test_a_child_of_an_invisible_tool_is_unknown_tool_exactly_like_a_missing_one() -> None:
    registry = ToolRegistry()
    registry.register(_tool(double), options=ToolRegistrationOptions(metadata=ToolMetadata(tenants=frozenset({"other"}))))
    messages: dict[str, str] = {}

    async def parent(calls: ChildCalls) -> None:
        for name in ("double", "missing"):
            try:
                await calls.call_tool(name, {"n": 1})
            except ChildCallRefused as refused:
                assert refused.code == "UNKNOWN_TOOL"
                assert refused.outcome.failure is not None
                messages[name] = refused.outcome.failure.message.replace(repr(name), "NAME")

    registry.register(_tool(parent))
    context = RequestContext(tenant_id="acme", principal_id="alice")
    [outcome] = await registry.execute_batch([ToolCall("p", "parent")], registry.assemble(context))
    assert outcome.failure is None
    assert messages["double"] == messages["missing"]


async def test_a_child_runs_with_the_parents_request_context_and_parent_call_id_recorded_in_audit() -> None:
    registry = _registry()
    seen: list[tuple[str, str | None, str | None]] = []
    registry.register_pre_execute_listener(None, _record_context(seen))
    audits: list[ToolAuditRecord] = []
    registry.register_audit_listener(audits.append)

    async def parent(calls: ChildCalls) -> Any:
        return await calls.call_tool("double", {"n": 2})

    registry.register(_tool(parent))
    log = InMemoryToolLog()
    context = RequestContext(tenant_id="acme", principal_id="alice")
    await registry.execute_batch([ToolCall("p", "parent")], registry.assemble(context), sink=log)
    assert seen == [("p", None, "alice"), ("p/1", "p", "alice")]
    assert {(a.call_id, a.parent_call_id, a.principal_id) for a in audits} == {("p", None, "alice"), ("p/1", "p", "alice")}
    assert {(c.call_id, c.parent_call_id) for c in log.calls} == {("p", None), ("p/1", "p")}
    assert log.pending_calls() == []


def _record_context(seen: list[tuple[str, str | None, str | None]]) -> Any:
    async def listener(execution: ToolExecution, next_: Any) -> Any:
        principal = None if execution.context is None else execution.context.principal_id
        seen.append((execution.call_id, execution.parent_call_id, principal))
        return await next_()

    return listener


async def test_nesting_deeper_than_max_child_depth_is_refused_invalid_args_too_deep() -> None:
    registry = ToolRegistry(max_child_depth=2)
    depths: list[int] = []

    async def recurse(calls: ChildCalls) -> str:
        depths.append(calls.depth)
        try:
            return str(await calls.call_tool("recurse"))
        except ChildCallRefused as refused:
            assert refused.code == "INVALID_ARGS" and refused.reason == "too_deep"
            return f"refused {refused.outcome.call_id}"

    registry.register(_tool(recurse))
    [outcome] = await registry.execute_batch([ToolCall("r", "recurse")], registry.seal())
    assert outcome.value == "refused r/1/1/1"
    assert depths == [0, 1, 2]


async def test_max_child_depth_zero_refuses_every_child_and_must_be_a_non_negative_int() -> None:
    registry = _registry(max_child_depth=0)

    async def parent(calls: ChildCalls) -> Any:
        return await calls.call_tool("double", {"n": 1})

    registry.register(_tool(parent))
    [outcome] = await registry.execute_batch([ToolCall("p", "parent")], registry.seal())
    assert outcome.code == "TOOL_ERROR" and outcome.failure is not None and "too_deep" not in outcome.failure.message
    assert "INVALID_ARGS" in outcome.failure.message
    for bad in (-1, True, 1.5):
        with pytest.raises(ValueError):
            ToolRegistry(max_child_depth=bad)  # type: ignore[arg-type]


async def test_cancelling_the_parent_cancels_its_children() -> None:
    registry = ToolRegistry()
    started = anyio.Event()
    child_tokens: list[CancellationToken] = []

    async def slow(cancellation: CancellationToken) -> str:
        child_tokens.append(cancellation)
        started.set()
        await anyio.sleep_forever()
        return "never"

    async def parent(calls: ChildCalls) -> Any:
        return await calls.call_tool("slow")

    registry.register(_tool(slow))
    registry.register(_tool(parent))
    source = CancellationSource()
    log = InMemoryToolLog()
    outcomes: list[Any] = []

    async def run() -> None:
        outcomes.extend(await registry.execute_batch([ToolCall("p", "parent")], registry.seal(), sink=log, cancellation=source.token))

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            await started.wait()
            source.cancel("host said stop")
    [outcome] = outcomes
    assert outcome.code == "ABORTED"
    assert child_tokens[0].is_cancelled
    child = [o for o in log.outcomes if o.call_id == "p/1"]
    assert [o.code for o in child] == ["ABORTED"]  # the child drained and was recorded
    assert log.pending_calls() == []


async def test_a_cancel_scope_of_the_parents_own_code_cancels_the_child_through_its_token() -> None:
    registry = ToolRegistry()

    async def slow(cancellation: CancellationToken) -> str:
        await anyio.sleep_forever()
        return "never"

    async def parent(calls: ChildCalls) -> str:
        with anyio.move_on_after(0.05):
            await calls.call_tool("slow")
        return "gave up"

    registry.register(_tool(slow))
    registry.register(_tool(parent))
    log = InMemoryToolLog()
    with anyio.fail_after(10):
        [outcome] = await registry.execute_batch([ToolCall("p", "parent")], registry.seal(), sink=log)
    assert outcome.value == "gave up"
    assert [(o.call_id, o.code) for o in log.outcomes] == [("p/1", "ABORTED"), ("p", None)]


async def test_an_uncaught_cancelled_child_ends_the_parent_aborted() -> None:
    outcome = _cancelled_outcome()
    error = ChildCallCancelled(outcome)
    assert isinstance(error, ChildCallError) and error.code == "ABORTED"
    from tether_clr import OperationCancelledError

    assert isinstance(error, OperationCancelledError)


def _cancelled_outcome() -> Any:
    from tether_clr import ToolExecutionOutcome

    return ToolExecutionOutcome.failed("p/1", "slow", "ABORTED", "cancelled")


async def test_the_handle_closes_when_the_body_returns() -> None:
    registry = _registry()
    kept: list[ChildCalls] = []

    async def parent(calls: ChildCalls) -> str:
        kept.append(calls)
        return calls.call_id

    registry.register(_tool(parent))
    [outcome] = await registry.execute_batch([ToolCall("p", "parent")], registry.seal())
    assert outcome.value == "p"
    with pytest.raises(RuntimeError, match="returned"):
        await kept[0].call_tool("double", {"n": 1})
    assert current_child_calls() is None  # nothing leaked into the caller's context


async def test_a_custom_tool_reads_the_handle_through_current_child_calls() -> None:
    registry = _registry()

    class Code:
        name, description, makes_child_calls = "code", "runs code", True
        json_schema: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": False}

        async def invoke(self, arguments: dict[str, Any], cancellation: CancellationToken) -> Any:
            handle = current_child_calls()
            assert handle is not None
            return await handle.call_tool("double", '{"n": 21}')

    registry.register(Code())
    [outcome] = await registry.execute_batch([ToolCall("c", "code")], registry.seal())
    assert outcome.value == 42


async def test_a_python_function_with_a_handle_invoked_outside_the_pipeline_is_invalid_args() -> None:
    async def parent(calls: ChildCalls) -> None: ...

    from tether_clr import ToolArgumentError

    with pytest.raises(ToolArgumentError):
        await _tool(parent).invoke({}, CancellationToken.none())
    assert context_lending  # the executor's door, used only by the pipeline


async def test_children_run_in_the_parents_scope_and_see_its_listeners() -> None:
    scope = AgentPipelineScope(session_id="s", owner="alice")
    registry = _registry()
    calls_seen: list[str] = []

    async def listener(execution: ToolExecution, next_: Any) -> Any:
        calls_seen.append(execution.call_id)
        assert execution.scope is scope
        return await next_()

    registry.register_pre_execute_listener(scope, listener)

    async def parent(calls: ChildCalls) -> Any:
        return await calls.call_tool("double", {"n": 5})

    registry.register(_tool(parent))
    [outcome] = await registry.execute_batch([ToolCall("p", "parent")], registry.seal(scope))
    assert outcome.value == 10 and calls_seen == ["p", "p/1"]


async def test_a_dotnet_tool_is_called_as_the_child_of_a_python_tool(clr_tools: dict[str, Any]) -> None:
    registry = ToolRegistry()
    registry.register(clr_tools["functions"]["Add"])

    async def adder(calls: ChildCalls) -> Any:
        return await calls.call_tool("Add", {"a": 2, "b": 40})

    registry.register(_tool(adder))
    log = InMemoryToolLog()
    [outcome] = await registry.execute_batch([ToolCall("p", "adder")], registry.seal(), sink=log)
    assert outcome.value == 42
    assert [(c.call_id, c.parent_call_id) for c in log.calls] == [("p", None), ("p/1", "p")]

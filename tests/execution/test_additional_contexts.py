"""Additional contexts (issue 17 section 5): a post-execute listener adds model-facing text; the batch
hands the texts to the host as a FIFO in the model order of their calls; child calls add none."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from tether_clr import (
    BatchOutcomes,
    ChildCalls,
    PythonFunction,
    ToolCall,
    ToolExecution,
    ToolExecutionOutcome,
    ToolPostDecision,
    ToolRegistrationOptions,
    ToolRegistry,
)

pytestmark = pytest.mark.anyio


def _echoing() -> ToolRegistry:
    """A registry with ``echo(text)``."""
    registry = ToolRegistry()

    async def echo(text: str) -> str:
        return text

    registry.register(PythonFunction.from_callable(echo))
    return registry


def _noting(registry: ToolRegistry) -> None:
    """Every dispatched call gets the context ``"note <call id>"``."""

    async def note(execution: ToolExecution, outcome: ToolExecutionOutcome, next_: Any) -> ToolPostDecision:
        return (await next_()).with_context(f"note {execution.call_id}")

    registry.register_post_execute_listener(None, note)


async def test_contexts_are_a_fifo_in_model_order_even_when_overlapping_bodies_finish_out_of_order() -> None:
    registry = ToolRegistry()
    finished: list[str] = []
    gates = {name: anyio.Event() for name in ("a", "b", "c")}

    async def wait_for(name: str) -> str:
        await gates[name].wait()
        finished.append(name)
        if name == "c":
            gates["b"].set()
        elif name == "b":
            gates["a"].set()
        return name

    registry.register(PythonFunction.from_callable(wait_for), options=ToolRegistrationOptions(is_concurrency_safe=True))
    _noting(registry)
    calls = [ToolCall(f"c{i}", "wait_for", f'{{"name": "{name}"}}') for i, name in enumerate("abc")]
    gates["c"].set()
    with anyio.fail_after(10):
        outcomes = await registry.execute_batch(calls, registry.seal(), max_parallelism=3)
    assert finished == ["c", "b", "a"]  # the bodies ended in reverse
    assert isinstance(outcomes, BatchOutcomes)
    assert outcomes.additional_contexts == ("note c0", "note c1", "note c2")


async def test_the_outcomes_are_still_a_plain_list() -> None:
    registry = _echoing()
    outcomes = await registry.execute_batch([ToolCall("c", "echo", '{"text": "x"}')], registry.seal())
    assert isinstance(outcomes, list)
    assert outcomes == [ToolExecutionOutcome.success("c", "echo", "x")]
    assert isinstance(outcomes, BatchOutcomes) and outcomes.additional_contexts == ()
    assert list(outcomes) == outcomes and outcomes[0].value == "x"


async def test_every_post_decision_can_add_context_and_a_refused_call_adds_none() -> None:
    registry = _echoing()

    async def decide(execution: ToolExecution, outcome: ToolExecutionOutcome, next_: Any) -> ToolPostDecision:
        text = execution.arguments["text"]
        if text == "accept":
            return ToolPostDecision.accept(add_context="accepted")
        if text == "replace":
            return ToolPostDecision.replace("new", add_context="replaced")
        return ToolPostDecision.block("no", add_context="blocked")

    registry.register_post_execute_listener(None, decide)
    calls = [ToolCall(f"c{i}", "echo", f'{{"text": "{t}"}}') for i, t in enumerate(("accept", "replace", "block"))]
    calls.append(ToolCall("c3", "missing"))  # refused before dispatch: no post-execute, no context
    outcomes = await registry.execute_batch(calls, registry.seal())
    assert [o.code for o in outcomes] == [None, None, "BLOCKED", "UNKNOWN_TOOL"]
    assert outcomes.additional_contexts == ("accepted", "replaced", "blocked")  # type: ignore[union-attr]


async def test_an_inner_context_counts_only_when_the_outer_listener_passes_it_on() -> None:
    registry = _echoing()

    async def inner(execution: ToolExecution, outcome: ToolExecutionOutcome, next_: Any) -> ToolPostDecision:
        return ToolPostDecision.accept(add_context="inner")

    async def outer(execution: ToolExecution, outcome: ToolExecutionOutcome, next_: Any) -> ToolPostDecision:
        decision = await next_()
        return decision.with_context("outer") if execution.arguments["text"] == "keep" else ToolPostDecision.accept()

    registry.register_post_execute_listener(None, inner)
    registry.register_post_execute_listener(None, outer, prepend=True)
    calls = [ToolCall("c0", "echo", '{"text": "keep"}'), ToolCall("c1", "echo", '{"text": "drop"}')]
    outcomes = await registry.execute_batch(calls, registry.seal())
    assert outcomes.additional_contexts == ("inner", "outer")  # type: ignore[union-attr]


def test_a_context_is_non_empty_valid_text() -> None:
    for bad, error in ((42, TypeError), ("", ValueError), ("  ", ValueError), ("\ud800", ValueError)):
        with pytest.raises(error):
            ToolPostDecision.accept(add_context=bad)  # type: ignore[arg-type]
    assert ToolPostDecision.accept() is ToolPostDecision.accept()
    assert ToolPostDecision.accept(add_context="x").contexts == ("x",)


async def test_a_decision_built_with_bad_contexts_fails_the_call_closed() -> None:
    registry = _echoing()

    async def sneaky(execution: ToolExecution, outcome: ToolExecutionOutcome, next_: Any) -> ToolPostDecision:
        return ToolPostDecision("accept", contexts=(3,))  # type: ignore[arg-type]

    registry.register_post_execute_listener(None, sneaky)
    outcomes = await registry.execute_batch([ToolCall("c", "echo", '{"text": "x"}')], registry.seal())
    assert outcomes[0].code == "TOOL_ERROR" and outcomes.additional_contexts == ()  # type: ignore[union-attr]


async def test_contexts_added_for_child_calls_are_ignored() -> None:
    registry = ToolRegistry()

    async def leaf() -> str:
        return "leaf"

    async def parent(calls: ChildCalls) -> Any:
        return await calls.call_tool("leaf")

    registry.register(PythonFunction.from_callable(leaf))
    registry.register(PythonFunction.from_callable(parent))
    _noting(registry)
    outcomes = await registry.execute_batch([ToolCall("p", "parent")], registry.seal())
    assert outcomes[0].value == "leaf"
    assert outcomes.additional_contexts == ("note p",)  # type: ignore[union-attr]

"""Describing an exception never fails: one whose ``str()`` raises is described by its
type name, whichever stage raised it, and nothing escapes ``execute_batch`` but the
documented infrastructure faults."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.support import Approver, FailingSink, Unprintable, add, asking, call, run_one, session_scope
from tether_clr import (
    AgentPipelineScope,
    ResultPolicyError,
    SinkError,
    ToolArgumentError,
    ToolError,
    ToolExecutionOutcome,
    ToolFailureCodes,
    ToolRegistry,
    describe_exception,
)

pytestmark = pytest.mark.anyio


class UnprintableToolError(ToolError):
    def __str__(self) -> str:
        raise RuntimeError("no")


class UnprintableArgumentError(ToolArgumentError):
    def __str__(self) -> str:
        raise RuntimeError("no")


class ReturnsNonText(Exception):
    def __str__(self) -> Any:
        return 42


def test_describe_exception_falls_back_to_the_type_name() -> None:
    assert describe_exception(Unprintable()) == "Unprintable"
    assert describe_exception(ReturnsNonText()) == "ReturnsNonText"
    assert describe_exception(ValueError("x")) == "ValueError: x"
    assert describe_exception(ValueError("\ud800")) == "ValueError: \\ud800"


async def _run(registry: ToolRegistry, scope: AgentPipelineScope | None = None, name: str = "t", **kwargs: Any) -> ToolExecutionOutcome:
    return await run_one(registry, call("c1", name), scope, **kwargs)


def _raise() -> Any:
    raise Unprintable()


async def test_unprintable_exception_from_the_tool_is_tool_error_named_by_type() -> None:
    registry = ToolRegistry()
    add(registry, _raise, "t")
    outcome = await _run(registry)
    assert outcome.code is ToolFailureCodes.TOOL_ERROR and outcome.failure.message == "Unprintable"


async def test_unprintable_tool_error_and_argument_error_keep_their_codes() -> None:
    registry = ToolRegistry()

    def tool_error() -> None:
        raise UnprintableToolError()

    def argument_error() -> None:
        raise UnprintableArgumentError()

    add(registry, tool_error, "te")
    add(registry, argument_error, "ae")
    te = await _run(registry, name="te")
    ae = await _run(registry, name="ae")
    assert (te.code, te.failure.message) == (ToolFailureCodes.TOOL_ERROR, "tool failed")
    assert (ae.code, ae.failure.message) == (ToolFailureCodes.INVALID_ARGS, "arguments could not be bound")


async def _ask_provider(answer: Callable[[], Any]) -> ToolExecutionOutcome:
    """One call that asks for approval from a provider answering ``answer()``."""
    registry = ToolRegistry()
    add(registry, lambda: 1, "t")

    registry.register_pre_execute_listener(None, asking("check"))
    registry.approval = Approver(decide=lambda execution: answer())
    return await _run(registry, session_scope())


async def test_unprintable_exception_from_the_approval_provider_is_unavailable() -> None:
    outcome = await _ask_provider(_raise)
    assert outcome.code is ToolFailureCodes.UNAVAILABLE and outcome.failure.message == "approval provider failed: Unprintable"


async def test_approval_result_whose_repr_raises_is_unavailable() -> None:
    class Weird:
        def __repr__(self) -> str:
            raise RuntimeError("no repr")

    outcome = await _ask_provider(Weird)
    assert outcome.code is ToolFailureCodes.UNAVAILABLE and "<Weird>" in outcome.failure.message


async def _pre_execute(execution: Any, next_: Any) -> Any:
    raise Unprintable()


def _guard(execution: Any) -> Any:
    raise Unprintable()


async def _execute(dispatch: Any, next_: Any) -> Any:
    await next_()
    raise Unprintable()


async def _post_execute(execution: Any, outcome: Any, next_: Any) -> Any:
    raise Unprintable()


LISTENERS = {
    "pre-execute listener": ("register_pre_execute_listener", _pre_execute),
    "guard": ("register_guard", _guard),
    "execute listener": ("register_execute_listener", _execute),
    "post-execute listener": ("register_post_execute_listener", _post_execute),
}


@pytest.mark.parametrize("stage", LISTENERS)
async def test_unprintable_exception_from_a_listener_is_tool_error_naming_the_stage(stage: str) -> None:
    registry = ToolRegistry()
    add(registry, lambda: 1, "t")
    method, listener = LISTENERS[stage]
    getattr(registry, method)(None, listener)
    outcome = await _run(registry)
    assert outcome.code is ToolFailureCodes.TOOL_ERROR and outcome.failure.message == f"{stage} failed: Unprintable"


async def test_unprintable_exception_from_a_result_policy_raises_result_policy_error() -> None:
    registry = ToolRegistry()
    add(registry, lambda: 1, "t")

    async def policy(execution: Any, outcome: Any) -> None:
        raise Unprintable()

    registry.register_result_policy(None, policy)
    with pytest.raises(ResultPolicyError) as caught:
        await _run(registry)
    assert str(caught.value).endswith(": Unprintable")


@pytest.mark.parametrize("stage", ["call_declared", "outcome_ready"])
async def test_unprintable_exception_from_the_sink_raises_sink_error(stage: str) -> None:
    registry = ToolRegistry()
    add(registry, lambda: 1, "t")

    with pytest.raises(SinkError) as caught:
        await _run(registry, sink=FailingSink(stage, Unprintable))
    assert str(caught.value).endswith(": Unprintable")


async def test_unprintable_exceptions_in_a_parallel_group_never_become_an_exception_group() -> None:
    registry = ToolRegistry()
    add(registry, _raise, "t", parallel=True)
    calls = [call(f"c{i}", "t") for i in range(4)]
    outcomes = await registry.execute_batch(calls, registry.seal())
    assert [o.failure.message for o in outcomes] == ["Unprintable"] * 4

"""Small builders shared by the tests (re-exported by ``tests.support``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anyio

from tether_clr import (
    AgentPipelineScope,
    PythonFunction,
    ToolCall,
    ToolRegistrationOptions,
    ToolRegistry,
)


def call(call_id: str, name: str, arguments: Any = None, **kwargs: Any) -> ToolCall:
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments or {})
    return ToolCall(call_id, name, raw, **kwargs)


def add(
    registry: ToolRegistry,
    fn: Callable[..., Any],
    name: str | None = None,
    *,
    scope: AgentPipelineScope | None = None,
    parallel: Any = None,
) -> PythonFunction:
    tool = PythonFunction.from_callable(fn, name=name)
    registry.register(tool, scope, ToolRegistrationOptions(is_concurrency_safe=parallel))
    return tool


def codes(outcomes: list[Any]) -> list[str | None]:
    return [None if o.failure is None else str(o.failure.code) for o in outcomes]


def registry_of(*tools: Any, scope: AgentPipelineScope | None = None) -> ToolRegistry:
    """A registry with ``tools`` registered as they are (C# functions, tool objects), in ``scope``."""
    registry = ToolRegistry()
    for tool in tools:
        registry.register(tool, scope)
    return registry


def echo_registry(bodies: list[str] | None = None, *, sync: bool = False) -> ToolRegistry:
    """``echo`` (concurrency-safe) and ``solo`` (exclusive), both returning ``text`` and appending it to ``bodies``.

    ``sync=True`` registers a plain function (run in a worker thread) instead of a coroutine.
    """
    registry = ToolRegistry()

    def record(text: str) -> str:
        if bodies is not None:
            bodies.append(text)
        return text

    async def echo_async(text: str) -> str:
        return record(text)

    def echo_sync(text: str) -> str:
        return record(text)

    echo = echo_sync if sync else echo_async
    add(registry, echo, "echo", parallel=True)
    add(registry, echo, "solo")
    return registry


def session_scope() -> AgentPipelineScope:
    """The scope the single-session tests run in: session ``s1``, owned by ``alice``."""
    return AgentPipelineScope(session_id="s1", owner="alice")


BATCH_TIMEOUT = 30
"""Seconds ``run_batch`` allows a batch: only turns a hang into a failure."""

DEADLOCK_GUARD = 10  # seconds; only turns a scheduling bug into a failure instead of a hang


async def run_batch(registry: ToolRegistry, *calls: ToolCall, scope: AgentPipelineScope | None = None, **kwargs: Any) -> list[Any]:
    """``execute_batch`` of ``calls`` on ``registry.seal(scope)``, failing after ``BATCH_TIMEOUT`` seconds."""
    with anyio.fail_after(BATCH_TIMEOUT):
        return await registry.execute_batch(list(calls), registry.seal(scope), **kwargs)


async def run_one(registry: ToolRegistry, call: ToolCall, scope: AgentPipelineScope | None = None, **kwargs: Any) -> Any:
    """The one outcome of ``execute_batch([call], registry.seal(scope))``."""
    outcomes = await registry.execute_batch([call], registry.seal(scope), **kwargs)
    assert len(outcomes) == 1
    return outcomes[0]

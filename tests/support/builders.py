"""Small builders shared by the tests (re-exported by ``tests.support``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

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

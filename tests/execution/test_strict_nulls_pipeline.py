"""The strict-mode null rule in a batch: the body gets the arguments without the nulls read as
absent, the call is not refused INVALID_ARGS, and the log keeps the model's raw text."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import Approver, call, codes, run_batch, session_scope
from tether_clr import InMemoryToolLog, PythonFunction, ToolCall, ToolRegistrationOptions, ToolRegistry

pytestmark = pytest.mark.anyio


def _registry(seen: list[dict[str, Any]], **options: Any) -> ToolRegistry:
    def forecast(city: str, days: int = 3, units: str = "metric") -> str:
        seen.append({"city": city, "days": days, "units": units})
        return f"{city}: {days} days, {units}"

    registry = ToolRegistry()
    registry.register(PythonFunction.from_callable(forecast), None, ToolRegistrationOptions(**options))
    return registry


async def test_a_strict_null_call_runs_with_the_arguments_the_schema_accepts() -> None:
    seen: list[dict[str, Any]] = []
    registry = _registry(seen)
    outcomes = await run_batch(registry, ToolCall("c1", "forecast", '{"city": "Oslo", "days": null, "units": null}'))
    assert codes(outcomes) == [None]
    assert seen == [{"city": "Oslo", "days": 3, "units": "metric"}]  # the nulls were absent: the defaults applied


async def test_the_log_records_the_models_raw_text_of_a_strict_null_call() -> None:
    registry = _registry([])
    raw = '{"city": "Oslo", "days": null, "units": null}'
    log = InMemoryToolLog()
    await run_batch(registry, ToolCall("c1", "forecast", raw), sink=log)
    assert [c.arguments for c in log.calls] == [raw]


async def test_approvers_and_listeners_see_the_arguments_without_the_strict_nulls() -> None:
    registry = _registry([], requires_approval=True)
    approver = registry.approval = Approver()
    seen_by_guard: list[Any] = []
    registry.register_guard(None, lambda e: seen_by_guard.append(e.arguments))
    outcomes = await run_batch(registry, call("c1", "forecast", {"city": "Oslo", "days": None}), scope=session_scope())
    assert codes(outcomes) == [None]
    assert [arguments for _, _, arguments in approver.requests] == [{"city": "Oslo"}]
    assert seen_by_guard == [{"city": "Oslo"}]


async def test_a_null_the_schema_refuses_for_a_required_property_is_still_invalid_args() -> None:
    seen: list[dict[str, Any]] = []
    outcomes = await run_batch(_registry(seen), call("c1", "forecast", {"city": None, "days": None}))
    assert codes(outcomes) == ["INVALID_ARGS"] and seen == []
    assert "city" in outcomes[0].failure.message

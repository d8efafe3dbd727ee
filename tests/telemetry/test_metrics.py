"""The tool metrics, read back through the SDK's in-memory metric reader: ``tether.tool.calls`` and
``tether.tool.duration`` (unit ``s``) per tool name and outcome code, ``tether.tool.in_flight`` while
bodies run, and metrics alone when only a meter provider is configured."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.sdk.metrics.export import HistogramDataPoint

from tests.support import call, run_batch
from tests.support.telemetry import Recorded
from tether_clr import PythonFunction, ResultPolicyError, ToolRegistry
from tether_clr.telemetry import OtelInstrumentation

pytestmark = pytest.mark.anyio


def _tools(registry: ToolRegistry, recorded: Recorded, seen: list[Any]) -> None:
    async def echo(text: str) -> str:
        seen.append(recorded.counts("tether.tool.in_flight"))  # read while this body runs
        return text

    async def broken() -> str:
        raise RuntimeError("no")

    registry.register(PythonFunction.from_callable(echo, name="echo"))
    registry.register(PythonFunction.from_callable(broken, name="broken"))


async def test_calls_and_durations_are_counted_per_tool_and_outcome_code() -> None:
    recorded = Recorded()
    registry = recorded.registry()
    seen: list[Any] = []
    _tools(registry, recorded, seen)
    await run_batch(registry, call("c1", "echo", {"text": "a"}), call("c2", "echo", {"text": "b"}), call("c3", "broken"),
                    call("c4", "nope"))
    ok = (("gen_ai.tool.name", "echo"), ("tether.outcome.code", "OK"))
    failed = (("gen_ai.tool.name", "broken"), ("tether.outcome.code", "TOOL_ERROR"))
    unknown = (("gen_ai.tool.name", "nope"), ("tether.outcome.code", "UNKNOWN_TOOL"))
    assert recorded.counts("tether.tool.calls") == {ok: 2, failed: 1, unknown: 1}
    assert recorded.counts("tether.tool.duration") == {ok: 2, failed: 1, unknown: 1}
    assert recorded.unit("tether.tool.duration") == "s"
    durations = [p for p in recorded.points("tether.tool.duration") if isinstance(p, HistogramDataPoint)]
    assert all(p.sum >= 0 and p.min >= 0 for p in durations)


async def test_in_flight_counts_the_bodies_running_and_returns_to_zero() -> None:
    recorded = Recorded()
    registry = recorded.registry()
    seen: list[Any] = []
    _tools(registry, recorded, seen)
    await run_batch(registry, call("c1", "echo", {"text": "a"}), call("c2", "broken"))
    assert seen == [{(("gen_ai.tool.name", "echo"),): 1}]
    after = recorded.counts("tether.tool.in_flight")
    assert after == {(("gen_ai.tool.name", "echo"),): 0, (("gen_ai.tool.name", "broken"),): 0}


async def test_a_call_without_an_outcome_is_counted_with_its_error_type() -> None:
    recorded = Recorded()
    registry = recorded.registry()
    _tools(registry, recorded, [])

    def policy(execution: Any, outcome: Any) -> None:
        raise LookupError("rejected")

    registry.register_result_policy(None, policy)
    with pytest.raises(ResultPolicyError):
        await run_batch(registry, call("c1", "echo", {"text": "a"}))
    assert recorded.counts("tether.tool.calls") == {(("error.type", "LookupError"), ("gen_ai.tool.name", "echo")): 1}


async def test_with_only_a_meter_provider_there_are_metrics_and_no_spans() -> None:
    recorded = Recorded()
    only_metrics = OtelInstrumentation(meter_provider=recorded.meter_provider)  # the global tracer provider is unset
    registry = ToolRegistry(instrumentation=only_metrics)
    _tools(registry, recorded, [])
    await run_batch(registry, call("c1", "echo", {"text": "a"}))
    assert recorded.counts("tether.tool.calls") == {(("gen_ai.tool.name", "echo"), ("tether.outcome.code", "OK")): 1}
    assert recorded.spans() == []

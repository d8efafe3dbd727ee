"""Child process for the telemetry tests that need the global providers: ``python -m tests.support.telemetry_child MODE``.

The API's global providers can be set once per process, so these run apart. Each
mode runs one batch (``echo`` and an unknown tool) in a plain ``ToolRegistry()``
under ``BACKEND`` (asyncio or trio, the second argument) and prints one JSON line:

* ``global``: the host sets the SDK's global tracer and meter providers (in-memory);
  prints the spans (name, parent span id, whether arguments were recorded), the
  host span's id, and the calls counted;
* ``instrument``: the same, after ``tether_clr.telemetry.instrument(capture_content=True)``;
* ``absent``: ``opentelemetry`` cannot be imported; prints whether the registry has an
  instrumentation and the outcome codes.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio

from tether_clr import PythonFunction, ToolCall, ToolRegistry


async def echo(text: str) -> str:
    return text


async def _run(registry: ToolRegistry) -> list[Any]:
    registry.register(PythonFunction.from_callable(echo, name="echo"))
    calls = [ToolCall("c1", "echo", '{"text": "hi"}'), ToolCall("c2", "nope", "{}")]
    return await registry.execute_batch(calls, registry.seal())


async def _traced(mode: str) -> dict[str, Any]:
    from opentelemetry import metrics, trace
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter, reader = InMemorySpanExporter(), InMemoryMetricReader()
    registry = ToolRegistry()  # made before the host configures anything: picked up per batch
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
    if mode == "instrument":
        from tether_clr.telemetry import instrument

        instrument(capture_content=True)
    with trace.get_tracer("host").start_as_current_span("agent step") as host:
        await _run(registry)
    data = reader.get_metrics_data()
    counted = sum(
        point.value
        for resource in ([] if data is None else data.resource_metrics)
        for scope in resource.scope_metrics
        for item in scope.metrics
        if item.name == "tether.tool.calls"
        for point in item.data.data_points
    )
    return {
        "host": format(host.get_span_context().span_id, "016x"),
        "spans": [
            {"name": s.name, "parent": None if s.parent is None else format(s.parent.span_id, "016x"),
             "arguments": "gen_ai.tool.call.arguments" in (s.attributes or {})}
            for s in exporter.get_finished_spans() if s.name.startswith("execute_tool")
        ],
        "calls": counted,
    }


async def _absent() -> dict[str, Any]:
    registry = ToolRegistry()
    outcomes = await _run(registry)
    return {"instrumented": registry.instrumentation is not None, "codes": [o.code for o in outcomes]}


def main() -> None:
    mode, backend = sys.argv[1], sys.argv[2]
    if mode == "absent":
        sys.modules["opentelemetry"] = None  # type: ignore[assignment]  # import opentelemetry now raises ImportError
        print(json.dumps(anyio.run(_absent, backend=backend)), flush=True)
        return
    print(json.dumps(anyio.run(_traced, mode, backend=backend)), flush=True)


if __name__ == "__main__":
    main()

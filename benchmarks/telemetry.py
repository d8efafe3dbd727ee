"""What telemetry costs per call: no instrumentation (the API absent), the default with no provider, a no-op provider, a sampler that drops
every span, and a recording SDK (spans to an in-memory exporter, metrics to an in-memory reader).

    .venv/bin/python benchmarks/telemetry.py [--backend asyncio|trio] [--rounds N] [--quick] [--write-docs]

A no-op async tool through ``execute_batch`` (batches of 1 and of 100 calls, no
listener, no sink), as in benchmarks/pipeline.py. Runs in the test virtualenv
(``.venv``): the OpenTelemetry SDK is in the test extra. Each row is the best of
its rounds, wall and process CPU time per call, and the difference from the
first row (no instrumentation at all).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import Timer, add_write_docs_flag, machine_line, publish, table, versions  # noqa: E402
from opentelemetry.metrics import NoOpMeterProvider  # noqa: E402
from opentelemetry.sdk.metrics import MeterProvider  # noqa: E402
from opentelemetry.sdk.metrics.export import InMemoryMetricReader  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF  # noqa: E402
from opentelemetry.trace import NoOpTracerProvider  # noqa: E402

from tether_clr import PythonFunction, ToolCall, ToolRegistry  # noqa: E402
from tether_clr.telemetry import OtelInstrumentation  # noqa: E402


async def noop() -> None:
    return None


def _recording(capture_content: bool) -> tuple[OtelInstrumentation, Callable[[], None]]:
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
    instrumentation = OtelInstrumentation(capture_content=capture_content, tracer_provider=tracer_provider, meter_provider=meter_provider)
    return instrumentation, exporter.clear


def _cases() -> list[tuple[str, Any, Callable[[], None] | None]]:
    """(row, instrumentation, what to run after each timed batch run)."""
    recording, clear = _recording(False)
    with_content, clear_content = _recording(True)
    return [
        ("none: API absent (no `otel` extra), or `instrumentation=None`", None, None),
        ("default `ToolRegistry()` (entry point), no provider configured", "auto", None),
        ("no-op tracer and meter providers", OtelInstrumentation(tracer_provider=NoOpTracerProvider(), meter_provider=NoOpMeterProvider()), None),
        ("SDK, sampler drops every span, no metrics", OtelInstrumentation(tracer_provider=TracerProvider(sampler=ALWAYS_OFF),
                                                                             meter_provider=NoOpMeterProvider()), None),
        ("SDK recording: spans (in-memory exporter) and metrics", recording, clear),
        ("SDK recording, with `capture_content=True`", with_content, clear_content),
    ]


async def rows(rounds: int, min_round: float) -> list[list[str]]:
    found: list[list[str]] = []
    baselines: dict[int, float] = {}
    for label, instrumentation, after in _cases():
        registry = ToolRegistry(instrumentation=instrumentation)
        registry.register(PythonFunction.from_callable(noop))
        view = registry.seal()
        for batch_size in (1, 100):
            calls = [ToolCall(f"c{i}", "noop", "{}") for i in range(batch_size)]

            async def run(calls: list[ToolCall] = calls, registry: ToolRegistry = registry, after: Any = after) -> None:
                await registry.execute_batch(calls, view)
                if after is not None:
                    after()

            wall, cpu = await Timer(run, batch_size, min_round).best_us(rounds)
            base = baselines.setdefault(batch_size, cpu)
            found.append([label, str(batch_size), f"{wall:.1f}", f"{cpu:.1f}", f"{cpu - base:+.1f}"])
    return found


async def main(write: bool, rounds: int, backend: str, min_round: float) -> None:
    body = table(["instrumentation", "calls per batch", "wall µs per call", "CPU µs per call", "CPU µs vs none"], await rows(rounds, min_round))
    report = (
        f"Measured with `benchmarks/telemetry.py --write-docs` ({backend}; {machine_line()}; "
        f"{versions(('opentelemetry-api', 'opentelemetry-sdk'))}; best of {rounds} rounds of at least {min_round:g} s).\n\n{body}\n"
    )
    publish("telemetry", report, write)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_write_docs_flag(parser, "telemetry")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--backend", choices=["asyncio", "trio"], default="asyncio")
    parser.add_argument("--quick", action="store_true", help="short rounds: a smoke run, not a measurement")
    args = parser.parse_args()
    anyio.run(main, args.write_docs, 2 if args.quick else args.rounds, args.backend, 0.005 if args.quick else 0.2, backend=args.backend)

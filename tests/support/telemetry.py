"""The real OpenTelemetry SDK wired to in-memory exporters, for the telemetry tests.

:class:`Recorded` holds a ``TracerProvider`` whose spans go, synchronously, to
an ``InMemorySpanExporter``, and a ``MeterProvider`` read by an
``InMemoryMetricReader``; :meth:`Recorded.registry` is a ``ToolRegistry``
observed through an ``OtelInstrumentation`` on them. Nothing global is set:
the tests that need the global providers run in a child process.
"""

from __future__ import annotations

from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader, NumberDataPoint
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tether_clr import ToolRegistry
from tether_clr.telemetry import OtelInstrumentation


class Recorded:
    """An SDK tracer and meter provider, recording in memory, and an instrumentation on them."""

    def __init__(self, *, capture_content: bool = False) -> None:
        self.exporter = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.reader])
        self.instrumentation = OtelInstrumentation(
            capture_content=capture_content, tracer_provider=self.tracer_provider, meter_provider=self.meter_provider
        )
        self.tracer = self.tracer_provider.get_tracer("tests")

    def registry(self, **options: Any) -> ToolRegistry:
        return ToolRegistry(instrumentation=self.instrumentation, **options)

    def spans(self, name: str | None = None) -> list[ReadableSpan]:
        """Ended spans, in the order they ended (``name``: only those)."""
        return [span for span in self.exporter.get_finished_spans() if name is None or span.name == name]

    def call_spans(self) -> list[ReadableSpan]:
        return [span for span in self.spans() if span.name.startswith("execute_tool ")]

    def one(self, name: str) -> ReadableSpan:
        found = self.spans(name)
        assert len(found) == 1, [span.name for span in self.spans()]
        return found[0]

    def points(self, metric: str) -> list[NumberDataPoint | HistogramDataPoint]:
        """The data points of ``metric`` as the reader collects them now."""
        data = self.reader.get_metrics_data()
        found: list[Any] = []
        for resource in [] if data is None else data.resource_metrics:
            for scope in resource.scope_metrics:
                for item in scope.metrics:
                    if item.name == metric:
                        found.extend(item.data.data_points)
        return found

    def unit(self, metric: str) -> str | None:
        data = self.reader.get_metrics_data()
        for resource in [] if data is None else data.resource_metrics:
            for scope in resource.scope_metrics:
                for item in scope.metrics:
                    if item.name == metric:
                        return item.unit
        return None

    def counts(self, metric: str = "tether.tool.calls") -> dict[tuple[tuple[str, Any], ...], Any]:
        """``metric``'s value per attribute set (a counter's sum, a histogram's count)."""
        return {
            tuple(sorted(point.attributes.items())): getattr(point, "value", None) if isinstance(point, NumberDataPoint) else point.count
            for point in self.points(metric)
        }

"""The OpenTelemetry instrumentation: when it records, where it gets its tracer and meter, and the default.

:class:`OtelInstrumentation` implements the execution layer's
:class:`~tether_clr.Instrumentation` port. Once per batch it looks at the tracer
and meter providers (the ones it was given, else the global ones): a provider
that is still the API's placeholder (no provider configured) or a no-op
records nothing, and with neither recording, the batch gets no observer at
all, so its calls cost one branch each. A host that configures a provider
later is picked up by the next batch. While no global provider is set, the
API's getters read the environment (``OTEL_PYTHON_TRACER_PROVIDER``,
``OTEL_PYTHON_METER_PROVIDER``) on every call; here those two variables are
read once per process, and a batch looks only at whether a provider was set.

The default instrumentation (:func:`default_instrumentation`, the entry point
every :class:`~tether_clr.ToolRegistry` finds) is one per process;
:func:`instrument` configures it and :func:`uninstrument` turns it off.
``capture_content`` defaults to the GenAI conventions' switch,
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``, read when the
instrumentation starts (made, or :func:`instrument` called).
"""

from __future__ import annotations

import functools
import os
import threading
from importlib import metadata
from typing import TYPE_CHECKING

from opentelemetry import metrics, trace
from opentelemetry.metrics import _internal as metrics_internal
from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import Tracer, TracerProvider

from tether_clr.telemetry.metrics import ToolMetrics
from tether_clr.telemetry.spans import OtelBatch

if TYPE_CHECKING:
    from tether_clr.catalog.views import SealedToolCatalogView

__all__ = ["CAPTURE_CONTENT_VARIABLE", "OtelInstrumentation", "default_instrumentation", "instrument", "uninstrument"]

CAPTURE_CONTENT_VARIABLE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
"""The GenAI semantic conventions' opt-in to recording message content; ``true`` (any case) records arguments and results."""

_SCOPE = "tether_clr"


def _version() -> str:
    try:
        return metadata.version("tether_clr")
    except metadata.PackageNotFoundError:
        return "0"


def _capture_from_environment() -> bool:
    return os.environ.get(CAPTURE_CONTENT_VARIABLE, "").strip().lower() == "true"


@functools.cache
def _named_in_environment(variable: str) -> bool:
    """Whether ``variable`` names a provider for the API to load on first use; read once per process."""
    return variable in os.environ


_UNKNOWN = object()


def _global_tracer_provider() -> TracerProvider | None:
    """``trace.get_tracer_provider()``, or None while none is set and the environment names none (the API's
    placeholder, which records nothing), without the API's environment read on every call."""
    if getattr(trace, "_TRACER_PROVIDER", _UNKNOWN) is None and not _named_in_environment("OTEL_PYTHON_TRACER_PROVIDER"):
        return None
    return trace.get_tracer_provider()


def _global_meter_provider() -> MeterProvider | None:
    """``metrics.get_meter_provider()``, or None while none is set and the environment names none."""
    if getattr(metrics_internal, "_METER_PROVIDER", _UNKNOWN) is None and not _named_in_environment("OTEL_PYTHON_METER_PROVIDER"):
        return None
    return metrics.get_meter_provider()


def _records_spans(provider: TracerProvider) -> bool:
    """False for the API's proxy (no provider configured yet) and its no-op provider."""
    return not isinstance(provider, (trace.ProxyTracerProvider, trace.NoOpTracerProvider))


def _records_metrics(provider: MeterProvider) -> bool:
    """False for the API's own providers: its placeholder (none configured; ``_ProxyMeterProvider`` is
    private, so it is known by the module it lives in) and :class:`~opentelemetry.metrics.NoOpMeterProvider`."""
    return not isinstance(provider, metrics.NoOpMeterProvider) and type(provider).__module__ != "opentelemetry.metrics._internal"


class OtelInstrumentation:
    """``execute_tool`` spans and tool metrics for every call of the batches it observes.

    ``tracer_provider`` / ``meter_provider``: where spans and metrics go (None:
    the global ones, looked at per batch); ``capture_content``: record arguments,
    results and failure messages (None: the environment's
    ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``); ``enabled=False``
    records nothing. Pass one to ``ToolRegistry(instrumentation=...)``, or
    configure the default with :func:`instrument`.
    """

    def __init__(
        self, *, capture_content: bool | None = None, tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None, enabled: bool = True,
    ) -> None:
        self.enabled = enabled
        self.capture_content = _capture_from_environment() if capture_content is None else capture_content
        self.tracer_provider = tracer_provider
        self.meter_provider = meter_provider
        # The tracer and instruments of the last provider seen (a provider hands out the same ones anyway).
        self._traced: tuple[TracerProvider, Tracer] | None = None
        self._metered: tuple[MeterProvider, ToolMetrics] | None = None

    def _tracer(self) -> Tracer | None:
        provider = self.tracer_provider if self.tracer_provider is not None else _global_tracer_provider()
        if provider is None:
            return None
        traced = self._traced
        if traced is not None and traced[0] is provider:
            return traced[1]
        if not _records_spans(provider):
            return None
        tracer = provider.get_tracer(_SCOPE, _version())
        self._traced = (provider, tracer)
        return tracer

    def _metrics(self) -> ToolMetrics | None:
        provider = self.meter_provider if self.meter_provider is not None else _global_meter_provider()
        if provider is None:
            return None
        metered = self._metered
        if metered is not None and metered[0] is provider:
            return metered[1]
        if not _records_metrics(provider):
            return None
        instruments = ToolMetrics(provider.get_meter(_SCOPE, _version()))
        self._metered = (provider, instruments)
        return instruments

    def batch_started(self, view: SealedToolCatalogView) -> OtelBatch | None:
        """The batch's observer, or None (nothing to pay for) when disabled or no provider records."""
        if not self.enabled:
            return None
        tracer, instruments = self._tracer(), self._metrics()
        if tracer is None and instruments is None:
            return None
        return OtelBatch(tracer, instruments, view, self.capture_content)


_lock = threading.Lock()
_default: OtelInstrumentation | None = None


def default_instrumentation() -> OtelInstrumentation:
    """The process's default instrumentation (made on first use; the ``tether_clr.instrumentation`` entry point)."""
    global _default
    with _lock:
        if _default is None:
            _default = OtelInstrumentation()
        return _default


def instrument(
    *, capture_content: bool | None = None, tracer_provider: TracerProvider | None = None,
    meter_provider: MeterProvider | None = None,
) -> OtelInstrumentation:
    """Configure and enable the default instrumentation (what every registry uses unless told otherwise).

    ``capture_content=None`` reads ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` again; providers
    left None are the global ones. Takes effect from the next batch. Returns the instrumentation.
    """
    found = default_instrumentation()
    found.capture_content = _capture_from_environment() if capture_content is None else capture_content
    found.tracer_provider, found.meter_provider = tracer_provider, meter_provider
    found.enabled = True
    return found


def uninstrument() -> None:
    """Turn the default instrumentation off: from the next batch, no span and no metric (a branch per call)."""
    default_instrumentation().enabled = False

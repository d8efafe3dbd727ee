"""The W3C trace context of the running tool body, for hosts of tools that trace on their own.

Tracing is an adapter's business (:mod:`tether_clr.telemetry`), and so is
hosting .NET (:mod:`tether_clr.clr`); neither imports the other. When an
instrumentation runs a body inside a span of its own, it sets the span's
``traceparent`` (and ``tracestate``) header here, in the body's own context
copy; a tool host that crosses into another runtime (a .NET tool) reads it with
:func:`current_trace_context` and hands it on, so spans the tool emits there
join the same trace. Nothing is set when no instrumentation records: reading it
then costs one context-variable lookup.

Floor 1: no records, no OpenTelemetry.
"""

from __future__ import annotations

import contextvars
from contextvars import ContextVar
from dataclasses import dataclass

__all__ = ["TraceContext", "current_trace_context", "lend_trace_context"]


@dataclass(frozen=True, slots=True)
class TraceContext:
    """A W3C Trace Context: the ``traceparent`` header (``00-<trace id>-<span id>-<flags>``) and ``tracestate``."""

    traceparent: str
    tracestate: str = ""


_CURRENT: ContextVar[TraceContext | None] = ContextVar("tether_clr_trace_context", default=None)


def current_trace_context() -> TraceContext | None:
    """The trace context of the running body's span, or ``None`` when nothing traces it."""
    return _CURRENT.get()


def lend_trace_context(context: contextvars.Context, trace: TraceContext) -> None:
    """Make ``trace`` the :func:`current_trace_context` inside ``context`` (a body's own context copy)."""
    context.run(_CURRENT.set, trace)

"""tether_clr.telemetry: ``execute_tool`` spans and tool metrics, after the GenAI semantic conventions
(needs ``tether_clr[otel]``, i.e. ``opentelemetry-api``).

On by default: every :class:`~tether_clr.ToolRegistry` finds
:func:`default_instrumentation` through this package's entry point (the core
never imports this package) and records whenever the host has configured a
tracer or meter provider. :func:`instrument` opts in to recording arguments
and results; see ``docs/pipeline.md#telemetry``. :func:`adopted_spans` lets an agent
framework's adapter hand over the framework's own span of a call, which the call
then adopts instead of starting a second one.
"""

from __future__ import annotations

from tether_clr.foundations.exports import rehome
from tether_clr.telemetry.adoption import adopted_spans, approvals_captured, span_to_adopt
from tether_clr.telemetry.instrumentation import (
    CAPTURE_CONTENT_VARIABLE,
    OtelInstrumentation,
    default_instrumentation,
    instrument,
    uninstrument,
)

__all__ = [
    "CAPTURE_CONTENT_VARIABLE",
    "OtelInstrumentation",
    "adopted_spans",
    "approvals_captured",
    "default_instrumentation",
    "instrument",
    "span_to_adopt",
    "uninstrument",
]

rehome(globals(), __name__)

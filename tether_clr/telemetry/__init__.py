"""tether_clr.telemetry: ``execute_tool`` spans and tool metrics, after the GenAI semantic conventions
(needs ``tether_clr[otel]``, i.e. ``opentelemetry-api``).

On by default: every :class:`~tether_clr.ToolRegistry` finds
:func:`default_instrumentation` through this package's entry point (the core
never imports this package) and records whenever the host has configured a
tracer or meter provider. :func:`instrument` opts in to recording arguments
and results; see ``docs/telemetry.md``.
"""

from __future__ import annotations

from tether_clr.foundations.exports import rehome
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
    "default_instrumentation",
    "instrument",
    "uninstrument",
]

rehome(globals(), __name__)

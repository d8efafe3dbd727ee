"""The tool metrics: calls, their duration, and the bodies running now.

* ``tether.tool.calls``: a counter, one per call that ended;
* ``tether.tool.duration``: a histogram (``s``), from the call's declaration to its end;
* both with ``gen_ai.tool.name`` and ``tether.outcome.code`` (``OK`` on success,
  else the failure code); a call that ended without an outcome (a result
  policy raised, or the batch was aborted first) has ``error.type`` instead;
* ``tether.tool.in_flight``: an up-down counter of the bodies running, with ``gen_ai.tool.name``.
"""

from __future__ import annotations

from opentelemetry.metrics import Meter

from tether_clr.telemetry.attributes import ERROR_TYPE, GEN_AI_TOOL_NAME, TETHER_OUTCOME_CODE

__all__ = ["ToolMetrics"]

# Tool calls last from microseconds to minutes: the SDK's default buckets start at 5 ms.
_BUCKETS = (0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0)


class ToolMetrics:
    """The three instruments of one meter."""

    __slots__ = ("calls", "duration", "in_flight")

    def __init__(self, meter: Meter) -> None:
        self.calls = meter.create_counter("tether.tool.calls", unit="{call}", description="Tool calls that ended.")
        self.duration = meter.create_histogram(
            "tether.tool.duration", unit="s", description="How long tool calls took, from declaration to their end.",
            explicit_bucket_boundaries_advisory=list(_BUCKETS),
        )
        self.in_flight = meter.create_up_down_counter(
            "tether.tool.in_flight", unit="{body}", description="Tool bodies running now."
        )

    def ended(self, tool: str, code: str | None, error: str | None, seconds: float) -> None:
        """One call ended: with outcome ``code`` (None for success), or without an outcome (``error``: a class name)."""
        attributes = {GEN_AI_TOOL_NAME: tool, TETHER_OUTCOME_CODE: code or "OK"} if error is None else {GEN_AI_TOOL_NAME: tool, ERROR_TYPE: error}
        self.calls.add(1, attributes)
        self.duration.record(seconds, attributes)

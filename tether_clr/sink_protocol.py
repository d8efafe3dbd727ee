"""What a batch records through: the :class:`ToolCallSink` protocol.

Floor 2 (records): a protocol over the call and outcome records, so the
catalog (which names it in ``execute_batch``'s signature) and the executor
(which calls it) both depend on it without depending on each other. The
implementations live in :mod:`tether_clr.sinks` (floor 5).
"""

from __future__ import annotations

from typing import Protocol

from .outcomes import ToolCall, ToolExecutionOutcome

__all__ = ["ToolCallSink"]


class ToolCallSink(Protocol):
    """Where a batch records what happened, durably, in model order.

    While either method is awaited, :func:`tether_clr.current_declaration` names
    the call it is about, so a sink can pair each outcome with its own
    declaration even when a provider reuses call ids (``call_0``, ``call_1``...)
    in every step.

    Optional hooks, called when the sink has them (sinks without them keep
    working): ``batch_started(calls)``, ``approval_asked(execution, reason)``,
    ``approval_decided(execution, result)``, ``flush()``, ``batch_finished()``;
    see :mod:`tether_clr.sink_hooks`.
    """

    async def call_declared(self, call: ToolCall) -> None: ...

    async def outcome_ready(self, outcome: ToolExecutionOutcome) -> None: ...

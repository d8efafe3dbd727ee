"""The optional hooks of one batch's sink, resolved once when the batch starts.

:class:`HookSet` finds which of the :class:`~tether_clr.execution.ports.SinkHooks`
a sink has (a sink without any pays for none) and turns each hook's failure
into :class:`~tether_clr.SinkError`; :class:`RecordingApproval` tells the sink
before and after each request to the approval provider.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import anyio

from tether_clr.execution.ports import OPTIONAL_HOOKS, ApprovalProvider, Declaration, declaring
from tether_clr.foundations.errors import SinkError
from tether_clr.foundations.incidents import IncidentLog
from tether_clr.foundations.text import describe_exception
from tether_clr.records.outcomes import ToolCall, ToolExecution, ToolExecutionOutcome

__all__ = ["HookSet", "RecordingApproval"]

_ABORTED_ENDS = IncidentLog(logging.getLogger("tether_clr"), "sink failed to record the end of an aborted batch")


def _hook(sink: object, name: str) -> Callable[..., Awaitable[None]] | None:
    method = getattr(sink, name, None)
    return method if callable(method) else None


class HookSet:
    """The optional hooks one sink has; each call turns a failure into :class:`SinkError`."""

    __slots__ = ("_started", "asked", "decided", "from_grant", "granted", "attempt", "_flush", "contexts", "_finished", "_parks")

    def __init__(self, sink: object) -> None:
        self._started = _hook(sink, "batch_started")
        self.asked = _hook(sink, "approval_asked")
        self.decided = _hook(sink, "approval_decided")
        self.from_grant = _hook(sink, "approval_from_grant")
        self.granted = _hook(sink, "approval_granted")
        self.attempt = _hook(sink, "attempt_ended")
        self._flush = _hook(sink, "flush")
        self.contexts = _hook(sink, "contexts_added")
        self._finished = _hook(sink, "batch_finished")
        self._parks = getattr(sink, "parks_approvals", False) is True

    @classmethod
    def of(cls, sink: object | None) -> HookSet | None:
        """The hooks of ``sink``, or None when it has none (then the batch pays for none)."""
        if sink is None or not any(callable(getattr(sink, name, None)) for name in OPTIONAL_HOOKS):
            return None
        return cls(sink)

    @property
    def starts(self) -> bool:
        """The sink has ``batch_started`` (it is handed every proposed call)."""
        return self._started is not None

    @property
    def flushes(self) -> bool:
        return self._flush is not None

    @property
    def parks_approvals(self) -> bool:
        """The sink says it can hold a parked call (``parks_approvals = True``) and records both approval hooks."""
        return self._parks and self.asked is not None and self.decided is not None

    @property
    def holds_grants(self) -> bool:
        """The sink remembers ``*_ALWAYS`` answers: it has both grant hooks and records decisions."""
        return self.from_grant is not None and self.granted is not None and self.decided is not None

    async def batch_started(self, calls: Sequence[ToolCall]) -> None:
        if self._started is not None:
            await _faulting("record the start of the batch", self._started, list(calls))

    async def attempt_ended(self, declaration: Declaration, execution: ToolExecution, attempt: int, outcome: ToolExecutionOutcome) -> None:
        """One attempt of a call with a retry policy, :func:`current_declaration` naming the call."""
        if self.attempt is not None:
            with declaring(declaration):
                await _faulting(f"record attempt {attempt} of call {execution.call_id!r}", self.attempt, execution, attempt, outcome)

    async def flush(self) -> None:
        if self._flush is not None:
            await _faulting("make the batch's records durable", self._flush)

    async def batch_finished(self) -> None:
        if self._finished is not None:
            await _faulting("record the end of the batch", self._finished)

    async def aborted(self) -> None:
        """Tell the sink an aborting batch ended (shielded), without hiding why it aborts: a sink failing
        here is failing already (often the reason), so its fault is logged once per incident, not raised."""
        if self._finished is None:
            return
        with anyio.CancelScope(shield=True):
            try:
                await _faulting("record the end of an aborted batch", self._finished)
            except SinkError as fault:
                _ABORTED_ENDS.failed(fault)
            else:
                _ABORTED_ENDS.recovered()


async def _faulting(what: str, hook: Callable[..., Awaitable[None]], *args: Any) -> None:
    try:
        await hook(*args)
    except Exception as exc:
        raise SinkError(f"sink failed to {what}: {describe_exception(exc)}") from exc


class RecordingApproval:
    """The registry's approval provider, with the sink told before and after each request.

    ``tell(hook, execution, value, what)`` records through one hook (``what`` names
    the record in an error); it raises :class:`SinkError` when the sink failed (the
    batch is then aborting), so the pipeline refuses the call instead of running it.
    """

    def __init__(
        self,
        provider: ApprovalProvider,
        hooks: HookSet,
        tell: Callable[[Callable[..., Awaitable[None]] | None, ToolExecution, Any, str], Awaitable[None]],
    ) -> None:
        self._provider = provider
        self._hooks = hooks
        self._tell = tell

    async def request(self, execution: ToolExecution, reason: str | None) -> Any:
        await self._tell(self._hooks.asked, execution, reason, "request")
        result = await self._provider.request(execution, reason)
        await self._tell(self._hooks.decided, execution, result, "decision")
        return result

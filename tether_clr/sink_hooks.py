"""The optional hooks of a :class:`~tether_clr.ToolCallSink`, resolved once per batch.

A sink needs only ``call_declared`` and ``outcome_ready``. A sink that also has
any of these gets them called by ``execute_batch`` (a session store's sink has
them all):

* ``batch_started(calls)``: once, before anything else, with every proposed call;
* ``approval_asked(execution, reason)`` / ``approval_decided(execution, result)``:
  around each request to the approval provider (``result`` is what it answered);
* ``flush()``: at each point where durability is owed: before the first body of
  a group starts, and before the delivery waits for a body still running. A sink
  may buffer what it was told and make it durable here, so a group's
  declarations, or results that are ready together, are one transaction;
* ``batch_finished()``: once, when the batch returns or raises.

And one optional attribute: ``parks_approvals = True`` says the sink is a log
a suspended step can be resumed from (a session store's step sink, or a
wrapper that forwards to one). Only then may a call whose approval is
``DEFERRED`` be parked; with any other sink it fails closed (UNAVAILABLE),
because nothing could ever resume it and the call would be lost.

Every hook failure is an infrastructure fault: the batch stops and raises
:class:`~tether_clr.SinkError`, never a disguised tool result. While
``approval_asked``/``approval_decided`` are awaited, :func:`current_declaration`
names the call, as it does for the two required methods.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from .errors import SinkError
from .outcomes import ToolCall, ToolExecution
from .text import describe_exception

if TYPE_CHECKING:
    from .registry import ApprovalProvider

__all__ = ["OPTIONAL_HOOKS", "RecordingApproval", "SinkHooks"]

OPTIONAL_HOOKS = ("batch_started", "approval_asked", "approval_decided", "flush", "batch_finished")


def _hook(sink: object, name: str) -> Callable[..., Awaitable[None]] | None:
    method = getattr(sink, name, None)
    return method if callable(method) else None


class SinkHooks:
    """The optional hooks one sink has; each call turns a failure into :class:`SinkError`."""

    __slots__ = ("_started", "asked", "decided", "_flush", "_finished", "_parks")

    def __init__(self, sink: object) -> None:
        self._started = _hook(sink, "batch_started")
        self.asked = _hook(sink, "approval_asked")
        self.decided = _hook(sink, "approval_decided")
        self._flush = _hook(sink, "flush")
        self._finished = _hook(sink, "batch_finished")
        self._parks = getattr(sink, "parks_approvals", False) is True

    @classmethod
    def of(cls, sink: object | None) -> SinkHooks | None:
        """The hooks of ``sink``, or None when it has none (then the batch pays for none)."""
        if sink is None or not any(callable(getattr(sink, name, None)) for name in OPTIONAL_HOOKS):
            return None
        return cls(sink)

    @property
    def flushes(self) -> bool:
        return self._flush is not None

    @property
    def parks_approvals(self) -> bool:
        """The sink says it can hold a parked call (``parks_approvals = True``) and records both approval hooks."""
        return self._parks and self.asked is not None and self.decided is not None

    async def batch_started(self, calls: Sequence[ToolCall]) -> None:
        if self._started is not None:
            await _faulting("record the start of the batch", self._started, list(calls))

    async def flush(self) -> None:
        if self._flush is not None:
            await _faulting("make the batch's records durable", self._flush)

    async def batch_finished(self) -> None:
        if self._finished is not None:
            await _faulting("record the end of the batch", self._finished)


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
        hooks: SinkHooks,
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

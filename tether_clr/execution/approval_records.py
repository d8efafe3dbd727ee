"""What a batch tells its sink about approvals: each request, decision and grant, naming the call being authorized.

A sink that records approvals (a session log's) hears of them through its
hooks; a failure to record one aborts the batch, so the call it concerns is
refused, never run. A decision taken while a step was suspended is recorded
before anything else runs for its call, so the log never shows a result after
``deferred`` without the decision that allowed it.

Layer 4 (execution).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from tether_clr.execution.hooks import HookSet
from tether_clr.execution.pipeline import CallPipeline
from tether_clr.execution.pool import Slot, not_dispatched
from tether_clr.execution.ports import Declaration, declaring
from tether_clr.foundations.cancellation import CancellationToken
from tether_clr.foundations.errors import BatchAbortedError, SinkError
from tether_clr.foundations.text import describe_exception
from tether_clr.records.decisions import ApprovalResult
from tether_clr.records.outcomes import ToolExecution

__all__ = ["ApprovalRecords"]


class ApprovalRecords:
    """One batch's approval records: ``hooks`` (the sink's, or None), ``abort`` (the batch's, on a sink
    failure) and ``authorizing``, the declaration of the call being authorized (admission is sequential)."""

    __slots__ = ("hooks", "abort", "authorizing")

    def __init__(self, hooks: HookSet | None, abort: Callable[[BatchAbortedError], None]) -> None:
        self.hooks = hooks
        self.abort = abort
        self.authorizing: Declaration | None = None

    async def record(
        self, hook: Callable[..., Awaitable[Any]] | None, execution: ToolExecution, value: object, what: str, *more: object
    ) -> Any:
        """Tell the sink about an approval request, decision or grant (``what``); returns what the hook returned.

        A sink failure aborts the batch and raises, so the call is refused, never run.
        """
        if hook is None:
            return None
        with declaring(self.authorizing):
            try:
                return await hook(execution, value, *more)
            except Exception as exc:
                fault = SinkError(f"sink failed to record the approval {what} of call {execution.call_id!r}: {describe_exception(exc)}")
                self.abort(fault)
                raise fault from exc

    async def resumed_decision(
        self, slot: Slot, execution: ToolExecution, decision: ApprovalResult, token: CancellationToken
    ) -> bool:
        """A parked call's decision, taken while its step was suspended, recorded first; anything but
        APPROVED refuses the call here. True when the call goes on."""
        try:
            await self.record(None if self.hooks is None else self.hooks.decided, execution, decision, "decision")
        except SinkError:  # the batch is aborting: the call does not run
            slot.finish(not_dispatched(execution, token))
            return False
        if decision is ApprovalResult.APPROVED:
            return True
        if slot.observed is not None:
            slot.observed.stage = "approval"
        slot.finish(CallPipeline.refused_by(execution, decision))
        return False

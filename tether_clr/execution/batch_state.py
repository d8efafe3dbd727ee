"""A batch's state and the steps every part of it shares: its set-up, its token, its durability points
(:meth:`BatchState._flush`), how an infrastructure fault stops it (:meth:`BatchState._abort`) and the audit
record of a call. The parts of a batch build on it in layers: admission and dispatch
(:mod:`~tether_clr.execution.admitting`), model-order delivery (:mod:`~tether_clr.execution.delivery`),
the parallel group's pool (:mod:`~tether_clr.execution.parallel`) and the run itself
(:mod:`~tether_clr.execution.batch`). Floor 4."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import anyio
import anyio.abc
import anyio.lowlevel

from tether_clr.catalog.views import SealedToolCatalogView
from tether_clr.execution.admission import admission_only_active
from tether_clr.execution.approval_records import ApprovalRecords
from tether_clr.execution.auditing import audit_record, tell_auditors
from tether_clr.execution.children import ChildCalling, ChildOrigin
from tether_clr.execution.grants import GrantingApproval
from tether_clr.execution.grouping import Classifier
from tether_clr.execution.hooks import HookSet, RecordingApproval
from tether_clr.execution.inputs import validate_batch
from tether_clr.execution.instrumentation import Instrumentation
from tether_clr.execution.listeners import ListenerSnapshot
from tether_clr.execution.observing import ObservedBatch
from tether_clr.execution.pipeline import CallPipeline
from tether_clr.execution.pool import Slot
from tether_clr.execution.ports import ApprovalProvider, ToolCallSink
from tether_clr.execution.resumption import ResumePoint
from tether_clr.execution.timeouts import Timeouts
from tether_clr.foundations.cancellation import CancellationSource, CancellationToken
from tether_clr.foundations.errors import BatchAbortedError, SinkError
from tether_clr.records.outcomes import ToolCall, ToolExecutionOutcome
from tether_clr.records.suspension import PendingApproval

__all__ = ["BatchState"]


class BatchState(object):
    """One execution of a model step's calls: what its parts share; validates its inputs before anything runs.

    ``listeners`` and ``approval`` are the registry's when the batch starts;
    ``classify`` replaces the built-in grouping (a registry subclass's
    ``classify``); ``resume`` continues a suspended step; ``timeouts``: the registry's. Bodies may make child
    calls (:mod:`tether_clr.execution.children`) up to ``max_child_depth`` deep;
    ``origin`` is set for a child's own one-call run. ``instrumentation``: the registry's
    (:mod:`tether_clr.execution.instrumentation`), asked once when the batch runs. ``checked``: the caller
    already ran :func:`~tether_clr.execution.inputs.validate_batch` on these inputs.
    """

    def __init__(
        self,
        calls: list[ToolCall],
        view: SealedToolCatalogView,
        listeners: ListenerSnapshot,
        approval: ApprovalProvider | None,
        max_parallelism: int,
        sink: ToolCallSink | None,
        cancellation: CancellationToken | None,
        resume: ResumePoint | None = None,
        classify: Classifier | None = None,
        timeouts: Timeouts | None = None,
        *,
        max_child_depth: int = 4,
        origin: ChildOrigin | None = None,
        instrumentation: Instrumentation | None = None,
        checked: bool = False,
    ) -> None:
        if not checked:  # ``checked``: the caller ran validate_batch on these very inputs already
            validate_batch(calls, view, max_parallelism)
        self._listeners, self._provider, self._max_child_depth, self._origin = listeners, approval, max_child_depth, origin
        self._timeouts, self._instrumentation = timeouts, instrumentation
        self._observed: ObservedBatch | None = None  # set when the batch runs, if something records
        self._classify = classify
        self._calls = calls
        self._view = view
        self._sink = sink
        self._hooks = HookSet.of(sink)
        self._records = ApprovalRecords(self._hooks, self._abort)
        self._admission_only = admission_only_active()
        if self._admission_only:  # a question about the calls, not their execution: nothing to trace or count
            self._instrumentation = None
        self._resume = resume
        if approval is not None and self._hooks is not None and (self._hooks.asked or self._hooks.decided):
            approval = RecordingApproval(approval, self._hooks, self._records.record)
        if approval is not None and self._hooks is not None and self._hooks.holds_grants:  # "always" answers are remembered
            approval = GrantingApproval(approval, self._hooks, self._records.record)
        # A parked call must be findable later: only a sink that records approvals can hold it.
        self._can_park = self._hooks is not None and self._hooks.parks_approvals
        self._parked: list[PendingApproval] = []
        self._flushes = self._hooks is not None and self._hooks.flushes
        self._committing = False  # a commit runs behind the delivery
        depth = 0 if origin is None else origin.depth
        self._pipeline = CallPipeline(view, listeners, approval, timeouts, ChildCalling(self._run_child, depth))
        self._max_parallelism = max_parallelism
        # Parallel workers link their bodies to the batch token with one scope each, unless an
        # execute listener may hand a body another token (then each body links its own).
        self._worker_scopes = not self._pipeline.swaps_cancellation
        # One token for the whole batch: the caller's cancellation, or an infrastructure fault.
        self._source = CancellationSource(*([cancellation] if cancellation is not None else []))
        self._caller_can_cancel = cancellation is not None and cancellation.can_be_cancelled
        self._fault: BatchAbortedError | None = None
        # What the step delivered so far: a resumed step's earlier outcomes first.
        self._delivered: list[ToolExecutionOutcome] = [] if resume is None else list(resume.prior)
        self._contexts: list[str] = [] if resume is None else list(resume.prior_contexts)  # FIFO, model order
        self._deliver_scope: anyio.CancelScope | None = None
        self._delivering: Slot | None = None  # the slot the deliverer is at, in a parallel group
        # Audit machinery only when someone listens: otherwise no clocks, no records.
        self._audit: tuple[Callable[..., Any], ...] = self._pipeline.audit_listeners()
        self._batch_id = "" if sink is None else uuid.uuid4().hex  # only a sink is told declarations

    @property
    def _token(self) -> CancellationToken:
        return self._source.token

    async def _flush(self) -> bool:
        """A durability point; False when the sink failed (the batch is aborting)."""
        if self._hooks is None or not self._hooks.flushes:
            return True
        try:
            await self._hooks.flush()
        except SinkError as fault:
            self._abort(fault)
            return False
        return True

    def _abort(self, fault: BatchAbortedError) -> None:
        if self._fault is None:
            fault.delivered = tuple(self._delivered)
            self._fault = fault
        self._source.cancel(f"batch aborted: {fault}")
        if self._deliver_scope is not None:
            self._deliver_scope.cancel()

    async def _audit_call(self, slot: Slot, outcome: ToolExecutionOutcome) -> None:
        """One :class:`ToolAuditRecord` per call, to every audit listener; their failures are contained."""
        slot.audited = True
        await tell_auditors(self._audit, audit_record(self._view, slot, outcome))

    async def _run_child(self, call: ToolCall, origin: ChildOrigin, token: CancellationToken) -> ToolExecutionOutcome:
        """One child call of a body of this run, as its own one-call run (:class:`~tether_clr.execution.batch.BatchRun`)."""
        raise NotImplementedError

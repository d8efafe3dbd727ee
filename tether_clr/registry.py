"""The front door: :class:`ToolRegistry` composes the catalog, the listeners and the executor.

* the catalog (:class:`~tether_clr.catalog.store.ToolCatalog`, layer 3): which
  tool versions are registered where, their lifecycle, pins and policy, and the
  views and assemblies a model step is built from;
* the listeners (:class:`~tether_clr.execution.listeners.Listeners`, layer 4)
  and the approval provider: what every call goes through;
* the executor (:class:`~tether_clr.execution.batch.BatchRun`, layer 4) and the
  session log's resumer (:mod:`tether_clr.recording.session.resume`, layer 5),
  called directly: importing a module installs nothing.

Every method here is a thin hand-off; the contracts live with the components
and are repeated on each method so ``help(ToolRegistry)`` is the whole tour.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from functools import partial
from typing import Any, Literal, overload

from tether_clr.catalog.attachment import ControlAttachment
from tether_clr.catalog.authority import Authority
from tether_clr.catalog.candidates import DenyRule
from tether_clr.catalog.control import CatalogControl
from tether_clr.catalog.kill_switches import KillSwitch
from tether_clr.catalog.lifecycle import ToolStatus
from tether_clr.catalog.metadata import CapabilityQuery, ToolMetadata
from tether_clr.catalog.records import DiscoveryResult
from tether_clr.catalog.registration import (
    Registration,
    ToolRegistrationOptions,
    ToolsChangedEvent,
)
from tether_clr.catalog.search import ToolSearch, search_result_text
from tether_clr.catalog.store import ToolCatalog
from tether_clr.catalog.views import SealedToolCatalogView, ToolAssembly
from tether_clr.execution.batch import BatchRun
from tether_clr.execution.grouping import Classifier, classify_reading
from tether_clr.execution.inputs import validate_batch
from tether_clr.execution.instrumentation import Instrumentation, discovered_instrumentation
from tether_clr.execution.invariants import check_invariants
from tether_clr.execution.listeners import Listeners, ListenerSnapshot
from tether_clr.execution.lone import run_alone
from tether_clr.execution.ports import ApprovalProvider, ToolCallSink
from tether_clr.execution.resumption import ResumePoint
from tether_clr.execution.timeouts import Timeouts
from tether_clr.foundations.arguments import ArgumentLimits
from tether_clr.foundations.cancellation import CancellationToken
from tether_clr.recording.session.protocol import SessionStore
from tether_clr.recording.session.resume import cancel_step, resume_step
from tether_clr.records.context import RequestContext
from tether_clr.records.contexts import BatchOutcomes
from tether_clr.records.decisions import ToolExecutionMode
from tether_clr.records.declaration import ToolSchemaSnapshot
from tether_clr.records.outcomes import ToolCall, ToolExecutionOutcome
from tether_clr.records.scope import AgentPipelineScope
from tether_clr.records.suspension import BatchSuspended
from tether_clr.tools.protocol import Tool

__all__ = ["ToolRegistry"]


class ToolRegistry:
    """The catalog's control plane, the pipeline's listener chains, and the entry to execution.

    A new registry installs the invariant result policy (non-empty name and call
    id, outcome call id equal to the execution's); ``invariant_policy.dispose()``
    removes it. ``argument_limits`` bound the argument text a model may send
    (:class:`~tether_clr.ArgumentLimits`); a view takes them when sealed.
    ``approval`` is the :class:`~tether_clr.ApprovalProvider` asked before a call
    that needs approval runs (None: such calls are refused). ``max_child_depth``
    bounds how deep tool bodies may nest child calls (:class:`~tether_clr.ChildCalls`):
    a child of a model's call is 1 deep; a deeper one is refused INVALID_ARGS
    ``too_deep``, and 0 refuses every child call.

    ``default_timeout``: the seconds a body of a tool registered without its own
    ``timeout`` may run (``None``, the default: no timeout); ``timeout_grace``:
    how long a timed-out body that ignores its cancellation is still waited for
    before it is abandoned (:attr:`abandoned_bodies`). See docs/pipeline.md.

    ``instrumentation``: what observes every call (an ``execute_tool`` span and
    the tool metrics; docs/pipeline.md#telemetry). ``"auto"``, the default, is the
    process's default instrumentation, :mod:`tether_clr.telemetry` whenever
    ``opentelemetry-api`` is importable (found through this package's entry
    point, never imported by the core), recording only while the host has
    configured a tracer or meter provider; ``None`` turns it off for this
    registry. Settable later through :attr:`instrumentation`.

    Layers: the global layer and one per scope. A layer holds one registration
    per (model name, version): several versions of a tool may live side by
    side, and the assembly picks one per request.
    """

    def __init__(
        self, *, invariant_policy: bool = True, argument_limits: ArgumentLimits | None = None,
        default_timeout: float | None = None, timeout_grace: float = 5.0, max_child_depth: int = 4,
        instrumentation: Instrumentation | Literal["auto"] | None = "auto",
    ) -> None:
        if isinstance(max_child_depth, bool) or not isinstance(max_child_depth, int) or max_child_depth < 0:
            raise ValueError(f"max_child_depth must be a non-negative int, got {max_child_depth!r}")
        self.max_child_depth = max_child_depth
        self.catalog = ToolCatalog(argument_limits=argument_limits)
        self._timeouts = Timeouts(default_timeout, timeout_grace)
        self._listeners = Listeners()
        self.approval: ApprovalProvider | None = None
        self.instrumentation: Instrumentation | None = (
            discovered_instrumentation() if instrumentation == "auto" else instrumentation
        )
        self.invariant_policy: Registration | None = (
            self.register_result_policy(None, check_invariants) if invariant_policy else None
        )

    # --------------------------------------------------------------- timeouts
    @property
    def default_timeout(self) -> float | None:
        """Seconds a body may run when its registration sets no ``timeout``; ``None``: no timeout."""
        return self._timeouts.default

    @property
    def timeout_grace(self) -> float:
        """Seconds a timed-out body that ignores its cancellation is still waited for, then abandoned."""
        return self._timeouts.grace

    @property
    def abandoned_bodies(self) -> int:
        """How many timed-out bodies this registry's batches abandoned (their grace ran out); only grows.

        Each was a body that ignored its cancelled token (a synchronous function
        in a worker thread, a .NET body that never checks its token); it may
        still be running. A host can watch it to decide to restart a worker process.
        """
        return self._timeouts.abandoned

    # --------------------------------------------------------------- catalog
    @property
    def argument_limits(self) -> ArgumentLimits:
        return self.catalog.argument_limits

    @property
    def revision(self) -> int:
        """Bumped by every registration, disposal, status change, metadata update, pin and deny rule."""
        return self.catalog.revision

    @property
    def policy_revision(self) -> int:
        """Bumped by deny rules and authority changes (which also bump ``revision``)."""
        return self.catalog.policy_revision

    def register(
        self, tool: Tool, scope: AgentPipelineScope | None = None, options: ToolRegistrationOptions | None = None
    ) -> Registration:
        """Make ``tool`` visible from ``scope`` and its descendants (everywhere when None);
        see :meth:`ToolCatalog.register <tether_clr.catalog.store.ToolCatalog.register>`."""
        return self.catalog.register(tool, scope, options)

    def get_declarations(self, scope: AgentPipelineScope | None = None) -> list[ToolSchemaSnapshot]:
        """What the model may be told, in ordinal name order; fresh copies every call."""
        return self.catalog.get_declarations(scope)

    def seal(self, scope: AgentPipelineScope | None = None) -> SealedToolCatalogView:
        """The tools ``scope`` sees, with no request context; see :meth:`ToolCatalog.seal <tether_clr.catalog.store.ToolCatalog.seal>`."""
        return self.catalog.seal(scope)

    def discover(
        self, context: RequestContext, scope: AgentPipelineScope | None = None, query: CapabilityQuery | None = None
    ) -> DiscoveryResult:
        """Which tool versions ``context`` may see and call from ``scope``, and why the others may not."""
        return self.catalog.discover(context, scope, query)

    def assemble(
        self, context: RequestContext, scope: AgentPipelineScope | None = None, query: CapabilityQuery | None = None
    ) -> ToolAssembly:
        """The immutable snapshot one model request is built from (a view ``execute_batch`` accepts);
        see :meth:`ToolCatalog.assemble <tether_clr.catalog.store.ToolCatalog.assemble>`."""
        return self.catalog.assemble(context, scope, query)

    def set_status(
        self, logical_name: str, version: str, status: ToolStatus, *, reason: str = "", actor: str | None = None
    ) -> None:
        """Move every registration of (logical name, version) to ``status`` (:func:`~tether_clr.status_transition`);
        attached to a control plane, committed there first, with ``reason``, recorded as ``actor`` (default: the
        attachment's actor). Every call that changes shared state takes ``actor=`` the same way, checked by
        :func:`~tether_clr.catalog.control.check_actor` attached or not (recorded nowhere without a control plane)."""
        self.catalog.set_status(logical_name, version, status, reason=reason, actor=actor)

    def update_metadata(
        self, logical_name: str, version: str, /, *, reason: str = "", actor: str | None = None, **changes: Any
    ) -> None:
        """Change governance fields of (logical name, version) everywhere it is registered;
        attached to a control plane, committed there first, with ``reason``, recorded as ``actor``."""
        self.catalog.update_metadata(logical_name, version, reason=reason, actor=actor, **changes)

    def pin(
        self, logical_name: str, version: str, tenant_id: str | None = None, agent_version: str | None = None,
        *, reason: str = "", actor: str | None = None,
    ) -> Registration:  # fmt: skip
        """Use ``version`` of ``logical_name`` for a tenant, an agent version, both, or everyone;
        attached to a control plane, committed there first, with ``reason``, recorded as ``actor``
        (and the registration's removal as the same ``actor``)."""
        return self.catalog.pin(logical_name, version, tenant_id, agent_version, reason=reason, actor=actor)

    def unpin(
        self, logical_name: str, tenant_id: str | None = None, agent_version: str | None = None,
        *, reason: str = "", actor: str | None = None,
    ) -> bool:  # fmt: skip
        """Remove the pin of ``logical_name`` for that tenant / agent version, even one made elsewhere; ``False``
        when there is none. Attached to a control plane, committed there first, with ``reason``, recorded as ``actor``."""
        return self.catalog.unpin(logical_name, tenant_id, agent_version, reason=reason, actor=actor)

    def add_kill_switch(self, switch: KillSwitch, *, actor: str | None = None) -> Registration:
        """Stop every call ``switch`` matches (DENIED ``kill_switch`` before each body; omitted when assembling);
        the registration lifts it. Attached to a control plane, committed there first, recorded as ``actor``
        (and the lifting as the same ``actor``)."""
        return self.catalog.add_kill_switch(switch, actor=actor)

    def remove_kill_switch(self, switch_id: str, *, reason: str = "", actor: str | None = None) -> bool:
        """Lift the kill switch ``switch_id``, even one set elsewhere; ``False`` when no such switch is live.
        Attached to a control plane, committed there first, with ``reason``, recorded as ``actor``."""
        return self.catalog.remove_kill_switch(switch_id, reason=reason, actor=actor)

    @property
    def kill_switches(self) -> tuple[KillSwitch, ...]:
        """The live kill switches, set here or shared by the control plane."""
        return self.catalog.kill_switches

    def attach_control(
        self, control: CatalogControl, max_staleness: float = 1.0, *, actor: str | None = None
    ) -> ControlAttachment:
        """Share statuses, pins, metadata changes and kill switches with every host attached to ``control``.

        Loads the store's current state and applies every later change in
        revision order (PostgreSQL: woken by LISTEN/NOTIFY, polling as the
        fallback; SQLite: polling); each applied change bumps :attr:`revision`
        and emits ``tools/change``. A local :meth:`set_status`, :meth:`pin`,
        :meth:`update_metadata` or :meth:`add_kill_switch` (and their removals) is committed to the
        store first (recorded as the call's ``actor=``, else this ``actor``, default ``user@host``) and applied
        here only after the commit. Before each body, a host whose view of the
        store is older than ``max_staleness`` seconds refuses the call
        UNAVAILABLE ``control_stale``. Returns the attachment
        (``dispose()`` detaches); see docs/control-plane.md.
        """
        return self.catalog.attach_control(control, max_staleness, actor=actor)

    @property
    def control(self) -> ControlAttachment | None:
        """The attached control plane, or ``None``."""
        return self.catalog.control

    def enable_tool_search(self, name: str = "tool_search") -> Registration:
        """Register the built-in tool search under ``name``, globally; the returned registration removes it.

        A read-only, idempotent, built-in tool with arguments ``{"query": str,
        "limit": int}`` that ranks the deferred tools of *the calling request's*
        snapshot (what its tenant, principal and scope may see; never the live
        catalog) and returns their full declarations; see
        :mod:`tether_clr.catalog.search` for the ranking and the largest ``limit``.
        A second search under the same name is a :class:`~tether_clr.DuplicateToolError`.
        """
        metadata = ToolMetadata(read_only=True, idempotent=True, tags=frozenset({"tool_search"}), title="Tool search")
        options = ToolRegistrationOptions(metadata=metadata, project_content=search_result_text)
        return self.catalog.register(ToolSearch(name), None, options)

    def add_deny_rule(self, rule: DenyRule) -> Registration:
        """``rule(binding, metadata, context) -> str | None``: a string denies, when assembling and before each body."""
        return self.catalog.add_deny_rule(rule)

    @property
    def deny_rules(self) -> tuple[DenyRule, ...]:
        return self.catalog.deny_rules

    @property
    def authority(self) -> Authority | None:
        """``fn(context) -> set[str]`` (sync or async): the principal's scopes now; ``None``: the context's own."""
        return self.catalog.authority

    @authority.setter
    def authority(self, authority: Authority | None) -> None:
        self.catalog.authority = authority

    def on_change(self, callback: Callable[[ToolsChangedEvent], Any]) -> Registration:
        """Call ``callback(ToolsChangedEvent)`` after every catalog change; its failures are logged."""
        return self.catalog.on_change(callback)

    # ------------------------------------------------------------- listeners
    def register_pre_execute_listener(self, scope: AgentPipelineScope | None, fn: Callable[..., Any], prepend: bool = False) -> Registration:
        """``async (execution, next) -> ToolPreDecision``; ``await next()`` asks the rest of the chain."""
        return self._listeners.add("pre_execute", scope, fn, prepend)

    def register_guard(self, scope: AgentPipelineScope | None, fn: Callable[..., Any], prepend: bool = False) -> Registration:
        """``(execution) -> str | None``: a string vetoes with that reason; nothing can un-veto."""
        return self._listeners.add("guard", scope, fn, prepend)

    def register_execute_listener(self, scope: AgentPipelineScope | None, fn: Callable[..., Any], prepend: bool = False) -> Registration:
        """``async (dispatch, next) -> ToolExecutionOutcome`` around the tool body."""
        return self._listeners.add("execute", scope, fn, prepend)

    def register_post_execute_listener(self, scope: AgentPipelineScope | None, fn: Callable[..., Any], prepend: bool = False) -> Registration:
        """``async (execution, outcome, next) -> ToolPostDecision``."""
        return self._listeners.add("post_execute", scope, fn, prepend)

    def register_result_policy(self, scope: AgentPipelineScope | None, fn: Callable[..., Any], prepend: bool = False) -> Registration:
        """``async (execution, outcome) -> None``; raising rejects the outcome and aborts the batch."""
        return self._listeners.add("result_policy", scope, fn, prepend)

    def register_result_listener(self, scope: AgentPipelineScope | None, fn: Callable[..., Any], prepend: bool = False) -> Registration:
        """``(outcome) -> None``: observes recorded outcomes; its failures are logged, never raised."""
        return self._listeners.add("result_listener", scope, fn, prepend)

    def register_audit_listener(self, fn: Callable[..., Any]) -> Registration:
        """``(ToolAuditRecord) -> None`` (sync or async): one record per call of every batch.

        Its failures are logged and contained, like a result listener's; with
        no audit listener, no audit record is built at all.
        """
        return self._listeners.add("audit", None, fn, False)

    def listener_snapshot(self) -> ListenerSnapshot:
        """The listeners as they are now; one immutable snapshot is shared until a listener
        is registered or disposed, so a running batch keeps the one it took."""
        return self._listeners.snapshot()

    # -------------------------------------------------------------- execution
    def classify(self, call: ToolCall, view: SealedToolCatalogView) -> ToolExecutionMode:
        """PARALLEL only on an exact ``True`` from the visible tool's predicate.

        Arguments the pipeline would refuse (see :func:`~tether_clr.foundations.arguments.read_arguments`)
        mean EXCLUSIVE; classifying never raises. A subclass may override it: its
        answer then decides the grouping of every batch.
        """
        return classify_reading(call, view)[0]

    def _classifier(self) -> Classifier | None:
        """None for the built-in classification (it saves reading the arguments twice); a subclass's ``classify`` otherwise."""
        return None if type(self).classify is ToolRegistry.classify else self.classify

    def _own(self, view: SealedToolCatalogView) -> SealedToolCatalogView:
        if getattr(view, "catalog", None) is not self.catalog:
            raise ValueError("the view was not sealed by this registry")
        return view

    def _batch(
        self,
        calls: list[ToolCall],
        view: SealedToolCatalogView,
        max_parallelism: int,
        sink: ToolCallSink | None,
        cancellation: CancellationToken | None,
        resume: ResumePoint | None = None,
        approval: ApprovalProvider | None = None,
        checked: bool = False,
    ) -> BatchRun:
        return BatchRun(
            calls, self._own(view), self._listeners.snapshot(), self.approval if approval is None else approval,
            max_parallelism, sink, cancellation, resume, self._classifier(), self._timeouts, max_child_depth=self.max_child_depth,
            instrumentation=self.instrumentation, checked=checked,
        )

    @overload
    async def execute_batch(
        self,
        calls: Sequence[ToolCall] | Iterable[ToolCall],
        view: SealedToolCatalogView,
        max_parallelism: int = 4,
        sink: None = None,
        cancellation: CancellationToken | None = None,
        *,
        approval: ApprovalProvider | None = None,
    ) -> BatchOutcomes: ...

    @overload
    async def execute_batch(
        self,
        calls: Sequence[ToolCall] | Iterable[ToolCall],
        view: SealedToolCatalogView,
        max_parallelism: int = 4,
        sink: ToolCallSink | None = None,
        cancellation: CancellationToken | None = None,
        *,
        approval: ApprovalProvider | None = None,
    ) -> BatchOutcomes | BatchSuspended: ...

    async def execute_batch(
        self,
        calls: Sequence[ToolCall] | Iterable[ToolCall],
        view: SealedToolCatalogView,
        max_parallelism: int = 4,
        sink: ToolCallSink | None = None,
        cancellation: CancellationToken | None = None,
        *,
        approval: ApprovalProvider | None = None,
    ) -> BatchOutcomes | BatchSuspended:
        """Run one model step's calls against ``view`` (a ``seal()`` view or a :class:`ToolAssembly`).

        Outcomes come back in the model's order, as a :class:`~tether_clr.BatchOutcomes`
        (a list, with the ``additional_contexts`` post-execute listeners added). Refusals and failures are
        outcomes. When the approval provider answers ``DEFERRED`` (and the sink
        can hold a parked call, as a session store's can), the call is parked and a
        :class:`~tether_clr.BatchSuspended` comes back instead of the list: see
        :meth:`resume`. Only infrastructure faults raise:
        :class:`~tether_clr.errors.ResultPolicyError` and
        :class:`~tether_clr.errors.SinkError`, after every dispatched body has
        finished.

        ``approval``: the approval provider for this batch only (an MCP server asks the
        client through elicitation); ``None``, the default, uses :attr:`approval`.

        Without a sink nothing can be parked (a ``DEFERRED`` answer then fails
        closed, UNAVAILABLE ``approval_deferred``), so the type says so: called
        with no ``sink`` it returns :class:`~tether_clr.BatchOutcomes`, which a
        loop hands straight to the projections' result helpers.

        ``ValueError`` before anything runs when ``view`` was not sealed by this registry.
        """
        calls = list(calls)
        if sink is None and calls:  # calls that run alone, straight through the stages (execution/lone.py)
            view = self._own(view)
            validate_batch(calls, view, max_parallelism)
            return await run_alone(
                calls, view, self._listeners.snapshot(), self.approval if approval is None else approval, cancellation,
                self._timeouts, self.instrumentation, partial(self._batch, calls, view, max_parallelism, None, cancellation, None, approval, True),
                self._classifier() is not None,
            )
        return await self._batch(calls, view, max_parallelism, sink, cancellation, None, approval).run()

    async def resume(
        self,
        store: SessionStore,
        session_id: str,
        decisions: Mapping[str, Any],
        view: SealedToolCatalogView | None = None,
        *,
        max_parallelism: int = 4,
        cancellation: CancellationToken | None = None,
        wrap_sink: Callable[[ToolCallSink], ToolCallSink] | None = None,
        approval: ApprovalProvider | None = None,
        withdrawn: Collection[str] = (),
    ) -> list[ToolExecutionOutcome] | BatchSuspended:
        """Continue the session's suspended step from its log, with the approvers' decisions.

        ``decisions`` maps the call id of every parked call to an
        :class:`ApprovalResult` (``APPROVED``, ``REJECTED`` or ``UNAVAILABLE``), or
        to ``(ApprovalResult, fingerprint)`` to bind the decision to the arguments
        the approver saw (:attr:`PendingApproval.fingerprint`). The parked call
        gets its decision as its approval step; approved calls still pass the
        pre-execute listeners, the guards and re-authorization against the live
        catalog; the calls after it run through the full pipeline (and may park
        in turn: another :class:`BatchSuspended`). Each body runs at most once,
        outcomes are recorded in model order, and the step ends as an
        uninterrupted one would have. Returns the step's full outcome list.

        ``view``: the catalog to run against; by default the catalog is assembled
        again for the request context recorded when approval was asked (or the
        root scope's sealed view when none was recorded), in a scope of this
        session owned by the recorded owner. Pass a view for tools registered in
        other scopes. With the default, a parked call whose tool is no longer in
        the catalog ends UNKNOWN_TOOL; with the view of the original step,
        re-authorization refuses it (DENIED, with the reason). ``wrap_sink``
        wraps the step's session sink (a live display, say); the wrapper must
        forward every hook (subclass :class:`~tether_clr.ForwardingSink`).
        ``approval``: the provider that answers the approvals the calls after the
        parked ones ask (default: the registry's). ``withdrawn``: ids of calls
        that wait behind the parked ones and that the approver denied meanwhile:
        they end DENIED (reason ``withdrawn``), recorded, with no body run (a
        framework that asks its human about every call of a suspended step).

        Raises ``ValueError``, running nothing and writing nothing, for a session
        with no suspended step (finished or cancelled), a decision for a call
        that is not parked or missing for one that is, a fingerprint that differs
        from the recorded one, or a log whose recorded arguments no longer match
        their fingerprint; :class:`SessionLeasedError` while another writer holds
        the session.
        """
        if view is not None:
            self._own(view)

        def run(
            calls: list[ToolCall], view: SealedToolCatalogView, sink: ToolCallSink, point: ResumePoint
        ) -> BatchRun:
            return self._batch(calls, view, max_parallelism, sink, cancellation, point, approval)

        return await resume_step(
            store, session_id, decisions, self.catalog, run, view=view, wrap_sink=wrap_sink, withdrawn=withdrawn
        )

    async def cancel_suspended(self, store: SessionStore, session_id: str, reason: str) -> list[ToolExecutionOutcome]:
        """Abandon the session's suspended step: its parked call and the calls never admitted
        end ABORTED_BEFORE_DISPATCH (``reason`` in their message), the step ends.

        Returns the step's full outcome list. ``ValueError`` (writing nothing) when
        the session has no suspended step.
        """
        return await cancel_step(store, session_id, reason)

"""The framework-agnostic core every agent-framework adapter is built on: :class:`GovernedCalls`.

An adapter (pydantic-ai's toolset, the OpenAI Agents SDK's function tools,
LangChain's tools) does four things through it, and nothing else reaches the
pipeline:

1. **Who is asking**: :meth:`GovernedCalls.context_of` (the host's
   ``RequestContext``, or ``context_for(run_context)``; fails closed with
   :class:`~tether_clr.integrations.IdentityError`).
2. **What is offered**: :meth:`GovernedCalls.assemble` gives the step's
   :class:`~tether_clr.ToolAssembly` for that context and scope (default: a
   scope of the logged session, as ``StepLoop``'s, or else of the framework's
   conversation id, owned by the principal; the root when there is neither), with the deferred tools a search loaded
   (:func:`loaded_names` reads them from a search's outcome).
3. **Running calls**: :meth:`GovernedCalls.run` runs the calls a framework
   hands over together as ONE batch through ``execute_batch``, with the
   framework's call ids; a framework that calls tools one by one passes one
   call. The result, :class:`GovernedBatch`, says per call id: the outcome, or
   the approval it waits for (:class:`~tether_clr.PendingApproval`: name,
   canonical arguments, fingerprint, reason), or (logged sessions only) the
   parked call it waits behind.
4. **Approvals**: the framework's human answers; the pipeline gets the answer
   as its approval provider's, bound to the fingerprint the approver saw.

   * Without a store nothing is logged (the cheap path): :meth:`run` asks with
     :class:`~tether_clr.integrations.approvals.CapturingApprovals` (the body
     does not run); once decided, :meth:`run_decided` runs the call again with
     :class:`~tether_clr.integrations.approvals.BoundApprovals`: the decision
     applies only when the arguments the pipeline runs with have the decided
     fingerprint (else DENIED ``approval_mismatch``); no decision fails closed.
   * With ``store`` and ``session_id`` every batch is one turn of the session
     log (``begin_turn``, the step's sink, ``end_turn``), like ``StepLoop``; an
     approval PARKS durably (the batch's provider answers ``DEFERRED``), and
     :meth:`resume` continues the step with ``registry.resume`` and the
     decisions bound to the parked fingerprints (or :meth:`cancel` abandons
     it, when the framework denied everything). The log has one writer, so the
     batches of one :class:`GovernedCalls` are serialized by a lock: use one
     instance per session (another writer is refused by the store's lease).

   A framework rejection is ``ApprovalResult.REJECTED``: DENIED,
   ``approval rejected (<reason>)``.

Failures reach the model as :func:`~tether_clr.integrations.failure_text`
(``Error [CODE/reason]: message``) and the host as
:class:`~tether_clr.integrations.GovernedFailure`.

How the two approval styles use it:

* asked BEFORE the tool is invoked (the OpenAI Agents SDK's ``needs_approval``):
  ``needs_approval`` answers ``approval_request(call, assembly) is not None``
  (:meth:`may_require_approval` first, to skip the pass for tools that never ask);
  the adapter's ``on_invoke_tool`` runs only when approved, as
  ``run_decided(call, (APPROVED, request.fingerprint), assembly)`` (logged: ``run``,
  which parks the call, then ``resume`` with that decision); a call the framework
  rejected never reaches the adapter;
* suspended INSIDE the tool (LangGraph's ``interrupt()``): the tool calls
  :meth:`run` (logged: :meth:`approval_request` first, so nothing parks); a call
  whose approval is asked calls ``interrupt(...)`` with the request; re-run with
  ``Command(resume=...)``, it asks again (no body), ``interrupt()`` returns the
  answer, and :meth:`run_decided` runs it with the decision and the fingerprint
  it was shown (logged: as one turn of the session; the framework's checkpoint,
  not the log, holds the suspension).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio

from tether_clr.catalog.builtin import CatalogTool
from tether_clr.catalog.views import ToolAssembly
from tether_clr.records.contexts import BatchOutcomes
from tether_clr.execution.admission import admission_only
from tether_clr.execution.ports import ApprovalProvider
from tether_clr.foundations.arguments import InvalidArgumentsJson, read_arguments
from tether_clr.foundations.cancellation import CancellationToken
from tether_clr.integrations.approvals import (
    BoundApprovals,
    CapturingApprovals,
    Decision,
    DeferringApprovals,
    Mismatch,
    mismatched,
)
from tether_clr.integrations.identity import ContextSource
from tether_clr.integrations.tracing import approvals_captured
from tether_clr.integrations.turns import STORE_FAULTS, shielded
from tether_clr.recording.session.protocol import SessionStore
from tether_clr.recording.session.steps import read_steps
from tether_clr.records.context import RequestContext
from tether_clr.records.decisions import ApprovalResult
from tether_clr.records.outcomes import ToolCall, ToolExecutionOutcome, ToolFailureCodes
from tether_clr.records.scope import AgentPipelineScope
from tether_clr.records.suspension import BatchSuspended, PendingApproval, call_fingerprint
from tether_clr.registry import ToolRegistry

__all__ = ["GovernedBatch", "GovernedCalls", "loaded_names"]


@dataclass(frozen=True, slots=True)
class GovernedBatch:
    """What one batch left for each call id, exactly one of:

    * ``outcomes[call_id]``: the call ended (success or failure);
    * ``asked[call_id]``: its approval is asked and its body did not run;
      hand the request to the framework's human-in-the-loop;
    * ``waiting[call_id]``: (logged sessions only) the call came after a parked
      one in the model's order and was not admitted; it runs when the step is
      resumed (its value: the call ids of the parked calls); ``held[call_id]``
      is its own request (canonical arguments, fingerprint) for a framework that
      asks its human about every call of the step (pydantic-ai), to pass its
      decision to :meth:`GovernedCalls.resume` or withdraw it there.

    ``additional_contexts``: what post-execute listeners added for the model.
    """

    outcomes: dict[str, ToolExecutionOutcome] = field(default_factory=dict)
    asked: dict[str, PendingApproval] = field(default_factory=dict)
    waiting: dict[str, tuple[str, ...]] = field(default_factory=dict)
    additional_contexts: tuple[str, ...] = ()
    held: dict[str, PendingApproval] = field(default_factory=dict)


def loaded_names(outcome: ToolExecutionOutcome, assembly: ToolAssembly) -> list[str]:
    """The deferred tools a successful tool-search ``outcome`` loaded (their schemas join the next step's tools)."""
    if outcome.failure is not None:
        return []
    tool = assembly.get_tool(outcome.name)  # O(1) first: only a catalog search can be the view's search tool
    if not (isinstance(tool, CatalogTool) and tool.searches_deferred) or outcome.name != assembly.search_tool_name:
        return []
    value = outcome.value
    if not isinstance(value, dict):
        return []
    return [t["name"] for t in value.get("tools", ()) if isinstance(t, dict) and isinstance(t.get("name"), str)]


class GovernedCalls:
    """The shared core of the framework adapters: identity, the step's assembly, batches, approvals, the log.

    ``registry``: the governed catalog; exactly one of ``context`` or
    ``context_for`` (``TypeError`` otherwise); ``scope``: where calls run
    (default: a scope of ``session_id`` owned by the context's principal, or
    the root without a session); ``store`` and ``session_id`` together (or
    neither): log every batch as a turn of that session and park approvals.
    """

    def __init__(
        self,
        registry: ToolRegistry,
        *,
        context: RequestContext | None = None,
        context_for: Callable[[Any], RequestContext] | None = None,
        scope: AgentPipelineScope | None = None,
        store: SessionStore | None = None,
        session_id: str | None = None,
        max_parallelism: int = 4,
    ) -> None:
        if not isinstance(registry, ToolRegistry):
            raise TypeError(f"registry must be a ToolRegistry, got {type(registry).__name__}")
        self.identity = ContextSource(context, context_for)
        if (store is None) != (session_id is None):
            raise TypeError("give store= and session_id= together (a logged session), or neither")
        self.registry = registry
        self.scope = scope
        self.store = store
        self.session_id = session_id
        self.max_parallelism = max_parallelism
        self.parked: dict[str, PendingApproval] = {}
        """Logged sessions: the calls parked by the last suspended batch, by call id (until :meth:`resume`)."""
        self.waiting: tuple[str, ...] = ()
        """Logged sessions: the call ids that wait behind the parked calls, in model order."""
        self.held: dict[str, PendingApproval] = {}
        """Logged sessions: the waiting calls' own requests, by call id (see :attr:`GovernedBatch.held`)."""
        self._suspended_turn: int | None = None
        self._restored = False
        self._lock = anyio.Lock()
        self._scopes: dict[tuple[str, str], AgentPipelineScope] = {}

    # ------------------------------------------------------------ identity and offer
    @property
    def logged(self) -> bool:
        """Whether batches are recorded in a session log (a store and a session id were given)."""
        return self.store is not None

    def context_of(self, run_context: Any) -> RequestContext:
        """The host's request context for this framework run context (:class:`IdentityError` when it has none)."""
        return self.identity.resolve(run_context)

    def scope_for(self, context: RequestContext, conversation: str | None = None) -> AgentPipelineScope | None:
        """Where the calls of ``context`` run: the given ``scope``; else a scope of the logged session, or
        of the framework's ``conversation`` id, owned by the principal (approval needs a session and an
        owner); else the root (where an approval, having nobody to ask, fails closed DENIED)."""
        if self.scope is not None:
            return self.scope
        session_id = self.session_id if self.session_id is not None else conversation
        if session_id is None:
            return None
        key = (session_id, context.principal_id)
        scope = self._scopes.get(key)
        if scope is None:  # one scope object per (session, principal): listener chains are memoized per scope
            if len(self._scopes) >= 1024:
                self._scopes.pop(next(iter(self._scopes)))
            scope = self._scopes[key] = AgentPipelineScope(session_id=session_id, owner=context.principal_id)
        return scope

    def assemble(self, run_context: Any, loaded: Iterable[str] = (), conversation: str | None = None) -> ToolAssembly:
        """The step's assembly for who is asking, with the deferred tools ``loaded`` (names no longer visible are
        skipped); ``conversation``: the framework's id of the conversation (see :meth:`scope_for`)."""
        context = self.context_of(run_context)
        assembly = self.assembly_for(context, self.scope_for(context, conversation))
        names = [name for name in loaded if isinstance(name, str)]
        if names and assembly.deferred:
            for name in names:
                try:
                    assembly = assembly.with_loaded([name])
                except LookupError:
                    continue  # no longer visible to this caller: nothing to load
        return assembly

    def assembly_for(self, context: RequestContext, scope: AgentPipelineScope | None) -> ToolAssembly:
        """``registry.assemble(context, scope)``: the catalog's cache answers it with the snapshot it keeps for
        that identity and those layers while it is exactly what assembling now would give
        (:mod:`tether_clr.catalog.reuse`: the same registry and policy revisions, no feature flag or deny rule
        took part, no live scope authority), rebound to ``context``. Adapters ask per call and per step: this
        keeps that cheap while every catalog change (a tool disabled, re-versioned, a pin, a kill switch) is
        seen at once."""
        return self.registry.assemble(context, scope)

    def may_require_approval(self, assembly: ToolAssembly, name: str) -> bool:
        """Whether calls of ``name`` in ``assembly`` may need approval: the tool has an approval
        predicate (``requires_approval``), or a pre-execute listener is registered (it may ``ask``).

        A cheap, argument-free hint for a framework that asks before invoking: when it
        is False no approval is ever asked; when True, :meth:`approval_request` says for a given call.
        """
        entry = assembly.resolve(name)
        if entry is None:
            return False
        return bool(entry.approval) or bool(self.registry.listener_snapshot().chain("pre_execute", assembly.scope))

    async def approval_request(self, call: ToolCall, assembly: ToolAssembly) -> PendingApproval | None:
        """The approval the pipeline would ask for ``call`` (name, canonical arguments, fingerprint, reason), or None.

        Runs the call through the pipeline's admission (pre-execute waterfall, approval,
        guards, re-authorization) with :class:`CapturingApprovals`, which rejects, inside
        ``admission_only()``: a call the pipeline would admit without asking ends there
        too, so no body runs whatever the listeners answer; nothing is logged or traced.
        For a framework that asks before invoking (``needs_approval``).
        """
        approvals = CapturingApprovals()
        with admission_only():
            await self.registry.execute_batch([call], assembly, 1, approval=approvals)
        return approvals.asked.get(call.call_id)

    # ------------------------------------------------------------------ running
    async def run(self, calls: Sequence[ToolCall], assembly: ToolAssembly) -> GovernedBatch:
        """Run ``calls`` (one model turn's, in model order, with the framework's call ids) as one batch.

        Not logged: approvals are asked, not parked (:attr:`GovernedBatch.asked`). Logged: one
        turn of the session; an approval parks the step (:attr:`parked`), to :meth:`resume`; each
        call behind it is in :attr:`GovernedBatch.waiting`, with its own request in
        :attr:`GovernedBatch.held` (canonical arguments and fingerprint) for the framework's human.
        Infrastructure faults raise (the store's, a result policy's).
        """
        if self.store is None:
            approvals = CapturingApprovals()
            with approvals_captured():  # an asked call's span says "asked", not DENIED
                outcomes = await self.registry.execute_batch(calls, assembly, self.max_parallelism, approval=approvals)
            if not approvals.asked:  # nothing asked (the common case): every call ended
                return GovernedBatch({o.call_id: o for o in outcomes}, additional_contexts=tuple(outcomes.additional_contexts))
            batch = GovernedBatch(additional_contexts=tuple(outcomes.additional_contexts))
            for outcome in outcomes:
                asked = approvals.asked.get(outcome.call_id)
                if asked is not None and outcome.code is ToolFailureCodes.DENIED:
                    batch.asked[outcome.call_id] = asked
                else:
                    batch.outcomes[outcome.call_id] = outcome
            return batch
        async with self._lock:
            await self._check_not_parked()
            result = await self._logged_turn(calls, assembly, DeferringApprovals())
            if isinstance(result, BatchSuspended):
                return self._suspended(calls, result)
            return GovernedBatch({o.call_id: o for o in result}, additional_contexts=tuple(result.additional_contexts))

    async def run_one(self, call: ToolCall, assembly: ToolAssembly) -> ToolExecutionOutcome | PendingApproval:
        """Not logged: :meth:`run` of the one call a framework hands over alone, answered without a
        :class:`GovernedBatch`: its outcome, or the approval it asks (its body did not run). The same
        batch through ``execute_batch`` as :meth:`run`'s, for the per-call path of the adapters.
        Logged sessions use :meth:`run` (``RuntimeError`` here)."""
        if self.store is not None:
            raise RuntimeError("run_one is for unlogged calls: a logged session runs its batches through run()")
        approvals = CapturingApprovals()
        with approvals_captured():  # an asked call's span says "asked", not DENIED
            (outcome,) = await self.registry.execute_batch((call,), assembly, self.max_parallelism, approval=approvals)
        if approvals.asked:
            asked = approvals.asked.get(outcome.call_id)
            if asked is not None and outcome.code is ToolFailureCodes.DENIED:
                return asked
        return outcome

    async def _check_not_parked(self) -> None:
        if self.parked:
            raise RuntimeError(f"session {self.session_id!r} has a parked step: resume it before running another batch")

    async def _logged_turn(
        self, calls: Sequence[ToolCall], assembly: ToolAssembly, approval: ApprovalProvider
    ) -> BatchOutcomes | BatchSuspended:
        """One batch as one turn of the session log (``begin_turn``, the step's sink, ``end_turn``), shielded from
        the caller's cancellation (:func:`~tether_clr.integrations.turns.shielded`); the turn is left open only when
        the batch suspended (for :meth:`resume`) or the store itself failed (raised, for repair)."""
        store, session_id = self.store, self.session_id
        assert store is not None and session_id is not None

        async def turn_of(token: CancellationToken) -> BatchOutcomes | BatchSuspended:
            turn = await store.begin_turn(session_id)
            try:
                result = await self.registry.execute_batch(
                    calls, assembly, self.max_parallelism, store.sink(session_id, turn, 1), token, approval=approval
                )
            except BaseException as failure:
                await _end_turn(store, session_id, turn, failure)
                raise
            if isinstance(result, BatchSuspended):
                self._suspended_turn = turn
            else:
                await store.end_turn(session_id, turn)
            return result

        return await shielded(turn_of)

    def _suspended(self, calls: Sequence[ToolCall], result: BatchSuspended) -> GovernedBatch:
        self.parked = {pending.call_id: pending for pending in result.pending}
        batch = GovernedBatch({o.call_id: o for o in result.delivered}, dict(self.parked),
                              additional_contexts=result.additional_contexts)
        parked_ids = tuple(self.parked)
        held: dict[str, PendingApproval] = {}
        for index, call in enumerate(calls):
            if call.call_id not in batch.outcomes and call.call_id not in batch.asked:
                batch.waiting[call.call_id] = parked_ids
                held[call.call_id] = self._held(call, index, parked_ids)
        batch.held.update(held)
        self.waiting = tuple(batch.waiting)
        self.held = held
        return batch

    def _held(self, call: ToolCall, index: int, parked_ids: Sequence[str]) -> PendingApproval:
        """The request a framework's human answers for a call that waits behind parked ones: its canonical
        arguments and their fingerprint (its own decision binds to them; :meth:`resume`)."""
        try:
            arguments = read_arguments(call.arguments, self.registry.argument_limits).json
        except (InvalidArgumentsJson, ValueError):
            arguments = call.arguments  # refused again when it runs; the fingerprint still binds the raw text
        return PendingApproval(call.call_id, call.name, arguments, call_fingerprint(call.name, arguments),
                               f"runs after {', '.join(parked_ids)} {'is' if len(parked_ids) == 1 else 'are'} decided",
                               index)

    async def run_decided(
        self, call: ToolCall, decision: Decision | Mismatch | None, assembly: ToolAssembly
    ) -> ToolExecutionOutcome:
        """Run ``call`` again with the framework's ``decision`` (``(APPROVED|REJECTED, fingerprint)``).

        The decision applies only when the pipeline's fingerprint of the call equals
        the decided one (else DENIED ``approval_mismatch``, as for :data:`~tether_clr.integrations.approvals.MISMATCH`);
        ``None`` fails closed (DENIED).
        Logged (``store=``): the call is one turn of the session, like :meth:`run`'s batches, but
        nothing parks (the decision is known): for a framework whose own checkpoint holds the
        suspension (LangGraph's ``interrupt()``), so the log holds the call once, when decided.
        """
        approvals = BoundApprovals({} if decision is None else {call.call_id: decision})
        if self.store is None:
            (outcome,) = await self.registry.execute_batch([call], assembly, 1, approval=approvals)
        else:
            async with self._lock:
                await self._check_not_parked()
                result = await self._logged_turn([call], assembly, approvals)
                if isinstance(result, BatchSuspended):  # BoundApprovals never defers: a listener's own suspension
                    self._suspended([call], result)
                    raise RuntimeError(f"call {call.call_id!r} parked although its approval was decided")
                (outcome,) = result
        return mismatched(outcome) if call.call_id in approvals.mismatched else outcome

    async def restore(self) -> bool:
        """Logged: when no step is parked in memory, read the session's suspended step from the LOG (a step
        parked by another instance or before a restart): its parked calls (:attr:`parked`, with the requests
        recorded in ``approval/asked``) and the calls waiting behind them (:attr:`waiting`, :attr:`held`).
        Returns whether a step is parked. Reads the log once per instance at most while nothing is parked."""
        store, session_id = self.store, self.session_id
        if store is None or session_id is None:
            return False
        if self.parked:
            return True
        if self._restored:
            return False
        self._restored = True
        suspended = read_steps(await store.events(session_id)).suspended()
        if not suspended:
            return False
        step = suspended[0]
        parked: dict[str, PendingApproval] = {}
        for position in step.parked:
            asked = step.asked.get(position)
            payload = asked.payload if asked is not None else {}
            name, arguments, fingerprint = (payload.get(key) for key in ("name", "arguments", "fingerprint"))
            if asked is None or not (isinstance(name, str) and isinstance(arguments, str) and isinstance(fingerprint, str)):
                return False  # not a step this core can continue: registry.resume reports why
            reason = payload.get("reason")
            parked[asked.call_id or ""] = PendingApproval(
                asked.call_id or "", name, arguments, fingerprint, reason if isinstance(reason, str) else None, position
            )
        first = step.parked[0]
        behind = [
            ToolCall(call["call_id"], call["name"], call["arguments"]) for call in sorted(
                (c for c in step.proposed if isinstance(c.get("index"), int)), key=lambda c: c["index"])
            if call["index"] > first and call["index"] not in step.results and call["index"] not in step.parked
            and all(isinstance(call.get(key), str) for key in ("call_id", "name", "arguments"))
        ]
        self.parked = parked
        self._suspended_turn = step.turn
        ids = tuple(parked)
        self.held = {call.call_id: self._held(call, first + 1 + i, ids) for i, call in enumerate(behind)}
        self.waiting = tuple(self.held)
        return True

    async def resume(
        self,
        decisions: Mapping[str, Decision | Mismatch],
        assembly: ToolAssembly,
        *,
        withdrawn: Collection[str] = (),
    ) -> GovernedBatch:
        """Logged: continue the parked step with the framework's decisions, by call id.

        Each decision is ``(APPROVED|REJECTED, fingerprint of the arguments the framework
        runs)`` or :data:`~tether_clr.integrations.approvals.MISMATCH`. A parked call with no
        decision, or decided for another fingerprint, is rejected (DENIED; ``approval_mismatch``
        for the latter): fail closed. The calls that waited run after it through the whole
        pipeline; a decision given for one of them (bound to its :attr:`held` fingerprint)
        answers the approval it asks (none: REJECTED, nothing parks again); ``withdrawn``: waiting
        calls the framework's human denied: DENIED ``withdrawn``, recorded, no body runs.
        The step is read from the log when this instance has none parked (:meth:`restore`).
        """
        store, session_id = self.store, self.session_id
        if store is None or session_id is None:
            raise RuntimeError("resume needs a logged session (store= and session_id=)")
        async with self._lock:
            if not await self.restore():
                raise RuntimeError(f"no step of session {session_id!r} is parked")
            bound: dict[str, tuple[ApprovalResult, str]] = {}
            mismatch: set[str] = set()
            for call_id, pending in self.parked.items():
                decision = decisions.get(call_id)
                if decision is None:
                    bound[call_id] = (ApprovalResult.REJECTED, pending.fingerprint)
                elif isinstance(decision, Mismatch) or decision[1] != pending.fingerprint:
                    mismatch.add(call_id)
                    bound[call_id] = (ApprovalResult.REJECTED, pending.fingerprint)
                else:
                    answer = ApprovalResult.APPROVED if decision[0] is ApprovalResult.APPROVED else ApprovalResult.REJECTED
                    bound[call_id] = (answer, pending.fingerprint)
            later = BoundApprovals({k: v for k, v in decisions.items() if k not in self.parked})
            withheld = [call_id for call_id in withdrawn if call_id in self.held]

            async def resumed(token: CancellationToken) -> list[ToolExecutionOutcome] | BatchSuspended:
                turn = self._suspended_turn
                try:
                    result = await self.registry.resume(store, session_id, bound, assembly, max_parallelism=self.max_parallelism,
                                                        cancellation=token, approval=later, withdrawn=withheld)
                except ValueError:
                    raise  # refused before anything ran (nothing written): the step stays parked as it was
                except BaseException as failure:
                    self._forget()
                    if turn is not None:
                        await _end_turn(store, session_id, turn, failure)
                    raise
                self._forget()
                if not isinstance(result, BatchSuspended) and turn is not None:
                    await store.end_turn(session_id, turn)
                return result

            result = await shielded(resumed)
            if isinstance(result, BatchSuspended):
                batch = self._suspended([], result)
            else:
                batch = GovernedBatch({o.call_id: o for o in result},
                                      additional_contexts=tuple(getattr(result, "additional_contexts", ())))
            for call_id in mismatch | later.mismatched:
                if call_id in batch.outcomes:
                    batch.outcomes[call_id] = mismatched(batch.outcomes[call_id])
            return batch

    def _forget(self) -> None:
        self.parked, self.waiting, self.held, self._suspended_turn = {}, (), {}, None

    async def cancel(self, reason: str) -> GovernedBatch:
        """Logged: abandon the parked step: its parked calls and the calls waiting behind them end
        ABORTED_BEFORE_DISPATCH (``reason`` in their message) and no body of theirs runs; the turn ends."""
        store, session_id = self.store, self.session_id
        if store is None or session_id is None:
            raise RuntimeError("cancel needs a logged session (store= and session_id=)")
        async with self._lock:
            if not await self.restore():
                raise RuntimeError(f"no step of session {session_id!r} is parked")

            async def cancelled(token: CancellationToken) -> list[ToolExecutionOutcome]:
                outcomes = await self.registry.cancel_suspended(store, session_id, reason)
                turn = self._suspended_turn
                self._forget()
                if turn is not None:
                    await store.end_turn(session_id, turn)
                return outcomes

            return GovernedBatch({o.call_id: o for o in await shielded(cancelled)})


async def _end_turn(store: SessionStore, session_id: str, turn: int, failure: BaseException) -> None:
    """End ``turn`` after its batch raised ``failure``, unless the store itself failed (a store fault
    leaves the turn open for repair; the caller re-raises the fault)."""
    if isinstance(failure, STORE_FAULTS):
        return
    try:
        await store.end_turn(session_id, turn)
    except Exception:  # the batch's own fault is the one to report; repair ends the turn
        return

"""The batch sink of one step of a session: group commit, positions, and the lease.

Group commit: a :class:`SessionSink` buffers the events of a step and commits
them at the points where durability is owed: :meth:`SessionSink.flush`, which
``execute_batch`` awaits before the first body of each group starts (so the
declarations of a parallel group, and the result of the previous exclusive call,
are one transaction), before waiting for a body still running (so results that
are ready together are one transaction), and :meth:`SessionSink.batch_finished`.
With ``group_commit=False`` every event is its own transaction (the baseline the
benchmark compares against). It writes only through the store's public
protocol (:meth:`~tether_clr.SessionStore.append`, ``release``).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

import anyio

from tether_clr.execution.ports import Declaration, current_declaration
from tether_clr.recording.session.encoding import (
    PendingEvent,
    attempt_payload,
    call_payload,
    check_session_id,
    dumps,
    proposal_text,
    result_payload,
)
from tether_clr.recording.session.events import (
    APPROVAL_ASKED,
    APPROVAL_DECIDED,
    APPROVAL_GRANT,
    ASSISTANT_MESSAGE,
    PTC_DISPATCH,
    STEP_END,
    STEP_START,
    TOOL_ATTEMPT,
    TOOL_CALL,
    TOOL_RESULT,
    TURN_END,
    TURN_START,
    USER_MESSAGE,
    call_fingerprint,
)
from tether_clr.recording.session.grants import GrantRecord, new_grant
from tether_clr.recording.session.protocol import SessionClaim, SessionStore
from tether_clr.recording.session.steps import read_steps, step_contexts, user_message
from tether_clr.records.decisions import ApprovalResult
from tether_clr.records.grants import ApprovalGrant, GrantKey, grant_of, plain_result
from tether_clr.records.outcomes import ToolCall, ToolExecution, ToolExecutionOutcome

__all__ = ["SessionSink"]


class SessionSink:
    """The batch sink of one step: ``execute_batch`` drives it through its hooks.

    ``parks_approvals`` is True: a call whose approval is deferred can be parked
    here, because the log is what :meth:`ToolRegistry.resume` continues from.

    ``batch_started(calls)`` buffers ``step/start`` and ``assistant/message``
    (every proposed call, raw arguments and position included, so the step can
    be repaired or resumed from the log alone); ``call_declared`` ``tool/call``;
    ``approval_asked`` / ``approval_decided`` the approval events, with the
    exact arguments and their fingerprint; ``outcome_ready`` ``tool/result`` in
    model order; ``attempt_ended`` ``tool/attempt`` (each attempt of a call with a
    retry policy: its number and outcome); ``approval_granted`` ``approval/grant`` after an ``*_ALWAYS``
    answer, and ``approval_from_grant`` the ``approval/decided`` of a call a
    grant decides (naming it), after looking the grant up in the store (or
    among this step's grants not yet committed); ``batch_finished`` ``step/end`` (only if every proposed call was
    declared and has its result: a step an infrastructure fault stopped stays open for
    :meth:`SessionStore.repair`) and releases the lease. ``flush`` makes every
    buffered event durable.

    A child call (its declaration names a ``child``) is recorded under the
    step with its key instead of a position: ``tool/ptc-dispatch`` (who made it:
    the parent's call id and position, the depth) and ``tool/call`` together,
    its approval events, and its ``tool/result`` when it ends; it counts for
    nothing the step's end waits for. ``contexts_added`` keeps a call's additional
    contexts with its ``tool/result``; when the step ends they are written as
    ``user/message`` events, in model order, after its last result and before
    ``step/end`` (a resumed step's include those recorded before it was suspended). The first write takes the session's lease, which is
    renewed while the batch runs and released when it returns. With ``holder`` (a lease the writer took with
    the store's ``claim`` and holds for longer than the step, as ``tether-clr mcp serve`` does for an MCP
    session), every write is checked against that lease and the lease is left held when the step ends.
    ``starts_turn`` (a ``turn/start`` payload) and ``ends_turn``, with ``holder`` only (the session's
    one writer, which knows its turns and that this one has this step alone): the turn's ``turn/start``
    goes in the commit of the step's first events and its ``turn/end`` in the commit of ``step/end``
    (``turn_started`` and ``turn_ended`` say they were committed), two transactions fewer per turn
    than ``store.begin_turn`` and ``store.end_turn``. The store still checks the turn is new.
    """

    parks_approvals = True

    def __init__(
        self, store: SessionStore, session_id: str, turn: int, step: int, *, claim: SessionClaim | None = None,
        holder: str | None = None, starts_turn: str | None = None, ends_turn: bool = False,
    ) -> None:
        if (ends_turn or starts_turn is not None) and holder is None:
            raise ValueError("starts_turn and ends_turn need a held lease (holder): only the session's one writer may "
                             "open or close its turn with its step")  # fmt: skip
        for name, number in (("turn", turn), ("step", step)):
            if isinstance(number, bool) or not isinstance(number, int) or number < 1:
                raise ValueError(f"{name} must be a positive int, got {number!r}")
        self._store = store
        self.session_id, self.turn, self.step = check_session_id(session_id), turn, step
        self._holder = uuid.uuid4().hex
        self._pending: list[PendingEvent] = []
        self._made: list[GrantRecord] = []  # grants in _pending: the store cannot find them yet
        self._flushing: anyio.Event | None = None  # set when the commit in flight ends (None: none is)
        self._leased = False
        self._finished = False
        self._declared: set[int] = set()
        self._answered: set[int] = set()
        self._next_position = 0
        self._proposed = 0
        self._contexts: list[tuple[int, str | None, str]] = []  # (position, call id, text): the user/message events due
        self._adding: tuple[int, tuple[str, ...]] | None = None  # contexts_added, for the outcome_ready that follows
        self._keep_lease = False  # a lease the writer holds beyond this step (``holder``): never taken, never released
        self._starts_turn = starts_turn
        self._ends_turn = ends_turn
        self.turn_started = False  # whether a commit wrote the ``turn/start`` this sink carried (``starts_turn``)
        self.turn_ended = False  # whether batch_finished wrote ``turn/end`` with ``step/end`` (``ends_turn``)
        if claim is not None:
            self._continue(claim)
        elif holder is not None:
            self._holder, self._leased, self._keep_lease = holder, True, True

    def _continue(self, claim: SessionClaim) -> None:
        """Continue this step of a suspended session under the lease ``claim`` took: the calls the log
        declared and answered already are not declared or answered again."""
        if claim.session_id != self.session_id:
            raise ValueError(f"the claim is on session {claim.session_id!r}, not {self.session_id!r}")
        step = read_steps(claim.events).steps.get((self.turn, self.step))
        if step is None:
            raise ValueError(f"session {self.session_id!r} has no step {self.step} of turn {self.turn} to continue")
        self._holder, self._leased = claim.holder, True
        self._declared, self._answered, self._proposed = set(step.declared), set(step.results), len(step.proposed)
        self._next_position = max(self._declared, default=-1) + 1
        self._contexts = step_contexts(step)

    # ------------------------------------------------------------ buffering
    def _add(self, kind: str, call_id: str | None, position: int | None, payload: str) -> None:
        if self._finished:
            raise RuntimeError(f"the sink of step {self.step} of session {self.session_id!r} has finished")
        self._pending.append(PendingEvent(self.turn, self.step, kind, call_id, position, payload))

    def _committed(self, rows: Sequence[PendingEvent]) -> None:
        """Note the turn events a commit that returned carried (``starts_turn``, ``ends_turn``)."""
        if self._starts_turn is None and not self._ends_turn:  # this sink writes no turn event
            return
        for row in rows:
            if row.step is None:
                self.turn_started = self.turn_started or row.kind == TURN_START
                self.turn_ended = self.turn_ended or row.kind == TURN_END

    async def _added(self) -> None:
        if not self._store.group_commit:
            await self.flush()

    def _position(self, declaring: bool) -> int:
        declaration = current_declaration()
        if declaration is not None:
            return declaration.index
        if declaring:  # outside execute_batch: positions follow the declarations
            self._next_position += 1
            return self._next_position - 1
        return min(self._declared - self._answered, default=self._next_position)

    async def _one_commit_at_a_time(self) -> anyio.Event:
        """Wait until no commit of this sink is in flight, then mark one in flight (the event its end sets).

        Commits stay in order and never overlap (a flush behind the delivery may still run when the next
        flush or the end comes). Unlike a lock, taking it when it is free costs no pass of the event loop:
        the store's hand-off to its thread is the commit's one.
        """
        while self._flushing is not None:
            await self._flushing.wait()
        self._flushing = done = anyio.Event()
        return done

    def _commit_ended(self, done: anyio.Event) -> None:
        self._flushing = None
        done.set()

    async def flush(self) -> None:
        """Commit every buffered event in one transaction (the first one takes the lease)."""
        if not self._pending and self._flushing is None:
            return
        done = await self._one_commit_at_a_time()
        try:
            if not self._pending:
                return
            rows, self._pending = self._pending, []
            self._made = []
            await self._store.append(self.session_id, self._holder, rows, first=not self._leased, release=False)
            self._committed(rows)
            self._leased = True
        finally:
            self._commit_ended(done)

    # ---------------------------------------------------------------- hooks
    async def batch_started(self, calls: Sequence[ToolCall]) -> None:
        self._proposed = len(calls)
        if self._starts_turn is not None:  # the turn opens in the commit of its one step's start
            self._pending.append(PendingEvent(self.turn, None, TURN_START, None, None, self._starts_turn))
        self._add(STEP_START, None, None, f'{{"calls":{len(calls)}}}')
        self._add(ASSISTANT_MESSAGE, None, None, proposal_text(calls))
        if not self._store.group_commit:
            await self.flush()

    async def call_declared(self, call: ToolCall) -> None:
        declaration = current_declaration()
        if declaration is not None:
            if declaration.child is not None:
                self._dispatched(declaration.child, call)
                if not self._store.group_commit:
                    await self.flush()
                return
            position = declaration.index
        else:  # outside execute_batch: positions follow the declarations
            position = self._next_position
            self._next_position += 1
        self._declared.add(position)
        self._add(TOOL_CALL, call.call_id, position, call_payload(position, call))
        if not self._store.group_commit:
            await self.flush()

    def _dispatched(self, child: str, call: ToolCall) -> None:
        """A child call's ``tool/ptc-dispatch`` and ``tool/call``, keyed ``child`` under the step."""
        parent, _, _ = child.partition("/")
        dispatch = {
            "child": child, "parent_call_id": call.parent_call_id, "parent_index": int(parent) if parent.isdigit() else None,
            "depth": child.count("/"), "name": call.name, "arguments": call.arguments,
        }
        self._add(PTC_DISPATCH, call.call_id, None, dumps(dispatch))
        self._add(TOOL_CALL, call.call_id, None, call_payload(None, call, child))

    def _where(self) -> tuple[int | None, dict[str, Any]]:
        """The position column and payload key of an approval event: the call's position, or a child's key."""
        declaration: Declaration | None = current_declaration()
        if declaration is not None and declaration.child is not None:
            return None, {"child": declaration.child}
        position = self._position(False)
        return position, {"index": position}

    async def approval_asked(self, execution: ToolExecution, reason: str | None) -> None:
        position, where = self._where()
        payload = {
            **where,
            "name": execution.name,
            "arguments": execution.arguments_json,
            "fingerprint": call_fingerprint(execution.name, execution.arguments_json),
            "reason": reason,
            # Who asked: what resuming the step assembles the catalog for again (no secrets: the
            # request context is identity and claimed scopes).
            "context": None if execution.context is None else {**execution.context.identity(), "request_id": execution.context.request_id},
            "owner": execution.owner if isinstance(execution.owner, str) else None,
        }
        self._add(APPROVAL_ASKED, execution.call_id, position, dumps(payload))
        await self._added()

    async def approval_decided(self, execution: ToolExecution, result: Any) -> None:
        """``approval/decided``: an "always" answer is recorded as its plain decision, with ``always`` its scope.

        A child call is never parked: its ``DEFERRED`` is recorded as ``deferred_refused`` (it ends UNAVAILABLE)."""
        plain, grant = plain_result(result), grant_of(result)
        decision = plain.value if isinstance(plain, ApprovalResult) else "invalid"
        if plain is ApprovalResult.DEFERRED and self._where()[0] is None:
            decision = "deferred_refused"
        await self._decided(execution, {"decision": decision, **({} if grant is None else {"always": grant.scope.value})})

    async def _decided(self, execution: ToolExecution, fields: dict[str, Any]) -> None:
        position, where = self._where()
        payload = {**where, "name": execution.name, **fields}
        payload["fingerprint"] = call_fingerprint(execution.name, execution.arguments_json)
        self._add(APPROVAL_DECIDED, execution.call_id, position, dumps(payload))
        await self._added()

    async def approval_from_grant(self, execution: ToolExecution, key: GrantKey) -> ApprovalResult | None:
        """The decision of the latest live grant matching the call (recorded as ``approval/decided`` naming it),
        or None to ask. A call with no request context names nobody a grant could be for: it asks."""
        context = execution.context
        if context is None:
            return None
        identity = (context.tenant_id, context.principal_id, self.session_id, key)
        grant = next((made for made in reversed(self._made) if made.matches(*identity)), None)
        if grant is None:
            grant = await self._store.find_grant(*identity)
            if grant is None:
                return None
        await self._decided(execution, {
            "decision": grant.decision.value, "grant": grant.grant_id, "grant_session": grant.session_id,
            "grant_scope": grant.scope.value,
        })  # fmt: skip
        return grant.decision

    async def approval_granted(self, execution: ToolExecution, key: GrantKey, grant: ApprovalGrant) -> None:
        """``approval/grant``: remember the provider's "always" answer for the request's tenant and principal
        (nothing is remembered for a call with no request context: it names nobody)."""
        record = new_grant(uuid.uuid4().hex, self.session_id, execution, key, grant)
        if record is None:
            return
        position, where = self._where()
        self._add(APPROVAL_GRANT, execution.call_id, position, dumps({**where, "name": execution.name, **record.payload()}))
        self._made.append(record)
        await self._added()

    async def contexts_added(self, contexts: Sequence[str]) -> None:
        """The additional contexts of the call whose ``outcome_ready`` comes next (kept with its result)."""
        self._adding = (self._position(False), tuple(contexts))

    async def attempt_ended(self, execution: ToolExecution, attempt: int, outcome: ToolExecutionOutcome) -> None:
        position, where = self._where()
        self._add(TOOL_ATTEMPT, execution.call_id, position, attempt_payload(position, attempt, outcome, where.get("child")))
        await self._added()

    async def outcome_ready(self, outcome: ToolExecutionOutcome) -> None:
        declaration = current_declaration()
        if declaration is not None and declaration.child is not None:
            self._add(TOOL_RESULT, outcome.call_id, None, result_payload(None, outcome, declaration.child))
            await self._added()
            return
        position = declaration.index if declaration is not None else self._position(False)
        contexts: tuple[str, ...] = ()
        if self._adding is not None:
            adding, self._adding = self._adding, None
            if adding[0] == position:
                contexts = adding[1]
        self._answered.add(position)
        self._add(TOOL_RESULT, outcome.call_id, position, result_payload(position, outcome, contexts=contexts))
        if contexts:
            self._contexts.extend((position, outcome.call_id, text) for text in contexts)
        if not self._store.group_commit:
            await self.flush()

    async def abandon(self) -> None:
        """Release the lease of a sink whose batch never finished (a resumed step cancelled before it started)."""
        if self._finished or not self._leased:
            return
        self._finished, self._leased, self._pending = True, False, []
        if not self._keep_lease:
            await self._store.release(self.session_id, self._holder)

    async def batch_finished(self) -> None:
        """Write ``step/end`` when every proposed call was declared and answered, commit, and release the lease."""
        if self._finished:
            return
        if self._declared <= self._answered and len(self._declared) >= self._proposed:
            for position, call_id, text in sorted(self._contexts, key=lambda context: context[0]):  # stable: FIFO per call
                self._add(USER_MESSAGE, call_id, None, dumps(user_message(position, text)))
            self._add(STEP_END, None, None, dumps({"calls": len(self._declared)}))
            if self._ends_turn:  # the turn's one step is closed: close the turn in the same commit
                self._pending.append(PendingEvent(self.turn, None, TURN_END, None, None, "{}"))
        self._finished = True
        done = await self._one_commit_at_a_time()
        try:
            rows, self._pending = self._pending, []
            self._made = []
            if not rows and not self._leased:
                return
            await self._store.append(
                self.session_id, self._holder, rows, first=not self._leased, release=not self._keep_lease
            )
            self._committed(rows)
            self._leased = False
        finally:
            self._commit_ended(done)

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

from tether_clr.execution.ports import current_declaration
from tether_clr.foundations.text import safe_text_or_value
from tether_clr.recording.session.encoding import (
    PendingEvent,
    attempt_payload,
    call_payload,
    check_session_id,
    dumps,
    result_payload,
)
from tether_clr.recording.session.events import (
    APPROVAL_ASKED,
    APPROVAL_DECIDED,
    ASSISTANT_MESSAGE,
    STEP_END,
    STEP_START,
    TOOL_ATTEMPT,
    TOOL_CALL,
    TOOL_RESULT,
    call_fingerprint,
)
from tether_clr.recording.session.protocol import SessionClaim, SessionStore
from tether_clr.recording.session.steps import read_steps
from tether_clr.records.decisions import ApprovalResult
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
    exact arguments and their fingerprint; ``attempt_ended`` ``tool/attempt``
    (each attempt of a call with a retry policy: its number and outcome); ``outcome_ready`` ``tool/result`` in
    model order; ``batch_finished`` ``step/end`` (only if every proposed call was
    declared and has its result: a step an infrastructure fault stopped stays open for
    :meth:`SessionStore.repair`) and releases the lease. ``flush`` makes every
    buffered event durable. The first write takes the session's lease, which is
    renewed while the batch runs and released when it returns.
    """

    parks_approvals = True

    def __init__(
        self, store: SessionStore, session_id: str, turn: int, step: int, *, claim: SessionClaim | None = None
    ) -> None:
        for name, number in (("turn", turn), ("step", step)):
            if isinstance(number, bool) or not isinstance(number, int) or number < 1:
                raise ValueError(f"{name} must be a positive int, got {number!r}")
        self._store = store
        self.session_id, self.turn, self.step = check_session_id(session_id), turn, step
        self._holder = uuid.uuid4().hex
        self._pending: list[PendingEvent] = []
        self._flushing: anyio.Lock | None = None
        self._leased = False
        self._finished = False
        self._declared: set[int] = set()
        self._answered: set[int] = set()
        self._next_position = 0
        self._proposed = 0
        if claim is not None:
            self._continue(claim)

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

    # ------------------------------------------------------------ buffering
    def _add(self, kind: str, call_id: str | None, position: int | None, payload: str) -> None:
        if self._finished:
            raise RuntimeError(f"the sink of step {self.step} of session {self.session_id!r} has finished")
        self._pending.append(PendingEvent(self.turn, self.step, kind, call_id, position, payload))

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

    async def flush(self) -> None:
        """Commit every buffered event in one transaction (the first one takes the lease)."""
        if self._flushing is None:
            self._flushing = anyio.Lock()
        async with self._flushing:
            if not self._pending:
                return
            rows, self._pending = self._pending, []
            await self._store.append(self.session_id, self._holder, rows, first=not self._leased, release=False)
            self._leased = True

    # ---------------------------------------------------------------- hooks
    async def batch_started(self, calls: Sequence[ToolCall]) -> None:
        proposal = [
            {
                "index": index,
                "call_id": safe_text_or_value(call.call_id),
                "name": safe_text_or_value(call.name),
                "arguments": safe_text_or_value(call.arguments),
                "parent_call_id": safe_text_or_value(call.parent_call_id),
                **({} if call.argument_error is None else {"argument_error": safe_text_or_value(call.argument_error)}),
            }
            for index, call in enumerate(calls)
        ]
        self._proposed = len(proposal)
        self._add(STEP_START, None, None, dumps({"calls": len(proposal)}))
        self._add(ASSISTANT_MESSAGE, None, None, dumps({"calls": proposal}))
        await self._added()

    async def call_declared(self, call: ToolCall) -> None:
        position = self._position(True)
        self._declared.add(position)
        self._add(TOOL_CALL, call.call_id, position, call_payload(position, call))
        await self._added()

    async def approval_asked(self, execution: ToolExecution, reason: str | None) -> None:
        position = self._position(False)
        payload = {
            "index": position,
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
        decision = result.value if isinstance(result, ApprovalResult) else "invalid"
        position = self._position(False)
        payload = {
            "index": position,
            "name": execution.name,
            "decision": decision,
            "fingerprint": call_fingerprint(execution.name, execution.arguments_json),
        }
        self._add(APPROVAL_DECIDED, execution.call_id, position, dumps(payload))
        await self._added()

    async def attempt_ended(self, execution: ToolExecution, attempt: int, outcome: ToolExecutionOutcome) -> None:
        position = self._position(False)
        self._add(TOOL_ATTEMPT, execution.call_id, position, attempt_payload(position, attempt, outcome))
        await self._added()

    async def outcome_ready(self, outcome: ToolExecutionOutcome) -> None:
        position = self._position(False)
        self._answered.add(position)
        self._add(TOOL_RESULT, outcome.call_id, position, result_payload(position, outcome))
        await self._added()

    async def abandon(self) -> None:
        """Release the lease of a sink whose batch never finished (a resumed step cancelled before it started)."""
        if self._finished or not self._leased:
            return
        self._finished, self._leased, self._pending = True, False, []
        await self._store.release(self.session_id, self._holder)

    async def batch_finished(self) -> None:
        """Write ``step/end`` when every proposed call was declared and answered, commit, and release the lease."""
        if self._finished:
            return
        if self._declared <= self._answered and len(self._declared) >= self._proposed:
            self._add(STEP_END, None, None, dumps({"calls": len(self._declared)}))
        self._finished = True
        if self._flushing is None:
            self._flushing = anyio.Lock()
        async with self._flushing:
            rows, self._pending = self._pending, []
            if not rows and not self._leased:
                return
            await self._store.append(self.session_id, self._holder, rows, first=not self._leased, release=True)
            self._leased = False

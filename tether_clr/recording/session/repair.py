"""Crash repair as a pure function: from a session's events to the events that close it.

:func:`plan_repair` reads the log alone (no tool, no registry) and returns what
a crash left open, closed:

* a ``tool/call`` without ``tool/result``: a synthesized result ABORTED, reason
  ``interrupted`` (its body may have run: side effects are possible); a retried
  call's result says how many ``tool/attempt`` events the log holds;
* a call the model proposed (``assistant/message``) that was never declared: a
  ``tool/call`` marked ``repaired`` and its result ABORTED_BEFORE_DISPATCH,
  reason ``interrupted`` (it never ran; the call is declared so that every result
  still answers a call);
* a child call (one a tool body made: ``tool/ptc-dispatch`` and its ``tool/call``)
  without ``tool/result``: a result ABORTED ``interrupted``, deepest children
  first and before any result synthesized for the model's calls (a crash
  mid-child interrupted its parent too, whose result follows);
* the additional contexts recorded with the step's results become its
  ``user/message`` events, after the last result;
* then the open step gets ``step/end`` and the open turn ``turn/end``;
* a suspended step (a call parked for an approval decision) keeps its parked
  call and the calls after it open, and its turn stays open: they are
  ``resume``'s or ``cancel_suspended``'s to close.

Calls are paired by (turn, step, position in the proposal), never by call id
alone, so reused ids cannot hide a call. Results the batch delivered form a
prefix of the step in model order, and the synthesized ones follow it in model
order, so the repaired step keeps the log's invariants. A second plan of a
repaired log is empty: repair is idempotent and never writes a second result.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tether_clr.recording.session.events import (
    STEP_END,
    TOOL_CALL,
    TOOL_RESULT,
    TURN_END,
    USER_MESSAGE,
    SessionEvent,
)
from tether_clr.recording.session.steps import StepLog, read_steps, step_contexts, user_message
from tether_clr.records.outcomes import ToolFailureCodes as Codes

__all__ = ["INTERRUPTED", "NewEvent", "plan_repair"]

INTERRUPTED = "interrupted"


@dataclass(frozen=True, slots=True)
class NewEvent:
    """An event to append: everything but the sequence number and the time, which the store assigns."""

    turn: int
    step: int | None
    kind: str
    call_id: str | None
    payload: dict[str, Any]
    position: int | None = None


def _failed(code: Codes, message: str) -> dict[str, Any]:
    return {"ok": False, "code": str(code), "reason": INTERRUPTED, "message": message, "repaired": True}


def plan_repair(events: Sequence[SessionEvent]) -> list[NewEvent]:
    """The events that close every open step and turn of one session's log, in the order to append them.

    A suspended step (a call parked for a decision: :mod:`tether_clr.recording.session.steps`)
    is not closed, nor is its turn: only what a crash left open before its first
    parked call is (those calls' results come first in model order); the parked
    call and the calls after it wait for ``resume`` or ``cancel_suspended``.
    """
    read = read_steps(events)
    plan: list[NewEvent] = []
    open_turns = {turn for turn, ended in read.turns.items() if not ended}
    for step in read.steps.values():
        if step.ended:
            continue
        plan.extend(_close_children(step))
        if step.suspended:
            plan.extend(_close_calls(step, before=step.parked[0]))
            open_turns.discard(step.turn)
            continue
        plan.extend(_close_calls(step))
        plan.extend(
            NewEvent(step.turn, step.step, USER_MESSAGE, call_id, {**user_message(position, text), "repaired": True})
            for position, call_id, text in ([] if step.messaged else step_contexts(step))
        )
        plan.append(NewEvent(step.turn, step.step, STEP_END, None, {"repaired": True}))
    for turn in read.turns:
        if turn in open_turns:
            plan.append(NewEvent(turn, None, TURN_END, None, {"repaired": True}))
    return plan


def _close_children(step: StepLog) -> list[NewEvent]:
    """A result ABORTED ``interrupted`` for every child call of ``step`` declared without one, deepest first."""
    open_children = sorted(set(step.child_calls) - set(step.child_results), key=lambda key: (-key.count("/"), key))
    closing = []
    for key in open_children:
        declared = step.child_calls[key]
        result = _failed(Codes.ABORTED, "interrupted: the writer stopped during this child call; its body may have run")
        closing.append(NewEvent(step.turn, step.step, TOOL_RESULT, declared.call_id, {"child": key, "name": declared.payload.get("name"), **result}))
    return closing


def _close_calls(step: StepLog, before: int | None = None) -> list[NewEvent]:
    """A result for every unanswered call of ``step`` (only those at positions below ``before``, when given)."""
    closing: list[NewEvent] = []
    turn, number = step.turn, step.step
    proposed: dict[int, dict[str, Any]] = {call["index"]: call for call in step.proposed if isinstance(call.get("index"), int)}
    for position in sorted(set(proposed) | set(step.declared)):
        if position in step.results or (before is not None and position >= before):
            continue
        if position in step.declared:
            declared = step.declared[position]
            payload = declared.payload
            call_id = declared.call_id
            result = _failed(Codes.ABORTED, "interrupted: the writer stopped after declaring the call; its body may have run")
            attempts = step.attempts.get(position, 0)
            if attempts > 1:  # a retried call: the attempts the log recorded (tool/attempt)
                result["attempts"] = attempts
        else:
            payload = proposed[position]
            call_id = payload.get("call_id") if isinstance(payload.get("call_id"), str) else None
            fields = {key: payload.get(key) for key in ("index", "name", "arguments", "parent_call_id")}
            # a call refused before its arguments parsed was proposed as their size and hash only
            fields.update({key: payload[key] for key in ("arguments_refused", "argument_error") if key in payload})
            closing.append(NewEvent(turn, number, TOOL_CALL, call_id, {**fields, "repaired": True}, position))
            result = _failed(Codes.ABORTED_BEFORE_DISPATCH, "interrupted before the call was declared; it never ran")
        closing.append(NewEvent(turn, number, TOOL_RESULT, call_id, {"index": position, "name": payload.get("name"), **result}, position))
    return closing

"""Crash repair as a pure function: from a session's events to the events that close it.

:func:`plan_repair` reads the log alone (no tool, no registry) and returns what
a crash left open, closed:

* a ``tool/call`` without ``tool/result``: a synthesized result ABORTED, reason
  ``interrupted`` (its body may have run: side effects are possible);
* a call the model proposed (``assistant/message``) that was never declared: a
  ``tool/call`` marked ``repaired`` and its result ABORTED_BEFORE_DISPATCH,
  reason ``interrupted`` (it never ran; the call is declared so that every result
  still answers a call);
* then the open step gets ``step/end`` and the open turn ``turn/end``.

Calls are paired by (turn, step, position in the proposal), never by call id
alone, so reused ids cannot hide a call. Results the batch delivered form a
prefix of the step in model order, and the synthesized ones follow it in model
order, so the repaired step keeps the log's invariants. A second plan of a
repaired log is empty: repair is idempotent and never writes a second result.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..outcomes import ToolFailureCodes as Codes
from .events import (
    ASSISTANT_MESSAGE,
    STEP_END,
    STEP_START,
    TOOL_CALL,
    TOOL_RESULT,
    TURN_END,
    TURN_START,
    SessionEvent,
)

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


@dataclass
class _Step:
    proposed: list[dict[str, Any]] = field(default_factory=list)
    declared: dict[int, dict[str, Any]] = field(default_factory=dict)
    declared_ids: dict[int, str | None] = field(default_factory=dict)
    answered: set[int] = field(default_factory=set)
    ended: bool = False


def _position(event: SessionEvent) -> int | None:
    index = event.payload.get("index")
    return index if isinstance(index, int) and not isinstance(index, bool) else None


def _failed(code: Codes, message: str) -> dict[str, Any]:
    return {"ok": False, "code": str(code), "reason": INTERRUPTED, "message": message, "repaired": True}


def plan_repair(events: Sequence[SessionEvent]) -> list[NewEvent]:
    """The events that close every open step and turn of one session's log, in the order to append them."""
    turns: dict[int, bool] = {}  # turn -> ended
    steps: dict[tuple[int, int], _Step] = {}
    for event in events:
        if event.kind == TURN_START:
            turns.setdefault(event.turn, False)
        elif event.kind == TURN_END:
            turns[event.turn] = True
        elif event.step is None:
            continue
        else:
            step = steps.setdefault((event.turn, event.step), _Step())
            position = _position(event)
            if event.kind == ASSISTANT_MESSAGE:
                step.proposed = [call for call in event.payload.get("calls", []) if isinstance(call, dict)]
            elif event.kind == TOOL_CALL and position is not None:
                step.declared[position] = event.payload
                step.declared_ids[position] = event.call_id
            elif event.kind == TOOL_RESULT and position is not None:
                step.answered.add(position)
            elif event.kind == STEP_END:
                step.ended = True
            elif event.kind == STEP_START:
                pass
    plan: list[NewEvent] = []
    for (turn, number), step in steps.items():
        if step.ended:
            continue
        plan.extend(_close_step(turn, number, step))
    for turn, ended in turns.items():
        if not ended:
            plan.append(NewEvent(turn, None, TURN_END, None, {"repaired": True}))
    return plan


def _close_step(turn: int, number: int, step: _Step) -> list[NewEvent]:
    closing: list[NewEvent] = []
    proposed: dict[int, dict[str, Any]] = {call["index"]: call for call in step.proposed if isinstance(call.get("index"), int)}
    for position in sorted(set(proposed) | set(step.declared)):
        if position in step.answered:
            continue
        if position in step.declared:
            payload = step.declared[position]
            call_id = step.declared_ids[position]
            result = _failed(Codes.ABORTED, "interrupted: the writer stopped after declaring the call; its body may have run")
        else:
            payload = proposed[position]
            call_id = payload.get("call_id") if isinstance(payload.get("call_id"), str) else None
            declared = {key: payload.get(key) for key in ("index", "name", "arguments", "parent_call_id")}
            closing.append(NewEvent(turn, number, TOOL_CALL, call_id, {**declared, "repaired": True}, position))
            result = _failed(Codes.ABORTED_BEFORE_DISPATCH, "interrupted before the call was declared; it never ran")
        closing.append(NewEvent(turn, number, TOOL_RESULT, call_id, {"index": position, "name": payload.get("name"), **result}, position))
    closing.append(NewEvent(turn, number, STEP_END, None, {"repaired": True}))
    return closing

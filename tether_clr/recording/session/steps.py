"""A session's log read back as steps: what was proposed, declared, answered, asked and decided.

Repair, verification and resumption all need the same reading of a step, so
it lives here once. Calls are keyed by their position in the model's proposal
(``payload["index"]``), never by call id alone.

A step is *suspended* when it has not ended and a call of it is *parked*: its
latest ``approval/decided`` says ``deferred`` and it has no ``tool/result``.
That decision is the marker: it is written, with the request, before the batch
returns :class:`~tether_clr.BatchSuspended`, so a parked step is recognisable
from the log alone, and is left for :meth:`ToolRegistry.resume` (or
``cancel_suspended``) instead of being closed by repair.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tether_clr.recording.session.events import (
    APPROVAL_ASKED,
    APPROVAL_DECIDED,
    ASSISTANT_MESSAGE,
    STEP_END,
    TOOL_ATTEMPT,
    TOOL_CALL,
    TOOL_RESULT,
    TURN_END,
    TURN_START,
    USER_MESSAGE,
    SessionEvent,
)
from tether_clr.records.decisions import ApprovalResult

__all__ = ["DEFERRED", "SessionSteps", "StepLog", "child_key", "event_position", "read_steps", "step_contexts", "user_message"]

DEFERRED = ApprovalResult.DEFERRED.value


def event_position(event: SessionEvent) -> int | None:
    """The call's position in the proposal, or None when the payload has no integer ``index``."""
    index = event.payload.get("index") if isinstance(event.payload, dict) else None
    return index if isinstance(index, int) and not isinstance(index, bool) else None


def child_key(event: SessionEvent) -> str | None:
    """A child call's key under its step (``"0/1"``), or None for an event that is not about a child call."""
    key = event.payload.get("child") if isinstance(event.payload, dict) else None
    return key if isinstance(key, str) else None


def user_message(position: int, text: str) -> dict[str, Any]:
    """A ``user/message`` payload: one additional context (``text``) of the call at ``position``."""
    return {"role": "user", "text": text, "call_index": position}


def step_contexts(step: StepLog) -> list[tuple[int, str | None, str]]:
    """The additional contexts recorded with the step's results: ``(position, call id, text)`` in model order."""
    found: list[tuple[int, str | None, str]] = []
    for position in sorted(step.results):
        event = step.results[position]
        contexts = event.payload.get("contexts")
        if isinstance(contexts, list):
            found.extend((position, event.call_id, text) for text in contexts if isinstance(text, str))
    return found


@dataclass
class StepLog:
    """One step of a session's log, read back."""

    turn: int
    step: int
    proposed: list[dict[str, Any]] = field(default_factory=list)
    declared: dict[int, SessionEvent] = field(default_factory=dict)
    results: dict[int, SessionEvent] = field(default_factory=dict)
    asked: dict[int, SessionEvent] = field(default_factory=dict)  # the latest request per position
    decided: dict[int, SessionEvent] = field(default_factory=dict)  # the latest decision per position
    child_calls: dict[str, SessionEvent] = field(default_factory=dict)  # child key -> its tool/call
    child_results: dict[str, SessionEvent] = field(default_factory=dict)  # child key -> its tool/result
    messaged: bool = False  # a user/message was written (the sink writes them with step/end)
    attempts: dict[int, int] = field(default_factory=dict)  # tool/attempt events per position (retried calls)
    ended: bool = False

    @property
    def parked(self) -> list[int]:
        """Positions whose latest decision is ``deferred`` and that have no result, in model order."""
        return sorted(p for p, event in self.decided.items() if event.payload.get("decision") == DEFERRED and p not in self.results)

    @property
    def suspended(self) -> bool:
        return not self.ended and bool(self.parked)

    def proposal(self, position: int) -> dict[str, Any] | None:
        for call in self.proposed:
            if call.get("index") == position:
                return call
        return None


@dataclass
class SessionSteps:
    """Every turn (True when ended) and step of one session's log, in log order."""

    turns: dict[int, bool]
    steps: dict[tuple[int, int], StepLog]

    def suspended(self) -> list[StepLog]:
        return [step for step in self.steps.values() if step.suspended]


def read_steps(events: Sequence[SessionEvent]) -> SessionSteps:
    """Read one session's events (in sequence order) as turns and steps."""
    turns: dict[int, bool] = {}
    steps: dict[tuple[int, int], StepLog] = {}
    for event in events:
        if event.kind == TURN_START:
            turns.setdefault(event.turn, False)
            continue
        if event.kind == TURN_END:
            turns[event.turn] = True
            continue
        if event.step is None:
            continue
        step = steps.setdefault((event.turn, event.step), StepLog(event.turn, event.step))
        position = event_position(event)
        if event.kind == ASSISTANT_MESSAGE:
            calls = event.payload.get("calls", []) if isinstance(event.payload, dict) else []
            step.proposed = [call for call in calls if isinstance(call, dict)] if isinstance(calls, list) else []
        elif event.kind == STEP_END:
            step.ended = True
        elif event.kind == USER_MESSAGE:
            step.messaged = True
        elif (child := child_key(event)) is not None:
            if event.kind == TOOL_CALL:
                step.child_calls[child] = event
            elif event.kind == TOOL_RESULT:
                step.child_results[child] = event
        elif position is None:
            continue
        elif event.kind == TOOL_CALL:
            step.declared[position] = event
        elif event.kind == TOOL_RESULT:
            step.results[position] = event
        elif event.kind == APPROVAL_ASKED:
            step.asked[position] = event
        elif event.kind == APPROVAL_DECIDED:
            step.decided[position] = event
        elif event.kind == TOOL_ATTEMPT:
            step.attempts[position] = step.attempts.get(position, 0) + 1
    return SessionSteps(turns, steps)

"""The session log's invariants, checked on the log alone: :func:`log_violations`.

* every ``tool/call`` has exactly one ``tool/result``, and no result lacks its call
  (paired by turn, step and position in the proposal, never by call id alone);
* the results of a step follow the model's order;
* no body after a refusal: a call whose approval was not granted ends in a
  refusal (DENIED, UNAVAILABLE or ABORTED_BEFORE_DISPATCH), never ``ok`` nor a
  code that only a started body yields;
* a step's events lie between its ``step/start`` and ``step/end``; a turn's
  between ``turn/start`` and ``turn/end`` (``open_ok`` tolerates a step or turn
  still open, e.g. while a batch runs; a repaired log has none). A suspended
  step (a call parked for an approval decision) is open by design: it, its
  turn, and its calls from the first parked one on may stay unanswered;
* a child call (one a tool body made, keyed ``payload["child"]``) has one
  ``tool/ptc-dispatch``, then one ``tool/call``, then one ``tool/result``, and
  the call that made it was declared before it;
* the model sees a step's results first: no ``tool/result`` of a step follows
  one of its ``user/message`` events (the additional contexts);
* a ``tool/attempt`` lies between its call's ``tool/call`` and ``tool/result``,
  its attempts are numbered 1, 2, ... in log order, and the result's
  ``attempts`` (1 when absent) is their count, or one more when the last attempt
  was interrupted before its own event (a cancellation; the result is its outcome);
* sequence numbers only grow;
* grants: see :mod:`~tether_clr.recording.session.grant_checks` (an
  ``approval/revoke`` belongs to no step and may follow the end of its turn).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import replace

from tether_clr.recording.session.events import (
    APPROVAL_DECIDED,
    APPROVAL_REVOKE,
    PTC_DISPATCH,
    STEP_END,
    STEP_START,
    TOOL_ATTEMPT,
    TOOL_CALL,
    TOOL_RESULT,
    TURN_END,
    TURN_START,
    USER_MESSAGE,
    SessionEvent,
)
from tether_clr.recording.session.grant_checks import grant_violations
from tether_clr.recording.session.steps import child_key, read_steps

__all__ = ["log_violations"]


def log_violations(
    events: Sequence[SessionEvent], *, open_ok: bool = False, grant_events: Sequence[SessionEvent] = ()
) -> list[str]:
    """Every broken invariant of one session's log, as text; empty when the log is sound.

    ``grant_events``: the ``approval/grant`` and ``approval/revoke`` events of the
    store's other sessions, so a decision taken from a principal's grant given
    in another session is checked against it too.

    A hand-edited payload that is not a JSON object is itself a violation, and is
    read as an empty one so that every other check still runs (never a crash).
    """
    problems: list[str] = []
    events = _with_object_payloads(events, problems)
    last_seq = None
    calls: Counter[tuple[int, int | None, object]] = Counter()
    results: Counter[tuple[int, int | None, object]] = Counter()
    result_order: dict[tuple[int, int | None], list[object]] = {}
    turns: dict[int, str] = {}
    steps: dict[tuple[int, int | None], str] = {}
    children = _Children()
    for event in events:
        where = f"seq {event.seq} ({event.kind}, turn {event.turn}, step {event.step}, call {event.call_id!r})"
        if last_seq is not None and event.seq <= last_seq:
            problems.append(f"{where}: sequence does not grow")
        last_seq = event.seq
        if event.kind == APPROVAL_REVOKE:  # ends a grant, not part of a turn's work
            continue
        if event.kind == TURN_START:
            if event.turn in turns:
                problems.append(f"{where}: turn started twice")
            turns[event.turn] = "open"
            continue
        if turns.get(event.turn) != "open":
            problems.append(f"{where}: outside an open turn")
        if event.kind == TURN_END:
            turns[event.turn] = "ended"
            continue
        key = (event.turn, event.step)
        if event.kind == STEP_START:
            if key in steps:
                problems.append(f"{where}: step started twice")
            steps[key] = "open"
            continue
        if steps.get(key) != "open":
            problems.append(f"{where}: outside an open step")
        children.see(event, where, calls, problems)
        if event.kind == STEP_END:
            steps[key] = "ended"
        elif child_key(event) is not None:
            continue
        elif event.kind in (TOOL_CALL, TOOL_RESULT):
            position = event.payload.get("index")
            if event.kind == TOOL_CALL:
                calls[(*key, position)] += 1
            else:
                if calls[(*key, position)] == 0:
                    problems.append(f"{where}: result without a call")
                results[(*key, position)] += 1
                result_order.setdefault(key, []).append(position)
    suspended: dict[tuple[int, int | None], int] = {(s.turn, s.step): s.parked[0] for s in read_steps(events).suspended()}
    for call, count in calls.items():
        if count > 1:
            problems.append(f"turn {call[0]}, step {call[1]}, position {call[2]}: declared {count} times")
        waiting = call[:2] in suspended and isinstance(call[2], int) and call[2] >= suspended[call[:2]]
        if results[call] != 1 and not (
            results[call] == 0 and steps.get(call[:2]) == "open" and (open_ok or waiting)
        ):
            problems.append(f"turn {call[0]}, step {call[1]}, position {call[2]}: {results[call]} results")
    for key, order in result_order.items():
        if order != sorted(order, key=lambda position: position if isinstance(position, int) else -1):
            problems.append(f"turn {key[0]}, step {key[1]}: results out of model order {order}")
    if not open_ok:
        waiting_turns = {turn for turn, _ in suspended}
        problems.extend(
            f"turn {turn} is not ended" for turn, state in turns.items() if state == "open" and turn not in waiting_turns
        )
        problems.extend(
            f"turn {key[0]}, step {key[1]} is not ended"
            for key, state in steps.items()
            if state == "open" and key not in suspended
        )
    problems.extend(children.unanswered(steps, open_ok))
    problems.extend(_bodies_after_refusal(events))
    problems.extend(grant_violations(events, grant_events))
    problems.extend(_attempt_violations(events))
    return problems


def _attempt_violations(events: Sequence[SessionEvent]) -> list[str]:
    """``tool/attempt`` events: inside their call, numbered from 1, counted by the result's ``attempts``."""
    problems: list[str] = []
    declared: set[tuple[int, int | None, object]] = set()
    answered: set[tuple[int, int | None, object]] = set()
    attempts: Counter[tuple[int, int | None, object]] = Counter()
    for event in events:
        child = child_key(event)
        key = (event.turn, event.step, event.payload.get("index") if child is None else f"child {child}")
        where = f"seq {event.seq} ({event.kind}, turn {event.turn}, step {event.step}, call {event.call_id!r})"
        if event.kind == TOOL_CALL:
            declared.add(key)
        elif event.kind == TOOL_ATTEMPT:
            if key not in declared or key in answered:
                problems.append(f"{where}: attempt {'after the result' if key in answered else 'without a call'}")
            attempts[key] += 1
            number = event.payload.get("attempt")
            if number != attempts[key]:
                problems.append(f"{where}: attempt numbered {number!r}, expected {attempts[key]}")
        elif event.kind == TOOL_RESULT:
            answered.add(key)
            recorded = event.payload.get("attempts", 1)
            seen = attempts[key]
            if seen and recorded not in (seen, seen + 1):
                problems.append(f"{where}: the result says {recorded!r} attempts, the log records {seen}")
            elif not seen and recorded != 1:
                problems.append(f"{where}: the result says {recorded!r} attempts, the log records none")
    return problems


_Key = tuple[int, int | None, str]


class _Children:
    """The child calls of a log, and the order of each step's results and user/message events."""

    def __init__(self) -> None:
        self.dispatched: Counter[_Key] = Counter()
        self.calls: Counter[_Key] = Counter()
        self.results: Counter[_Key] = Counter()
        self.messaged: set[tuple[int, int | None]] = set()

    def see(self, event: SessionEvent, where: str, calls: Counter[tuple[int, int | None, object]], problems: list[str]) -> None:
        step = (event.turn, event.step)
        if event.kind == USER_MESSAGE:
            self.messaged.add(step)
            return
        if event.kind == TOOL_RESULT and step in self.messaged:
            problems.append(f"{where}: a result after the step's user/message (the model must see results first)")
        key = child_key(event)
        if key is None:
            if event.kind == PTC_DISPATCH:
                problems.append(f"{where}: a tool/ptc-dispatch without its child key")
            return
        child = (*step, key)
        if event.kind == PTC_DISPATCH:
            parent = key.rpartition("/")[0]
            declared = calls[(*step, int(parent))] if parent.isdigit() else self.calls[(*step, parent)]
            if not declared:
                problems.append(f"{where}: child {key!r} dispatched by a call that was not declared")
            self.dispatched[child] += 1
        elif event.kind == TOOL_CALL:
            if not self.dispatched[child]:
                problems.append(f"{where}: child call {key!r} declared without its tool/ptc-dispatch")
            self.calls[child] += 1
        elif event.kind == TOOL_RESULT:
            if not self.calls[child]:
                problems.append(f"{where}: child result {key!r} without its call")
            self.results[child] += 1

    def unanswered(self, steps: dict[tuple[int, int | None], str], open_ok: bool) -> list[str]:
        problems = []
        for child in sorted(set(self.dispatched) | set(self.calls), key=str):
            turn, step, key = child
            if self.dispatched[child] > 1 or self.calls[child] > 1:
                problems.append(f"turn {turn}, step {step}, child {key!r}: dispatched or declared more than once")
            waiting = open_ok and steps.get((turn, step)) == "open" and self.results[child] == 0
            if self.results[child] != 1 and not waiting:
                problems.append(f"turn {turn}, step {step}, child {key!r}: {self.results[child]} results")
        return problems


# The codes a call refused before its body ends with; anything else means the body may have run.
_REFUSALS = frozenset({"DENIED", "UNAVAILABLE", "ABORTED_BEFORE_DISPATCH"})


def _bodies_after_refusal(events: Sequence[SessionEvent]) -> list[str]:
    refused: set[tuple[int, int | None, object]] = set()
    problems: list[str] = []
    for event in events:
        child = child_key(event)
        key = (event.turn, event.step, event.payload.get("index") if child is None else f"child {child}")
        if event.kind == APPROVAL_DECIDED:  # the latest decision counts: a deferred call may be approved later
            if event.payload.get("decision") == "approved":
                refused.discard(key)
            else:
                refused.add(key)
        elif event.kind == TOOL_RESULT and key in refused:
            if event.payload.get("ok") is not False or event.payload.get("code") not in _REFUSALS:
                code = "ok" if event.payload.get("ok") is not False else event.payload.get("code")
                problems.append(
                    f"seq {event.seq} (tool/result, turn {event.turn}, step {event.step}, call {event.call_id!r}): "
                    f"ended {code} after its approval was refused (a body ran after a refusal)"
                )
    return problems


def _with_object_payloads(events: Sequence[SessionEvent], problems: list[str]) -> list[SessionEvent]:
    checked: list[SessionEvent] = []
    for event in events:
        if not isinstance(event.payload, dict):
            problems.append(f"seq {event.seq} ({event.kind}): payload is not a JSON object")
            event = replace(event, payload={})
        checked.append(event)
    return checked


"""The kit's assertions: each raises ``AssertionError`` with a message that shows what happened.

* :func:`assert_outcomes` — each call's outcome code (or success), by call id;
* :func:`assert_log_sound` — the session log keeps every invariant (:func:`~tether_clr.recording.session.verify.log_violations`,
  what ``tether-clr log verify`` checks);
* :func:`assert_body_not_run` — a probe's body never ran;
* :func:`assert_model_order` — what a sink or a log recorded follows the model's order;
* :func:`events` — a session's events, filtered by kind and call id.

A failure ends with the evidence: the session log drawn as ``tether-clr log
show`` draws it, or a recording sink's timeline. None of this needs pytest.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tether_clr.recording.session.events import EVENT_KINDS, PTC_DISPATCH, TOOL_CALL, TOOL_RESULT, SessionEvent
from tether_clr.recording.session.grant_checks import stored_grant_events
from tether_clr.recording.session.protocol import SessionStore
from tether_clr.recording.session.verify import log_violations
from tether_clr.records.outcomes import ToolCall, ToolExecutionOutcome
from tether_clr.testing.probes import ProbeTool
from tether_clr.testing.rendering import outcome_status, render_evidence, render_log, render_outcomes
from tether_clr.testing.sinks import RecordingSink

__all__ = ["assert_body_not_run", "assert_log_sound", "assert_model_order", "assert_outcomes", "events"]

Expected = str | tuple[str, str | None] | None


def _outcomes_of(value: Any) -> list[ToolExecutionOutcome]:
    """The outcomes a value holds: a list of them, a step or replay (``.outcomes``), a suspended batch (``.delivered``)."""
    for attribute in ("outcomes", "delivered"):
        held = getattr(value, attribute, None)
        if held is not None and not callable(held):
            value = held
            break
    outcomes = list(value)
    wrong = [o for o in outcomes if not isinstance(o, ToolExecutionOutcome)]
    if wrong:
        raise TypeError(f"not an outcome: {wrong[0]!r}")
    return outcomes


def _expected_text(expected: Expected) -> str:
    if expected is None:
        return "ok"
    if isinstance(expected, tuple):
        code, reason = expected
        return code if reason is None else f"{code} [{reason}]"
    return expected


def _matches(outcome: ToolExecutionOutcome, expected: Expected) -> bool:
    failure = outcome.failure
    if expected is None:
        return failure is None
    if failure is None:
        return False
    if isinstance(expected, tuple):
        code, reason = expected
    else:
        code, _, reason_text = expected.partition("/")
        reason = reason_text or None
    return str(failure.code) == code and (reason is None or failure.reason == reason)


def assert_outcomes(outcomes: Any, expected: Mapping[str, Expected], *, log: Any = None) -> None:
    """Each call id has the expected outcome, and no other call has one.

    ``expected`` maps call ids to ``None`` (success), a code (``"DENIED"``), a
    code and reason (``"UNAVAILABLE/approval_deferred"`` or ``("UNAVAILABLE",
    "approval_deferred")``). ``outcomes``: a list of outcomes, a step or a
    :class:`~tether_clr.testing.Replay` (``.outcomes``), a suspended batch
    (``.delivered``). ``log``: what to show on failure (session events, a
    :class:`~tether_clr.testing.RecordingSink`); a replay shows its own log.
    """
    found = _outcomes_of(outcomes)
    ids = [o.call_id for o in found]
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        raise AssertionError(f"call ids {repeated} have several outcomes: check one step at a time\n{render_outcomes(found)}")
    by_id = {o.call_id: o for o in found}
    rows: list[str] = []
    wrong = 0
    for call_id in [*expected, *(i for i in ids if i not in expected)]:
        outcome = by_id.get(call_id)
        want = _expected_text(expected[call_id]) if call_id in expected else "(no outcome expected)"
        if outcome is None:
            got, ok = "(no outcome)", False
        else:
            got, ok = outcome_status(outcome), call_id in expected and _matches(outcome, expected[call_id])
        wrong += not ok
        rows.append(f"  {'  ' if ok else '✗ '}{call_id}: expected {want}, got {got}")
    if wrong:
        evidence = render_evidence(log if log is not None else outcomes)
        raise AssertionError(f"{wrong} outcome(s) differ from what was expected:\n" + "\n".join(rows) + (f"\n{evidence}" if evidence else ""))


async def events(
    store: SessionStore, session: str, kind: str | Sequence[str] | None = None, call_id: str | None = None
) -> list[SessionEvent]:
    """The events of ``session`` in ``store``, in log order, of ``kind`` (one or several; an unknown kind is a
    ``ValueError``, so a typo cannot pass as "none found") and about ``call_id``, when given."""
    kinds = None if kind is None else ({kind} if isinstance(kind, str) else set(kind))
    if kinds is not None and not kinds <= set(EVENT_KINDS):
        raise ValueError(f"unknown event kind(s) {sorted(kinds - set(EVENT_KINDS))}: the kinds are {list(EVENT_KINDS)}")
    return [
        event
        for event in await store.events(session)
        if (kinds is None or event.kind in kinds) and (call_id is None or event.call_id == call_id)
    ]


async def assert_log_sound(store: SessionStore, session: str, *, open_ok: bool = False) -> list[SessionEvent]:
    """The session's log keeps every invariant ``tether-clr log verify`` checks; returns its events.

    ``open_ok`` tolerates a step or turn still open (a batch running, a run stopped mid-turn).
    A log with no events fails: a test that expected a log and got none checked nothing.
    """
    found = await store.events(session)
    if not found:
        raise AssertionError(f"session {session!r} has no events in the store")
    others = [event for event in await stored_grant_events(store) if event.session_id != session]
    problems = log_violations(found, open_ok=open_ok, grant_events=others)
    if problems:
        listed = "\n".join(f"  - {problem}" for problem in problems)
        raise AssertionError(f"the log of session {session!r} is not sound ({len(problems)} violation(s)):\n{listed}\n"
                             f"the session log:\n{render_log(found, session)}")
    return found


def assert_body_not_run(probe: ProbeTool, *, log: Any = None) -> None:
    """``probe``'s body was never entered (a refused call must not run: DENIED, a parked approval...)."""
    if probe.calls:
        listed = "\n".join(f"  #{c.index} {c.arguments!r} ({c.ending})" for c in probe.calls)
        evidence = render_evidence(log)
        raise AssertionError(f"the body of {probe.name!r} ran {len(probe.calls)} time(s), expected never:\n{listed}"
                             + (f"\n{evidence}" if evidence else ""))


def _ids(calls: Iterable[str | ToolCall]) -> list[str]:
    return [call if isinstance(call, str) else call.call_id for call in calls]


def assert_model_order(expected: Iterable[str | ToolCall], observed: Any) -> None:
    """What ``observed`` recorded follows ``expected``, the model's order (call ids, or the calls).

    ``observed``: a :class:`~tether_clr.testing.RecordingSink` (its declarations and its deliveries,
    each in that order), session events or a replay (the ``tool/call`` and ``tool/result`` events of
    the model's calls, children aside), or a list of outcomes.
    """
    want = _ids(expected)
    checks: list[tuple[str, list[str]]]
    if isinstance(observed, RecordingSink):
        checks = [("declared", [c.call_id for c in observed.calls]), ("delivered", [o.call_id for o in observed.outcomes])]
    else:
        log = getattr(observed, "events", observed)
        items = list(log)
        if items and all(isinstance(item, SessionEvent) for item in items):
            top = [e for e in items if "child" not in e.payload and e.kind != PTC_DISPATCH]
            checks = [("tool/call", [e.call_id or "" for e in top if e.kind == TOOL_CALL]),
                      ("tool/result", [e.call_id or "" for e in top if e.kind == TOOL_RESULT])]
        else:
            checks = [("outcomes", [o.call_id for o in _outcomes_of(observed)])]
    wrong = [(what, got) for what, got in checks if got != want]
    if wrong:
        lines = "\n".join(f"  {what}: {got}" for what, got in wrong)
        evidence = render_evidence(observed)
        raise AssertionError(f"not in the model's order {want}:\n{lines}" + (f"\n{evidence}" if evidence else ""))

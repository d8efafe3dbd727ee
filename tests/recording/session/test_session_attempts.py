"""``tool/attempt`` in the session log (issue 17 §2): each attempt of a retried call is logged between its
call and its result, numbered, durable before the next attempt starts; ``log_violations`` checks them,
and repair closes a call that crashed between attempts with the attempts the log holds."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from tether_clr.recording.session.repair import plan_repair
from tether_clr.recording.session.sql_store import SqlSessionStore

from tether_clr import (
    EVENT_KINDS,
    PythonFunction,
    RetryPolicy,
    SessionEvent,
    ToolMetadata,
    ToolRegistrationOptions,
    ToolRegistry,
    log_violations,
)

from tests.support import call, codes
from tests.support.session_stores import new_session

pytestmark = pytest.mark.anyio


def kinds(events: list[Any]) -> list[str]:
    return [f"{e.kind} {e.call_id}" if e.call_id else e.kind for e in events]


async def retried_step(store: SqlSessionStore, failures: int = 1) -> tuple[str, list[Any], list[list[str]]]:
    """One step: ``flaky`` (retried, failing ``failures`` times) beside ``echo``, both parallel."""
    registry = ToolRegistry()
    session = new_session()
    committed_before_attempt: list[list[str]] = []
    runs = 0

    async def flaky() -> str:
        nonlocal runs
        runs += 1
        committed_before_attempt.append(kinds(await store.events(session)))
        if runs <= failures:
            raise RuntimeError(f"failure {runs}")
        return "ok"

    async def echo(text: str) -> str:
        return text

    options = ToolRegistrationOptions(
        metadata=ToolMetadata(idempotent=True), retry=RetryPolicy(attempts=3, backoff=0), is_concurrency_safe=True
    )
    registry.register(PythonFunction.from_callable(flaky), None, options)
    registry.register(PythonFunction.from_callable(echo), None, ToolRegistrationOptions(is_concurrency_safe=True))
    turn = await store.begin_turn(session)
    outcomes = await registry.execute_batch(
        [call("a", "flaky"), call("b", "echo", {"text": "b"})], registry.seal(), sink=store.sink(session, turn, 1)
    )
    await store.end_turn(session, turn)
    return session, outcomes, committed_before_attempt


async def test_each_attempt_is_a_tool_attempt_event_between_the_call_and_its_result(store: SqlSessionStore) -> None:
    session, outcomes, _ = await retried_step(store, failures=2)
    assert codes(outcomes) == [None, None] and [o.attempts for o in outcomes] == [3, 1]
    events = await store.events(session)
    assert "tool/attempt" in EVENT_KINDS
    own = [k for k in kinds(events) if k.endswith(" a")]
    assert own == ["tool/call a", "tool/attempt a", "tool/attempt a", "tool/attempt a", "tool/result a"]
    attempts = [e.payload for e in events if e.kind == "tool/attempt"]
    assert [(p["index"], p["attempt"], p["ok"], p.get("code")) for p in attempts] == [
        (0, 1, False, "TOOL_ERROR"), (0, 2, False, "TOOL_ERROR"), (0, 3, True, None),
    ]
    assert attempts[0]["message"] == "RuntimeError: failure 1"
    result = next(e.payload for e in events if e.kind == "tool/result" and e.call_id == "a")
    assert result["attempts"] == 3 and result["value"] == "ok"
    plain = next(e.payload for e in events if e.kind == "tool/result" and e.call_id == "b")
    assert "attempts" not in plain  # a call that was not retried logs as before
    assert log_violations(events) == []


async def test_a_failed_attempt_is_durable_before_the_next_attempt_starts(store: SqlSessionStore) -> None:
    _, _, committed = await retried_step(store, failures=1)
    assert "tool/attempt a" not in committed[0]
    assert "tool/attempt a" in committed[1]


async def test_repair_closes_a_call_that_crashed_between_attempts_with_the_attempts_logged(store: SqlSessionStore) -> None:
    session, _, _ = await retried_step(store, failures=2)
    events = await store.events(session)
    # What a crash during the third attempt leaves: no result (b's waits behind a's), no step/end, no turn/end.
    crashed = [e for e in events if e.kind not in ("tool/result", "step/end", "turn/end")]
    crashed = [e for e in crashed if not (e.kind == "tool/attempt" and e.payload["attempt"] == 3)]
    plan = plan_repair(crashed)
    result = next(n for n in plan if n.kind == "tool/result")
    assert result.payload["code"] == "ABORTED" and result.payload["reason"] == "interrupted" and result.payload["attempts"] == 2
    last = crashed[-1].seq
    repaired = crashed + [
        SessionEvent(last + i, session, n.turn, n.step, n.kind, n.call_id, n.payload, datetime.now(UTC))
        for i, n in enumerate(plan, 1)
    ]
    assert log_violations(repaired) == []
    assert plan_repair(repaired) == []


def _event(seq: int, kind: str, payload: dict[str, Any], call_id: str | None = "a") -> SessionEvent:
    return SessionEvent(seq, "s", 1, None if kind.startswith("turn/") else 1, kind, call_id, payload, datetime.now(UTC))


def _log(*middle: tuple[str, dict[str, Any]]) -> list[SessionEvent]:
    events = [_event(1, "turn/start", {}, None), _event(2, "step/start", {}, None)]
    events += [_event(3 + i, kind, {"index": 0, **payload}) for i, (kind, payload) in enumerate(middle)]
    n = len(events) + 1
    return events + [_event(n, "step/end", {}, None), _event(n + 1, "turn/end", {}, None)]


CALL = ("tool/call", {"name": "t"})


@pytest.mark.parametrize(
    ("middle", "problem"),
    [
        ([("tool/attempt", {"attempt": 1}), CALL, ("tool/result", {"ok": True})], "attempt without a call"),
        ([CALL, ("tool/result", {"ok": True}), ("tool/attempt", {"attempt": 1})], "attempt after the result"),
        ([CALL, ("tool/attempt", {"attempt": 2}), ("tool/result", {"ok": True, "attempts": 2})], "attempt numbered 2, expected 1"),
        ([CALL, ("tool/attempt", {"attempt": 1}), ("tool/attempt", {"attempt": 2}), ("tool/result", {"ok": True})],
         "the result says 1 attempts, the log records 2"),
        ([CALL, ("tool/result", {"ok": True, "attempts": 3})], "the result says 3 attempts, the log records none"),
    ],
)
def test_log_violations_checks_the_attempts_of_each_call(middle: list[tuple[str, dict[str, Any]]], problem: str) -> None:
    problems = log_violations(_log(*middle))
    assert any(problem in p for p in problems), problems


def test_a_result_may_count_one_attempt_more_than_logged_when_the_last_was_interrupted() -> None:
    sound = _log(CALL, ("tool/attempt", {"attempt": 1}), ("tool/result", {"ok": False, "code": "ABORTED", "attempts": 2}))
    assert log_violations(sound) == []



async def test_a_resumed_step_returns_the_attempts_its_log_recorded_for_earlier_calls(store: SqlSessionStore) -> None:
    from tether_clr import ApprovalResult

    from tests.support.durable_approvals import suspend, tools

    registry = tools([])
    runs = 0

    async def flaky() -> str:
        nonlocal runs
        runs += 1
        if runs == 1:
            raise RuntimeError("first")
        return "ok"

    options = ToolRegistrationOptions(
        metadata=ToolMetadata(idempotent=True, required_scopes=("files",)), retry=RetryPolicy(backoff=0)
    )
    registry.register(PythonFunction.from_callable(flaky), None, options)
    session = new_session()
    suspended = await suspend(store, registry, session, [call("call_0", "flaky"), call("call_1", "delete", {"path": "/x"})])
    assert [o.attempts for o in suspended.delivered] == [2]
    outcomes = await registry.resume(store, session, {"call_1": ApprovalResult.APPROVED})
    assert isinstance(outcomes, list) and codes(outcomes) == [None, None]
    assert [o.attempts for o in outcomes] == [2, 1] and runs == 2
    assert log_violations(await store.events(session), open_ok=True) == []

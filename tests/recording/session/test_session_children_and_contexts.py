"""The session log of child calls (``tool/ptc-dispatch``) and additional contexts (``user/message``), on both stores:
what is written, what ``log_violations`` checks, and what repair, resume and cancel do with them."""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import anyio
import pytest
from tether_clr.recording.session.repair import plan_repair
from tether_clr.recording.session.sql_store import SqlSessionStore

from tether_clr.execution.ports import told

from tether_clr import (
    ApprovalResult,
    Declaration,
    ToolCall,
    BatchSuspended,
    ChildCallRefused,
    ChildCalls,
    PythonFunction,
    RequestContext,
    SessionEvent,
    StepLoop,
    ToolExecution,
    ToolExecutionOutcome,
    ToolPostDecision,
    ToolRegistrationOptions,
    ToolRegistry,
    log_violations,
)
from tests.support.builders import call
from tests.support.doubles import Approver
from tests.support.durable_approvals import CONTEXT, scope_of, step_calls, suspend, tools
from tests.support.session_stores import expire_lease

pytestmark = pytest.mark.anyio


def _sid(name: str) -> str:
    """A session id of its own: the PostgreSQL database is shared by every case of a run."""
    return f"{name}-{uuid.uuid4().hex}"


def _noting(registry: ToolRegistry) -> None:
    async def note(execution: ToolExecution, outcome: ToolExecutionOutcome, next_: Any) -> ToolPostDecision:
        return (await next_()).with_context(f"note {execution.call_id}")

    registry.register_post_execute_listener(None, note)


def _coder() -> ToolRegistry:
    """``echo`` (concurrency-safe), ``code`` (concurrency-safe; calls echo twice, then a missing tool), contexts on every call."""
    registry = ToolRegistry()

    async def echo(text: str) -> str:
        return text

    async def code(calls: ChildCalls) -> list[Any]:
        values = [await calls.call_tool("echo", {"text": "x"}), await calls.call_tool("echo", {"text": "y"})]
        try:
            await calls.call_tool("missing")
        except ChildCallRefused as refused:
            values.append(str(refused.code))
        return values

    safe = ToolRegistrationOptions(is_concurrency_safe=True)
    registry.register(PythonFunction.from_callable(echo), options=safe)
    registry.register(PythonFunction.from_callable(code), options=safe)
    _noting(registry)
    return registry


async def _step(store: SqlSessionStore, registry: ToolRegistry, session: str) -> tuple[Any, list[SessionEvent]]:
    turn = await store.begin_turn(session)
    calls = [call("c0", "echo", {"text": "a"}), call("c1", "code"), call("c2", "echo", {"text": "b"})]
    outcomes = await registry.execute_batch(calls, registry.seal(), sink=store.sink(session, turn, 1))
    await store.end_turn(session, turn)
    return outcomes, await store.events(session)


def _kinds(events: list[SessionEvent]) -> list[tuple[str, str | None]]:
    return [(e.kind, e.call_id) for e in events if e.step is not None]


async def test_child_calls_are_recorded_as_ptc_dispatch_call_result_under_the_parents_step(store: SqlSessionStore) -> None:
    outcomes, events = await _step(store, _coder(), _sid("k"))
    assert [o.value for o in outcomes] == ["a", ["x", "y", "UNKNOWN_TOOL"], "b"]
    children = [e for e in events if "child" in e.payload]
    assert [(e.kind, e.call_id, e.payload["child"]) for e in children] == [
        ("tool/ptc-dispatch", "c1/1", "1/1"), ("tool/call", "c1/1", "1/1"), ("tool/result", "c1/1", "1/1"),
        ("tool/ptc-dispatch", "c1/2", "1/2"), ("tool/call", "c1/2", "1/2"), ("tool/result", "c1/2", "1/2"),
        ("tool/ptc-dispatch", "c1/3", "1/3"), ("tool/call", "c1/3", "1/3"), ("tool/result", "c1/3", "1/3"),
    ]
    assert children[0].payload["parent_call_id"] == "c1" and children[0].payload["parent_index"] == 1
    assert children[0].payload["depth"] == 1 and children[-1].payload["code"] == "UNKNOWN_TOOL"
    assert all(e.step == 1 for e in children)
    top = [e.payload["index"] for e in events if e.kind == "tool/result" and "index" in e.payload]
    assert top == [0, 1, 2]  # the model order of the step's own results is unaffected
    assert log_violations(events) == []


async def test_contexts_are_user_message_events_after_the_last_result_in_model_order(store: SqlSessionStore) -> None:
    outcomes, events = await _step(store, _coder(), _sid("m"))
    assert outcomes.additional_contexts == ("note c0", "note c1", "note c2")  # the children's are ignored
    kinds = _kinds(events)
    last_result = max(i for i, (kind, _) in enumerate(kinds) if kind == "tool/result")
    messages = [(i, e) for i, e in enumerate(e for e in events if e.step is not None) if e.kind == "user/message"]
    assert [e.payload["text"] for _, e in messages] == ["note c0", "note c1", "note c2"]
    assert all(i > last_result for i, _ in messages) and kinds[-1] == ("step/end", None)
    assert [e.payload["call_index"] for _, e in messages] == [0, 1, 2]
    results = {e.call_id: e.payload.get("contexts") for e in events if e.kind == "tool/result"}
    assert results["c1"] == ["note c1"] and results["c1/1"] is None  # kept with the result; never for a child


def _event(seq: int, kind: str, payload: dict[str, Any], call_id: str | None = None, step: int | None = 1) -> SessionEvent:
    return SessionEvent(seq, "s", 1, step, kind, call_id, payload, datetime.now(UTC))


def _log(*middle: SessionEvent) -> list[SessionEvent]:
    head = [_event(1, "turn/start", {}, step=None), _event(2, "step/start", {"calls": 1})]
    tail_seq = 100
    return [*head, *middle, _event(tail_seq, "step/end", {}), _event(tail_seq + 1, "turn/end", {}, step=None)]


def test_log_violations_flags_a_user_message_before_a_result() -> None:
    sound = _log(
        _event(3, "tool/call", {"index": 0}, "c"), _event(4, "tool/result", {"index": 0, "ok": True}, "c"),
        _event(5, "user/message", {"text": "hi", "call_index": 0}, "c"),
    )
    assert log_violations(sound) == []
    early = _log(
        _event(3, "tool/call", {"index": 0}, "c"), _event(4, "user/message", {"text": "hi", "call_index": 0}, "c"),
        _event(5, "tool/result", {"index": 0, "ok": True}, "c"),
    )
    [problem] = log_violations(early)
    assert "seq 5" in problem and "after the step's user/message" in problem


def test_log_violations_checks_child_calls() -> None:
    parent = [_event(3, "tool/call", {"index": 0}, "c")]
    dispatch = _event(4, "tool/ptc-dispatch", {"child": "0/1", "parent_call_id": "c"}, "c/1")
    child_call = _event(5, "tool/call", {"child": "0/1"}, "c/1")
    child_result = _event(6, "tool/result", {"child": "0/1", "ok": True}, "c/1")
    result = _event(7, "tool/result", {"index": 0, "ok": True}, "c")
    assert log_violations(_log(*parent, dispatch, child_call, child_result, result)) == []
    assert any("without its tool/ptc-dispatch" in p for p in log_violations(_log(*parent, child_call, child_result, result)))
    assert any("child '0/1': 0 results" in p for p in log_violations(_log(*parent, dispatch, child_call, result)))
    assert any("not declared" in p for p in log_violations(_log(dispatch, child_call, child_result)))
    duplicated = replace(child_result, seq=8)
    assert any("2 results" in p for p in log_violations(_log(*parent, dispatch, child_call, child_result, duplicated, result)))


def test_repair_of_a_crash_mid_child_closes_the_child_before_its_parent() -> None:
    crashed = [
        _event(1, "turn/start", {}, step=None), _event(2, "step/start", {"calls": 1}),
        _event(3, "assistant/message", {"calls": [{"index": 0, "call_id": "c", "name": "code", "arguments": "{}"}]}),
        _event(4, "tool/call", {"index": 0, "name": "code"}, "c"),
        _event(5, "tool/ptc-dispatch", {"child": "0/1", "parent_call_id": "c"}, "c/1"),
        _event(6, "tool/call", {"child": "0/1", "name": "echo"}, "c/1"),
        _event(7, "tool/ptc-dispatch", {"child": "0/1/1", "parent_call_id": "c/1"}, "c/1/1"),
        _event(8, "tool/call", {"child": "0/1/1", "name": "echo"}, "c/1/1"),
    ]
    plan = plan_repair(crashed)
    assert [(e.kind, e.call_id, e.payload.get("code")) for e in plan] == [
        ("tool/result", "c/1/1", "ABORTED"), ("tool/result", "c/1", "ABORTED"), ("tool/result", "c", "ABORTED"),
        ("step/end", None, None), ("turn/end", None, None),
    ]
    repaired = crashed + [_event(20 + i, e.kind, e.payload, e.call_id, e.step) for i, e in enumerate(plan)]
    assert log_violations(repaired) == []
    assert plan_repair(repaired) == []


def test_repair_writes_the_recorded_contexts_after_the_results() -> None:
    crashed = [
        _event(1, "turn/start", {}, step=None), _event(2, "step/start", {"calls": 2}),
        _event(3, "assistant/message", {"calls": [{"index": i, "call_id": f"c{i}", "name": "echo", "arguments": "{}"} for i in (0, 1)]}),
        _event(4, "tool/call", {"index": 0, "name": "echo"}, "c0"),
        _event(5, "tool/result", {"index": 0, "name": "echo", "ok": True, "contexts": ["seen"]}, "c0"),
        _event(6, "tool/call", {"index": 1, "name": "echo"}, "c1"),
    ]
    plan = plan_repair(crashed)
    assert [(e.kind, e.call_id) for e in plan] == [("tool/result", "c1"), ("user/message", "c0"), ("step/end", None), ("turn/end", None)]
    repaired = crashed + [_event(20 + i, e.kind, e.payload, e.call_id, e.step) for i, e in enumerate(plan)]
    assert log_violations(repaired) == []


async def test_a_suspended_step_keeps_its_contexts_for_the_resumed_one(store: SqlSessionStore) -> None:
    bodies: list[str] = []
    registry = tools(bodies)
    _noting(registry)
    session = _sid("r")
    suspended = await suspend(store, registry, session)
    assert suspended.additional_contexts == ("note call_0",)
    events = await store.events(session)
    assert not [e for e in events if e.kind == "user/message"]  # not before the step's last result
    outcomes = await registry.resume(store, session, {"call_1": ApprovalResult.APPROVED})
    assert not isinstance(outcomes, BatchSuspended)
    assert outcomes.additional_contexts == ("note call_0", "note call_1", "note call_2", "note call_3")  # type: ignore[attr-defined]
    events = await store.events(session)
    assert [e.payload["text"] for e in events if e.kind == "user/message"] == list(outcomes.additional_contexts)  # type: ignore[attr-defined]
    assert log_violations(events, open_ok=True) == []


async def test_a_cancelled_suspended_step_still_writes_its_recorded_contexts(store: SqlSessionStore) -> None:
    registry = tools([])
    _noting(registry)
    session = _sid("x")
    await suspend(store, registry, session)
    await registry.cancel_suspended(store, session, "nobody came")
    events = await store.events(session)
    assert [e.payload["text"] for e in events if e.kind == "user/message"] == ["note call_0"]
    assert [e.kind for e in events if e.step is not None][-2:] == ["user/message", "step/end"]
    assert log_violations(events, open_ok=True) == []


async def test_a_child_whose_approval_is_deferred_is_refused_and_the_step_is_not_suspended(store: SqlSessionStore) -> None:
    registry = ToolRegistry()

    async def delete(path: str) -> str:
        return path

    async def code(calls: ChildCalls) -> str:
        try:
            return str(await calls.call_tool("delete", {"path": "/x"}))
        except ChildCallRefused as refused:
            return f"{refused.code} {refused.reason}"

    registry.register(PythonFunction.from_callable(delete), options=ToolRegistrationOptions(requires_approval=True))
    registry.register(PythonFunction.from_callable(code))
    registry.approval = Approver(ApprovalResult.DEFERRED)
    session = _sid("d")
    turn = await store.begin_turn(session)
    outcomes = await registry.execute_batch([call("c", "code")], registry.assemble(CONTEXT, scope_of(session)), sink=store.sink(session, turn, 1))
    assert [o.value for o in outcomes] == ["UNAVAILABLE approval_deferred"]  # type: ignore[union-attr]
    await store.end_turn(session, turn)  # no suspended step holds the turn open
    events = await store.events(session)
    decided = [e for e in events if e.kind == "approval/decided"]
    assert [(e.payload.get("child"), e.payload["decision"]) for e in decided] == [("0/1", "deferred_refused")]
    assert log_violations(events) == []


async def test_the_step_loop_hands_the_contexts_on(store: SqlSessionStore) -> None:
    registry = _coder()
    session = _sid("l")
    loop = StepLoop(registry, store, session, RequestContext("acme", "alice"))
    await loop.begin_turn()
    step = await loop.run_step([call("c0", "echo", {"text": "a"})])
    assert step.additional_contexts == ("note c0",)
    await loop.end_turn()
    assert log_violations(await store.events(session)) == []


async def test_children_of_a_parallel_group_keep_the_log_sound(store: SqlSessionStore) -> None:
    registry = _coder()
    session = _sid("p")
    turn = await store.begin_turn(session)
    calls = [call(f"c{i}", "code") for i in range(4)]
    with anyio.fail_after(20):
        outcomes = await registry.execute_batch(calls, registry.seal(), max_parallelism=4, sink=store.sink(session, turn, 1))
    await store.end_turn(session, turn)
    assert [o.call_id for o in outcomes] == ["c0", "c1", "c2", "c3"]
    events = await store.events(session)
    assert len([e for e in events if e.kind == "tool/ptc-dispatch"]) == 12
    assert log_violations(events) == []


def test_step_calls_helper_is_unchanged() -> None:
    assert [c.call_id for c in step_calls()] == ["call_0", "call_1", "call_2", "call_3"]


async def test_a_store_repairs_a_crash_mid_child_and_the_log_is_sound(store: SqlSessionStore) -> None:
    """The writer died while a child call ran: its declaration is durable, no result, the lease ran out."""
    session = _sid("c")
    turn = await store.begin_turn(session)
    sink = store.sink(session, turn, 1)
    parent = call("c", "code", {"text": "a"})
    await sink.batch_started([parent, call("d", "echo", {"text": "b"})])
    await told(Declaration("b", 0), sink.call_declared, parent)
    await told(Declaration("b-child", 0, child="0/1"), sink.call_declared, ToolCall("c/1", "echo", "{}", parent_call_id="c"))
    await sink.flush()
    expire_lease(store, session)
    assert await store.repair(session) > 0
    events = await store.events(session)
    assert log_violations(events) == []
    closing = [(e.kind, e.call_id, e.payload.get("code"), e.payload.get("reason")) for e in events if e.payload.get("repaired")]
    assert closing[:4] == [
        ("tool/result", "c/1", "ABORTED", "interrupted"), ("tool/result", "c", "ABORTED", "interrupted"),
        ("tool/call", "d", None, None), ("tool/result", "d", "ABORTED_BEFORE_DISPATCH", "interrupted"),
    ]
    assert await store.repair(session) == 0

"""Issue 17's features together in one session log: a retried parent's children keep distinct keys
across its attempts, a retried child logs its attempts under its child key, and a parent's timeout
cancels the child it is waiting on; every log stays sound (``log_violations``)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from tether_clr.recording.session.sql_store import SqlSessionStore

from tether_clr import (
    ChildCalls,
    PythonFunction,
    RetryPolicy,
    ToolExecutionOutcome,
    ToolMetadata,
    ToolRegistrationOptions,
    ToolRegistry,
    log_violations,
)

from tests.support import call
from tests.support.session_stores import new_session

pytestmark = pytest.mark.anyio

RETRIED = ToolRegistrationOptions(metadata=ToolMetadata(idempotent=True), retry=RetryPolicy(attempts=3, backoff=0))


async def one_step(store: SqlSessionStore, registry: ToolRegistry, name: str) -> tuple[ToolExecutionOutcome, list[Any]]:
    session = new_session()
    turn = await store.begin_turn(session)
    outcomes = await registry.execute_batch([call("p", name)], registry.seal(), sink=store.sink(session, turn, 1))
    await store.end_turn(session, turn)
    assert isinstance(outcomes, list)
    return outcomes[0], await store.events(session)


async def test_a_retried_parents_children_never_reuse_a_key_across_its_attempts(store: SqlSessionStore) -> None:
    registry = ToolRegistry()
    attempts = 0

    async def echo(text: str) -> str:
        return text

    async def parent(calls: ChildCalls) -> str:
        nonlocal attempts
        attempts += 1
        value = await calls.call_tool("echo", {"text": f"try {attempts}"})
        if attempts == 1:
            raise RuntimeError("first attempt fails after its child ran")
        return str(value)

    registry.register(PythonFunction.from_callable(echo))
    registry.register(PythonFunction.from_callable(parent), None, RETRIED)
    outcome, events = await one_step(store, registry, "parent")
    assert (outcome.failure, outcome.value, outcome.attempts) == (None, "try 2", 2)
    dispatched = [e.payload["child"] for e in events if e.kind == "tool/ptc-dispatch"]
    assert dispatched == ["0/1", "0/2"]
    assert [e.payload["attempt"] for e in events if e.kind == "tool/attempt"] == [1, 2]
    assert log_violations(events) == []


async def test_a_retried_child_logs_its_attempts_under_its_child_key(store: SqlSessionStore) -> None:
    registry = ToolRegistry()
    runs = 0

    async def flaky() -> str:
        nonlocal runs
        runs += 1
        if runs == 1:
            raise RuntimeError("once")
        return "ok"

    async def parent(calls: ChildCalls) -> Any:
        return await calls.call_tool("flaky")

    registry.register(PythonFunction.from_callable(flaky), None, RETRIED)
    registry.register(PythonFunction.from_callable(parent))
    outcome, events = await one_step(store, registry, "parent")
    assert (outcome.failure, outcome.value) == (None, "ok")
    attempts = [e.payload for e in events if e.kind == "tool/attempt"]
    assert [(a.get("child"), a.get("index"), a["attempt"]) for a in attempts] == [("0/1", None, 1), ("0/1", None, 2)]
    child_result = next(e.payload for e in events if e.kind == "tool/result" and e.payload.get("child") == "0/1")
    assert child_result["attempts"] == 2
    assert log_violations(events) == []


async def test_a_parents_timeout_cancels_the_child_it_waits_on(store: SqlSessionStore) -> None:
    registry = ToolRegistry()
    child_cancelled = anyio.Event()

    async def slow() -> str:
        try:
            await anyio.sleep(30)
        finally:
            child_cancelled.set()
        return "never"

    async def parent(calls: ChildCalls) -> Any:
        return await calls.call_tool("slow")

    registry.register(PythonFunction.from_callable(slow))
    registry.register(PythonFunction.from_callable(parent), None, ToolRegistrationOptions(timeout=0.2))
    outcome, events = await one_step(store, registry, "parent")
    assert outcome.failure is not None and (outcome.failure.code, outcome.failure.reason) == ("ABORTED", "timeout")
    assert child_cancelled.is_set()
    child = next(e.payload for e in events if e.kind == "tool/result" and e.payload.get("child") == "0/1")
    assert child["code"] == "ABORTED"
    assert log_violations(events) == []

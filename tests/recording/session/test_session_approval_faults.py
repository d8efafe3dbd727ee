"""Durable approvals under faults and misuse: failed writes never hold a session forever, a resumed early refusal keeps the log sound, no step starts while one is suspended, and parking needs a resumable log."""

from __future__ import annotations

from typing import Any

import pytest
from tether_clr.recording.session.sql_store import SqlSessionStore

from tether_clr import (
    ApprovalResult,
    BatchOutcomes,
    BatchSuspended,
    SessionLeasedError,
    ToolCall,
    ToolExecutionOutcome,
    ToolStatus,
    log_violations,
)
from tether_clr.foundations.errors import SinkError

from tests.support import codes
from tests.support.durable_approvals import CONTEXT, leases, scope_of, step_calls, suspend, tools
from tests.support.session_stores import new_session

pytestmark = pytest.mark.anyio


def _held(store: SqlSessionStore, session: str) -> list[tuple[str, str]]:
    """The leases this store's renewer thread keeps alive for ``session``."""
    return [key for key in list(store._held) if key[0] == session]


class _FailingInserts:
    """Makes the store's inserts fail (a full disk, a dropped connection) while ``on`` is set."""

    def __init__(self, store: SqlSessionStore) -> None:
        self.on = False
        self._original = store._insert_many
        store._insert_many = self  # type: ignore[method-assign]

    def __call__(self, sql: str, rows: list[tuple[Any, ...]]) -> None:
        if self.on:
            raise RuntimeError("disk I/O error (injected)")
        self._original(sql, rows)


# ---------------------------------------------------------------- log verify
async def test_log_verify_accepts_a_resumed_step_whose_parked_tool_left_the_catalog(store: SqlSessionStore) -> None:
    """A resume that behaves exactly as documented (the parked call ends UNKNOWN_TOOL with the
    default view, its body never ran) must leave a log that ``log verify`` accepts."""
    bodies: list[str] = []
    registry = tools(bodies)
    session = new_session()
    await suspend(store, registry, session)
    registry.set_status("delete", "1.0.0", ToolStatus.DISABLED)
    outcomes = await registry.resume(store, session, {"call_1": ApprovalResult.APPROVED})
    assert isinstance(outcomes, list) and codes(outcomes) == [None, "UNKNOWN_TOOL", None, None]
    assert "delete /tmp/x" not in bodies  # no body ran after the deferral
    await store.end_turn(session, 1)
    assert log_violations(await store.events(session)) == []


async def test_log_verify_accepts_a_resumed_call_refused_by_a_failing_pre_execute_listener(store: SqlSessionStore) -> None:
    """Same rule: a pre-execute listener that raises on resume refuses the call (TOOL_ERROR, no body)."""
    bodies: list[str] = []
    registry = tools(bodies)
    session = new_session()
    await suspend(store, registry, session)

    async def broken(execution: Any, next_: Any) -> Any:
        if execution.name == "delete":
            raise RuntimeError("policy service down")
        return await next_()

    registry.register_pre_execute_listener(None, broken)
    outcomes = await registry.resume(store, session, {"call_1": ApprovalResult.APPROVED})
    assert isinstance(outcomes, list) and codes(outcomes)[1] == "TOOL_ERROR"
    assert "delete /tmp/x" not in bodies
    await store.end_turn(session, 1)
    assert log_violations(await store.events(session)) == []


# ---------------------------------------------------------------- lease leaks
async def test_a_cancel_suspended_whose_write_fails_does_not_hold_the_session_forever(store: SqlSessionStore) -> None:
    bodies: list[str] = []
    registry = tools(bodies)
    session = new_session()
    await suspend(store, registry, session)
    failing = _FailingInserts(store)
    failing.on = True
    with pytest.raises(RuntimeError, match="injected"):
        await registry.cancel_suspended(store, session, "the user left")
    failing.on = False
    # The failed cancel wrote nothing; its lease must not be renewed forever by this process
    # (it should be released, or at worst left to expire like a dead writer's).
    assert _held(store, session) == []
    assert leases(store, session) == 0
    outcomes = await registry.cancel_suspended(store, session, "the user left")  # the step can still be cancelled
    assert codes(outcomes)[1:] == ["ABORTED_BEFORE_DISPATCH"] * 3


async def test_a_resume_whose_final_commit_fails_does_not_hold_the_session_forever(store: SqlSessionStore) -> None:
    bodies: list[str] = []
    registry = tools(bodies)
    session = new_session()
    await suspend(store, registry, session)
    failing = _FailingInserts(store)
    original_append = store._append

    def append(session_id: str, holder: str, rows: Any, first: bool, release: bool) -> None:
        failing.on = release  # only the last commit (step/end + lease release) fails
        try:
            original_append(session_id, holder, rows, first, release)
        finally:
            failing.on = False

    store._append = append  # type: ignore[method-assign]
    with pytest.raises(SinkError):
        await registry.resume(store, session, {"call_1": ApprovalResult.APPROVED})
    store._append = original_append  # type: ignore[method-assign]
    # The process lives on (a server): the session must become repairable once the lease runs
    # out; a lease the renewer thread keeps renewing never runs out.
    assert _held(store, session) == []


# ------------------------------------------------------- one suspended step
async def test_no_new_step_starts_while_a_step_of_the_session_is_suspended(store: SqlSessionStore) -> None:
    """The model has not seen the suspended step's results: a later step run now would be answered
    before it in the log, and resume would then append the earlier step's results after it."""
    bodies: list[str] = []
    registry = tools(bodies)
    session = new_session()
    await suspend(store, registry, session)
    catalog = registry.assemble(CONTEXT, scope_of(session))
    before = await store.events(session)
    with pytest.raises((SinkError, ValueError)):
        await registry.execute_batch([step_calls()[0]], catalog, sink=store.sink(session, 1, 2))
    assert await store.events(session) == before and bodies == ["echo a"]


async def test_no_new_turn_begins_while_a_step_of_the_session_is_suspended(store: SqlSessionStore) -> None:
    bodies: list[str] = []
    registry = tools(bodies)
    session = new_session()
    await suspend(store, registry, session)
    with pytest.raises((SessionLeasedError, ValueError)):
        await store.begin_turn(session)


# ------------------------------------------------------- parking needs a log
class _MemorySink:
    """A sink that records every hook in memory (an audit or display sink): nothing durable."""

    def __init__(self) -> None:
        self.events: list[str] = []

    async def call_declared(self, call: ToolCall) -> None:
        self.events.append(f"call {call.call_id}")

    async def approval_asked(self, execution: Any, reason: str | None) -> None:
        self.events.append(f"asked {execution.call_id}")

    async def approval_decided(self, execution: Any, result: Any) -> None:
        self.events.append(f"decided {execution.call_id}")

    async def outcome_ready(self, outcome: ToolExecutionOutcome) -> None:
        self.events.append(f"result {outcome.call_id}")


async def test_deferred_with_a_sink_that_is_not_a_session_log_fails_closed() -> None:
    """docs/session-log.md: "Parking needs a sink that records approvals (a session store's); with any other
    sink (or none) DEFERRED fails closed: the call ends UNAVAILABLE, reason approval_deferred".
    A sink with approval hooks but no log cannot be resumed: parking into it loses the call."""
    bodies: list[str] = []
    registry = tools(bodies)
    session = new_session()
    result = await registry.execute_batch(step_calls(), registry.assemble(CONTEXT, scope_of(session)), sink=_MemorySink())
    assert not isinstance(result, BatchSuspended)
    assert codes(result) == [None, "UNAVAILABLE", None, None] and result[1].reason == "approval_deferred"


async def test_deferred_without_a_sink_returns_batch_outcomes_as_the_overload_says() -> None:
    """execute_batch called with no sink is typed to return BatchOutcomes (it cannot park): a DEFERRED
    answer fails closed and the batch still comes back as BatchOutcomes, never BatchSuspended."""
    bodies: list[str] = []
    registry = tools(bodies)
    session = new_session()
    result = await registry.execute_batch(step_calls(), registry.assemble(CONTEXT, scope_of(session)))
    assert type(result) is BatchOutcomes
    assert codes(result) == [None, "UNAVAILABLE", None, None] and result[1].reason == "approval_deferred"

"""The session log on both stores (SQLite and PostgreSQL, the same tests parametrized):
event kinds and order, group commit, leases, and crash repair."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from tether_clr.recording.session.sql_store import SqlSessionStore

from tether_clr import (
    EVENT_KINDS,
    ApprovalResult,
    SessionLeasedError,
    SinkError,
    ToolCall,
    ToolRegistry,
    call_fingerprint,
    log_violations,
)

from tests.support import Approver, add, asking, call, codes, echo_registry
from tests.support.session_stores import expire_lease, new_session, open_store

pytestmark = pytest.mark.anyio

DEADLOCK_GUARD = 30


class Commits:
    """Records the kinds of events in each transaction a store commits, and what had run before it."""

    def __init__(self, store: SqlSessionStore, bodies: list[str] | None = None) -> None:
        self.transactions: list[list[str]] = []
        self.bodies_before: list[int] = []
        original = store._append
        seen = bodies if bodies is not None else []

        def append(session_id: str, holder: str, rows: Any, first: bool, release: bool) -> None:
            self.bodies_before.append(len(seen))
            original(session_id, holder, rows, first, release)
            self.transactions.append([f"{row.kind} {row.call_id}" if row.call_id else row.kind for row in rows])

        store._append = append  # type: ignore[method-assign]


def kinds(events: list[Any]) -> list[str]:
    return [f"{e.kind} {e.call_id}" if e.call_id else e.kind for e in events]


# ------------------------------------------------------------------ the log
async def test_a_turn_logs_every_event_kind_in_order_with_a_growing_sequence(store: SqlSessionStore) -> None:
    registry = echo_registry()
    session = new_session()
    turn = await store.begin_turn(session)
    assert turn == 1
    calls = [call("a", "echo", {"text": "1"}), call("b", "echo", {"text": "2"}), call("c", "solo", {"text": "3"}), call("d", "ghost")]
    outcomes = await registry.execute_batch(calls, registry.seal(), sink=store.sink(session, turn, 1))
    assert codes(outcomes) == [None, None, None, "UNKNOWN_TOOL"]
    await store.end_turn(session, turn)
    events = await store.events(session)
    assert kinds(events) == [
        "turn/start", "step/start", "assistant/message",
        "tool/call a", "tool/call b", "tool/result a", "tool/result b",
        "tool/call c", "tool/result c", "tool/call d", "tool/result d",
        "step/end", "turn/end",
    ]
    assert [e.seq for e in events] == sorted({e.seq for e in events})
    assert all(e.session_id == session and e.turn == 1 for e in events)
    assert {e.step for e in events if e.kind not in ("turn/start", "turn/end")} == {1}
    assert {e.kind for e in events} <= set(EVENT_KINDS)
    proposal = events[2].payload["calls"]
    assert [(c["index"], c["call_id"], c["name"], c["arguments"]) for c in proposal] == [
        (i, c.call_id, c.name, c.arguments) for i, c in enumerate(calls)
    ]
    result_a = events[5].payload
    assert result_a["ok"] is True and result_a["value"] == "1" and result_a["index"] == 0
    failed = events[10].payload
    assert failed["ok"] is False and failed["code"] == "UNKNOWN_TOOL" and failed["index"] == 3
    assert log_violations(events) == []
    assert await store.begin_turn(session) == 2


async def test_approval_events_carry_the_exact_arguments_and_their_fingerprint(store: SqlSessionStore) -> None:
    registry = ToolRegistry()
    add(registry, lambda path: f"deleted {path}", "delete")
    registry.register_pre_execute_listener(None, asking("destructive"))
    registry.approval = Approver(
        decide=lambda execution: ApprovalResult.APPROVED if execution.arguments["path"] == "/tmp/a" else ApprovalResult.REJECTED
    )
    from tether_clr import AgentPipelineScope

    scope = AgentPipelineScope(session_id="s", owner="alice")
    session = new_session()
    turn = await store.begin_turn(session)
    calls = [call("c1", "delete", '{"path": "/tmp/a"}'), call("c2", "delete", {"path": "/etc"})]
    outcomes = await registry.execute_batch(calls, registry.seal(scope), sink=store.sink(session, turn, 1))
    assert codes(outcomes) == [None, "DENIED"]
    events = await store.events(session)
    asked = [e for e in events if e.kind == "approval/asked"]
    decided = [e for e in events if e.kind == "approval/decided"]
    assert [e.call_id for e in asked] == ["c1", "c2"] and [e.payload["index"] for e in asked] == [0, 1]
    assert asked[0].payload["arguments"] == '{"path":"/tmp/a"}'
    assert asked[0].payload["fingerprint"] == call_fingerprint("delete", '{"path":"/tmp/a"}')
    assert [e.payload["decision"] for e in decided] == ["approved", "rejected"]
    assert [e.payload["fingerprint"] for e in decided] == [e.payload["fingerprint"] for e in asked]
    assert log_violations(events, open_ok=True) == []


async def test_call_ids_reused_across_steps_are_kept_apart_by_step(store: SqlSessionStore) -> None:
    registry = echo_registry()
    session = new_session()
    turn = await store.begin_turn(session)
    for step in (1, 2):
        calls = [call("call_0", "echo", {"text": f"{step}a"}), call("call_1", "echo", {"text": f"{step}b"})]
        await registry.execute_batch(calls, registry.seal(), sink=store.sink(session, turn, step))
    await store.end_turn(session, turn)
    events = await store.events(session)
    results = [(e.step, e.call_id, e.payload["value"]) for e in events if e.kind == "tool/result"]
    assert results == [(1, "call_0", "1a"), (1, "call_1", "1b"), (2, "call_0", "2a"), (2, "call_1", "2b")]
    assert log_violations(events) == []


@pytest.mark.parametrize("problem", ["unknown turn", "ended turn", "step twice"])
async def test_a_step_outside_an_open_turn_or_started_twice_is_refused_before_any_body(store: SqlSessionStore, problem: str) -> None:
    bodies: list[str] = []
    registry = echo_registry(bodies)
    session = new_session()
    turn = await store.begin_turn(session)
    if problem == "ended turn":
        await store.end_turn(session, turn)
    if problem == "step twice":
        await registry.execute_batch([call("a", "echo", {"text": "first"})], registry.seal(), sink=store.sink(session, turn, 1))
    target = turn + 1 if problem == "unknown turn" else turn
    with pytest.raises(SinkError):
        await registry.execute_batch([call("b", "echo", {"text": "x"})], registry.seal(), sink=store.sink(session, target, 1))
    assert "x" not in bodies


async def test_end_turn_refuses_unknown_ended_or_open_turns(store: SqlSessionStore) -> None:
    session = new_session()
    with pytest.raises(ValueError, match="no turn"):
        await store.end_turn(session, 1)
    turn = await store.begin_turn(session)
    sink = store.sink(session, turn, 1)
    await sink.batch_started([ToolCall("a", "echo", "{}")])
    await sink.flush()
    with pytest.raises(SessionLeasedError):  # the step's writer still holds the session
        await store.end_turn(session, turn)
    await sink.batch_finished()  # the proposed call was never declared: the step stays open
    with pytest.raises(ValueError, match="open steps"):
        await store.end_turn(session, turn)
    assert await store.repair(session) == 4  # its tool/call and ABORTED_BEFORE_DISPATCH result, step/end, turn/end
    with pytest.raises(ValueError, match="already ended"):
        await store.end_turn(session, turn)


async def test_a_step_starts_once_in_an_open_turn_and_a_refused_start_writes_nothing_and_holds_no_lease(store: SqlSessionStore) -> None:
    session = new_session()
    proposed = [ToolCall("a", "echo", "{}")]

    async def start(turn: int, step: int) -> None:
        sink = store.sink(session, turn, step)
        await sink.batch_started(proposed)
        await sink.flush()

    with pytest.raises(ValueError, match="begin_turn first"):
        await start(1, 1)
    assert await store.events(session) == []
    assert await store.repair(session) == 0  # the refused transaction took no lease: nothing blocks the session
    turn = await store.begin_turn(session)
    registry = echo_registry()
    await registry.execute_batch([call("a", "echo", {"text": "1"})], registry.seal(), sink=store.sink(session, turn, 1))
    logged = await store.events(session)
    with pytest.raises(ValueError, match="already started"):
        await start(turn, 1)
    await store.end_turn(session, turn)
    logged = await store.events(session)
    with pytest.raises(ValueError, match="has ended"):
        await start(turn, 2)
    assert await store.events(session) == logged
    assert await store.repair(session) == 0
    assert log_violations(logged) == []


async def test_a_step_started_while_another_waits_for_an_approval_decision_is_refused_by_name_and_writes_nothing(
    store: SqlSessionStore,
) -> None:
    from tests.support.durable_approvals import suspend, tools

    session = new_session()
    await suspend(store, tools([]), session)
    logged = await store.events(session)
    sink = store.sink(session, 1, 2)
    await sink.batch_started([ToolCall("later", "echo", "{}")])
    with pytest.raises(ValueError, match=r"cannot start step 2 of turn 1 .* turn 1, step 1 waits for an approval decision"):
        await sink.flush()
    assert await store.events(session) == logged

async def test_a_second_writer_is_refused_with_the_live_holder_and_its_remaining_time(store: SqlSessionStore) -> None:
    session = new_session()
    turn = await store.begin_turn(session)
    first = store.sink(session, turn, 1)
    await first.batch_started([ToolCall("a", "echo", "{}")])
    await first.flush()
    second = store.sink(session, turn, 2)
    await second.batch_started([ToolCall("b", "echo", "{}")])
    with pytest.raises(SessionLeasedError) as refused:
        await second.flush()
    assert refused.value.holder == first._holder
    assert refused.value.expires_in is not None and 0 < refused.value.expires_in <= store.lease_seconds
    assert [e.step for e in await store.events(session) if e.kind == "step/start"] == [1]


async def test_a_group_of_a_hundred_calls_is_logged_in_model_order(store: SqlSessionStore) -> None:
    registry = echo_registry()
    commits = Commits(store)
    session = new_session()
    turn = await store.begin_turn(session)
    calls = [call(f"c{i}", "echo", {"text": str(i)}) for i in range(100)]
    await registry.execute_batch(calls, registry.seal(), sink=store.sink(session, turn, 1))
    assert commits.transactions[0] == ["step/start", "assistant/message"] + [f"tool/call c{i}" for i in range(100)]
    events = await store.events(session)  # in sequence order: the store kept each commit's rows in order
    assert [e.call_id for e in events if e.kind == "tool/call"] == [f"c{i}" for i in range(100)]
    assert [e.call_id for e in events if e.kind == "tool/result"] == [f"c{i}" for i in range(100)]
    assert [e.payload["index"] for e in events if e.kind == "tool/result"] == list(range(100))
    assert log_violations(events, open_ok=True) == []


# --------------------------------------------------------------- group commit
async def logged_step(store: SqlSessionStore, tool: str, count: int) -> Commits:
    """One step of ``count`` calls of ``tool`` in a new session, its commits recorded."""
    bodies: list[str] = []
    registry = echo_registry(bodies)
    commits = Commits(store, bodies)
    session = new_session()
    turn = await store.begin_turn(session)
    calls = [call(f"c{i}", tool, {"text": str(i)}) for i in range(count)]
    await registry.execute_batch(calls, registry.seal(), sink=store.sink(session, turn, 1))
    return commits


async def test_a_parallel_group_is_declared_in_one_transaction_before_any_body(store: SqlSessionStore) -> None:
    commits = await logged_step(store, "echo", 5)
    first = commits.transactions[0]
    assert first == ["step/start", "assistant/message"] + [f"tool/call c{i}" for i in range(5)]
    assert commits.bodies_before[0] == 0
    results = [kind for transaction in commits.transactions for kind in transaction if kind.startswith("tool/result")]
    assert results == [f"tool/result c{i}" for i in range(5)]
    assert commits.transactions[-1][-1] == "step/end"


async def test_exclusive_calls_share_one_transaction_for_a_result_and_the_next_declaration(store: SqlSessionStore) -> None:
    commits = await logged_step(store, "solo", 3)
    assert commits.transactions == [
        ["step/start", "assistant/message", "tool/call c0"],
        ["tool/result c0", "tool/call c1"],
        ["tool/result c1", "tool/call c2"],
        ["tool/result c2", "step/end"],
    ]
    assert commits.bodies_before == [0, 1, 2, 3]  # each declaration was durable before its body


async def test_without_group_commit_every_event_is_its_own_transaction(kind: str, spec: str) -> None:
    with open_store(kind, spec, group_commit=False, durability="process") as store:
        bodies: list[str] = []
        registry = echo_registry(bodies)
        commits = Commits(store, bodies)
        session = new_session()
        turn = await store.begin_turn(session)
        await registry.execute_batch([call("a", "echo", {"text": "1"}), call("b", "echo", {"text": "2"})], registry.seal(), sink=store.sink(session, turn, 1))
        assert commits.transactions == [
            ["step/start", "assistant/message"],
            ["tool/call a"], ["tool/call b"], ["tool/result a"], ["tool/result b"], ["step/end"],
        ]
        assert log_violations(await store.events(session), open_ok=True) == []


def test_store_options_are_checked(tmp_path: Path) -> None:
    from tether_clr import SqliteSessionStore

    with pytest.raises(ValueError, match="durability"):
        SqliteSessionStore(tmp_path / "x.sqlite", durability="fast")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="lease_seconds"):
        SqliteSessionStore(tmp_path / "x.sqlite", lease_seconds=0)


# --------------------------------------------------------------------- leases
async def test_a_running_batch_holds_the_lease_and_repair_changes_nothing(store: SqlSessionStore) -> None:
    registry = ToolRegistry()
    started, release = anyio.Event(), anyio.Event()

    async def wait() -> str:
        started.set()
        await release.wait()
        return "done"

    add(registry, wait)
    session = new_session()
    turn = await store.begin_turn(session)
    result: list[Any] = []

    async def run() -> None:
        result.extend(await registry.execute_batch([call("w", "wait")], registry.seal(), sink=store.sink(session, turn, 1)))

    with anyio.fail_after(DEADLOCK_GUARD):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            await started.wait()
            before = await store.events(session)
            with pytest.raises(SessionLeasedError):
                await store.repair(session)
            with pytest.raises(SinkError, match="leased"):
                await registry.execute_batch([call("x", "wait")], registry.seal(), sink=store.sink(session, turn, 2))
            assert await store.events(session) == before
            release.set()
    assert codes(result) == [None]
    assert await store.repair(session) == 1  # the lease was released: only the open turn is closed
    assert log_violations(await store.events(session)) == []


async def test_a_writer_whose_lease_was_taken_over_cannot_write_a_second_result(kind: str, spec: str) -> None:
    with open_store(kind, spec) as writer, open_store(kind, spec) as repairer:
        session = new_session()
        turn = await writer.begin_turn(session)
        sink = writer.sink(session, turn, 1)
        await sink.batch_started([ToolCall("a", "echo", "{}")])
        await sink.call_declared(ToolCall("a", "echo", "{}"))
        await sink.flush()
        writer._held.clear()  # the writer stalls: nobody renews its lease
        expire_lease(repairer, session)
        assert await repairer.repair(session) == 3  # interrupted result, step/end, turn/end
        from tether_clr import ToolExecutionOutcome

        await sink.outcome_ready(ToolExecutionOutcome.success("a", "echo", "late"))
        with pytest.raises(SessionLeasedError):
            await sink.flush()
        events = await repairer.events(session)
        assert [e.payload.get("code") for e in events if e.kind == "tool/result"] == ["ABORTED"]
        assert log_violations(events) == []


# --------------------------------------------------------------------- repair
async def test_repair_closes_what_a_crash_left_open_and_is_idempotent(kind: str, spec: str) -> None:
    session = new_session()
    with open_store(kind, spec) as crashed:
        turn = await crashed.begin_turn(session)
        sink = crashed.sink(session, turn, 1)
        calls = [ToolCall("call_0", "echo", '{"text":"a"}'), ToolCall("call_1", "echo", "{}"), ToolCall("call_2", "echo", "{bad")]
        from tether_clr import ToolExecutionOutcome

        await sink.batch_started(calls)
        await sink.call_declared(calls[0])
        await sink.call_declared(calls[1])
        await sink.outcome_ready(ToolExecutionOutcome.success("call_0", "echo", "a"))
        await sink.flush()
    # the writer is gone (its store closed without releasing): once the lease runs out, repair may run
    with open_store(kind, spec, lease_seconds=0.5) as store:
        with pytest.raises(SessionLeasedError):
            await store.repair(session)
        expire_lease(store, session)
        assert await store.repair(session) == 5
        events = await store.events(session)
        assert [(e.kind, e.call_id, e.payload.get("code"), e.payload.get("reason")) for e in events[-5:]] == [
            ("tool/result", "call_1", "ABORTED", "interrupted"),
            ("tool/call", "call_2", None, None),
            ("tool/result", "call_2", "ABORTED_BEFORE_DISPATCH", "interrupted"),
            ("step/end", None, None, None),
            ("turn/end", None, None, None),
        ]
        results = {e.call_id: (e.payload["code"] if not e.payload["ok"] else None) for e in events if e.kind == "tool/result"}
        assert results == {"call_0": None, "call_1": "ABORTED", "call_2": "ABORTED_BEFORE_DISPATCH"}
        assert events[-1].kind == "turn/end" and events[-2].kind == "step/end"
        assert log_violations(events) == []
        assert await store.repair(session) == 0
        assert await store.events(session) == events


async def test_a_batch_stopped_by_a_sink_fault_leaves_its_step_for_repair(store: SqlSessionStore) -> None:
    registry = echo_registry()

    def reject(execution: Any, outcome: Any) -> None:
        if execution.call_id == "b":
            raise RuntimeError("no")

    registry.register_result_policy(None, reject)
    session = new_session()
    turn = await store.begin_turn(session)
    from tether_clr import ResultPolicyError

    with pytest.raises(ResultPolicyError):
        await registry.execute_batch([call("a", "solo", {"text": "1"}), call("b", "solo", {"text": "2"})], registry.seal(), sink=store.sink(session, turn, 1))
    events = await store.events(session)
    assert "step/end" not in [e.kind for e in events]
    assert await store.repair(session) == 3  # the lease was released when the batch raised
    events = await store.events(session)
    assert [(e.kind, e.call_id, e.payload.get("code")) for e in events[-3:]] == [
        ("tool/result", "b", "ABORTED"), ("step/end", None, None), ("turn/end", None, None)
    ]
    assert log_violations(events) == []


def lease_expiry(store: SqlSessionStore, session_id: str) -> float | None:
    with store._write() as execute:
        rows = execute("SELECT expires FROM session_leases WHERE session_id = ?", (session_id,))
    return None if not rows else float(rows[0][0])


async def test_a_batch_that_outlives_its_lease_keeps_it_renewed(kind: str, spec: str) -> None:
    with open_store(kind, spec, lease_seconds=0.3) as store:
        registry = ToolRegistry()
        started, release = anyio.Event(), anyio.Event()

        async def wait() -> str:
            started.set()
            await release.wait()
            return "done"

        add(registry, wait)
        session = new_session()
        turn = await store.begin_turn(session)

        async def run() -> None:
            await registry.execute_batch([call("w", "wait")], registry.seal(), sink=store.sink(session, turn, 1))

        with anyio.fail_after(DEADLOCK_GUARD):
            async with anyio.create_task_group() as tg:
                tg.start_soon(run)
                await started.wait()
                first = lease_expiry(store, session)
                assert first is not None
                # Gate: wait until the lease was renewed past the moment its first term ran out.
                while (lease_expiry(store, session) or 0.0) <= first + store.lease_seconds:
                    await anyio.sleep(0.02)
                with pytest.raises(SessionLeasedError):
                    await store.repair(session)
                release.set()
        assert lease_expiry(store, session) is None  # released when the batch returned


async def test_every_held_lease_is_renewed_in_one_transaction_a_tick(kind: str, spec: str) -> None:
    """A replica holding many sessions' leases (one per open MCP session) renews them all together, and only
    the leases still held: one released is never brought back."""
    with open_store(kind, spec, lease_seconds=0.3) as store:
        claims = [await store.claim(new_session()) for _ in range(30)]
        await store.release(claims[0].session_id, claims[0].holder)
        renewals: list[int] = []
        original = store._renew

        def renew(execute: Any, held: list[tuple[str, str]]) -> None:
            renewals.append(len(held))
            original(execute, held)

        store._renew = renew  # type: ignore[method-assign]
        first = lease_expiry(store, claims[1].session_id)
        assert first is not None
        with anyio.fail_after(DEADLOCK_GUARD):
            while (lease_expiry(store, claims[-1].session_id) or 0.0) <= first + store.lease_seconds:
                await anyio.sleep(0.02)  # past the first term of every lease: renewed, never run out
        assert renewals and set(renewals) == {29}  # one call a tick, with every lease still held
        assert all((lease_expiry(store, claim.session_id) or 0.0) > first + store.lease_seconds for claim in claims[1:])
        assert lease_expiry(store, claims[0].session_id) is None
        with pytest.raises(SessionLeasedError):
            await store.repair(claims[5].session_id)
        for claim in claims[1:]:
            await store.release(claim.session_id, claim.holder)


async def test_the_one_writer_of_a_held_session_opens_and_closes_its_turn_in_the_commits_of_its_step(
    store: SqlSessionStore,
) -> None:
    """``starts_turn`` and ``ends_turn`` (what ``mcp serve --db`` uses under a session's held lease): ``turn/start``
    rides in the commit of the step's first events and ``turn/end`` in the commit of ``step/end``, so the log is
    as ``begin_turn`` and ``end_turn`` would leave it, in two transactions instead of four."""
    from tether_clr import SessionSink

    registry = echo_registry()
    session = new_session()
    claim = await store.claim(session)
    try:
        commits = Commits(store)
        turn = await store.begin_turn(session, holder=claim.holder)  # the first turn: the store numbers it
        first = SessionSink(store, session, turn, 1, holder=claim.holder, ends_turn=True)
        await registry.execute_batch([call("a", "echo", {"text": "1"})], registry.seal(), sink=first)
        assert first.turn_ended and not first.turn_started
        assert commits.transactions[-1][-3:] == ["tool/result a", "step/end", "turn/end"]
        second = SessionSink(store, session, turn + 1, 1, holder=claim.holder, starts_turn='{"note": 2}', ends_turn=True)
        await registry.execute_batch([call("b", "echo", {"text": "2"})], registry.seal(), sink=second)
        assert second.turn_started and second.turn_ended
        assert commits.transactions[-2][:2] == ["turn/start", "step/start"]
        assert len(commits.transactions) == 4
        events = await store.events(session)
        assert kinds(events)[-1] == "turn/end" and log_violations(events) == []
        assert [event.payload for event in events if event.kind == "turn/start"][-1] == {"note": 2}
        with pytest.raises(ValueError, match="already ended"):
            await store.end_turn(session, turn + 1, holder=claim.holder)
    finally:
        await store.release(session, claim.holder)


async def test_a_turn_start_folded_into_its_step_for_a_turn_the_log_has_is_refused_writing_nothing(
    store: SqlSessionStore,
) -> None:
    """A writer whose idea of its last turn is stale cannot start a turn twice: the store refuses the commit."""
    from tether_clr import SessionSink

    registry = echo_registry()
    session = new_session()
    claim = await store.claim(session)
    try:
        turn = await store.begin_turn(session, holder=claim.holder)  # open, no step yet (a crash right after it)
        before = await store.events(session)
        stale = SessionSink(store, session, turn, 1, holder=claim.holder, starts_turn="{}", ends_turn=True)
        with pytest.raises(SinkError) as refused:
            await registry.execute_batch([call("a", "echo", {"text": "1"})], registry.seal(), sink=stale)
        assert "already started" in str(refused.value)
        assert not stale.turn_started and await store.events(session) == before
    finally:
        await store.release(session, claim.holder)


async def test_the_one_writer_of_a_held_session_closes_its_turn_in_the_commit_of_the_step_end(store: SqlSessionStore) -> None:
    """``ends_turn`` (what ``mcp serve --db`` uses under a session's held lease): ``turn/end`` rides in the
    transaction of ``step/end``, so the log is as a separate ``end_turn`` would leave it, one commit fewer."""
    from tether_clr import SessionSink

    registry = echo_registry()
    session = new_session()
    claim = await store.claim(session)
    try:
        commits = Commits(store)
        turn = await store.begin_turn(session, holder=claim.holder)
        sink = SessionSink(store, session, turn, 1, holder=claim.holder, ends_turn=True)
        await registry.execute_batch([call("a", "echo", {"text": "1"})], registry.seal(), sink=sink)
        assert sink.turn_ended
        assert commits.transactions[-1][-3:] == ["tool/result a", "step/end", "turn/end"]
        events = await store.events(session)
        assert kinds(events)[-1] == "turn/end" and log_violations(events) == []
        with pytest.raises(ValueError, match="already ended"):
            await store.end_turn(session, turn, holder=claim.holder)
    finally:
        await store.release(session, claim.holder)


def test_only_a_held_lease_may_close_a_turn_with_its_step(store: SqlSessionStore) -> None:
    from tether_clr import SessionSink

    with pytest.raises(ValueError, match="held lease"):
        SessionSink(store, new_session(), 1, 1, ends_turn=True)
    with pytest.raises(ValueError, match="held lease"):
        SessionSink(store, new_session(), 1, 1, starts_turn="{}")


async def test_a_writer_claim_reads_only_the_last_turn_and_the_turns_a_crash_left_open(store: SqlSessionStore) -> None:
    session = new_session()
    fresh = await store.claim_writer(session)
    assert (fresh.last_turn, fresh.open_turns) == (0, ())  # a new session
    await store.release(session, fresh.holder)
    registry = echo_registry()
    for _ in range(2):
        turn = await store.begin_turn(session)
        await registry.execute_batch([call("a", "echo", {"text": "1"})], registry.seal(), sink=store.sink(session, turn, 1))
        if turn == 1:
            await store.end_turn(session, turn)  # turn 2 is left open, as a crash leaves it
    claim = await store.claim_writer(session)
    try:
        assert (claim.last_turn, claim.open_turns) == (2, (2,))
        assert await store.open_turns(session) == [2]
        with pytest.raises(SessionLeasedError):
            await store.repair(session)  # the writer holds it
    finally:
        await store.release(session, claim.holder)


async def test_open_sessions_are_found_by_exact_prefix_in_one_query(store: SqlSessionStore) -> None:
    prefix = new_session()
    names = [f"{prefix}-a", f"{prefix}-b", f"{prefix}-c", f"{prefix}_x"]  # the last one: "_" is no wildcard
    for name in names:
        turn = await store.begin_turn(name)
        if name.endswith("-b"):
            await store.end_turn(name, turn)  # closed
    assert await store.open_sessions(f"{prefix}-") == [f"{prefix}-a", f"{prefix}-c"]
    assert await store.open_sessions(f"{prefix.upper()}-") == []  # exact: not LIKE's case folding

"""Durable approvals on both stores: a DEFERRED answer parks the call and suspends the batch;
``registry.resume`` continues the step from the log (possibly with a new store and registry,
as after a restart), ``cancel_suspended`` abandons it; every refusal runs nothing."""

from __future__ import annotations

from typing import Any

import anyio
import anyio.from_thread
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tether_clr.recording.session.sql_store import SqlSessionStore

from tether_clr import (
    ApprovalResult,
    BatchSuspended,
    PendingApproval,
    SessionLeasedError,
    ToolCall,
    ToolExecutionOutcome,
    ToolStatus,
    call_fingerprint,
    log_violations,
)

from tests.support import Approver, call, codes
from tests.support.durable_approvals import CONTEXT, leases, scope_of, step_calls, suspend, tools
from tests.support.session_stores import new_session, open_store

pytestmark = pytest.mark.anyio

def record(events: list[Any]) -> list[tuple[Any, ...]]:
    """The log without times and sequence numbers, and without the approval events (which differ by design)."""
    return [(e.turn, e.step, e.kind, e.call_id, e.payload) for e in events if not e.kind.startswith("approval/")]


# ------------------------------------------------------------------ parking
async def test_a_deferred_approval_parks_the_call_and_admits_nothing_after_it(store: SqlSessionStore) -> None:
    bodies: list[str] = []
    registry = tools(bodies)
    session = new_session()
    suspended = await suspend(store, registry, session)
    assert [o.call_id for o in suspended.delivered] == ["call_0"] and codes(list(suspended.delivered)) == [None]
    arguments = '{"path":"/tmp/x"}'
    assert suspended.pending == (
        PendingApproval("call_1", "delete", arguments, call_fingerprint("delete", arguments), "tool 'delete' requires approval", 1),
    )
    assert bodies == ["echo a"]  # neither the parked call nor the later call of its group ran
    events = await store.events(session)
    kinds = [(e.kind, e.call_id) for e in events if e.step is not None]
    assert kinds[:5] == [
        ("step/start", None), ("assistant/message", None),
        ("tool/call", "call_0"), ("tool/call", "call_1"), ("tool/call", "call_2"),
    ]
    # call_0's body overlaps call_1's approval step (which first looks for a remembered grant in the
    # store), so its result may be recorded before or after the request and the decision.
    after = [kind for kind in kinds[5:] if kind != ("tool/result", "call_0")]
    assert after == [("approval/asked", "call_1"), ("approval/decided", "call_1")] and len(kinds) == 8
    decided = [e for e in events if e.kind == "approval/decided"]
    assert decided[0].payload["decision"] == "deferred"
    assert log_violations(events) == []  # a suspended step is open by design, its turn too
    assert await store.repair(session) == 0  # repair leaves a parked step to resume or cancel_suspended
    with pytest.raises(ValueError, match="open steps"):
        await store.end_turn(session, 1)
    assert leases(store, session) == 0  # released when the batch returned


async def test_deferred_without_a_sink_that_records_approvals_fails_closed() -> None:
    bodies: list[str] = []
    registry = tools(bodies)
    session = new_session()
    outcomes = await registry.execute_batch(step_calls(), registry.assemble(CONTEXT, scope_of(session)))
    assert isinstance(outcomes, list)
    assert codes(outcomes) == [None, "UNAVAILABLE", None, None]
    assert outcomes[1].reason == "approval_deferred"
    assert "delete /tmp/x" not in bodies


# ------------------------------------------------------------------ resuming
async def test_an_approved_parked_call_resumed_with_a_new_store_and_registry_ends_the_step_as_an_uninterrupted_run(
    kind: str, spec: str
) -> None:
    session, reference = new_session(), new_session()
    parked_bodies: list[str] = []
    with open_store(kind, spec) as first:
        suspended = await suspend(first, tools(parked_bodies), session)
    pending = suspended.pending[0]
    resumed_bodies: list[str] = []
    with open_store(kind, spec) as second:  # as after a restart: nothing shared but the log
        registry = tools(resumed_bodies)
        outcomes = await registry.resume(second, session, {"call_1": (ApprovalResult.APPROVED, pending.fingerprint)})
        assert registry.approval.asked == []  # type: ignore[union-attr]
        await second.end_turn(session, 1)
        resumed_log = await second.events(session)

        straight_bodies: list[str] = []
        approving = tools(straight_bodies, ApprovalResult.APPROVED)
        turn = await second.begin_turn(reference)
        straight = await approving.execute_batch(
            step_calls(), approving.assemble(CONTEXT, scope_of(reference)), sink=second.sink(reference, turn, 1)
        )
        await second.end_turn(reference, turn)
        straight_log = await second.events(reference)
    assert isinstance(outcomes, list) and outcomes == straight
    assert codes(outcomes) == [None, None, None, None]
    assert parked_bodies + resumed_bodies == ["echo a", "delete /tmp/x", "echo b", "echo c"]
    assert record(resumed_log) == record(straight_log)  # the same calls, results and order
    assert log_violations(resumed_log) == []
    decisions = [e.payload["decision"] for e in resumed_log if e.kind == "approval/decided"]
    assert decisions == ["deferred", "approved"]


async def test_a_rejected_parked_call_never_runs_and_the_rest_of_the_step_does(store: SqlSessionStore) -> None:
    bodies: list[str] = []
    registry = tools(bodies)
    session = new_session()
    await suspend(store, registry, session)
    outcomes = await registry.resume(store, session, {"call_1": ApprovalResult.REJECTED})
    assert isinstance(outcomes, list) and codes(outcomes) == [None, "DENIED", None, None]
    assert bodies == ["echo a", "echo b", "echo c"]
    events = await store.events(session)
    assert log_violations(events, open_ok=True) == [] and events[-1].kind == "step/end"


@pytest.mark.parametrize("same_view", [True, False], ids=["original-view", "reassembled"])
async def test_an_approved_call_still_faces_the_guards_and_re_authorization(store: SqlSessionStore, same_view: bool) -> None:
    bodies: list[str] = []
    registry = tools(bodies)
    session = new_session()
    turn = await store.begin_turn(session)
    catalog = registry.assemble(CONTEXT, scope_of(session))
    assert isinstance(await registry.execute_batch(step_calls(), catalog, sink=store.sink(session, turn, 1)), BatchSuspended)
    registry.register_guard(None, lambda execution: "no echo after lunch" if execution.name == "echo" else None)
    registry.set_status("delete", "1.0.0", ToolStatus.DISABLED)
    outcomes = await registry.resume(store, session, {"call_1": ApprovalResult.APPROVED}, catalog if same_view else None)
    assert isinstance(outcomes, list)
    if same_view:  # the snapshot the model saw still names the tool: re-authorization refuses it now
        assert codes(outcomes) == [None, "DENIED", "DENIED", None] and outcomes[1].reason == "tool_disabled"
    else:  # the catalog assembled again for the recorded request context no longer has it
        assert codes(outcomes) == [None, "UNKNOWN_TOOL", "DENIED", None]
    assert "no echo after lunch" in outcomes[2].failure.message  # type: ignore[union-attr]
    assert bodies == ["echo a", "echo c"]


async def test_a_later_call_that_parks_on_resume_suspends_the_step_again(store: SqlSessionStore) -> None:
    bodies: list[str] = []
    registry = tools(bodies)
    session = new_session()
    calls = [call("c0", "delete", {"path": "/one"}), call("c1", "solo", {"text": "x"}), call("c2", "delete", {"path": "/two"})]
    first = await suspend(store, registry, session, calls)
    assert first.delivered == () and [p.call_id for p in first.pending] == ["c0"]
    again = await registry.resume(store, session, {"c0": ApprovalResult.APPROVED})
    assert isinstance(again, BatchSuspended)
    assert [o.call_id for o in again.delivered] == ["c0", "c1"] and [p.index for p in again.pending] == [2]
    done = await registry.resume(store, session, {"c2": ApprovalResult.APPROVED})
    assert isinstance(done, list) and [o.call_id for o in done] == ["c0", "c1", "c2"] and codes(done) == [None] * 3
    assert bodies == ["delete /one", "echo x", "delete /two"]
    await store.end_turn(session, 1)
    assert log_violations(await store.events(session)) == []


async def test_call_ids_reused_across_steps_resume_the_parked_step_only(store: SqlSessionStore) -> None:
    bodies: list[str] = []
    registry = tools(bodies, ApprovalResult.APPROVED)
    session = new_session()
    turn = await store.begin_turn(session)
    catalog = registry.assemble(CONTEXT, scope_of(session))
    assert codes(await registry.execute_batch(step_calls(), catalog, sink=store.sink(session, turn, 1))) == [None] * 4  # type: ignore[arg-type]
    registry.approval = Approver(ApprovalResult.DEFERRED)
    suspended = await registry.execute_batch(step_calls(), catalog, sink=store.sink(session, turn, 2))
    assert isinstance(suspended, BatchSuspended)
    outcomes = await registry.resume(store, session, {"call_1": ApprovalResult.APPROVED})
    assert isinstance(outcomes, list) and codes(outcomes) == [None] * 4
    events = await store.events(session)
    assert sorted((e.step, e.call_id) for e in events if e.kind == "tool/result") == [
        (step, f"call_{i}") for step in (1, 2) for i in range(4)
    ]
    assert bodies.count("delete /tmp/x") == 2  # once per step, never twice in the resumed one


# ------------------------------------------------------------- refusals
async def _unchanged(store: SqlSessionStore, session: str, bodies: list[str], attempt: Any) -> Exception:
    before, ran = await store.events(session), list(bodies)
    with pytest.raises((ValueError, TypeError)) as caught:
        await attempt()
    assert await store.events(session) == before and bodies == ran  # nothing written, nothing run
    assert leases(store, session) == 0  # and the session's lease was released
    return caught.value


async def test_decisions_that_do_not_fit_the_parked_calls_raise_and_run_nothing(store: SqlSessionStore) -> None:
    bodies: list[str] = []
    registry = tools(bodies)
    session = new_session()
    suspended = await suspend(store, registry, session)
    fingerprint = suspended.pending[0].fingerprint
    approve = ApprovalResult.APPROVED
    for decisions, message in [
        ({"call_2": approve}, "no parked call has the id 'call_2'"),
        ({}, "no decision for the parked call 'call_1'"),
        ({"call_1": (approve, call_fingerprint("delete", '{"path":"/etc"}'))}, "bound to other arguments"),
        ({"call_1": ApprovalResult.DEFERRED}, "DEFERRED decides nothing"),
    ]:
        error = await _unchanged(store, session, bodies, lambda d=decisions: registry.resume(store, session, d))
        assert message in str(error)
    error = await _unchanged(store, session, bodies, lambda: registry.resume(store, session, {"call_1": "yes"}))
    assert isinstance(error, TypeError)
    outcomes = await registry.resume(store, session, {"call_1": (approve, fingerprint)})
    assert isinstance(outcomes, list) and codes(outcomes) == [None] * 4


@pytest.mark.parametrize(
    ("kind_of_event", "message"),
    [
        ("approval/asked", "no longer match their fingerprint"),  # the request's arguments were altered
        ("assistant/message", "no longer matches the arguments the approver was shown"),  # the proposal was
    ],
)
async def test_a_log_altered_after_the_approver_saw_the_call_is_refused(
    store: SqlSessionStore, kind_of_event: str, message: str
) -> None:
    bodies: list[str] = []
    registry = tools(bodies)
    session = new_session()
    await suspend(store, registry, session)
    with store._write() as execute:
        rows = execute("SELECT seq, payload FROM session_events WHERE session_id = ? AND kind = ?", (session, kind_of_event))
        seq, payload = rows[0]
        execute("UPDATE session_events SET payload = ? WHERE seq = ?", (payload.replace("/tmp/x", "/etc/passwd"), seq))
    error = await _unchanged(store, session, bodies, lambda: registry.resume(store, session, {"call_1": ApprovalResult.APPROVED}))
    assert message in str(error)


async def test_a_finished_or_cancelled_step_cannot_be_resumed(store: SqlSessionStore) -> None:
    bodies: list[str] = []
    registry = tools(bodies)
    done, cancelled = new_session(), new_session()
    await suspend(store, registry, done)
    await registry.resume(store, done, {"call_1": ApprovalResult.APPROVED})
    error = await _unchanged(store, done, bodies, lambda: registry.resume(store, done, {"call_1": ApprovalResult.APPROVED}))
    assert "has no suspended step" in str(error)
    await suspend(store, registry, cancelled)
    await registry.cancel_suspended(store, cancelled, "the user left")
    error = await _unchanged(store, cancelled, bodies, lambda: registry.resume(store, cancelled, {"call_1": ApprovalResult.APPROVED}))
    assert "has no suspended step" in str(error)
    error = await _unchanged(store, cancelled, bodies, lambda: registry.cancel_suspended(store, cancelled, "again"))
    assert "has no suspended step" in str(error)


async def test_a_second_resumer_is_refused_while_the_first_holds_the_session(store: SqlSessionStore) -> None:
    bodies: list[str] = []
    registry = tools(bodies)
    session = new_session()
    await suspend(store, registry, session)
    started, release = anyio.Event(), anyio.Event()

    async def slow(dispatch: Any, next_: Any) -> Any:
        if dispatch.execution.name == "delete":
            started.set()
            await release.wait()
        return await next_()

    registry.register_execute_listener(None, slow)
    results: list[Any] = []

    async def first() -> None:
        results.append(await registry.resume(store, session, {"call_1": ApprovalResult.APPROVED}))

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            tg.start_soon(first)
            await started.wait()
            with pytest.raises(SessionLeasedError):
                await registry.resume(store, session, {"call_1": ApprovalResult.APPROVED})
            release.set()
    assert codes(results[0]) == [None] * 4 and bodies.count("delete /tmp/x") == 1


# ------------------------------------------------------------- cancelling
async def test_cancelling_a_suspended_step_ends_its_parked_and_unadmitted_calls_before_dispatch(store: SqlSessionStore) -> None:
    bodies: list[str] = []
    registry = tools(bodies)
    session = new_session()
    await suspend(store, registry, session)
    outcomes = await registry.cancel_suspended(store, session, "the user left")
    assert codes(outcomes) == [None, "ABORTED_BEFORE_DISPATCH", "ABORTED_BEFORE_DISPATCH", "ABORTED_BEFORE_DISPATCH"]
    assert all(o.reason == "cancelled" and "the user left" in o.failure.message for o in outcomes[1:])  # type: ignore[union-attr]
    assert bodies == ["echo a"]
    await store.end_turn(session, 1)
    events = await store.events(session)
    assert log_violations(events) == []
    assert [e.call_id for e in events if e.kind == "tool/call"] == ["call_0", "call_1", "call_2", "call_3"]


# ------------------------------------------------------- repair and verify
async def test_repair_closes_what_a_crash_left_before_a_parked_call_and_leaves_the_rest_parked(store: SqlSessionStore) -> None:
    bodies: list[str] = []
    registry = tools(bodies)
    session = new_session()
    await suspend(store, registry, session)
    with store._write() as execute:  # as if the writer died after the marker but before call_0's result
        execute("DELETE FROM session_events WHERE session_id = ? AND kind = 'tool/result'", (session,))
    with pytest.raises(ValueError, match="repair the session first"):
        await registry.resume(store, session, {"call_1": ApprovalResult.APPROVED})
    assert await store.repair(session) == 1
    assert await store.repair(session) == 0
    events = await store.events(session)
    repaired = [e for e in events if e.kind == "tool/result"]
    assert [(e.call_id, e.payload["code"]) for e in repaired] == [("call_0", "ABORTED")]
    assert log_violations(events) == []
    outcomes = await registry.resume(store, session, {"call_1": ApprovalResult.APPROVED})
    assert isinstance(outcomes, list) and codes(outcomes) == ["ABORTED", None, None, None]
    assert outcomes[0] == ToolExecutionOutcome.failed(
        "call_0", "echo", "ABORTED", repaired[0].payload["message"], "interrupted"
    )


async def test_log_verify_flags_a_body_that_ran_after_a_deferred_call_was_not_approved(store: SqlSessionStore) -> None:
    bodies: list[str] = []
    registry = tools(bodies)
    session = new_session()
    await suspend(store, registry, session)
    with store._write() as execute:  # a result for the parked call, with no approval: forged
        execute(
            "INSERT INTO session_events (session_id, turn, step, kind, call_id, position, payload, at) "
            "VALUES (?, 1, 1, 'tool/result', 'call_1', 1, ?, '2026-01-01T00:00:00+00:00')",
            (session, '{"index":1,"name":"delete","ok":true,"value":"deleted"}'),
        )
    problems = log_violations(await store.events(session), open_ok=True)
    assert any("after its approval was refused" in problem for problem in problems)


# ------------------------------------------------------------- hostile decisions
_VERDICTS = st.sampled_from(list(ApprovalResult))
_DECISION = st.one_of(
    _VERDICTS,
    st.tuples(_VERDICTS, st.one_of(st.text(max_size=12), st.just("FINGERPRINT"))),
    st.none(), st.integers(), st.text(max_size=5), st.tuples(_VERDICTS),
)
_DECISIONS = st.dictionaries(st.one_of(st.sampled_from(["call_0", "call_1", "call_2", "call_9"]), st.text(max_size=6)), _DECISION, max_size=3)


def test_any_decisions_either_fit_the_parked_call_exactly_or_run_and_write_nothing(kind: str, spec: str) -> None:
    fits = (ApprovalResult.APPROVED, ApprovalResult.REJECTED, ApprovalResult.UNAVAILABLE)

    with open_store(kind, spec) as store:

        @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
        @given(_DECISIONS)
        def check(decisions: dict[Any, Any]) -> None:
            bodies: list[str] = []
            registry = tools(bodies)
            session = new_session()
            suspended = anyio.run(suspend, store, registry, session)
            fingerprint = suspended.pending[0].fingerprint
            decisions = {
                key: (value[0], fingerprint) if isinstance(value, tuple) and value[1:] == ("FINGERPRINT",) else value
                for key, value in decisions.items()
            }
            value = decisions.get("call_1")
            verdict = value[0] if isinstance(value, tuple) and len(value) == 2 and value[1] == fingerprint else value
            valid = set(decisions) == {"call_1"} and verdict in fits
            before = anyio.run(store.events, session)
            try:
                outcomes = anyio.run(registry.resume, store, session, decisions)
            except (ValueError, TypeError):
                assert not valid
                assert anyio.run(store.events, session) == before and bodies == ["echo a"]
                assert leases(store, session) == 0
                return
            assert valid and isinstance(outcomes, list) and len(outcomes) == 4
            assert bodies.count("delete /tmp/x") == (1 if verdict is ApprovalResult.APPROVED else 0)
            assert log_violations(anyio.run(store.events, session), open_ok=True) == []

        check()


async def test_a_resume_cancelled_before_its_batch_starts_releases_the_session(store: SqlSessionStore) -> None:
    bodies: list[str] = []
    registry = tools(bodies)
    session = new_session()
    await suspend(store, registry, session)
    original = store._claim

    def claim_then_cancel(*args: Any) -> Any:  # the host cancels right after the lease was taken
        events = original(*args)
        anyio.from_thread.run_sync(scope.cancel)
        return events

    store._claim = claim_then_cancel  # type: ignore[method-assign]
    with anyio.CancelScope() as scope:
        await registry.resume(store, session, {"call_1": ApprovalResult.APPROVED})
    assert scope.cancelled_caught
    store._claim = original  # type: ignore[method-assign]
    assert leases(store, session) == 0 and bodies == ["echo a"]
    outcomes = await registry.resume(store, session, {"call_1": ApprovalResult.APPROVED})  # still suspended, resumable
    assert isinstance(outcomes, list) and codes(outcomes) == [None] * 4


async def test_a_sink_wrapper_that_drops_the_approval_hooks_is_refused(store: SqlSessionStore) -> None:
    bodies: list[str] = []
    registry = tools(bodies)
    session = new_session()
    await suspend(store, registry, session)

    class Narrow:
        def __init__(self, inner: Any) -> None:
            self.inner = inner

        async def call_declared(self, call: ToolCall) -> None:
            await self.inner.call_declared(call)

        async def outcome_ready(self, outcome: ToolExecutionOutcome) -> None:
            await self.inner.outcome_ready(outcome)

    attempt = lambda: registry.resume(store, session, {"call_1": ApprovalResult.APPROVED}, wrap_sink=Narrow)  # noqa: E731
    error = await _unchanged(store, session, bodies, attempt)
    assert "wrap_sink must forward" in str(error)


# ------------------------------------------------------------------ withdrawn waiting calls, their own approver
async def test_a_waiting_call_withdrawn_on_resume_ends_denied_recorded_and_never_runs(store: SqlSessionStore) -> None:
    bodies: list[str] = []
    registry = tools(bodies)
    session = new_session()
    await suspend(store, registry, session)
    catalog = registry.assemble(CONTEXT, scope_of(session))
    outcomes = await registry.resume(store, session, {"call_1": ApprovalResult.APPROVED}, catalog, withdrawn=["call_3"])
    assert isinstance(outcomes, list)
    assert [(o.call_id, o.code and str(o.code), o.reason) for o in outcomes] == [
        ("call_0", None, None), ("call_1", None, None), ("call_2", None, None), ("call_3", "DENIED", "withdrawn"),
    ]
    assert bodies == ["echo a", "delete /tmp/x", "echo b"]  # solo c never ran
    await store.end_turn(session, 1)
    events = await store.events(session)
    results = {e.call_id: e.payload for e in events if e.kind == "tool/result"}
    assert results["call_3"]["code"] == "DENIED" and results["call_3"]["reason"] == "withdrawn"
    assert log_violations(events) == []


async def test_withdrawing_a_call_that_does_not_wait_is_refused_and_runs_nothing(store: SqlSessionStore) -> None:
    bodies: list[str] = []
    registry = tools(bodies)
    session = new_session()
    await suspend(store, registry, session)
    catalog = registry.assemble(CONTEXT, scope_of(session))
    for wrong in (["call_0"], ["call_1"], ["nope"]):  # delivered, parked, unknown
        with pytest.raises(ValueError, match="no call waits"):
            await registry.resume(store, session, {"call_1": ApprovalResult.APPROVED}, catalog, withdrawn=wrong)
    assert bodies == ["echo a"] and leases(store, session) == 0


async def test_a_resumed_step_asks_the_given_approver_for_the_calls_after_the_parked_one(store: SqlSessionStore) -> None:
    bodies: list[str] = []
    registry = tools(bodies)
    session = new_session()
    calls = [call("call_0", "delete", {"path": "/a"}), call("call_1", "solo", {"text": "x"}), call("call_2", "delete", {"path": "/b"})]
    await suspend(store, registry, session, calls)
    catalog = registry.assemble(CONTEXT, scope_of(session))
    outcomes = await registry.resume(store, session, {"call_0": ApprovalResult.APPROVED}, catalog,
                                     approval=Approver(ApprovalResult.APPROVED))
    assert isinstance(outcomes, list) and codes(outcomes) == [None, None, None]
    assert bodies == ["delete /a", "echo x", "delete /b"]  # the registry's approver (DEFERRED) was not asked

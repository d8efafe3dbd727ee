"""Remembered approval answers ("always allow") on both stores: an ``*_ALWAYS`` answer or an
ApprovalGrant is recorded as ``approval/grant``; later asks that match are decided from it
without asking the provider (``approval/decided`` naming the grant); a grant holds in its
session or for its principal (never across principals or tenants), never for another schema,
ends with ``revoke_grant``, survives a restart, and applies only where a session store records."""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Any

import pytest
from tether_clr.recording.session.grant_checks import stored_grant_events
from tether_clr.recording.session.sql_store import SqlSessionStore

from tether_clr import (
    AgentPipelineScope,
    ApprovalGrant,
    ApprovalResult,
    ChildCalls,
    GrantScope,
    InMemoryToolLog,
    PythonFunction,
    RequestContext,
    SessionEvent,
    SinkError,
    ToolMetadata,
    ToolRegistrationOptions,
    ToolRegistry,
    log_violations,
)

from tests.support import Approver, call, codes
from tests.support.durable_approvals import suspend
from tests.support.durable_approvals import tools as parking_tools
from tests.support.session_stores import new_session, open_store

pytestmark = pytest.mark.anyio

def tools(answer: Any, bodies: list[str] | None = None) -> ToolRegistry:
    """``delete`` 1.0.0 requires approval; the registry's provider gives ``answer``."""
    registry = ToolRegistry()
    ran = bodies if bodies is not None else []

    async def delete(path: str) -> str:
        ran.append(path)
        return f"deleted {path}"

    register(registry, delete, "1.0.0")
    registry.approval = Approver(answer)
    return registry


def register(registry: ToolRegistry, body: Any, version: str) -> None:
    """``delete`` at ``version``, its schema read from ``body``'s signature."""
    tool = PythonFunction.from_callable(body, name="delete")
    registry.register(tool, None, ToolRegistrationOptions(metadata=ToolMetadata(version=version), requires_approval=True))


def identity(principal: str = "alice", tenant: str | None = None) -> RequestContext:
    """A context of its own tenant per test by default: the PostgreSQL database is shared by every test."""
    return RequestContext(tenant or f"t-{uuid.uuid4().hex}", principal)


async def step(store: SqlSessionStore, registry: ToolRegistry, session: str, context: RequestContext, *paths: str) -> list[str | None]:
    """One turn of one step that deletes ``paths``; the outcome codes (None: it ran)."""
    turn = await store.begin_turn(session)
    assembly = registry.assemble(context, AgentPipelineScope(session_id=session, owner=context.principal_id))
    calls = [call(f"c{i}", "delete", {"path": path}) for i, path in enumerate(paths)]
    outcomes = await registry.execute_batch(calls, assembly, sink=store.sink(session, turn, 1))
    assert isinstance(outcomes, list)
    await store.end_turn(session, turn)
    return codes(outcomes)


def asked(registry: ToolRegistry) -> int:
    assert isinstance(registry.approval, Approver)
    return len(registry.approval.requests)


def kinds(events: list[SessionEvent]) -> list[str]:
    return [e.kind for e in events if e.kind.startswith("approval/")]


async def test_an_always_answer_is_remembered_and_decides_later_asks_without_asking(store: SqlSessionStore) -> None:
    bodies: list[str] = []
    registry, context, session = tools(ApprovalResult.APPROVED_ALWAYS, bodies), identity(), new_session()
    # Two calls in one step: the second is decided by the grant the first made, before it is committed.
    assert await step(store, registry, session, context, "/a", "/b") == [None, None]
    assert await step(store, registry, session, context, "/c") == [None]
    assert asked(registry) == 1 and bodies == ["/a", "/b", "/c"]
    events = await store.events(session)
    assert kinds(events) == ["approval/asked", "approval/decided", "approval/grant", "approval/decided", "approval/decided"]
    grant = next(e for e in events if e.kind == "approval/grant").payload
    candidate = registry.assemble(context).bindings["delete"]
    assert {k: grant[k] for k in ("tool", "major", "schema_hash", "tenant_id", "principal_id", "session_id", "scope", "decision")} == {
        "tool": "delete", "major": 1, "schema_hash": candidate.schema_hash, "tenant_id": context.tenant_id,
        "principal_id": "alice", "session_id": session, "scope": "session", "decision": "approved",
    }
    decided = [e.payload for e in events if e.kind == "approval/decided"]
    assert decided[0]["decision"] == "approved" and decided[0]["always"] == "session"
    assert [d.get("grant") for d in decided[1:]] == [grant["grant_id"]] * 2
    assert all(d["decision"] == "approved" for d in decided)
    assert log_violations(events) == []
    [stored] = await store.grants(tenant_id=context.tenant_id)
    assert (stored.grant_id, stored.scope, stored.decision, stored.revoked) == (grant["grant_id"], GrantScope.SESSION, ApprovalResult.APPROVED, False)
    assert stored.seq == next(e.seq for e in events if e.kind == "approval/grant")


async def test_a_session_grant_holds_in_its_own_session_only(store: SqlSessionStore) -> None:
    registry, context = tools(ApprovalResult.APPROVED_ALWAYS), identity()
    first, second = new_session(), new_session()
    await step(store, registry, first, context, "/a")
    await step(store, registry, second, context, "/b")
    assert asked(registry) == 2


async def test_a_principal_grant_spans_the_principals_sessions_and_never_another_principal_or_tenant(store: SqlSessionStore) -> None:
    registry, context = tools(ApprovalGrant.approve(GrantScope.PRINCIPAL)), identity()
    sessions = [new_session() for _ in range(4)]
    await step(store, registry, sessions[0], context, "/a")
    assert asked(registry) == 1
    await step(store, registry, sessions[1], context, "/b")  # the same principal, another session: not asked
    assert asked(registry) == 1
    await step(store, registry, sessions[2], identity("bob", context.tenant_id), "/c")  # another principal
    assert asked(registry) == 2
    await step(store, registry, sessions[3], identity("alice"), "/d")  # alice in another tenant
    assert asked(registry) == 3
    events = await store.events(sessions[1])
    decided = next(e for e in events if e.kind == "approval/decided").payload
    assert (decided["grant_session"], decided["grant_scope"]) == (sessions[0], "principal")
    lent = [e for e in await stored_grant_events(store) if e.session_id != sessions[1]]
    assert log_violations(events, grant_events=lent) == []
    assert log_violations(events) == []  # a grant of another session that was not passed: only its own fields are checked


async def test_a_grant_never_matches_another_schema_or_major_version(store: SqlSessionStore) -> None:
    registry, context, session = tools(ApprovalResult.APPROVED_ALWAYS), identity(), new_session()
    await step(store, registry, session, context, "/a")

    async def delete(path: str, force: bool = False) -> str:
        return f"deleted {path}"

    # A compatible change in the same major version: another schema hash, so the grant does not hold.
    register(registry, delete, "1.1.0")
    await step(store, registry, session, context, "/b")
    assert asked(registry) == 2
    await step(store, registry, session, context, "/c")  # the new grant holds for 1.1.0
    assert asked(registry) == 2
    register(registry, delete, "2.0.0")
    await step(store, registry, session, context, "/d")  # same schema, another major version
    assert asked(registry) == 3
    hashes = [(g.major, g.schema_hash) for g in await store.grants(session_id=session)]
    assert len(set(hashes)) == 3 and [major for major, _ in hashes] == [1, 1, 2]


async def test_revoke_grant_ends_a_grant_and_the_next_call_asks(store: SqlSessionStore) -> None:
    registry, context, session = tools(ApprovalGrant.approve(GrantScope.PRINCIPAL)), identity(), new_session()
    await step(store, registry, session, context, "/a")
    [grant] = await store.grants(principal_id="alice", tenant_id=context.tenant_id)
    assert await store.revoke_grant(grant.grant_id, "changed my mind") is True
    assert await store.revoke_grant(grant.grant_id) is False  # already ended
    assert await store.revoke_grant("no-such-grant") is False
    assert await store.grants(tenant_id=context.tenant_id) == []
    [ended] = await store.grants(tenant_id=context.tenant_id, include_revoked=True)
    assert ended.revoked
    registry.approval = Approver(ApprovalResult.APPROVED)
    await step(store, registry, new_session(), context, "/b")  # from another session too: it asks again
    assert asked(registry) == 1
    events = await store.events(session)
    revoke = next(e for e in events if e.kind == "approval/revoke")
    assert revoke.step is None and revoke.payload["grant_id"] == grant.grant_id and revoke.payload["reason"] == "changed my mind"
    assert ended.revoked_seq == revoke.seq
    assert log_violations(events) == []  # the revocation follows the end of its turn: it belongs to no step


async def test_a_grant_survives_a_restart(kind: str, spec: str) -> None:
    context, session = identity(), new_session()
    with open_store(kind, spec) as store:
        await step(store, tools(ApprovalGrant.approve(GrantScope.PRINCIPAL)), session, context, "/a")
    with open_store(kind, spec) as reopened:  # a new process: a new store and a new registry
        registry = tools(ApprovalResult.REJECTED)
        assert await step(reopened, registry, new_session(), context, "/b") == [None]
        assert await step(reopened, registry, session, context, "/c") == [None]
        assert asked(registry) == 0


async def test_rejected_always_refuses_denied_now_and_later_without_asking(store: SqlSessionStore) -> None:
    bodies: list[str] = []
    registry, context, session = tools(ApprovalResult.REJECTED_ALWAYS, bodies), identity(), new_session()
    assert await step(store, registry, session, context, "/a") == ["DENIED"]
    turn = await store.begin_turn(session)
    assembly = registry.assemble(context, AgentPipelineScope(session_id=session, owner="alice"))
    [outcome] = await registry.execute_batch([call("c0", "delete", {"path": "/b"})], assembly, sink=store.sink(session, turn, 1))
    await store.end_turn(session, turn)
    assert outcome.failure is not None and str(outcome.failure.code) == "DENIED"
    assert outcome.failure.message == "approval rejected (tool 'delete' requires approval)"
    assert asked(registry) == 1 and bodies == []
    events = await store.events(session)
    assert [e.payload["decision"] for e in events if e.kind == "approval/decided"] == ["rejected", "rejected"]
    assert log_violations(events) == []


async def test_no_grant_is_remembered_or_applied_without_a_session_store_or_an_identity(store: SqlSessionStore) -> None:
    registry = tools(ApprovalResult.APPROVED_ALWAYS)
    context, session = identity(), new_session()
    scope = AgentPipelineScope(session_id=session, owner="alice")
    for sink in (None, InMemoryToolLog(), None):  # no session store: asked every time, the answer counts once
        outcomes = await registry.execute_batch([call("c0", "delete", {"path": "/a"})], registry.assemble(context, scope), sink=sink)
        assert codes(outcomes) == [None]
    assert asked(registry) == 3
    for _ in range(2):  # a session store, but a view with no request context: nobody to remember it for
        turn = await store.begin_turn(session)
        outcomes = await registry.execute_batch([call("c0", "delete", {"path": "/a"})], registry.seal(scope),
                                                sink=store.sink(session, turn, 1))
        await store.end_turn(session, turn)
        assert codes(outcomes) == [None]
    assert asked(registry) == 5
    assert await store.grants(session_id=session) == []
    assert log_violations(await store.events(session)) == []


async def test_a_store_that_cannot_look_grants_up_fails_the_batch_closed(store: SqlSessionStore, monkeypatch: pytest.MonkeyPatch) -> None:
    bodies: list[str] = []
    registry, context, session = tools(ApprovalResult.APPROVED, bodies), identity(), new_session()

    async def broken(*args: Any) -> None:
        raise OSError("disk gone")

    monkeypatch.setattr(store, "find_grant", broken)
    turn = await store.begin_turn(session)
    assembly = registry.assemble(context, AgentPipelineScope(session_id=session, owner="alice"))
    with pytest.raises(SinkError, match="disk gone"):
        await registry.execute_batch([call("c0", "delete", {"path": "/a"})], assembly, sink=store.sink(session, turn, 1))
    assert bodies == [] and asked(registry) == 0


@pytest.mark.parametrize("decision", [ApprovalResult.APPROVED_ALWAYS, ApprovalResult.REJECTED_ALWAYS])
async def test_resume_refuses_an_always_decision_writing_nothing(store: SqlSessionStore, decision: ApprovalResult) -> None:
    bodies: list[str] = []
    registry, session = parking_tools(bodies), new_session()
    await suspend(store, registry, session)
    before = await store.events(session)
    with pytest.raises(ValueError, match="not remembered as a grant"):
        await registry.resume(store, session, {"call_1": decision})
    assert await store.events(session) == before and bodies == ["echo a"]
    assert await store.grants(session_id=session, include_revoked=True) == []


# ------------------------------------------------------------------ log_violations on the new events

async def _granted_log(store: SqlSessionStore) -> list[SessionEvent]:
    """A session with a grant (turn 1) and a decision taken from it (turn 2)."""
    registry, context, session = tools(ApprovalResult.APPROVED_ALWAYS), identity(), new_session()
    await step(store, registry, session, context, "/a")
    await step(store, registry, session, context, "/b")
    events = await store.events(session)
    assert log_violations(events) == []
    return events


def _edited(events: list[SessionEvent], kind: str, nth: int, **changes: Any) -> list[SessionEvent]:
    found = [i for i, e in enumerate(events) if e.kind == kind][nth]
    return [replace(e, payload={**e.payload, **changes}) if i == found else e for i, e in enumerate(events)]


async def test_log_violations_finds_a_decision_from_a_grant_that_is_missing_later_or_different(store: SqlSessionStore) -> None:
    events = await _granted_log(store)
    missing = _edited(events, "approval/decided", 1, grant="nope")
    assert any("decided from grant 'nope', which is in no log checked" in p for p in log_violations(missing))
    flipped = _edited(events, "approval/decided", 1, decision="rejected")
    assert any("which says 'approved'" in p for p in log_violations(flipped))
    grant = next(e for e in events if e.kind == "approval/grant")
    late = [e for e in events if e is not grant] + [replace(grant, seq=events[-1].seq + 1)]
    problems = log_violations(late)
    assert any("which comes after it" in p for p in problems)


async def test_log_violations_finds_a_decision_from_a_revoked_grant_and_a_grant_nobody_gave(store: SqlSessionStore) -> None:
    events = await _granted_log(store)
    grant = next(e for e in events if e.kind == "approval/grant")
    revoke = replace(grant, seq=grant.seq, kind="approval/revoke", step=None, call_id=None,
                     payload={**grant.payload, "reason": None})
    # Revoked before the decision of turn 2 (its seq between the grant and that decision).
    decision = [e for e in events if e.kind == "approval/decided"][1]
    revoked = sorted([*events, replace(revoke, seq=decision.seq - 0.5)], key=lambda e: e.seq)
    assert any("revoked before it" in p for p in log_violations(revoked))
    unasked = _edited(events, "approval/decided", 0, always=None)
    assert any('no "always" answer' in p for p in log_violations(unasked))
    bad = _edited(events, "approval/grant", 0, scope="galaxy")
    assert any("not a grant" in p for p in log_violations(bad))
    orphan = [*events, replace(revoke, seq=events[-1].seq + 1, payload={"grant_id": "nope"})]
    assert any("revokes no earlier grant" in p for p in log_violations(orphan))


async def test_a_child_calls_always_answer_is_remembered_under_its_child_key(store: SqlSessionStore) -> None:
    # Grants and child calls together: the first child's "always" answer decides the second
    # child's ask and the parent's next call's, and the log's grant checks key children apart.
    bodies: list[str] = []
    registry, context, session = tools(ApprovalResult.APPROVED_ALWAYS, bodies), identity(), new_session()

    async def code(calls: ChildCalls) -> list[Any]:
        return [await calls.call_tool("delete", {"path": "/x"}), await calls.call_tool("delete", {"path": "/y"})]

    registry.register(PythonFunction.from_callable(code))
    turn = await store.begin_turn(session)
    assembly = registry.assemble(context, AgentPipelineScope(session_id=session, owner=context.principal_id))
    outcomes = await registry.execute_batch([call("c0", "code"), call("c1", "delete", {"path": "/z"})], assembly, sink=store.sink(session, turn, 1))
    await store.end_turn(session, turn)
    assert codes(outcomes) == [None, None] and bodies == ["/x", "/y", "/z"] and asked(registry) == 1
    events = await store.events(session)
    grant = next(e for e in events if e.kind == "approval/grant")
    assert grant.payload.get("child") == "0/1" and "index" not in grant.payload
    decided = [e.payload for e in events if e.kind == "approval/decided"]
    assert [d.get("grant") for d in decided] == [None, grant.payload["grant_id"], grant.payload["grant_id"]]
    assert log_violations(events) == []

"""Two seams of the layout: sink wrappers forward the optional hooks without listing them
(ForwardingSink), and any SessionStore can be resumed through its public protocol."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.support import Approver
from tether_clr import (
    AgentPipelineScope,
    ApprovalResult,
    BatchSuspended,
    ForwardingSink,
    GrantKey,
    GrantRecord,
    InMemoryToolLog,
    PythonFunction,
    RequestContext,
    SessionClaim,
    SessionSink,
    SqliteSessionStore,
    ToolCall,
    ToolCallSink,
    ToolExecutionOutcome,
    ToolRegistrationOptions,
    ToolRegistry,
    log_violations,
)
from tether_clr.execution.ports import OPTIONAL_HOOKS

pytestmark = pytest.mark.anyio


def registry() -> ToolRegistry:
    registry = ToolRegistry()
    registry.register(PythonFunction.from_callable(lambda n: n * 2, name="double"))
    registry.register(PythonFunction.from_callable(lambda n: -n, name="negate"), None,
                      ToolRegistrationOptions(requires_approval=True))
    registry.approval = Approver(ApprovalResult.DEFERRED)
    return registry


SCOPE = AgentPipelineScope(session_id="s", owner="alice")
CALLS = [ToolCall("c1", "double", '{"n": 2}', scope=SCOPE), ToolCall("c2", "negate", '{"n": 3}', scope=SCOPE),
         ToolCall("c3", "double", '{"n": 4}', scope=SCOPE)]


class Shown(ForwardingSink):
    """Overrides one hook; every other one is forwarded by the base class."""

    def __init__(self, inner: ToolCallSink) -> None:
        super().__init__(inner)
        self.shown: list[str] = []

    async def outcome_ready(self, outcome: ToolExecutionOutcome) -> None:
        await super().outcome_ready(outcome)
        self.shown.append(outcome.call_id)


def test_a_forwarding_sink_has_exactly_the_hooks_of_the_sink_it_wraps(tmp_path: Path) -> None:
    bare = Shown(InMemoryToolLog())
    assert [name for name in OPTIONAL_HOOKS if callable(getattr(bare, name))] == []
    assert bare.parks_approvals is False
    with SqliteSessionStore(tmp_path / "log.sqlite3") as store:
        full = Shown(store.sink("s", 1, 1))
        assert [name for name in OPTIONAL_HOOKS if callable(getattr(full, name))] == list(OPTIONAL_HOOKS)
        assert full.parks_approvals is True


async def test_a_wrapper_that_overrides_one_hook_parks_and_resumes_a_step(tmp_path: Path) -> None:
    with SqliteSessionStore(tmp_path / "log.sqlite3") as store:
        tools = registry()
        turn = await store.begin_turn("s")
        first = Shown(store.sink("s", turn, 1))
        suspended = await tools.execute_batch(CALLS, tools.seal(SCOPE), sink=first)
        assert isinstance(suspended, BatchSuspended) and first.shown == ["c1"]
        wrappers: list[Shown] = []

        def wrap(sink: ToolCallSink) -> ToolCallSink:
            wrappers.append(Shown(sink))
            return wrappers[-1]

        outcomes = await tools.resume(store, "s", {"c2": ApprovalResult.APPROVED}, wrap_sink=wrap)
        assert [o.value for o in outcomes] == [4, -3, 8] and wrappers[0].shown == ["c2", "c3"]
        await store.end_turn("s", turn)
        assert log_violations(await store.events("s")) == []


class ProtocolOnly:
    """A SessionStore that is no SqlSessionStore: it forwards the public protocol and counts what is used."""

    def __init__(self, inner: SqliteSessionStore) -> None:
        self._inner = inner
        self.used: list[str] = []
        self.lease_seconds, self.durability, self.group_commit = inner.lease_seconds, inner.durability, inner.group_commit

    async def begin_turn(self, session_id: str, note: Mapping[str, Any] | None = None) -> int:
        return await self._inner.begin_turn(session_id, note)

    async def end_turn(self, session_id: str, turn: int) -> None:
        await self._inner.end_turn(session_id, turn)

    def sink(self, session_id: str, turn: int, step: int, *, claim: SessionClaim | None = None) -> SessionSink:
        return SessionSink(self, session_id, turn, step, claim=claim)

    async def events(self, session_id: str) -> list[Any]:
        return await self._inner.events(session_id)

    async def sessions(self) -> list[str]:
        return await self._inner.sessions()

    async def repair(self, session_id: str) -> int:
        return await self._inner.repair(session_id)

    async def claim(self, session_id: str) -> SessionClaim:
        self.used.append("claim")
        return await self._inner.claim(session_id)

    async def append(self, session_id: str, holder: str, events: Sequence[Any], *, first: bool, release: bool) -> None:
        self.used.append("append")
        await self._inner.append(session_id, holder, events, first=first, release=release)

    async def release(self, session_id: str, holder: str) -> None:
        self.used.append("release")
        await self._inner.release(session_id, holder)

    async def find_grant(self, tenant_id: str, principal_id: str, session_id: str, key: GrantKey) -> GrantRecord | None:
        self.used.append("find_grant")
        return await self._inner.find_grant(tenant_id, principal_id, session_id, key)

    async def grants(self, **filters: Any) -> list[GrantRecord]:
        return await self._inner.grants(**filters)

    async def revoke_grant(self, grant_id: str, reason: str | None = None) -> bool:
        return await self._inner.revoke_grant(grant_id, reason)

    def close(self) -> None:
        self._inner.close()


@pytest.mark.parametrize("decision", ["resume", "cancel"])
async def test_any_session_store_can_be_resumed_or_cancelled_through_its_public_protocol(tmp_path: Path, decision: str) -> None:
    with SqliteSessionStore(tmp_path / "log.sqlite3") as inner:
        store = ProtocolOnly(inner)
        tools = registry()
        turn = await store.begin_turn("s")
        assert isinstance(await tools.execute_batch(CALLS, tools.seal(SCOPE), sink=store.sink("s", turn, 1)), BatchSuspended)
        store.used.clear()
        if decision == "resume":
            outcomes = await tools.resume(store, "s", {"c2": ApprovalResult.APPROVED})
            assert [o.value for o in outcomes] == [4, -3, 8]
        else:
            outcomes = await tools.cancel_suspended(store, "s", "changed my mind")
            assert [None if o.failure is None else str(o.failure.code) for o in outcomes] == [
                None, "ABORTED_BEFORE_DISPATCH", "ABORTED_BEFORE_DISPATCH"]
        assert store.used[0] == "claim" and "append" in store.used
        await store.end_turn("s", turn)
        assert log_violations(await store.events("s")) == []


async def test_any_session_store_remembers_grants_through_its_public_protocol(tmp_path: Path) -> None:
    with SqliteSessionStore(tmp_path / "log.sqlite3") as inner:
        store = ProtocolOnly(inner)
        tools = registry()
        tools.approval = Approver(ApprovalResult.APPROVED_ALWAYS)
        assembly = tools.assemble(RequestContext("acme", "alice"), SCOPE)
        for step in (1, 2):
            turn = await store.begin_turn("s")
            outcomes = await tools.execute_batch([CALLS[1]], assembly, sink=Shown(store.sink("s", turn, step)))
            assert isinstance(outcomes, list) and [o.value for o in outcomes] == [-3]
            await store.end_turn("s", turn)
        assert isinstance(tools.approval, Approver) and tools.approval.asked == ["c2"]  # the second step: from the grant
        assert "find_grant" in store.used
        assert log_violations(await store.events("s")) == []

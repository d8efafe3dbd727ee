"""``mcp serve --db``'s log sessions in process (tether_clr.cli.serve.LogSessions), on both stores: a call whose
commits fail never leaves its turn open behind the next one; the writer repairs it under its held lease first."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import call, echo_registry
from tests.support.session_stores import new_session
from tether_clr import SinkError, StoreUnavailableError
from tether_clr.cli.serve import LogSessions
from tether_clr.recording.session.sql_store import SqlSessionStore
from tether_clr.recording.session.verify import log_violations

pytestmark = pytest.mark.anyio


def fail_once(store: SqlSessionStore, *, applied: bool) -> list[int]:
    """The store's next append fails with StoreUnavailableError: after committing (``applied``: the answer was
    lost and could not be read back) or before. Returns the list the failure is counted in."""
    original = store.append
    failures: list[int] = []

    async def append(*args: Any, **kwargs: Any) -> None:
        if failures:
            await original(*args, **kwargs)
            return
        failures.append(1)
        if applied:
            await original(*args, **kwargs)
        raise StoreUnavailableError("the store cannot reach its database (a write's outcome is unknown)")

    store.append = append  # type: ignore[method-assign]
    return failures


@pytest.mark.parametrize("applied", [True, False], ids=["applied-answer-lost", "not-applied"])
async def test_a_call_whose_first_commit_fails_leaves_no_open_turn_behind_the_next_one(
    session_store: SqlSessionStore, applied: bool
) -> None:
    ran: list[str] = []
    registry = echo_registry(ran)
    sessions = LogSessions(session_store, prefix=new_session())
    sink = await sessions.open(f"{sessions.prefix}-a")
    try:
        await registry.execute_batch([call("c1", "echo", {"text": "first"})], registry.seal(), sink=sink)  # turn 1
        failures = fail_once(session_store, applied=applied)
        with pytest.raises(SinkError):
            await registry.execute_batch([call("c2", "echo", {"text": "lost"})], registry.seal(), sink=sink)
        assert failures == [1] and ran == ["first"]  # the failed call's body never ran
        await registry.execute_batch([call("c3", "echo", {"text": "third"})], registry.seal(), sink=sink)
        assert ran == ["first", "third"]
    finally:
        await sessions.close(sink)
    events = await session_store.events(f"{sessions.prefix}-a")
    assert log_violations(events) == []
    turns = [event.turn for event in events if event.kind == "turn/start"]
    assert turns == ([1, 2, 3] if applied else [1, 2])  # the lost turn is closed, not left open behind turn 3


def test_a_named_conversation_is_a_log_session_per_tenant_and_principal(session_store: SqlSessionStore) -> None:
    from tether_clr import RequestContext
    from tether_clr.mcp import McpRequest

    sessions = LogSessions(session_store, prefix="mcp")
    stateless = McpRequest(transport="http", method="tools/call", protocol_version="2026-07-28")
    alice = RequestContext("acme", "alice", session_id="conv-1")
    mallory = RequestContext("evil", "alice", session_id="conv-1")  # the same name from another tenant
    assert sessions.session_for(stateless, alice) == sessions.session_for(stateless, alice)
    assert sessions.session_for(stateless, alice) != sessions.session_for(stateless, mallory)
    assert sessions.session_for(stateless, alice).startswith("mcp-") and sessions.session_for(stateless, alice).endswith("-conv-1")
    handshake = McpRequest(transport="http", method="tools/call", protocol_version="2025-06-18", session_id="abc123")
    assert sessions.session_for(handshake, alice) == "mcp-abc123"  # the server's own id for the connection
    anonymous = RequestContext("acme", "alice")
    assert sessions.session_for(stateless, anonymous) != sessions.session_for(stateless, anonymous)  # one per request

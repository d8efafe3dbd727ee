"""The MCP server's assemblies (reused only while exact, in both eras), deferred approvals, and ``_meta``-loaded schemas.

Driven in memory by the SDK's real client: ``mode="legacy"`` is the handshake era
(one connection and scope per session), ``"2026-07-28"`` the stateless era (a
connection and a scope per request). Either way the catalog's cache
(:mod:`tether_clr.catalog.reuse`) answers a request with the kept snapshot while
it is exact, so a fresh assembly is made once per identity and revision.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.server.session import ServerSession
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, Implementation

from tests.support.deferred_tools import deferred_registry
from tests.support.doubles import Approver
from tests.support.mcp_servers import context_for, governed_registry, served
from tether_clr import (
    AgentPipelineScope,
    ApprovalResult,
    InMemoryToolLog,
    PythonFunction,
    RequestContext,
    ToolFailureCodes,
    ToolMetadata,
    ToolRegistrationOptions,
    ToolRegistry,
)
from tether_clr.mcp import LOADED_META_KEY, McpRequest, UNKNOWN_TOOL_MESSAGE
from tether_clr.mcp.request import connection_scope, connection_state, loaded_names, remember_loaded

pytestmark = pytest.mark.anyio

ERAS = ["legacy", "2026-07-28"]


def client(server: Any, who: str = "acme:alice", mode: str = "legacy", **kwargs: Any) -> Client:
    return Client(server.sdk_server, mode=mode, client_info=Implementation(name=who, version="1"), **kwargs)


class FreshAssemblies:
    """How many assemblies the registry made afresh (not answered from its cache) since made or :meth:`clear`."""

    def __init__(self, registry: ToolRegistry) -> None:
        self.cache = registry.catalog.assembly_cache
        self.base = self.cache.misses

    def __len__(self) -> int:
        return self.cache.misses - self.base

    def clear(self) -> None:
        self.base = self.cache.misses


def counting_assemblies(registry: ToolRegistry) -> FreshAssemblies:
    return FreshAssemblies(registry)


def pay(amount: int) -> str:
    """Pay an amount (needs the scope "pay")."""
    return f"paid {amount}"


def paying_registry(**metadata: Any) -> ToolRegistry:
    registry = ToolRegistry()
    registry.register(PythonFunction.from_callable(pay), options=ToolRegistrationOptions(
        metadata=ToolMetadata(required_scopes=frozenset({"pay"}), **metadata)))
    return registry


def with_scopes(*scopes: str) -> Callable[[McpRequest], RequestContext | None]:
    def context(request: McpRequest) -> RequestContext | None:
        found = context_for(request)
        return None if found is None else RequestContext(found.tenant_id, found.principal_id, scopes=frozenset(scopes))

    return context


# ---------------------------------------------------------------- reuse
@pytest.mark.parametrize("mode", ERAS)
async def test_requests_reuse_the_assembly_until_the_catalog_changes(mode: str) -> None:
    registry = governed_registry()
    made = counting_assemblies(registry)
    async with client(served(registry), mode=mode) as c:
        for _ in range(3):
            assert (await c.call_tool("price", {"product": "tea"})).is_error is False
        first = len(made)
        registry.register(PythonFunction.from_callable(lambda: 1, name="fresh", description="A new tool."))
        assert (await c.call_tool("fresh", {})).is_error is False  # the revision moved: assembled again
        again = len(made) - first
    # in 2026-07-28 every request (the client's tools/list included) has its own connection and scope: the same
    assert (first, again) == (1, 1)


@pytest.mark.parametrize("mode", ERAS)
async def test_a_scope_revoked_after_the_assembly_still_refuses_the_call(mode: str) -> None:
    held = {"pay"}

    async def authority(context: RequestContext) -> set[str]:  # asynchronous: assemblies never ask it
        return set(held)

    registry = paying_registry()
    registry.authority = authority
    made = counting_assemblies(registry)
    async with client(served(registry, context_for=with_scopes("pay")), mode=mode) as c:
        paid = await c.call_tool("pay", {"amount": 5})
        held.clear()  # revoked, with no revision bump
        refused = await c.call_tool("pay", {"amount": 5})
    assert paid.is_error is False
    assert refused.is_error is True and refused.structured_content is not None
    assert refused.structured_content["code"] == ToolFailureCodes.DENIED
    assert refused.structured_content["reason"] == "scope_revoked"
    assert len(made) == 1  # refused with the reused assembly


async def test_a_synchronous_authority_is_asked_for_every_request() -> None:
    held = {"pay"}
    registry = paying_registry()
    registry.authority = lambda context: set(held)
    made = counting_assemblies(registry)
    async with client(served(registry, context_for=with_scopes()), mode="legacy") as c:
        await c.list_tools()  # the client lists once, for the output schemas
        made.clear()
        paid = await c.call_tool("pay", {"amount": 5})
        held.clear()
        with pytest.raises(MCPError) as gone:  # a fresh assembly no longer shows it
            await c.call_tool("pay", {"amount": 5})
    assert paid.is_error is False
    assert gone.value.code == INVALID_PARAMS and gone.value.error.message == UNKNOWN_TOOL_MESSAGE
    assert len(made) == 2


async def test_a_feature_flag_is_evaluated_for_every_request() -> None:
    enabled = [True]
    registry = paying_registry(enabled_when=lambda context: enabled[0])
    async with client(served(registry, context_for=with_scopes("pay")), mode="legacy") as c:
        paid = await c.call_tool("pay", {"amount": 5})
        enabled[0] = False  # a flag may flip with no revision bump: no assembly with one is reused
        with pytest.raises(MCPError) as gone:
            await c.call_tool("pay", {"amount": 5})
    assert paid.is_error is False and gone.value.code == INVALID_PARAMS


async def test_a_deny_rule_keeps_every_request_assembled_afresh() -> None:
    registry = paying_registry()
    registry.add_deny_rule(lambda binding, metadata, context: None)
    made = counting_assemblies(registry)
    async with client(served(registry, context_for=with_scopes("pay")), mode="legacy") as c:
        await c.list_tools()  # the client lists once, for the output schemas
        made.clear()
        for _ in range(2):
            await c.call_tool("pay", {"amount": 5})
    assert len(made) == 2


async def test_a_reused_assembly_carries_each_requests_own_context() -> None:
    def fresh_request_id(request: McpRequest) -> RequestContext | None:
        found = context_for(request)
        return None if found is None else RequestContext(found.tenant_id, found.principal_id, request_id=uuid.uuid4().hex)

    registry = governed_registry()
    audited: list[Any] = []
    registry.register_audit_listener(audited.append)
    made = counting_assemblies(registry)
    async with client(served(registry, context_for=fresh_request_id), mode="legacy") as c:
        await c.call_tool("price", {"product": "tea"})
        await c.call_tool("price", {"product": "tea"})
    assert len(made) == 1
    assert len({record.request_id for record in audited}) == 2 and all(record.request_id for record in audited)


async def test_another_principal_on_the_same_connection_gets_its_own_assembly() -> None:
    registry = governed_registry()
    root = AgentPipelineScope()
    state: dict[str, Any] = {}
    alice, bob = RequestContext("acme", "alice"), RequestContext("globex", "bob")
    scope_a = connection_scope(state, root, alice, None)
    first = registry.assemble(alice, scope_a)
    assert registry.assemble(alice, scope_a) is first
    scope_b = connection_scope(state, root, bob, None)
    other = registry.assemble(bob, scope_b)
    assert other is not first and other.context == bob and "refund" not in other.names
    assert other.scope is scope_b
    scope_again = connection_scope(state, root, alice, None)
    again = registry.assemble(alice, scope_again)
    assert scope_again is not scope_a and again is not first and again.scope is scope_again and first.scope is scope_a


# ---------------------------------------------------------------- deferred approvals
class ParkingLog(InMemoryToolLog):
    """A sink that could hold a parked call (as a session store's step sink can)."""

    parks_approvals = True

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[str] = []

    async def approval_asked(self, execution: Any, reason: str | None) -> None:
        self.asked.append(execution.call_id)

    async def approval_decided(self, execution: Any, decision: Any) -> None:
        pass


@pytest.mark.parametrize("mode", ERAS)
@pytest.mark.parametrize("parking", [False, True])
async def test_a_deferred_approval_fails_closed_unavailable(mode: str, parking: bool) -> None:
    registry = governed_registry()
    registry.approval = Approver(ApprovalResult.DEFERRED)
    log = ParkingLog() if parking else InMemoryToolLog()
    async with client(served(registry, sink=log), mode=mode) as c:
        result = await c.call_tool("wire", {"amount": 5})
    assert result.is_error is True and result.structured_content is not None
    assert result.structured_content["code"] == ToolFailureCodes.UNAVAILABLE
    assert result.structured_content["reason"] == "approval_deferred"
    assert [outcome.code for outcome in log.outcomes] == [ToolFailureCodes.UNAVAILABLE]  # recorded, never parked


# ---------------------------------------------------------------- deferred tools named in _meta
async def test_in_2026_07_28_the_meta_key_loads_what_a_search_returned() -> None:
    bodies: list[str] = []
    async with client(served(deferred_registry(bodies)), "acme:alice", "2026-07-28") as c:
        found = await c.call_tool("tool_search", {"query": "money back"})
        assert found.structured_content is not None
        names = [tool["name"] for tool in found.structured_content["tools"]]
        meta = {LOADED_META_KEY: names}
        listed = [tool.name for tool in (await c.list_tools(meta=meta, cache_mode="refresh")).tools]  # type: ignore[arg-type]
        refunded = await c.call_tool("refund_order", {"order": "o-1", "amount": 5}, meta=meta)  # type: ignore[arg-type]
        by_alias = await c.call_tool("refund_order", {"order": "o-2", "amount": 1}, meta={LOADED_META_KEY: ["refund"]})  # type: ignore[arg-type]
    assert names == ["refund_order"] and "refund_order" in listed
    assert refunded.is_error is False and by_alias.is_error is False and bodies == ["refund_order", "refund_order"]


@pytest.mark.parametrize("mode", ERAS)
async def test_the_meta_key_loads_nothing_the_caller_cannot_see(mode: str) -> None:
    async with client(served(deferred_registry()), "globex:gina", mode) as c:
        def meta(names: Any) -> Any:
            return {LOADED_META_KEY: names}

        plain = [tool.name for tool in (await c.list_tools(cache_mode="refresh")).tools]
        other = [tool.name for tool in (await c.list_tools(meta=meta(["acme_payroll"]), cache_mode="refresh")).tools]
        nowhere = [tool.name for tool in (await c.list_tools(meta=meta(["no_such_tool"]), cache_mode="refresh")).tools]
        malformed = await c.call_tool("refund_order", {"order": "o-1", "amount": 5}, meta=meta("refund_order"))
        with pytest.raises(MCPError) as hidden:
            await c.call_tool("acme_payroll", {"employee": "e"}, meta=meta(["acme_payroll"]))
        with pytest.raises(MCPError) as missing:
            await c.call_tool("no_such_tool", {}, meta=meta(["no_such_tool"]))
    assert plain == other == nowhere and "acme_payroll" not in other
    assert malformed.structured_content is not None and malformed.structured_content["reason"] == "schema_not_loaded"
    assert (hidden.value.code, hidden.value.error.message) == (missing.value.code, missing.value.error.message)


# ---------------------------------------------------------------- the connection fallback
def test_mcp_2_3_offers_handlers_no_public_path_to_the_connection() -> None:
    """Why the server reads ``ServerSession._connection``: if this fails, the SDK grew a public path; use it."""
    public = [name for name in dir(ServerSession) if not name.startswith("_") and "connection" in name.lower()]
    assert public == []


def test_without_a_connection_state_each_request_stands_alone() -> None:
    class Bare:
        session = object()  # an SDK session without _connection

    assert connection_state(Bare()) is None
    registry = governed_registry()
    root = AgentPipelineScope()
    alice = RequestContext("acme", "alice")
    first, second = connection_scope(None, root, alice, None), connection_scope(None, root, alice, None)
    assert first is not None and second is not None and first is not second and first.parent is root
    one, two = registry.assemble(alice, first), registry.assemble(alice, second)
    assert (one.scope, two.scope) == (first, second) and one.digest == two.digest  # the same snapshot, each in its scope
    assert remember_loaded(None, alice, frozenset({"refund_order"})) is False
    assert loaded_names(None, alice) == frozenset()


async def test_the_server_still_serves_a_session_when_the_sdk_hides_the_connection(monkeypatch: pytest.MonkeyPatch) -> None:
    import tether_clr.mcp.server as server_module

    monkeypatch.setattr(server_module, "connection_state", lambda ctx: None)
    registry = governed_registry()
    scopes: list[Any] = []
    registry.register_guard(None, lambda execution: scopes.append(execution.scope))
    async with client(served(registry), mode="legacy") as c:
        first = await c.call_tool("price", {"product": "tea"})
        second = await c.call_tool("price", {"product": "tea"})
        with pytest.raises(MCPError):
            await c.call_tool("no_such_tool", {})
    assert first.is_error is False and second.is_error is False
    assert scopes[0] is not scopes[1] and scopes[0].owner == "alice"  # a scope per request, as in 2026-07-28


# ---------------------------------------------------------------- cancellation without a task per call
@pytest.mark.parametrize("mode", ERAS)
async def test_only_calls_outside_a_watched_connection_get_a_watcher_task_of_their_own(
    mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tether_clr.mcp.calls as calls_module

    watched: list[int] = []
    original = calls_module._watched

    async def counted(*args: Any) -> Any:
        watched.append(1)
        return await original(*args)

    monkeypatch.setattr(calls_module, "_watched", counted)
    async with client(served(governed_registry()), mode=mode) as c:
        for _ in range(2):
            await c.call_tool("price", {"product": "tea"})
    assert len(watched) == (0 if mode == "legacy" else 2)


async def test_the_end_of_the_connection_aborts_a_call_in_flight(monkeypatch: pytest.MonkeyPatch) -> None:
    from tether_clr.mcp import TetherMcpServer
    from tether_clr.mcp.inflight import CONNECTION_CLOSED
    from tests.support.mcp_servers import Gate

    async def ignore(self: Any, ctx: Any, params: Any) -> None:  # as if notifications/cancelled never came
        return None

    monkeypatch.setattr(TetherMcpServer, "_cancelled", ignore)
    gate = Gate()
    log = InMemoryToolLog()
    server = served(governed_registry(gate), sink=log)
    with anyio.fail_after(20):
        async with client(server) as c:
            async with anyio.create_task_group() as group:
                group.start_soon(c.call_tool, "slow", {})
                await gate.started.wait()
                group.cancel_scope.cancel()
        # the client is gone: its connection ended, and with it the call
        while not log.outcomes:
            await anyio.sleep(0.01)
    assert log.outcomes[0].code == ToolFailureCodes.ABORTED
    assert CONNECTION_CLOSED in (log.outcomes[0].failure.message if log.outcomes[0].failure else "")


async def test_connection_calls_cancel_by_request_id_and_all_at_the_end() -> None:
    from tether_clr.foundations.cancellation import CancellationSource
    from tether_clr.mcp.inflight import ConnectionCalls

    calls = ConnectionCalls()
    first, second, third = CancellationSource(), CancellationSource(), CancellationSource()
    calls.add(7, first)
    key = calls.add("8", second)
    calls.add(9, third)
    calls.cancel("7", "stop")  # the SDK's correlation: "7" and 7 are one id
    calls.cancel(99, "stop")  # not in flight: nothing
    calls.discard(key, second)
    async with anyio.create_task_group() as group:
        group.start_soon(calls.watch)
        await anyio.wait_all_tasks_blocked()
        assert calls.watching
        group.cancel_scope.cancel()
    assert (first.is_cancelled, second.is_cancelled, third.is_cancelled) == (True, False, True)
    assert first.reason == "stop" and not calls.watching


def test_call_ids_differ_in_a_forked_child() -> None:
    """A pre-forking server's workers share one log: each draws its own prefix, so their call ids never collide."""
    import os

    from tether_clr.mcp.calls import new_call_id

    here = new_call_id()
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child reports through the pipe and exits, whatever happens
        code = 1
        try:
            os.write(write, new_call_id().encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    with os.fdopen(read) as answer:
        there = answer.read()
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    prefix = here.rsplit("-", 1)[0]
    assert there.startswith("mcp-") and not there.startswith(prefix + "-")
    assert new_call_id().startswith(prefix + "-")  # the parent keeps its own

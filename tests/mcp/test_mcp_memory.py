"""The MCP server driven in memory by the SDK's real client, in both protocol eras.

``mode="legacy"`` runs the handshake era over the SDK's in-memory streams
(``InMemoryTransport``); the client's default for an in-process server runs the
2026-07-28 era (no initialize, the per-request ``_meta`` envelope) through the
SDK's direct dispatcher.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, Implementation

from tests.support.doubles import Approver
from tests.support.mcp_servers import Gate, async_context_for, governed_registry, served
from tether_clr import ApprovalResult, InMemoryToolLog, PythonFunction, ToolFailureCodes
from tether_clr.mcp import NO_CONTEXT_MESSAGE

pytestmark = pytest.mark.anyio

ERAS = ["legacy", "2026-07-28"]


def client(server: Any, who: str = "acme:alice", mode: str = "legacy", **kwargs: Any) -> Client:
    return Client(server.sdk_server, mode=mode, client_info=Implementation(name=who, version="1"), **kwargs)


async def all_tools(c: Client) -> list[Any]:
    tools, cursor = [], None
    for _ in range(100):
        page = await c.list_tools(cursor=cursor, cache_mode="refresh")
        tools.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            return tools
    raise AssertionError("the listing never ended")


@pytest.mark.parametrize("mode", ERAS)
async def test_listing_is_per_tenant_with_titles_and_annotations(mode: str) -> None:
    server = served(governed_registry())
    async with client(server, "acme:alice", mode) as acme, client(server, "globex:bob", mode) as globex:
        acme_tools = {tool.name: tool for tool in await all_tools(acme)}
        globex_names = [tool.name for tool in await all_tools(globex)]
    assert list(acme_tools) == ["delete_all", "price", "refund", "wire"]
    assert globex_names == ["delete_all", "price", "wire"]
    assert acme_tools["price"].title == "Price"
    assert acme_tools["price"].annotations is not None and acme_tools["price"].annotations.read_only_hint is True
    assert acme_tools["price"].input_schema["properties"]["product"]["type"] == "string"


@pytest.mark.parametrize("mode", ERAS)
async def test_pagination_with_opaque_cursors(mode: str) -> None:
    server = served(governed_registry(filler=7), page_size=3)
    async with client(server, mode=mode) as c:
        first = await c.list_tools(cache_mode="refresh")
        assert len(first.tools) == 3 and first.next_cursor is not None
        assert not first.next_cursor.isdigit()  # opaque: not the offset in clear
        names = [tool.name for tool in await all_tools(c)]
        again = [tool.name for tool in await all_tools(c)]
        with pytest.raises(MCPError) as bad:
            await c.list_tools(cursor="not-a-cursor", cache_mode="refresh")
    assert len(names) == 11 and names == again and len(set(names)) == 11
    assert names[:4] == ["delete_all", "price", "refund", "tool_000"]
    assert bad.value.code == INVALID_PARAMS


@pytest.mark.parametrize("mode", ERAS)
async def test_a_call_runs_through_the_pipeline_and_the_sink(mode: str) -> None:
    log = InMemoryToolLog()
    server = served(governed_registry(), sink=log)
    async with client(server, mode=mode) as c:
        result = await c.call_tool("price", {"product": "tea", "quantity": 4})
    assert result.is_error is False
    assert result.structured_content == {"result": 10.0}
    assert [call.name for call in log.calls] == ["price"]
    assert log.outcomes[0].value == 10.0


@pytest.mark.parametrize("mode", ERAS)
async def test_failures_are_error_results_with_code_reason_and_message(mode: str) -> None:
    server = served(governed_registry())
    async with client(server, mode=mode) as c:
        denied = await c.call_tool("delete_all", {})
        invalid = await c.call_tool("price", {"quantity": "many"})
    assert denied.is_error is True and denied.structured_content is not None
    assert denied.structured_content["code"] == ToolFailureCodes.DENIED
    assert "not allowed" in denied.structured_content["message"]
    assert invalid.is_error is True and invalid.structured_content is not None
    assert invalid.structured_content["code"] == ToolFailureCodes.INVALID_ARGS


@pytest.mark.parametrize("mode", ERAS)
async def test_unknown_and_invisible_tools_get_the_same_json_rpc_error(mode: str) -> None:
    server = served(governed_registry())
    async with client(server, "globex:bob", mode) as c:
        errors = []
        for name in ("refund", "exists_nowhere"):  # refund: acme's tool, invisible to globex
            with pytest.raises(MCPError) as caught:
                await c.call_tool(name, {"order": "o-1"})
            errors.append((caught.value.code, caught.value.message))
    assert errors[0] == errors[1] and errors[0][0] == INVALID_PARAMS


@pytest.mark.parametrize("mode", ERAS)
async def test_a_request_with_no_context_is_refused(mode: str) -> None:
    log = InMemoryToolLog()
    server = served(governed_registry(), sink=log, context_for=async_context_for)
    async with client(server, "anonymous", mode) as c:
        with pytest.raises(MCPError) as listing:
            await c.list_tools(cache_mode="refresh")
        with pytest.raises(MCPError) as calling:
            await c.call_tool("price", {"product": "tea"})
    assert listing.value.message == calling.value.message == NO_CONTEXT_MESSAGE
    assert log.calls == [] and log.outcomes == []


@pytest.mark.parametrize("mode", ERAS)
@pytest.mark.parametrize("answer", [ApprovalResult.APPROVED, ApprovalResult.REJECTED])
async def test_an_approval_gated_call_asks_the_registrys_provider(mode: str, answer: ApprovalResult) -> None:
    registry = governed_registry()
    approver = Approver(answer)
    registry.approval = approver
    async with client(served(registry), mode=mode) as c:
        result = await c.call_tool("wire", {"amount": 5})
    assert len(approver.requests) == 1
    if answer is ApprovalResult.APPROVED:
        assert result.is_error is False and result.structured_content == {"result": "sent 5"}
    else:
        assert result.is_error is True and result.structured_content is not None
        assert result.structured_content["code"] == ToolFailureCodes.DENIED


async def test_with_no_approval_provider_an_approval_gated_call_fails_closed() -> None:
    async with client(served(governed_registry())) as c:
        result = await c.call_tool("wire", {"amount": 5})
    assert result.is_error is True and result.structured_content is not None
    assert result.structured_content["code"] == ToolFailureCodes.DENIED


async def test_list_changed_is_declared_and_sent_after_a_registration() -> None:
    registry = governed_registry()
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if getattr(getattr(message, "root", message), "method", None) == "notifications/tools/list_changed":
            changed.set()

    async with client(served(registry), message_handler=on_message) as c:
        assert c.server_capabilities.tools is not None and c.server_capabilities.tools.list_changed is True
        before = [tool.name for tool in await all_tools(c)]
        registry.register(PythonFunction.from_callable(lambda: 1, name="fresh", description="A new tool."))
        with anyio.fail_after(10):
            await changed.wait()
        after = [tool.name for tool in await all_tools(c)]
    assert "fresh" not in before and "fresh" in after


@pytest.mark.parametrize("mode", ERAS)
async def test_a_cancelled_call_ends_aborted_and_is_recorded(mode: str) -> None:
    gate = Gate()
    log = InMemoryToolLog()
    server = served(governed_registry(gate), sink=log)
    async with client(server, mode=mode) as c:
        async with anyio.create_task_group() as group:
            group.start_soon(c.call_tool, "slow", {})
            with anyio.fail_after(10):
                await gate.started.wait()
            group.cancel_scope.cancel()  # the client abandons the request: notifications/cancelled
        with anyio.fail_after(10):
            while not log.outcomes:
                await anyio.sleep(0.01)
    assert log.outcomes[0].code == ToolFailureCodes.ABORTED


@pytest.mark.parametrize("mode", ERAS)
async def test_each_session_runs_in_a_child_scope_owned_by_the_principal(mode: str) -> None:
    from tether_clr import AgentPipelineScope

    root = AgentPipelineScope()
    registry = governed_registry()
    seen: list[Any] = []
    registry.register_guard(None, lambda execution: seen.append(execution.scope))
    async with client(served(registry, scope=root), mode=mode) as c:
        await c.call_tool("price", {"product": "tea"})
        await c.call_tool("price", {"product": "tea"})
    assert all(scope.parent is root and scope.owner == "alice" and scope.session_id for scope in seen)
    # the handshake era keeps one scope for the session; 2026-07-28 makes one per request
    assert (seen[0] is seen[1]) == (mode == "legacy")


async def test_in_2026_07_28_list_changed_comes_through_subscriptions_listen() -> None:
    from mcp.shared.subscriptions import ToolsListChanged

    registry = governed_registry()
    async with client(served(registry), mode="auto") as c:  # auto: server/discover, so the capabilities are the server's
        assert c.protocol_version == "2026-07-28"
        assert c.server_capabilities.tools is not None and c.server_capabilities.tools.list_changed is True
        async with c.listen(tools_list_changed=True) as subscription:
            registry.register(PythonFunction.from_callable(lambda: 1, name="fresh", description="A new tool."))
            with anyio.fail_after(10):
                event = await subscription.__anext__()
        after = [tool.name for tool in await all_tools(c)]
    assert isinstance(event, ToolsListChanged) and "fresh" in after


async def test_subscriptions_listen_with_no_context_is_refused() -> None:
    async with client(served(governed_registry()), "anonymous", mode="2026-07-28") as c:
        with pytest.raises(MCPError) as refused:
            async with c.listen(tools_list_changed=True):
                pass
    assert refused.value.message == NO_CONTEXT_MESSAGE


async def test_audit_records_who_asked_over_mcp() -> None:
    registry = governed_registry()
    records: list[Any] = []
    registry.register_audit_listener(records.append)
    async with client(served(registry), "acme:alice") as c:
        await c.call_tool("price", {"product": "tea"})
        await c.call_tool("delete_all", {})
    assert [(r.tenant_id, r.principal_id, r.requested_name, r.decision) for r in records] == [
        ("acme", "alice", "price", "dispatched"), ("acme", "alice", "delete_all", "refused")]

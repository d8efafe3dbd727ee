"""Deferred tools over MCP: listed through the search tool, loaded for the session by a search."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.types import Implementation

from tests.support.deferred_tools import deferred_registry
from tests.support.mcp_servers import served
from tether_clr import ToolFailureCodes

pytestmark = pytest.mark.anyio


def client(server: Any, who: str, mode: str, **kwargs: Any) -> Client:
    return Client(server.sdk_server, mode=mode, client_info=Implementation(name=who, version="1"), **kwargs)


async def names(c: Client) -> list[str]:
    return [tool.name for tool in (await c.list_tools(cache_mode="refresh")).tools]


async def test_a_search_loads_the_schema_for_the_rest_of_the_session() -> None:
    bodies: list[str] = []
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if getattr(getattr(message, "root", message), "method", None) == "notifications/tools/list_changed":
            changed.set()

    async with client(served(deferred_registry(bodies)), "acme:alice", "legacy", message_handler=on_message) as c:
        before = await names(c)
        refused = await c.call_tool("refund_order", {"order": "o-1", "amount": 5})
        found = await c.call_tool("tool_search", {"query": "money back", "limit": 5})
        with anyio.fail_after(10):
            await changed.wait()
        after = await names(c)
        refunded = await c.call_tool("refund_order", {"order": "o-1", "amount": 5})
    assert before == ["lookup_order", "tool_search"]
    assert refused.structured_content is not None
    assert refused.structured_content["code"] == ToolFailureCodes.INVALID_ARGS
    assert refused.structured_content["reason"] == "schema_not_loaded"
    assert found.structured_content is not None and [t["name"] for t in found.structured_content["tools"]] == ["refund_order"]
    assert sorted(after) == ["lookup_order", "refund_order", "tool_search"]
    assert refunded.is_error is False and bodies == ["refund_order"]


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_a_search_never_returns_another_tenants_tool(mode: str) -> None:
    server = served(deferred_registry())
    results = []
    for query in ("acme_payroll", "salary", "acmf_payroll"):  # one session each: a search loads its matches
        async with client(server, "globex:gina", mode) as c:
            results.append(await c.call_tool("tool_search", {"query": query, "limit": 20}))
    found, salary, nowhere = results
    # answered exactly as for a name that exists nowhere
    assert found.structured_content is not None and nowhere.structured_content is not None
    assert found.structured_content["tools"] == nowhere.structured_content["tools"]
    for result in (found, salary):  # globex's own payroll matches; acme's never does
        assert result.structured_content is not None
        assert [t["name"] for t in result.structured_content["tools"]] == ["globex_payroll"]


async def test_in_2026_07_28_a_search_loads_nothing_for_later_requests() -> None:
    async with client(served(deferred_registry()), "acme:alice", "2026-07-28") as c:
        await c.call_tool("tool_search", {"query": "money back"})
        refused = await c.call_tool("refund_order", {"order": "o-1", "amount": 5})
    assert refused.structured_content is not None and refused.structured_content["reason"] == "schema_not_loaded"

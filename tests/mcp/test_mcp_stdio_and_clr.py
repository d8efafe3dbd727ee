"""The MCP server over stdio as a subprocess, and a C# and a Python tool from one server."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, Implementation

from tests.support.mcp_servers import context_for, price
from tether_clr import PythonFunction, ToolFailureCodes, ToolRegistry
from tether_clr.mcp import create_server

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_over_stdio_as_a_subprocess(mode: str) -> None:
    params = StdioServerParameters(command=sys.executable, args=["-m", "tests.support.mcp_stdio_child"], cwd=str(ROOT))
    async with Client(params, mode=mode, client_info=Implementation(name="globex:bob", version="1")) as c:
        listed = {tool.name: tool for tool in (await c.list_tools(cache_mode="refresh")).tools}
        names = list(listed)
        result = await c.call_tool("price", {"product": "tea", "quantity": 2})
        denied = await c.call_tool("delete_all", {})
        with pytest.raises(MCPError) as invisible:
            await c.call_tool("refund", {"order": "o-1"})
    assert names == ["delete_all", "price", "wire"]
    # no metadata, no hints: the client reads "may be destructive, open world", never "safe"
    assert listed["delete_all"].annotations is None and listed["wire"].annotations is None
    assert listed["price"].annotations is not None and listed["price"].annotations.model_dump(by_alias=True, exclude_none=True) == {
        "title": "Price", "readOnlyHint": True, "destructiveHint": False, "idempotentHint": True}
    assert result.structured_content == {"result": 5.0}
    assert denied.structured_content is not None and denied.structured_content["code"] == ToolFailureCodes.DENIED
    assert invisible.value.code == INVALID_PARAMS


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_a_csharp_and_a_python_tool_from_one_server(clr_tools: dict[str, Any], mode: str) -> None:
    registry = ToolRegistry()
    registry.register(clr_tools["functions"]["Add"])
    registry.register(PythonFunction.from_callable(price))
    server = create_server(registry, context_for=context_for)
    async with Client(server.sdk_server, mode=mode, client_info=Implementation(name="acme:alice", version="1")) as c:
        listed = (await c.list_tools(cache_mode="refresh")).tools
        names = [tool.name for tool in listed]
        added = await c.call_tool("Add", {"a": 2, "b": 3})
        priced = await c.call_tool("price", {"product": "tea"})
        invalid = await c.call_tool("Add", {"a": "two"})
    assert names == ["Add", "price"]
    assert listed[0].annotations is None  # a C# tool registered without metadata claims nothing
    assert added.is_error is False and added.structured_content == {"result": 5}
    assert priced.is_error is False and priced.structured_content == {"result": 2.5}
    assert invalid.is_error is True and invalid.structured_content is not None
    assert invalid.structured_content["code"] == ToolFailureCodes.INVALID_ARGS


async def test_the_readme_example_serves_over_stdio() -> None:
    params = StdioServerParameters(command=sys.executable, args=["-m", "examples.mcp_server"], cwd=str(ROOT),
                                   env={**__import__("os").environ, "TETHER_TENANT": "acme", "TETHER_PRINCIPAL": "alice"})
    async with Client(params, mode="legacy") as c:
        names = [tool.name for tool in (await c.list_tools(cache_mode="refresh")).tools]
        result = await c.call_tool("shout", {"text": "hi"})
    assert names == ["echo", "shout"]
    assert result.is_error is False and result.structured_content == {"result": "HI"}

"""The client matrix (issue 28, item 6): ``tether-clr mcp serve`` as a subprocess, over stdio and streamable HTTP,
driven by the clients users connect it to.

* The ``mcp`` SDK's own ``Client``, in ``legacy`` (the handshake era) and ``auto`` (its default: 2026-07-28).
* The OpenAI Agents SDK's ``MCPServerStdio`` and ``MCPServerStreamableHttp``, used directly (connect, list, call).
* pydantic-ai's ``MCPToolset`` in an ``Agent`` run by ``FunctionModel``: a scripted model's tool calls reach the
  governed tools through the agent's own tool loop.

Each client, on each transport, checks the same rules against one served catalog
(:mod:`tests.support.mcp_matrix_cli_tools` and the C# fixtures, ``PAGE_SIZE`` tools a page so the listing spans
two pages): every visible tool is listed, a call succeeds, a guarded call is DENIED (``isError``, the code in
``structuredContent``), an unknown tool is an error the client surfaces, an approval-gated call with no
elicitation fails closed (DENIED), and a C# tool answers.

The Agents SDK and pydantic-ai run on asyncio only (the Agents SDK's servers use asyncio primitives; pydantic-ai's agent loop and
FastMCP's client are written for asyncio), so this module pins the anyio backend to asyncio.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from tests.support import ROOT

try:
    import agents.mcp as agents_mcp
    import pydantic_ai.mcp as pydantic_ai_mcp
except ImportError as missing:  # ./tasks.sh test installs the clients extra; .ci/run requires it
    if os.environ.get("TETHER_REQUIRE_CLIENTS") == "1":
        raise
    pytest.skip(f"the clients extra (openai-agents, pydantic-ai-slim[mcp]) is not installed: {missing}", allow_module_level=True)

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

PAGE_SIZE = 16
"""Tools per ``tools/list`` page: fewer than the 21 served (4 Python, 17 C#), so listing takes two pages."""
PYTHON_TOOLS = {"price", "refund", "delete_all", "wire"}
SERVE_ARGS = ["-m", "tether_clr.cli", "mcp", "serve", "--tools", "tests.support.mcp_matrix_cli_tools:register",
              "--tenant", "acme", "--principal", "alice", "--page-size", str(PAGE_SIZE)]
UNKNOWN = "no_such_tool"


@pytest.fixture
def anyio_backend() -> str:
    """asyncio only: neither client library runs on trio (see the module's docstring)."""
    return "asyncio"


@pytest.fixture
def served(clr_tools: dict[str, Any]) -> tuple[list[str], set[str]]:
    """The serve command's arguments (with the C# fixtures' assembly) and the names every client must list."""
    from tether_clr.clr import build_fixtures

    names = PYTHON_TOOLS | set(clr_tools["functions"])
    assert PAGE_SIZE < len(names) <= 2 * PAGE_SIZE  # two pages
    return [*SERVE_ARGS, "--assembly", str(build_fixtures())], names


@asynccontextmanager
async def http_server(args: list[str]) -> AsyncIterator[str]:
    """``mcp serve --transport http`` on a free port; yields its URL, then stops it with SIGTERM (exit 0)."""
    process = subprocess.Popen(
        [sys.executable, *args, "--transport", "http", "--port", "0"],
        cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert process.stderr is not None
        line = ""
        with anyio.fail_after(30):
            while not line.startswith("serving MCP at "):
                line = await anyio.to_thread.run_sync(process.stderr.readline)
                assert line, "the server exited before serving"
        yield line.split()[3].rstrip(";")
    finally:
        process.send_signal(signal.SIGTERM)
        code = await anyio.to_thread.run_sync(lambda: process.wait(30))
        if process.stderr is not None:
            process.stderr.close()
    assert code == 0


def stdio_params(args: list[str]) -> dict[str, Any]:
    return {"command": sys.executable, "args": args, "cwd": str(ROOT), "env": dict(os.environ)}


# --- the mcp SDK's Client, in legacy and auto --------------------------------------------------------------------


async def _sdk_rules(client: Any, names: set[str]) -> None:
    from mcp.shared.exceptions import MCPError
    from mcp.types import INVALID_PARAMS

    listed: list[str] = []
    cursor = None
    pages = 0
    while True:  # the client's own paging: the cursor the server gave
        page = await client.list_tools(cursor=cursor, cache_mode="refresh")
        listed.extend(tool.name for tool in page.tools)
        pages += 1
        cursor = page.next_cursor
        if cursor is None:
            break
    assert pages == 2 and sorted(listed) == sorted(names)
    priced = await client.call_tool("price", {"product": "tea", "quantity": 2})
    assert priced.is_error is False and priced.structured_content == {"result": 5.0}
    denied = await client.call_tool("delete_all", {})
    assert denied.is_error is True and (denied.structured_content or {}).get("code") == "DENIED"
    gated = await client.call_tool("wire", {"amount": 5})  # no elicitation handler, no approval provider
    assert gated.is_error is True and (gated.structured_content or {}).get("code") == "DENIED"
    added = await client.call_tool("Add", {"a": 2, "b": 3})
    assert added.is_error is False and added.structured_content == {"result": 5}
    with pytest.raises(MCPError) as unknown:
        await client.call_tool(UNKNOWN, {})
    assert unknown.value.code == INVALID_PARAMS


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_mcp_sdk_client_over_stdio_lists_two_pages_calls_and_fails_closed(
    served: tuple[list[str], set[str]], mode: str
) -> None:
    from mcp import Client, StdioServerParameters

    args, names = served
    params = StdioServerParameters(**stdio_params(args))
    with anyio.fail_after(50):
        async with Client(params, mode=mode) as client:
            await _sdk_rules(client, names)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_mcp_sdk_client_over_streamable_http_lists_two_pages_calls_and_fails_closed(
    served: tuple[list[str], set[str]], mode: str
) -> None:
    from tests.support.mcp_http import http_client

    args, names = served
    async with http_server(args) as url:
        with anyio.fail_after(50):
            async with http_client(url, {}, mode) as client:
                await _sdk_rules(client, names)


# --- the OpenAI Agents SDK: MCPServerStdio / MCPServerStreamableHttp, used directly ----------------------------


async def _agents_rules(server: Any, names: set[str]) -> None:
    from mcp.shared.exceptions import MCPError

    listed = [tool.name for tool in await server.list_tools()]
    assert sorted(listed) == sorted(names), "the listing follows the cursor to the second page"
    priced = await server.call_tool("price", {"product": "tea", "quantity": 2})
    assert priced.is_error is False and priced.structured_content == {"result": 5.0}
    denied = await server.call_tool("delete_all", {})
    assert denied.is_error is True and denied.structured_content["code"] == "DENIED"
    gated = await server.call_tool("wire", {"amount": 5})  # no elicitation declared, no approval provider
    assert gated.is_error is True and gated.structured_content["code"] == "DENIED"
    added = await server.call_tool("Add", {"a": 2, "b": 3})
    assert added.is_error is False and added.structured_content == {"result": 5}
    # The Agents SDK lets the server's JSON-RPC error (-32602, unknown tool) propagate from call_tool.
    with pytest.raises(MCPError) as unknown:
        await server.call_tool(UNKNOWN, {})
    assert "Unknown tool" in str(unknown.value)


async def test_agents_sdk_over_stdio_lists_two_pages_calls_and_fails_closed(served: tuple[list[str], set[str]]) -> None:
    args, names = served
    server = agents_mcp.MCPServerStdio(stdio_params(args), client_session_timeout_seconds=30)
    with anyio.fail_after(50):
        async with server:
            await _agents_rules(server, names)


async def test_agents_sdk_over_streamable_http_lists_two_pages_calls_and_fails_closed(served: tuple[list[str], set[str]]) -> None:
    args, names = served
    async with http_server(args) as url:
        server = agents_mcp.MCPServerStreamableHttp({"url": url, "timeout": 30}, client_session_timeout_seconds=30)
        with anyio.fail_after(50):
            async with server:
                await _agents_rules(server, names)


# --- pydantic-ai: MCPToolset in an Agent run by FunctionModel -----------------------------------------------------


async def _pydantic_ai_rules(toolset: Any, names: set[str]) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.exceptions import ModelRetry
    from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    listed: list[str] = []
    answers: dict[str, ToolReturnPart] = {}

    def scripted(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        """First turn: call every tool of the rules at once; second turn: read the answers and stop."""
        if len(messages) == 1:
            listed.extend(tool.name for tool in info.function_tools)
            return ModelResponse(parts=[
                ToolCallPart("price", {"product": "tea", "quantity": 2}, tool_call_id="price"),
                ToolCallPart("delete_all", {}, tool_call_id="denied"),
                ToolCallPart("wire", {"amount": 5}, tool_call_id="gated"),
                ToolCallPart("Add", {"a": 2, "b": 3}, tool_call_id="csharp"),
                ToolCallPart(UNKNOWN, {}, tool_call_id="unknown"),
            ])
        request = messages[-1]
        assert isinstance(request, ModelRequest)
        answers.update({part.tool_call_id: part for part in request.parts if isinstance(part, ToolReturnPart)})
        return ModelResponse(parts=[TextPart("done")])

    agent = Agent(FunctionModel(scripted), toolsets=[toolset])
    with anyio.fail_after(50):
        async with toolset:
            result = await agent.run("check the governed tools")
            # Called directly (not through the model), the unknown name reaches the server, whose -32602 answer
            # the toolset raises as its tool error (ModelRetry, with tool_error_behavior="retry").
            with pytest.raises(ModelRetry, match="Unknown tool"):
                await toolset.direct_call_tool(UNKNOWN, {})
    assert result.output == "done"
    assert sorted(listed) == sorted(names), "the agent's tools span both pages"
    assert answers["price"].content == 5.0 and answers["price"].outcome == "success"
    assert answers["csharp"].content == 5 and answers["csharp"].outcome == "success"
    # An isError result becomes a retry prompt to the model (tool_error_behavior="retry", the default), its text the
    # structured content: the code reaches the model.
    for call in ("denied", "gated"):
        assert answers[call].outcome == "retried"
        assert json.loads(str(answers[call].content))["code"] == "DENIED"
    # A model's call of a name the toolset never listed is answered by pydantic-ai itself, without a request.
    assert answers["unknown"].outcome == "retried" and "Unknown tool name" in str(answers["unknown"].content)


async def test_pydantic_ai_agent_over_stdio_reaches_the_governed_tools(served: tuple[list[str], set[str]]) -> None:
    from fastmcp.client import Client
    from fastmcp.client.transports import StdioTransport

    args, names = served
    params = stdio_params(args)
    transport = StdioTransport(params["command"], params["args"], env=params["env"], cwd=params["cwd"])
    await _pydantic_ai_rules(pydantic_ai_mcp.MCPToolset(Client(transport, timeout=30)), names)


async def test_pydantic_ai_agent_over_streamable_http_reaches_the_governed_tools(served: tuple[list[str], set[str]]) -> None:
    args, names = served
    async with http_server(args) as url:
        await _pydantic_ai_rules(pydantic_ai_mcp.MCPToolset(url, read_timeout=30), names)

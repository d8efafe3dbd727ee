"""One scenario, every transport: the MCP server driven by the SDK's real client in memory, over stdio (a
subprocess per client) and over streamable HTTP on 127.0.0.1, in both protocol eras.

The scenario covers what the server promises on each of them: pagination, per-tenant listings, a
request with no context, an unknown tool and an invisible one (the same error), a C# and a Python tool
from one server, a DENIED call, an approval-gated call (approved and rejected), a cancelled call ending
ABORTED and recorded, and ``list_changed`` after a registration. The server is
:mod:`tests.support.mcp_matrix`; what the test needs to know of its state it asks over MCP (``probe``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, ExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, Implementation

from tests.support.mcp_http import http_client, serving
from tests.support.mcp_matrix import APPROVAL_LIMIT, PAGE_SIZE, matrix_server
from tether_clr import ToolFailureCodes
from tether_clr.mcp import NO_CONTEXT_MESSAGE

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(180)]

ROOT = Path(__file__).resolve().parents[2]
TRANSPORTS = ["memory", "stdio", "http"]
ERAS = {"legacy": "2025-11-25", "auto": "2026-07-28"}
"""The client's mode and the protocol version it must end up speaking: the handshake era's last, and 2026-07-28."""

OpenClient = Callable[..., AbstractAsyncContextManager[Client]]


@asynccontextmanager
async def transport(kind: str, mode: str, add: Any) -> AsyncIterator[OpenClient]:
    """``open_client(who, **client_options)`` for one transport: ``who`` is ``"tenant:principal"``, or
    ``"anonymous"`` for a request with no identity. Memory and HTTP clients share one server; over stdio
    each client starts its own server process, as an MCP host does."""
    with ExitStack() as stack:
        if kind == "stdio":
            environment = {**os.environ, "PYTHONPATH": str(ROOT)}

            def open_client(who: str, **options: Any) -> Client:
                params = StdioServerParameters(command=sys.executable, args=["-m", "tests.support.mcp_matrix_child"],
                                               cwd=str(ROOT), env=environment)
                return Client(params, mode=mode, client_info=Implementation(name=who, version="1"), **options)
        elif kind == "http":
            server = matrix_server(add)
            url = stack.enter_context(serving(lambda: server.streamable_http_app(path="/mcp")))

            def open_client(who: str, **options: Any) -> Client:
                tenant, _, principal = who.partition(":")
                return http_client(url, {"x-tenant": tenant, "x-principal": principal} if principal else {}, mode, **options)
        else:
            server = matrix_server(add)

            def open_client(who: str, **options: Any) -> Client:
                return Client(server.sdk_server, mode=mode, client_info=Implementation(name=who, version="1"), **options)

        yield open_client


async def listing(c: Client) -> tuple[list[str], int]:
    """Every tool's name, page by page, and how many pages there were."""
    names: list[str] = []
    cursor = None
    for pages in range(1, 100):
        page = await c.list_tools(cursor=cursor, cache_mode="refresh")
        assert len(page.tools) <= PAGE_SIZE
        names.extend(tool.name for tool in page.tools)
        cursor = page.next_cursor
        if cursor is None:
            return names, pages
    raise AssertionError("the listing never ended")


async def probe(c: Client) -> dict[str, Any]:
    result = await c.call_tool("probe", {})
    assert result.is_error is False and isinstance(result.structured_content, dict)
    return result.structured_content


def code_of(result: Any) -> str | None:
    return None if not result.is_error else str(result.structured_content["code"])


async def until(c: Client, what: str) -> dict[str, Any]:
    with anyio.fail_after(30):
        while not (seen := await probe(c))[what]:
            await anyio.sleep(0.02)
    return seen


@pytest.mark.parametrize("mode", list(ERAS))
@pytest.mark.parametrize("kind", TRANSPORTS)
async def test_the_server_keeps_its_promises_on_every_transport_and_era(clr_tools: dict[str, Any], kind: str, mode: str) -> None:
    add = clr_tools["functions"]["Add"]
    acme_tools = ["Add", "delete_all", "price", "probe", "refund", "register_fresh", "slow", "wire"]
    async with transport(kind, mode, add) as open_client:
        async with open_client("globex:bob") as c:
            assert c.protocol_version == ERAS[mode]
            globex_names, _ = await listing(c)
            with pytest.raises(MCPError) as invisible:  # refund is acme's
                await c.call_tool("refund", {"order": "o-1"})
        async with open_client("anonymous") as c:
            with pytest.raises(MCPError) as unlisted:
                await c.list_tools(cache_mode="refresh")
            with pytest.raises(MCPError) as uncalled:
                await c.call_tool("price", {"product": "tea"})

        changed = anyio.Event()

        async def on_message(message: Any) -> None:
            if getattr(getattr(message, "root", message), "method", None) == "notifications/tools/list_changed":
                changed.set()

        async with open_client("acme:alice", message_handler=on_message) as c:
            names, pages = await listing(c)
            again, _ = await listing(c)
            with pytest.raises(MCPError) as unknown:
                await c.call_tool("no_such_tool", {})
            added, priced, invalid = (await c.call_tool("Add", {"a": 2, "b": 3}), await c.call_tool("price", {"product": "tea"}),
                                      await c.call_tool("Add", {"a": "two"}))
            denied = await c.call_tool("delete_all", {})
            small, large = (await c.call_tool("wire", {"amount": APPROVAL_LIMIT}),
                            await c.call_tool("wire", {"amount": APPROVAL_LIMIT + 1}))

            async with anyio.create_task_group() as group:  # a call the client abandons: notifications/cancelled
                group.start_soon(c.call_tool, "slow", {})
                await until(c, "slow_started")
                group.cancel_scope.cancel()
            cancelled = (await until(c, "slow"))["slow"]

            assert c.server_capabilities.tools is not None and c.server_capabilities.tools.list_changed is True
            if mode == "legacy":
                await c.call_tool("register_fresh", {})
                with anyio.fail_after(30):
                    await changed.wait()
            else:
                async with c.listen(tools_list_changed=True) as subscription:
                    await c.call_tool("register_fresh", {})
                    with anyio.fail_after(30):
                        await subscription.__anext__()
            after, _ = await listing(c)

    # per-tenant listings, in pages of PAGE_SIZE, in a deterministic order
    assert sorted(names) == sorted(acme_tools) and names == again and pages == 3
    assert sorted(globex_names) == sorted(set(acme_tools) - {"refund"})
    # no context: nothing listed, nothing run
    assert unlisted.value.message == uncalled.value.message == NO_CONTEXT_MESSAGE
    # an unknown tool and one the caller cannot see: the same JSON-RPC error
    assert unknown.value.code == invisible.value.code == INVALID_PARAMS
    assert unknown.value.message == invisible.value.message
    # a C# and a Python tool from one server; a tool failure is a result the model can correct
    assert (code_of(added), added.structured_content) == (None, {"result": 5})
    assert (code_of(priced), priced.structured_content) == (None, {"result": 2.5})
    assert code_of(invalid) == ToolFailureCodes.INVALID_ARGS
    # a guard's refusal; an approval-gated call, approved and rejected by the registry's provider
    assert code_of(denied) == ToolFailureCodes.DENIED
    assert (code_of(small), small.structured_content) == (None, {"result": f"sent {APPROVAL_LIMIT}"})
    assert code_of(large) == ToolFailureCodes.DENIED
    # the cancelled call ended ABORTED, and the sink recorded it
    assert cancelled == [ToolFailureCodes.ABORTED]
    # list_changed after a registration, and the new tool listed
    assert sorted(after) == sorted([*acme_tools, "fresh"])

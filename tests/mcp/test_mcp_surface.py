"""tether_clr.mcp's public namespace, what create_server checks, and what context_for is given."""

from __future__ import annotations

import inspect
from typing import Any

import pytest
from mcp import Client
from mcp.types import Implementation

import tether_clr.mcp
from tests.support.mcp_servers import context_for, governed_registry, served
from tether_clr import AgentPipelineScope, RequestContext, ToolRegistry
from tether_clr.mcp import McpRequest, create_server


def test_the_namespace_is_sorted_and_rehomed() -> None:
    assert tether_clr.mcp.__all__ == sorted(set(tether_clr.mcp.__all__))
    for name in tether_clr.mcp.__all__:
        value = getattr(tether_clr.mcp, name)
        if inspect.isclass(value) or inspect.isfunction(value):
            assert value.__module__ == "tether_clr.mcp", name


def test_create_server_checks_its_arguments() -> None:
    registry = ToolRegistry()
    with pytest.raises(TypeError):
        create_server(object(), context_for=context_for)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        create_server(registry, context_for="nope")  # type: ignore[arg-type]
    for bad in (0, -1, True, 2.5):
        with pytest.raises(ValueError):
            create_server(registry, context_for=context_for, page_size=bad)  # type: ignore[arg-type]
    server = create_server(registry, context_for=context_for)
    assert server.sdk_server.name == "tether-clr"
    caps = server.sdk_server.create_initialization_options().capabilities
    assert caps.tools is not None and caps.tools.list_changed is True


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_context_for_gets_the_transport_client_info_and_protocol_version(mode: str) -> None:
    seen: list[McpRequest] = []

    async def recording(request: McpRequest) -> RequestContext | None:
        seen.append(request)
        return context_for(request)

    server = served(governed_registry(), context_for=recording)
    async with Client(server.sdk_server, mode=mode, client_info=Implementation(name="acme:alice", version="7")) as c:
        await c.list_tools(cache_mode="refresh")
        await c.call_tool("price", {"product": "tea"})
    assert [request.method for request in seen] == ["tools/list", "tools/call"]
    for request in seen:
        assert request.transport == "memory" and request.headers == {} and request.access_token is None
        assert request.client_info.name == "acme:alice" and request.client_info.version == "7"
        assert request.protocol_version == ("2026-07-28" if mode == "2026-07-28" else "2025-11-25")


@pytest.mark.anyio
async def test_a_scope_owned_by_another_principal_refuses_the_request() -> None:
    from mcp.shared.exceptions import MCPError

    server = served(governed_registry(), scope=AgentPipelineScope(owner="mallory"))
    async with Client(server.sdk_server, mode="legacy", client_info=Implementation(name="acme:alice", version="1")) as c:
        with pytest.raises(MCPError):
            await c.list_tools(cache_mode="refresh")


@pytest.mark.anyio
async def test_context_for_raising_or_answering_nonsense_refuses(anyio_backend: Any) -> None:
    from mcp.shared.exceptions import MCPError

    def raising(request: McpRequest) -> RequestContext | None:
        raise RuntimeError("identity service down")

    for bad in (raising, lambda request: "acme"):
        server = served(governed_registry(), context_for=bad)
        async with Client(server.sdk_server, mode="legacy", client_info=Implementation(name="acme:alice", version="1")) as c:
            with pytest.raises(MCPError):
                await c.call_tool("price", {"product": "tea"})

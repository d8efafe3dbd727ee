"""What the server announces and sends at each negotiated protocol version (issue 28, item 3).

The SDK's ``Client`` always offers the newest handshake version, so an older client is played
here the way it meets the server: raw JSON-RPC (``initialize`` at its version, then
``tools/list`` and ``tools/call``) over the SDK's in-memory streams.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
from mcp import Client
from mcp.client._memory import InMemoryTransport
from mcp.shared.message import SessionMessage
from mcp.types import Implementation, JSONRPCNotification, JSONRPCRequest

from tests.support.mcp_servers import governed_registry, served
from tether_clr.mcp.versions import result_for_version, tool_for_version

pytestmark = pytest.mark.anyio

Request = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]


@asynccontextmanager
async def raw_client(server: Any, version: str) -> AsyncIterator[tuple[dict[str, Any], Request]]:
    """A client that negotiates ``version``: the ``initialize`` result, and a way to send requests (their results)."""
    async with InMemoryTransport(server.sdk_server) as (read, write):
        ids = iter(range(1, 1000))

        async def request(method: str, params: dict[str, Any]) -> dict[str, Any]:
            number = next(ids)
            await write.send(SessionMessage(JSONRPCRequest(jsonrpc="2.0", id=number, method=method, params=params)))
            while True:
                received = await read.receive()
                assert not isinstance(received, Exception), received
                message = received.message.model_dump(by_alias=True, exclude_none=True, mode="json")
                if message.get("id") == number:
                    assert "error" not in message, message
                    result: dict[str, Any] = message["result"]
                    return result

        initialized = await request("initialize", {
            "protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "acme:alice", "version": "1"}})
        await write.send(SessionMessage(JSONRPCNotification(jsonrpc="2.0", method="notifications/initialized")))
        yield initialized, request


def package_version() -> str:
    return importlib.metadata.version("tether_clr")


async def test_server_info_version_is_the_package_version_in_both_eras() -> None:
    server = served(governed_registry())
    async with raw_client(server, "2024-11-05") as (initialized, _):
        assert initialized["serverInfo"] == {"name": "tether-clr", "version": package_version()}
    async with Client(server.sdk_server, mode="legacy", client_info=Implementation(name="acme:alice", version="1")) as c:
        assert c.server_info is not None and c.server_info.version == package_version()


# the fields of a tool and of a result each version defines, of those the server sends
DEFINED = {
    "2024-11-05": ({"name", "description", "inputSchema"}, {"content", "isError"}),
    "2025-03-26": ({"name", "description", "inputSchema", "annotations"}, {"content", "isError"}),
    "2025-06-18": ({"name", "title", "description", "inputSchema", "annotations"}, {"content", "isError", "structuredContent"}),
    "2025-11-25": ({"name", "title", "description", "inputSchema", "annotations"}, {"content", "isError", "structuredContent"}),
}


@pytest.mark.parametrize("version", list(DEFINED))
async def test_a_client_is_sent_only_the_fields_its_negotiated_version_defines(version: str) -> None:
    tool_fields, result_fields = DEFINED[version]
    server = served(governed_registry())
    async with raw_client(server, version) as (initialized, request):
        listed = await request("tools/list", {})
        priced = await request("tools/call", {"name": "price", "arguments": {"product": "tea"}})
        denied = await request("tools/call", {"name": "delete_all", "arguments": {}})
    assert initialized["protocolVersion"] == version
    price = next(tool for tool in listed["tools"] if tool["name"] == "price")  # the tool with a title and annotations
    assert set(price) == tool_fields
    assert all(set(tool) <= tool_fields for tool in listed["tools"])
    assert set(priced) == result_fields and priced["isError"] is False
    assert priced["content"] == [{"type": "text", "text": "2.5"}]
    assert set(denied) == result_fields and denied["isError"] is True
    assert denied["content"] and denied["content"][0]["type"] == "text"
    if "structuredContent" in result_fields:
        assert priced["structuredContent"] == {"result": 2.5}
        assert denied["structuredContent"]["code"] == "DENIED"


def test_a_version_the_sdk_does_not_know_or_none_is_sent_everything_and_nothing_is_changed_in_place() -> None:
    tool = {"name": "t", "title": "T", "inputSchema": {"type": "object"}, "annotations": {}, "outputSchema": {}}
    result = {"content": [], "structuredContent": {"result": 1}, "isError": False}
    for version in (None, "1999-01-01", "2025-06-18", "2026-07-28"):
        assert tool_for_version(tool, version) is tool
        assert result_for_version(result, version) is result
    assert set(tool_for_version(tool, "2024-11-05")) == {"name", "inputSchema"}
    assert set(tool_for_version(tool, "2025-03-26")) == {"name", "inputSchema", "annotations"}
    assert set(result_for_version(result, "2025-03-26")) == {"content", "isError"}
    assert set(tool) == {"name", "title", "inputSchema", "annotations", "outputSchema"}
    assert set(result) == {"content", "structuredContent", "isError"}

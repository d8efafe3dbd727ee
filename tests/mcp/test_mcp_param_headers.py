"""The SDK's ``Mcp-Param-*`` header check in the 2026-07-28 era over HTTP (:mod:`tether_clr.mcp.headers`).

Without a lookup the SDK lists the caller's tools for every ``tools/call`` that has arguments, and logs
a refused listing at ERROR. The server offers a lookup that answers "nothing to validate" while no tool
declares ``x-mcp-header``, and none (the caller-scoped listing) once one does.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS

from tests.support.mcp_http import http_client, serving
from tests.support.mcp_servers import context_for, governed_registry, served
from tether_clr import CancellationToken, ToolMetadata, ToolRegistrationOptions, ToolRegistry
from tether_clr.mcp import NO_CONTEXT_MESSAGE, McpRequest
from tether_clr.mcp.headers import ParamHeaderLookup, declares_param_headers

pytestmark = pytest.mark.anyio

ACME = {"x-tenant": "acme", "x-principal": "alice"}


class Deploy:
    """A tool whose input schema asks for the ``region`` argument as an ``Mcp-Param-Region`` header."""

    name = "deploy"
    description = "Deploy to a region."
    json_schema: Mapping[str, Any] = {
        "type": "object",
        "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
        "required": ["region"],
    }

    async def invoke(self, arguments: dict[str, Any], cancellation: CancellationToken) -> Any:
        return f"deployed to {arguments['region']}"


def counting(listed: list[str]) -> Any:
    """``context_for`` that also notes every ``tools/list`` it is asked about."""

    def identify(request: McpRequest) -> Any:
        if request.method == "tools/list":
            listed.append(request.method)
        return context_for(request)

    return identify


def client(url: str, headers: dict[str, str]) -> Client:
    return http_client(url, headers, "auto")


async def test_a_call_runs_no_listing_and_a_refused_one_logs_no_error_while_no_tool_declares_a_header(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def three_calls(server: Any) -> list[Any]:
        with serving(lambda: server.streamable_http_app(path="/mcp")) as url:
            async with client(url, ACME) as c:
                assert c.protocol_version == "2026-07-28"
                return [await c.call_tool("price", {"product": "tea", "quantity": n}) for n in range(1, 4)]

    listed: list[str] = []
    results = await three_calls(served(governed_registry(), context_for=counting(listed)))
    unaided: list[str] = []
    without = served(governed_registry(), context_for=counting(unaided))
    without.sdk_server.param_headers = None  # type: ignore[attr-defined]  # the SDK's own way: a listing per call
    await three_calls(without)
    # the client lists once itself (to learn the output schemas); the SDK lists per call only without the lookup
    assert (len(listed), len(unaided)) == (1, 4)
    assert [r.structured_content for r in results] == [{"result": 2.5}, {"result": 5.0}, {"result": 7.5}]
    server = served(governed_registry())
    with serving(lambda: server.streamable_http_app(path="/mcp")) as url, caplog.at_level(logging.ERROR):
        async with client(url, {}) as anonymous:
            with pytest.raises(MCPError) as refused:
                await anonymous.call_tool("price", {"product": "tea"})
    assert refused.value.message == NO_CONTEXT_MESSAGE
    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []


async def test_once_a_tool_declares_a_header_it_is_checked_against_the_callers_own_listing() -> None:
    listed: list[str] = []
    statuses: list[tuple[str | None, int]] = []  # (the Mcp-Param-Region header sent, the HTTP status answered)

    async def note(response: Any) -> None:
        if response.request.headers.get("mcp-method") == "tools/call":
            statuses.append((response.request.headers.get("mcp-param-region"), response.status_code))

    def watched(headers: dict[str, str]) -> Client:
        return http_client(url, headers, "auto", event_hooks={"response": [note]})

    registry = governed_registry()
    registry.register(Deploy(), options=ToolRegistrationOptions(metadata=ToolMetadata(tenants={"acme"})))
    server = served(registry, context_for=counting(listed))
    with serving(lambda: server.streamable_http_app(path="/mcp")) as url:
        async with watched({**ACME, "Mcp-Param-Region": "us"}) as c:  # a header that contradicts the body
            deployed = await c.call_tool("deploy", {"region": "eu"})
        acme_statuses, statuses[:] = list(statuses), []
        globex = {"x-tenant": "globex", "x-principal": "bob", "Mcp-Param-Region": "us"}
        async with watched(globex) as c:  # deploy is acme's: globex gets what an unknown name gets
            with pytest.raises(MCPError) as invisible:
                await c.call_tool("deploy", {"region": "eu"})
            with pytest.raises(MCPError) as unknown:
                await c.call_tool("no_such_tool", {"region": "eu"})
    # the SDK refused the contradicting header (400), checked against acme's listing; the client then
    # learnt the annotation from its own listing and sent the header right
    assert acme_statuses == [("us", 400), ("eu", 200)]
    assert deployed.is_error is False and deployed.structured_content == {"result": "deployed to eu"}
    # for globex, deploy is in no listing: its header is checked against nothing, and the call gets
    # exactly the answer of a name that exists nowhere (the JSON-RPC error, not the header mismatch)
    assert statuses[0] == statuses[1]
    assert (invisible.value.code, invisible.value.message) == (unknown.value.code, unknown.value.message)
    assert invisible.value.code == INVALID_PARAMS
    assert len(listed) >= 3  # the SDK's own listings (one per call, each scoped to its caller), besides the clients'


def test_the_lookup_follows_the_catalog_and_a_hosts_own_lookup_wins() -> None:
    registry = ToolRegistry()
    headers = ParamHeaderLookup(registry)
    assert headers.declared() is False and headers.lookup() is not None
    registration = registry.register(Deploy())
    assert headers.declared() is True and headers.lookup() is None
    registration.dispose()
    assert headers.declared() is False
    server = served(registry)
    nothing = server.sdk_server.get_tool_input_schema
    assert nothing is not None and nothing("deploy") is None
    declaring = registry.register(Deploy())  # the live server follows the catalog: the SDK lists again
    assert server.sdk_server.get_tool_input_schema is None
    declaring.dispose()
    assert server.sdk_server.get_tool_input_schema is not None

    def own(name: str) -> None:
        return None

    server.sdk_server.get_tool_input_schema = own
    assert server.sdk_server.get_tool_input_schema is own


def test_a_definition_declares_a_header_only_where_the_keyword_is_written() -> None:
    from tether_clr.foundations.canonical import canonical_bytes

    declared = {"properties": {"a": {"type": "string", "x-mcp-header": "A"}}}
    described = {"properties": {"a": {"type": "string", "description": "sent as x-mcp-header A"}}}
    assert declares_param_headers(canonical_bytes({"name": "t", "parameters": declared}))
    assert not declares_param_headers(canonical_bytes({"name": "t", "parameters": described}))

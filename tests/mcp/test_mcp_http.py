"""The MCP server over streamable HTTP on 127.0.0.1, driven by the SDK's client; identity from headers."""

from __future__ import annotations

from typing import Any

import pytest
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS

from tests.support.mcp_http import http_client, serving
from tests.support.mcp_servers import governed_registry, served
from tether_clr import InMemoryToolLog, ToolFailureCodes
from tether_clr.mcp import NO_CONTEXT_MESSAGE

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_over_http_listing_calls_and_refusals(mode: str) -> None:
    log = InMemoryToolLog()
    server = served(governed_registry(), sink=log)
    acme = {"x-tenant": "acme", "x-principal": "alice"}
    globex = {"x-tenant": "globex", "x-principal": "bob"}
    with serving(lambda: server.streamable_http_app(path="/mcp")) as url:
        async with http_client(url, acme, mode) as c:
            acme_names = [tool.name for tool in (await c.list_tools(cache_mode="refresh")).tools]
            price = await c.call_tool("price", {"product": "tea", "quantity": 2})
            denied = await c.call_tool("delete_all", {})
        async with http_client(url, globex, mode) as c:
            globex_names = [tool.name for tool in (await c.list_tools(cache_mode="refresh")).tools]
            with pytest.raises(MCPError) as invisible:
                await c.call_tool("refund", {"order": "o-1"})
        async with http_client(url, {}, mode) as c:
            with pytest.raises(MCPError) as anonymous:
                await c.list_tools(cache_mode="refresh")
    assert acme_names == ["delete_all", "price", "refund", "wire"]
    assert globex_names == ["delete_all", "price", "wire"]
    assert price.structured_content == {"result": 5.0}
    assert denied.is_error is True and denied.structured_content is not None
    assert denied.structured_content["code"] == ToolFailureCodes.DENIED
    assert invisible.value.code == INVALID_PARAMS
    assert anonymous.value.message == NO_CONTEXT_MESSAGE
    # the invisible call is answered -32602 and still recorded: refund exists, but not for globex's tenant
    assert [(outcome.name, outcome.code) for outcome in log.outcomes] == [
        ("price", None), ("delete_all", ToolFailureCodes.DENIED), ("refund", ToolFailureCodes.UNKNOWN_TOOL)]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_over_http_list_changed_after_a_registration(mode: str) -> None:
    import anyio
    from mcp.shared.subscriptions import ToolsListChanged

    from tether_clr import PythonFunction

    registry = governed_registry()
    server = served(registry)
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if getattr(getattr(message, "root", message), "method", None) == "notifications/tools/list_changed":
            changed.set()

    def register() -> None:
        registry.register(PythonFunction.from_callable(lambda: 1, name="fresh", description="A new tool."))

    acme = {"x-tenant": "acme", "x-principal": "alice"}
    with serving(lambda: server.streamable_http_app(path="/mcp")) as url:
        async with http_client(url, acme, mode, message_handler=on_message) as c:
            assert c.server_capabilities.tools is not None and c.server_capabilities.tools.list_changed is True
            await c.list_tools(cache_mode="refresh")
            if mode == "legacy":
                register()  # the uvicorn thread's loop is told through the registry's on_change
                with anyio.fail_after(10):
                    await changed.wait()
            else:
                assert c.protocol_version == "2026-07-28"
                async with c.listen(tools_list_changed=True) as subscription:
                    register()
                    with anyio.fail_after(10):
                        event = await subscription.__anext__()
                assert isinstance(event, ToolsListChanged)
            names = [tool.name for tool in (await c.list_tools(cache_mode="refresh")).tools]
    assert "fresh" in names


class Tokens:
    """A token verifier: ``t-<tenant>-<principal>`` is valid, ``t-nobody`` is valid but names no principal."""

    async def verify_token(self, token: str) -> Any:
        from mcp.server.auth.provider import AccessToken

        parts = token.split("-")
        if parts[0] != "t":
            return None
        subject = parts[2] if len(parts) == 3 else None
        return AccessToken(token=token, client_id=parts[1], scopes=["tools"], subject=subject)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_over_http_identity_from_the_verified_access_token(mode: str) -> None:
    from mcp.server.auth.settings import AuthSettings

    from tether_clr import RequestContext
    from tether_clr.mcp import McpRequest

    seen: list[McpRequest] = []

    def from_token(request: McpRequest) -> RequestContext | None:
        seen.append(request)
        token = request.access_token
        if token is None or token.subject is None:
            return None
        return RequestContext(token.client_id, token.subject, scopes=token.scopes)

    server = served(governed_registry(), context_for=from_token)

    def app() -> Any:
        auth = AuthSettings(issuer_url="https://issuer.invalid", resource_server_url=None, required_scopes=["tools"])  # type: ignore[arg-type]
        return server.streamable_http_app(path="/mcp", token_verifier=Tokens(), auth=auth)

    with serving(app) as url:
        async with http_client(url, {"authorization": "Bearer t-acme-alice"}, mode) as c:
            names = [tool.name for tool in (await c.list_tools(cache_mode="refresh")).tools]
            # identity never comes from arguments: a tenant_id argument changes nothing
            result = await c.call_tool("price", {"product": "tea", "tenant_id": "globex"})
        async with http_client(url, {"authorization": "Bearer t-nobody"}, mode) as c:
            with pytest.raises(MCPError) as refused:
                await c.list_tools(cache_mode="refresh")
    assert names == ["delete_all", "price", "refund", "wire"]
    assert result.is_error is True  # tenant_id is not a parameter of price: INVALID_ARGS, never an identity
    assert result.structured_content is not None and result.structured_content["code"] == ToolFailureCodes.INVALID_ARGS
    assert refused.value.message == NO_CONTEXT_MESSAGE
    alice = next(request for request in seen if request.access_token.subject == "alice")
    assert alice.transport == "http" and alice.access_token.client_id == "acme"
    assert alice.headers["authorization"] == "Bearer t-acme-alice"


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_over_http_pagination_and_cancellation(mode: str) -> None:
    import threading

    import anyio

    from tether_clr import PythonFunction

    started = threading.Event()  # set on uvicorn's thread, read on the test's

    async def slow() -> str:
        """Wait until cancelled."""
        started.set()
        await anyio.sleep_forever()
        return "never"

    registry = governed_registry(filler=5)
    registry.register(PythonFunction.from_callable(slow))
    log = InMemoryToolLog()
    server = served(registry, page_size=4, sink=log)
    acme = {"x-tenant": "acme", "x-principal": "alice"}
    with serving(lambda: server.streamable_http_app(path="/mcp")) as url:
        async with http_client(url, acme, mode) as c:
            names: list[str] = []
            cursor = None
            for _ in range(10):
                page = await c.list_tools(cursor=cursor, cache_mode="refresh")
                assert len(page.tools) <= 4
                names.extend(tool.name for tool in page.tools)
                cursor = page.next_cursor
                if cursor is None:
                    break
            async with anyio.create_task_group() as group:
                group.start_soon(c.call_tool, "slow", {})
                with anyio.fail_after(10):
                    while not started.is_set():
                        await anyio.sleep(0.01)
                group.cancel_scope.cancel()  # the client abandons the call: notifications/cancelled
            with anyio.fail_after(10):
                while not log.outcomes:
                    await anyio.sleep(0.01)
    assert cursor is None and len(names) == 10 and len(set(names)) == 10
    assert log.outcomes[0].name == "slow" and log.outcomes[0].code == ToolFailureCodes.ABORTED


async def test_stateless_http_runs_each_request_in_its_own_scope() -> None:
    from tether_clr import AgentPipelineScope

    root = AgentPipelineScope()
    registry = governed_registry()
    scopes: list[Any] = []
    registry.register_guard(None, lambda execution: scopes.append(execution.scope))
    server = served(registry, scope=root)
    with serving(lambda: server.streamable_http_app(path="/mcp", stateless_http=True)) as url:
        async with http_client(url, {"x-tenant": "acme", "x-principal": "alice"}, "legacy") as c:
            first = await c.call_tool("price", {"product": "tea"})
            second = await c.call_tool("price", {"product": "tea"})
    assert first.is_error is False and second.is_error is False
    assert len(scopes) == 2 and scopes[0] is not scopes[1]
    assert all(scope.parent is root and scope.owner == "alice" for scope in scopes)

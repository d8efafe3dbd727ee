"""Approval over MCP: the client's elicitation in the handshake era, else the registry's provider, else fail closed."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client
from mcp.types import ElicitResult, Implementation

from tests.support.doubles import Approver, asking
from tests.support.mcp_servers import governed_registry, served
from tether_clr import ApprovalResult, InMemoryToolLog, ToolFailureCodes

pytestmark = pytest.mark.anyio


def answering(action: str, approve: bool | None, asked: list[str]) -> Any:
    async def elicit(context: Any, params: Any) -> ElicitResult:
        asked.append(params.message)
        content = None if approve is None else {"approve": approve}
        return ElicitResult(action=action, content=content)  # type: ignore[arg-type]

    return elicit


def client(server: Any, mode: str, **kwargs: Any) -> Client:
    return Client(server.sdk_server, mode=mode, client_info=Implementation(name="acme:alice", version="1"), **kwargs)


@pytest.mark.parametrize(("action", "approve", "approved"), [
    ("accept", True, True), ("accept", False, False), ("decline", None, False), ("cancel", None, False)])
async def test_a_client_that_declared_elicitation_is_asked(action: str, approve: bool | None, approved: bool) -> None:
    registry = governed_registry()
    provider = Approver(ApprovalResult.REJECTED)  # never asked: the client decides
    registry.approval = provider
    log = InMemoryToolLog()
    asked: list[str] = []
    async with client(served(registry, sink=log), "legacy", elicitation_callback=answering(action, approve, asked)) as c:
        result = await c.call_tool("wire", {"amount": 5})
    assert len(asked) == 1 and "'wire'" in asked[0] and '{"amount":5}' in asked[0]
    assert provider.requests == []
    if approved:
        assert result.is_error is False and result.structured_content == {"result": "sent 5"}
    else:
        assert result.structured_content is not None and result.structured_content["code"] == ToolFailureCodes.DENIED
    assert len(log.outcomes) == 1


async def test_a_pre_execute_ask_is_answered_through_elicitation() -> None:
    registry = governed_registry()
    registry.register_pre_execute_listener(None, asking("prices are confidential today"))
    asked: list[str] = []
    async with client(served(registry), "legacy", elicitation_callback=answering("accept", True, asked)) as c:
        result = await c.call_tool("price", {"product": "tea"})
    assert result.is_error is False
    assert len(asked) == 1 and "prices are confidential today" in asked[0]


async def test_a_failing_elicitation_fails_closed() -> None:
    async def broken(context: Any, params: Any) -> Any:
        raise RuntimeError("no user here")

    async with client(served(governed_registry()), "legacy", elicitation_callback=broken) as c:
        result = await c.call_tool("wire", {"amount": 5})
    assert result.is_error is True and result.structured_content is not None
    assert result.structured_content["code"] == ToolFailureCodes.UNAVAILABLE, result.structured_content


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_without_elicitation_the_registrys_provider_decides(mode: str) -> None:
    registry = governed_registry()
    provider = Approver(ApprovalResult.APPROVED)
    registry.approval = provider
    # in 2026-07-28 a server cannot send requests: the callback is never used there
    kwargs = {"elicitation_callback": answering("decline", None, [])} if mode != "legacy" else {}
    async with client(served(registry), mode, **kwargs) as c:
        result = await c.call_tool("wire", {"amount": 5})
    assert len(provider.requests) == 1 and result.is_error is False


async def test_elicit_approval_false_keeps_the_registrys_provider() -> None:
    registry = governed_registry()
    registry.approval = Approver(ApprovalResult.APPROVED)
    asked: list[str] = []
    async with client(served(registry, elicit_approval=False), "legacy", elicitation_callback=answering("decline", None, asked)) as c:
        result = await c.call_tool("wire", {"amount": 5})
    assert asked == [] and result.is_error is False

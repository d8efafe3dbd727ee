"""A governed registry and its MCP server for tests/mcp, and the identity rule the tests use.

Identity comes from the request, never from tool arguments: here the client's
``clientInfo.name`` is ``"tenant:principal"`` (in memory and over stdio) or the
``x-tenant`` / ``x-principal`` headers (over HTTP). A client named ``anonymous``
(or sending no header) gets no context.
"""

from __future__ import annotations

from typing import Any

import anyio

from tether_clr import (
    InMemoryToolLog,
    PythonFunction,
    RequestContext,
    ToolMetadata,
    ToolRegistrationOptions,
    ToolRegistry,
)
from tether_clr.mcp import McpRequest, TetherMcpServer, create_server


def context_for(request: McpRequest) -> RequestContext | None:
    if request.transport == "http":
        tenant, principal = request.headers.get("x-tenant"), request.headers.get("x-principal")
        return RequestContext(tenant, principal) if tenant and principal else None
    name = getattr(request.client_info, "name", None)
    if not isinstance(name, str) or ":" not in name:
        return None
    tenant, principal = name.split(":", 1)
    return RequestContext(tenant, principal)


async def async_context_for(request: McpRequest) -> RequestContext | None:
    await anyio.lowlevel.checkpoint()
    return context_for(request)


def price(product: str, quantity: int = 1) -> float:
    """The price of some items of a product."""
    return 2.5 * quantity


def refund(order: str) -> str:
    """Refund an order (acme only)."""
    return f"refunded {order}"


def delete_all() -> str:
    """Delete everything (a guard refuses it)."""
    return "deleted"


def wire(amount: int) -> str:
    """Send money (needs approval)."""
    return f"sent {amount}"


class Gate:
    """``slow``'s body: says it started, then waits until cancelled."""

    def __init__(self) -> None:
        self.started = anyio.Event()

    async def slow(self) -> str:
        """Wait until cancelled."""
        self.started.set()
        await anyio.sleep_forever()
        return "never"


def register_governed(registry: ToolRegistry) -> None:
    """``price``, ``refund`` (tenant acme only), ``delete_all`` (a guard refuses it) and ``wire`` (needs approval),
    into ``registry`` (also ``tether-clr mcp serve --tools tests.support.mcp_servers:register_governed``)."""
    registry.register(PythonFunction.from_callable(price), options=ToolRegistrationOptions(
        metadata=ToolMetadata(title="Price", read_only=True, idempotent=True)))
    registry.register(PythonFunction.from_callable(refund), options=ToolRegistrationOptions(metadata=ToolMetadata(tenants={"acme"})))
    registry.register(PythonFunction.from_callable(delete_all))
    registry.register(PythonFunction.from_callable(wire), options=ToolRegistrationOptions(requires_approval=True))
    registry.register_guard(None, lambda execution: "deleting everything is not allowed" if execution.name == "delete_all" else None)


def governed_registry(gate: Gate | None = None, *, filler: int = 0) -> ToolRegistry:
    """``price``, ``refund`` (tenant acme only), ``delete_all`` (guarded), ``wire`` (needs approval),
    ``slow`` (when ``gate`` is given) and ``filler`` tools ``tool_000``..."""
    registry = ToolRegistry()
    register_governed(registry)
    if gate is not None:
        registry.register(PythonFunction.from_callable(gate.slow, name="slow"))
    for index in range(filler):
        registry.register(_filler(index))
    return registry


def _filler(index: int) -> PythonFunction:
    def body() -> int:
        return index

    return PythonFunction.from_callable(body, name=f"tool_{index:03d}", description=f"Filler tool {index}.")


def served(registry: ToolRegistry, *, page_size: int = 50, sink: InMemoryToolLog | None = None, **kwargs: Any) -> TetherMcpServer:
    return create_server(registry, context_for=kwargs.pop("context_for", context_for), page_size=page_size, sink=sink, **kwargs)

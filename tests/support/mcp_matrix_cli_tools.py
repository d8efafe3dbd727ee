"""Tools for the client matrix (tests/mcp/test_mcp_client_matrix.py): ``--tools tests.support.mcp_matrix_cli_tools:register``.

The governed tools of :func:`tests.support.mcp_servers.governed_registry`, as ``tether-clr mcp serve`` loads
them: ``price``, ``refund`` (tenant acme only), ``delete_all`` (a guard refuses it: DENIED) and ``wire``
(requires approval; the registry has no approval provider, so without the client's elicitation it fails
closed: DENIED).
"""

from __future__ import annotations

from tests.support.mcp_servers import delete_all, price, refund, wire
from tether_clr import PythonFunction, ToolMetadata, ToolRegistrationOptions, ToolRegistry


def register(registry: ToolRegistry) -> None:
    registry.register(PythonFunction.from_callable(price), options=ToolRegistrationOptions(
        metadata=ToolMetadata(title="Price", read_only=True, idempotent=True)))
    registry.register(PythonFunction.from_callable(refund), options=ToolRegistrationOptions(metadata=ToolMetadata(tenants={"acme"})))
    registry.register(PythonFunction.from_callable(delete_all))
    registry.register(PythonFunction.from_callable(wire), options=ToolRegistrationOptions(requires_approval=True))
    registry.register_guard(None, lambda execution: "deleting everything is not allowed" if execution.name == "delete_all" else None)

"""Tools for ``tether-clr mcp serve`` in tests/cli: ``--tools tests.support.mcp_cli_tools:register``.

``price`` for everyone, ``refund`` for tenant acme only (the tools of :mod:`tests.support.mcp_servers`).
"""

from __future__ import annotations

from tests.support.mcp_servers import price, refund
from tether_clr import PythonFunction, ToolMetadata, ToolRegistrationOptions, ToolRegistry


def register(registry: ToolRegistry) -> None:
    registry.register(PythonFunction.from_callable(price))
    registry.register(PythonFunction.from_callable(refund), options=ToolRegistrationOptions(metadata=ToolMetadata(tenants=frozenset({"acme"}))))

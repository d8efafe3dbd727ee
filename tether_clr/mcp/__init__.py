"""tether_clr.mcp: the governed catalog served over MCP (needs ``tether_clr[mcp]``).

``create_server(registry, context_for=...)`` gives a :class:`TetherMcpServer`;
see ``docs/mcp.md``.
"""

from __future__ import annotations

from tether_clr.mcp.request import McpRequest
from tether_clr.mcp.server import NO_CONTEXT_MESSAGE, TetherMcpServer, create_server

__all__ = ["NO_CONTEXT_MESSAGE", "McpRequest", "TetherMcpServer", "create_server"]

for _name in __all__:
    _obj = globals()[_name]
    if hasattr(_obj, "__module__") and not isinstance(_obj, str):
        _obj.__module__ = __name__

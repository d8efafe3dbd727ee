"""tether_clr.mcp: the governed catalog served over MCP (needs ``tether_clr[mcp]``).

``create_server(registry, context_for=...)`` gives a :class:`TetherMcpServer`
on the official SDK's low-level ``Server``; see ``docs/mcp.md``.
"""

from __future__ import annotations

from tether_clr.foundations.exports import rehome
from tether_clr.mcp.approval import APPROVAL_SCHEMA, ElicitingApproval
from tether_clr.mcp.calls import UNKNOWN_TOOL_MESSAGE
from tether_clr.mcp.request import LOADED_META_KEY, ContextFor, McpRequest, Transport
from tether_clr.mcp.server import NO_CONTEXT_MESSAGE, SinkFor, TetherMcpServer, create_server

__all__ = [
    "APPROVAL_SCHEMA",
    "ContextFor",
    "ElicitingApproval",
    "LOADED_META_KEY",
    "McpRequest",
    "NO_CONTEXT_MESSAGE",
    "SinkFor",
    "TetherMcpServer",
    "Transport",
    "UNKNOWN_TOOL_MESSAGE",
    "create_server",
]

rehome(globals(), __name__)

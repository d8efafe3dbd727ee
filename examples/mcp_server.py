"""The governed catalog over MCP in a few lines (needs ``tether_clr[mcp]``).

    python -m examples.mcp_server                 # stdio: one fixed identity (TETHER_TENANT, TETHER_PRINCIPAL)
    python -m examples.mcp_server --http 8000     # streamable HTTP on 127.0.0.1:8000/mcp, identity from headers
"""

from __future__ import annotations

import os
import sys

import anyio

from examples.echo_tools import TOOLS
from tether_clr import PythonFunction, RequestContext, ToolRegistry
from tether_clr.mcp import McpRequest, create_server


def context_for(request: McpRequest) -> RequestContext | None:
    if request.transport == "http":  # behind your auth: a verified token is in request.access_token
        tenant, principal = request.headers.get("x-tenant"), request.headers.get("x-principal")
        return RequestContext(tenant, principal) if tenant and principal else None
    return RequestContext(os.environ.get("TETHER_TENANT", "demo"), os.environ.get("TETHER_PRINCIPAL", "me"))


registry = ToolRegistry()
for tool in TOOLS:
    registry.register(PythonFunction.from_callable(tool))
server = create_server(registry, context_for=context_for)

if __name__ == "__main__":
    if sys.argv[1:2] == ["--http"]:
        import uvicorn

        uvicorn.run(server.streamable_http_app(path="/mcp"), host="127.0.0.1", port=int(sys.argv[2]))
    else:
        anyio.run(server.run_stdio)

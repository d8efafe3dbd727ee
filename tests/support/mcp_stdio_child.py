"""A child process serving the governed test registry over stdio: ``python -m tests.support.mcp_stdio_child``."""

from __future__ import annotations

import anyio

from tests.support.mcp_servers import context_for, governed_registry, served
from tether_clr import RequestContext
from tether_clr.mcp import McpRequest


def stdio_only(request: McpRequest) -> RequestContext | None:
    """The test's identity rule, for requests that really came over stdio."""
    return context_for(request) if request.transport == "stdio" and not request.headers else None


async def main() -> None:
    await served(governed_registry(), context_for=stdio_only).run_stdio()


if __name__ == "__main__":
    anyio.run(main)

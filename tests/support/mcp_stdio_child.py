"""A child process serving the governed test registry over stdio: ``python -m tests.support.mcp_stdio_child``."""

from __future__ import annotations

import anyio

from tests.support.mcp_servers import governed_registry, served


async def main() -> None:
    await served(governed_registry()).run_stdio()


if __name__ == "__main__":
    anyio.run(main)

"""The server of ``tests/mcp/test_mcp_transports.py`` over stdio: ``python -m tests.support.mcp_matrix_child``.

The .NET runtime is the one ``TETHER_CLR_RUNTIME`` names, as in the test's own process.
"""

from __future__ import annotations

import anyio

from tests.support.mcp_matrix import clr_add, matrix_server


async def main() -> None:
    await matrix_server(clr_add()).run_stdio()


if __name__ == "__main__":
    anyio.run(main)

"""The server of ``tests/mcp/test_mcp_transports.py``: one governed catalog with a C# and Python tools, the same
whether the test serves it in its own process (in memory, over HTTP) or a child serves it over stdio
(``python -m tests.support.mcp_matrix_child``, one process per client).

Everything the test asks about a server's state it asks over MCP, through tools of this registry, so the
one scenario runs unchanged on every transport:

* ``probe()``: whether ``slow`` has started, and the failure codes the server's sink recorded for ``slow``;
* ``register_fresh()``: registers the tool ``fresh`` (a catalog change, for ``list_changed``).

Identity is :func:`tests.support.mcp_servers.context_for`: the client's name ``tenant:principal`` in memory
and over stdio, the ``x-tenant`` / ``x-principal`` headers over HTTP.
"""

from __future__ import annotations

import threading
from typing import Any

import anyio

from tests.support.doubles import Approver
from tests.support.mcp_servers import governed_registry, served
from tether_clr import ApprovalResult, InMemoryToolLog, PythonFunction, ToolExecution, ToolRegistry
from tether_clr.mcp import TetherMcpServer

PAGE_SIZE = 3
APPROVAL_LIMIT = 100
"""The registry's approval provider approves a ``wire`` of at most this amount and rejects a larger one."""


def _approve_small_amounts(execution: ToolExecution) -> ApprovalResult:
    return ApprovalResult.APPROVED if execution.arguments.get("amount", 0) <= APPROVAL_LIMIT else ApprovalResult.REJECTED


def clr_add() -> Any:
    """The C# fixture ``Add`` (``dotnet_fixtures/``), compiled into the cache and loaded on the runtime at hand."""
    from tether_clr.clr import build_fixtures, discover_functions, load_assembly, load_runtime

    load_runtime()
    return next(f for f in discover_functions(load_assembly(build_fixtures())) if f.name == "Add")


def matrix_server(add: Any) -> TetherMcpServer:
    """The governed registry of ``tests.support.mcp_servers`` (``price``, ``refund`` for acme only, ``delete_all``
    refused by a guard, ``wire`` needing approval, ``slow``), the C# ``add``, ``probe`` and ``register_fresh``;
    every call recorded in an :class:`~tether_clr.InMemoryToolLog`; ``PAGE_SIZE`` tools a page."""
    started = threading.Event()  # set on the server's loop, read by probe on the same or another thread
    log = InMemoryToolLog()

    async def slow() -> str:
        """Wait until cancelled."""
        started.set()
        await anyio.sleep_forever()
        return "never"

    registry = governed_registry()
    registry.register(PythonFunction.from_callable(slow))
    registry.register(add)
    registry.approval = Approver(decide=_approve_small_amounts)

    def probe() -> dict[str, Any]:
        """What the server saw: whether ``slow`` started, and the codes recorded for it."""
        return {"slow_started": started.is_set(), "slow": [str(o.code) for o in log.outcomes if o.name == "slow"]}

    def register_fresh() -> str:
        """Register the tool ``fresh``: a change of the catalog."""
        _register_fresh(registry)
        return "registered"

    registry.register(PythonFunction.from_callable(probe))
    registry.register(PythonFunction.from_callable(register_fresh))
    return served(registry, page_size=PAGE_SIZE, sink=log)


def _register_fresh(registry: ToolRegistry) -> None:
    def fresh() -> int:
        """A tool registered while the server runs."""
        return 1

    registry.register(PythonFunction.from_callable(fresh))

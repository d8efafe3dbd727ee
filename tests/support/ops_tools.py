"""Tools for the operations tests' ``tether-clr mcp serve`` replicas: ``--tools tests.support.ops_tools:register``.

``tick(n)`` appends ``n`` to the file ``$TETHER_OPS_TICKS`` names before it answers, so a test can check
that every body that ran was declared in the log first. ``nap(seconds)`` sleeps (a call in flight).
"""

from __future__ import annotations

import os

import anyio

from tether_clr import PythonFunction, ToolRegistry


def tick(n: int) -> int:
    """Count one call: ``n`` is recorded as run, then returned."""
    path = os.environ.get("TETHER_OPS_TICKS")
    if path:
        with open(path, "a", encoding="utf-8") as ticks:
            ticks.write(f"{n}\n")
    return n


async def nap(seconds: float) -> float:
    """Sleep ``seconds`` (at most 60), then answer them."""
    await anyio.sleep(min(max(seconds, 0.0), 60.0))
    return seconds


def register(registry: ToolRegistry) -> None:
    registry.register(PythonFunction.from_callable(tick))
    registry.register(PythonFunction.from_callable(nap))

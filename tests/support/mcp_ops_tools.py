"""Tools for the operations tests of ``tether-clr mcp serve`` (``--tools tests.support.mcp_ops_tools:register``).

``price`` (:mod:`tests.support.mcp_servers`); ``rendezvous``, which answers ``"met"`` only when
another call of it runs at the same time in the same server (so two clients' calls that were
serialized would both answer ``"alone"``); ``slow``, which writes the server's pid to ``marker``
when its body starts, then sleeps.
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio

from tests.support.mcp_servers import price
from tether_clr import PythonFunction, ToolRegistry

_ARRIVED: set[str] = set()


async def rendezvous(party: str, parties: int = 2) -> str:
    """Wait, up to 20 s, until ``parties`` different parties have called; "met", else "alone"."""
    _ARRIVED.add(party)
    with anyio.move_on_after(20):
        while len(_ARRIVED) < parties:
            await anyio.sleep(0.01)
        return "met"
    return "alone"


async def slow(seconds: float, marker: str = "") -> float:
    """Say that the body started (the server's pid in ``marker``), then sleep ``seconds``."""
    if marker:
        Path(marker).write_text(str(os.getpid()))
    await anyio.sleep(seconds)
    return seconds


def register(registry: ToolRegistry) -> None:
    for function in (price, rendezvous, slow):
        registry.register(PythonFunction.from_callable(function))

"""Overhead of a .NET tool call through the full pipeline, and overlap of async .NET tools.

    .venv/bin/python benchmarks/clr.py [--backend asyncio|trio] [--write-docs]

Overhead: the C# fixture ``Calculator.Add`` called (a) directly through
pythonnet, synchronously, (b) through the bridge alone (``ClrFunction.invoke``:
JSON binding on the .NET side, thread-pool start, completion callback into the
event loop) and (c) through ``execute_batch`` with the whole pipeline. Overlap:
8 calls of the async ``Waiter.Delay`` (100 ms, ``[ConcurrencySafe]``) at
several ``max_parallelism`` values.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import machine_line, per_call_us, publish, run_cli, speedup_rows, table  # noqa: E402

from tether_clr import CancellationToken, ToolCall, ToolRegistry  # noqa: E402
from tether_clr.clr import (
    build_fixtures,
    discover_functions,
    load_assembly,
    load_runtime,
)


async def overhead_rows(functions: dict, rounds: int) -> list[list[str]]:
    from Tether.Fixtures import Calculator  # type: ignore[import-not-found]

    async def direct() -> None:
        for _ in range(2000):
            Calculator.Add(1, 2)

    add = functions["Add"]
    token = CancellationToken.none()

    async def bridge_only() -> None:
        for _ in range(200):
            await add.invoke({"a": 1, "b": 2}, token)

    registry = ToolRegistry()
    registry.register(add)
    view = registry.seal()
    calls = [ToolCall(f"c{i}", "Add", '{"a": 1, "b": 2}') for i in range(100)]

    async def pipeline() -> None:
        await registry.execute_batch(calls, view)

    direct_us = await per_call_us(direct, 2000, rounds)
    bridge_us = await per_call_us(bridge_only, 200, rounds)
    pipeline_us = await per_call_us(pipeline, 100, rounds)
    return [
        ["direct pythonnet call `Calculator.Add(1, 2)` (sync)", f"{direct_us:.1f}", "1.0x"],
        ["bridge only: `ClrFunction.invoke` (async, thread pool)", f"{bridge_us:.1f}", f"{bridge_us / direct_us:.0f}x"],
        ["full pipeline: `execute_batch`, 100 calls", f"{pipeline_us:.1f}", f"{pipeline_us / direct_us:.0f}x"],
    ]


async def overlap_rows(functions: dict, rounds: int) -> list[list[str]]:
    registry = ToolRegistry()
    registry.register(functions["Delay"])
    calls = [ToolCall(f"c{i}", "Delay", f'{{"milliseconds": 100, "label": "{i}"}}') for i in range(8)]
    return await speedup_rows(registry, calls, (1, 2, 4, 8), 100, rounds)


async def main(write: bool, rounds: int, backend: str) -> None:
    runtime = load_runtime()
    functions = {f.name: f for f in discover_functions(load_assembly(build_fixtures()))}
    overhead = table(["path", "µs per call", "vs direct"], await overhead_rows(functions, rounds))
    overlap = table(["max_parallelism", "wall ms (8 × 100 ms)", "speed-up", "ideal ms"], await overlap_rows(functions, max(1, rounds // 2)))
    report = (
        f"Measured with `./tasks.sh bench` (`benchmarks/clr.py --write-docs`; {backend}; {runtime.description}; "
        f"{machine_line()}; best of {rounds} rounds).\n\n{overhead}\n\n{overlap}\n"
    )
    publish("clr", report, write)


if __name__ == "__main__":
    run_cli(main, __doc__, "clr")

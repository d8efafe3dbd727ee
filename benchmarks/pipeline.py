"""Per-call overhead of the full pipeline, and the speed-up of a parallel batch.

    .venv/bin/python benchmarks/pipeline.py [--backend asyncio|trio] [--write-docs]

Overhead: a no-op async tool through ``execute_batch`` (batches of 1 and of 100
calls, with 0 and with 3 listeners: one pre-execute, one guard, one
post-execute) against a bare ``await`` of the same function. Speed-up: 32 calls
of a tool that sleeps 20 ms, at several ``max_parallelism`` values.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import machine_line, per_call_us, publish, run_cli, speedup_rows, table  # noqa: E402

from tether_clr import (  # noqa: E402
    PythonFunction,
    ToolCall,
    ToolPostDecision,
    ToolRegistrationOptions,
    ToolRegistry,
)


async def noop() -> None:
    return None


def _registry(listeners: int) -> ToolRegistry:
    registry = ToolRegistry()
    registry.register(PythonFunction.from_callable(noop))
    if listeners:

        async def pre(execution, next_):
            return await next_()

        async def post(execution, outcome, next_):
            return ToolPostDecision.accept()

        registry.register_pre_execute_listener(None, pre)
        registry.register_guard(None, lambda execution: None)
        registry.register_post_execute_listener(None, post)
    return registry


async def overhead_rows(rounds: int) -> list[list[str]]:
    async def bare() -> None:
        for _ in range(1000):
            await noop()

    bare_us = await per_call_us(bare, 1000, rounds)
    rows = [["bare `await noop()`", "-", "-", f"{bare_us:.2f}", "1.0x"]]
    for listeners in (0, 3):
        registry = _registry(listeners)
        view = registry.seal()
        for batch_size, batches in ((1, 400), (100, 4)):
            calls = [ToolCall(f"c{i}", "noop", "{}") for i in range(batch_size)]

            async def run(calls: list[ToolCall] = calls, batches: int = batches, registry: ToolRegistry = registry, view: Any = view) -> None:
                for _ in range(batches):
                    await registry.execute_batch(calls, view)

            us = await per_call_us(run, batch_size * batches, rounds)
            rows.append(["`execute_batch`", str(listeners), str(batch_size), f"{us:.1f}", f"{us / bare_us:.0f}x"])
    return rows


async def parallel_rows(rounds: int) -> list[list[str]]:
    async def sleeper() -> None:
        await anyio.sleep(0.02)

    registry = ToolRegistry()
    registry.register(PythonFunction.from_callable(sleeper), options=ToolRegistrationOptions(is_concurrency_safe=True))
    calls = [ToolCall(f"c{i}", "sleeper", "{}") for i in range(32)]
    return await speedup_rows(registry, calls, (1, 4, 8, 32), 20, rounds)


async def main(write: bool, rounds: int, backend: str) -> None:
    overhead = table(["path", "listeners", "calls per batch", "µs per call", "vs bare await"], await overhead_rows(rounds))
    speedup = table(["max_parallelism", "wall ms (32 × 20 ms)", "speed-up", "ideal ms"], await parallel_rows(max(1, rounds // 2)))
    report = (
        f"Measured with `./tasks.sh bench` (`benchmarks/pipeline.py --write-docs`; {backend}; {machine_line()}; best of {rounds} rounds).\n\n"
        f"{overhead}\n\n{speedup}\n"
    )
    publish("pipeline", report, write)


if __name__ == "__main__":
    run_cli(main, __doc__, "pipeline")

"""Shared plumbing for the benchmarks: timing loops, Markdown tables, the sections of docs/benchmarks.md."""

from __future__ import annotations

import argparse
from importlib import metadata
import platform
import re
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio

# The page whose <!-- bench:NAME --> sections the benchmarks rewrite (the README held them before).
DOCS = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"


async def per_call_us(fn: Callable[[], Awaitable[object]], calls_per_round: int, rounds: int) -> float:
    """Best-of-rounds microseconds per call: the minimum is the least noisy estimate of cost."""
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        await fn()
        best = min(best, (time.perf_counter() - start) / calls_per_round)
    return best * 1e6


async def speedup_rows(registry: Any, calls: list[Any], parallelisms: tuple[int, ...], body_ms: float, rounds: int) -> list[list[str]]:
    """Best wall time of one batch at each ``max_parallelism``, against the first as baseline."""
    view = registry.seal()
    rows: list[list[str]] = []
    baseline = None
    for parallelism in parallelisms:
        best = float("inf")
        for _ in range(rounds):
            start = time.perf_counter()
            await registry.execute_batch(calls, view, max_parallelism=parallelism)
            best = min(best, time.perf_counter() - start)
        baseline = baseline or best
        ideal = len(calls) * body_ms / min(parallelism, len(calls))
        rows.append([str(parallelism), f"{best * 1000:.0f}", f"{baseline / best:.1f}x", f"{ideal:.0f}"])
    return rows


class Timer:
    """Best-of-rounds microseconds per call, on the wall clock and in process CPU time.

    Each round is calibrated to last at least ``min_round_s``; the iteration count
    is found once (growing from a warm-up) and then kept, so repeated
    measurements of the same path (several runs, for a median) time the same
    amount of work. The minimum over rounds is the least noisy estimate of cost.
    CPU time (``time.process_time``: every thread of the process) does not count
    the time the process waits for a core, so it stays meaningful on a machine
    shared with other work; wall time also counts waits a call really has (a
    .NET body on the thread pool, a pipe wake-up).
    """

    def __init__(self, fn: Callable[[], Awaitable[object]], calls_per_invocation: int, min_round_s: float) -> None:
        self._fn = fn
        self._calls = calls_per_invocation
        self._min_round_s = min_round_s
        self._iterations = 0

    async def _time(self, iterations: int) -> tuple[float, float]:
        fn = self._fn
        wall, cpu = time.perf_counter(), time.process_time()
        for _ in range(iterations):
            await fn()
        return time.perf_counter() - wall, time.process_time() - cpu

    async def _calibrate(self) -> None:
        iterations = 1
        while True:
            elapsed, _ = await self._time(iterations)
            if elapsed >= self._min_round_s:
                self._iterations = iterations
                return
            per_iteration = max(elapsed / iterations, 1e-9)
            iterations = min(iterations * 100, max(iterations * 2, int(self._min_round_s * 1.1 / per_iteration) + 1))

    async def best_us(self, rounds: int) -> tuple[float, float]:
        """(wall, CPU) microseconds per call, each the best of ``rounds``."""
        if not self._iterations:
            await self._calibrate()
        timings = [await self._time(self._iterations) for _ in range(rounds)]
        scale = 1e6 / (self._iterations * self._calls)
        return min(w for w, _ in timings) * scale, min(c for _, c in timings) * scale


def table(headers: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def machine_line() -> str:
    return f"Python {platform.python_version()} on {platform.machine()}, {platform.system()} ({sys.implementation.name})"


def versions(names: tuple[str, ...]) -> str:
    """``name version, ...`` of the installed distributions among ``names`` (the ones missing are left out)."""
    found = []
    for name in names:
        try:
            found.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            pass
    return ", ".join(found)


def write_docs_section(name: str, body: str, page: Path | None = None) -> None:
    """Replace the text between ``<!-- bench:NAME -->`` and ``<!-- /bench:NAME -->`` in ``page`` (docs/benchmarks.md)."""
    page = page or DOCS
    text = page.read_text(encoding="utf-8")
    pattern = re.compile(rf"(<!-- bench:{name} -->\n).*?(<!-- /bench:{name} -->)", re.S)
    if not pattern.search(text):
        raise SystemExit(f"{page.name} has no <!-- bench:{name} --> section")
    page.write_text(pattern.sub(lambda m: m.group(1) + body.rstrip() + "\n" + m.group(2), text), encoding="utf-8")


def add_write_docs_flag(parser: argparse.ArgumentParser, section: str) -> None:
    """``--write-docs`` (and its old name ``--write-readme``, kept so scripts keep working): ``args.write_docs``."""
    parser.add_argument("--write-docs", "--write-readme", dest="write_docs", action="store_true",
                        help=f"replace the {section} section of docs/benchmarks.md with this run's report")


def parse_cli(doc: str | None, section: str, argv: list[str] | None = None) -> argparse.Namespace:
    """The shared command line: ``[--write-docs] [--rounds N] [--backend asyncio|trio]``."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_write_docs_flag(parser, section)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--backend", choices=["asyncio", "trio"], default="asyncio")
    return parser.parse_args(argv)


def run_cli(main: Callable[[bool, int, str], Awaitable[Any]], doc: str | None, section: str) -> None:
    """Parse the shared command line and run ``main(write_docs, rounds, backend)`` on that backend."""
    args = parse_cli(doc, section)
    anyio.run(main, args.write_docs, args.rounds, args.backend, backend=args.backend)


def publish(section: str, report: str, write: bool) -> None:
    print(report)
    if write:
        write_docs_section(section, report)

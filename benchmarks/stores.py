"""The session log's cost per call: each store, at both durability levels, with and without group commit.

    .venv/bin/python benchmarks/stores.py [--backend asyncio|trio] [--rounds N] [--write-docs]

A no-op concurrency-safe tool ``echo`` (and the same body registered EXCLUSIVE as
``solo``) runs through ``execute_batch`` with no sink (the pipeline's own cost),
then with ``store.sink(session, turn, step)`` of each store (a new step per
batch, so each batch writes step/start, assistant/message, a tool/call and a
tool/result per call, step/end, and takes and releases the session's lease).
Shapes: one call per batch, 100 concurrency-safe calls (one group), 100
EXCLUSIVE calls (100 groups). Wall clock, best of ``--rounds`` rounds: a commit
is a wait for the disk or the server, which CPU time would not count. The rounds
of each store row alternate with rounds of the same batch with no sink, and the
row is compared with the best of those no-sink rounds (as many, in the same
stretch of time), so a quiet or busy stretch of a shared machine favours neither
side.
PostgreSQL rows need ``$TETHER_POSTGRES_DSN`` (``./tasks.sh bench`` provides one).
"""

from __future__ import annotations

import os
import sys
import tempfile
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import machine_line, per_call_us, publish, run_cli, table  # noqa: E402
from tether_clr.recording.session.sql_store import SqlSessionStore  # noqa: E402

from tether_clr import (  # noqa: E402
    PostgresSessionStore,
    PythonFunction,
    SqliteSessionStore,
    ToolCall,
    ToolRegistrationOptions,
    ToolRegistry,
)

SHAPES = (("1 call", "echo", 1, 40), ("100 concurrency-safe calls", "echo", 100, 3), ("100 EXCLUSIVE calls", "solo", 100, 3))
ROUNDS_FACTOR = 3  # commits make these rows noisier than the pipeline's own: three times the rounds


def registry() -> ToolRegistry:
    registry = ToolRegistry()

    async def echo(text: str) -> str:
        return text

    registry.register(PythonFunction.from_callable(echo, name="echo"), None, ToolRegistrationOptions(is_concurrency_safe=True))
    registry.register(PythonFunction.from_callable(echo, name="solo"))
    return registry


class Steps:
    """A fresh step of one open turn for every batch."""

    def __init__(self, store: SqlSessionStore) -> None:
        self.store = store
        self.session = f"bench-{uuid.uuid4().hex}"
        self.turn = 0
        self.step = 0

    async def open(self) -> None:
        self.turn = await self.store.begin_turn(self.session)

    def sink(self) -> Any:
        self.step += 1
        return self.store.sink(self.session, self.turn, self.step)


def batch_runner(reg: ToolRegistry, calls: list[ToolCall], batches: int, steps: Steps | None) -> Callable[[], Awaitable[None]]:
    view = reg.seal()

    async def run() -> None:
        for _ in range(batches):
            await reg.execute_batch(calls, view, sink=None if steps is None else steps.sink())

    return run


def stores(folder: Path) -> list[tuple[str, Callable[[str, bool], SqlSessionStore]]]:
    found: list[tuple[str, Callable[[str, bool], SqlSessionStore]]] = [
        ("SQLite", lambda durability, group: SqliteSessionStore(folder / f"{uuid.uuid4().hex}.sqlite", durability=durability, group_commit=group))  # type: ignore[arg-type]
    ]
    dsn = os.environ.get("TETHER_POSTGRES_DSN")
    if dsn:
        found.append(("PostgreSQL", lambda durability, group: PostgresSessionStore(dsn, durability=durability, group_commit=group)))  # type: ignore[arg-type]
    return found


async def interleaved_us(
    with_sink: Callable[[], Awaitable[None]], without: Callable[[], Awaitable[None]], calls: int, rounds: int
) -> tuple[float, float]:
    """Best-of-rounds µs per call with the sink and without, their rounds alternating."""
    best_with, best_without = float("inf"), float("inf")
    for _ in range(rounds):
        best_without = min(best_without, await per_call_us(without, calls, 1))
        best_with = min(best_with, await per_call_us(with_sink, calls, 1))
    return best_with, best_without


Key = tuple[str, str, str, bool]  # store, durability, shape, group commit


async def measure(rounds: int) -> tuple[list[list[str]], dict[Key, float], dict[str, float], dict[Key, float]]:
    reg = registry()
    baseline: dict[str, float] = {}
    for label, name, size, batches in SHAPES:
        calls = [ToolCall(f"call_{i}", name, f'{{"text": "{i}"}}') for i in range(size)]
        baseline[label] = await per_call_us(batch_runner(reg, calls, batches, None), size * batches, rounds * ROUNDS_FACTOR)
    rows: list[list[str]] = []
    costs: dict[Key, float] = {}
    paired: dict[Key, float] = {}
    with tempfile.TemporaryDirectory() as folder:
        for store_name, make in stores(Path(folder)):
            for durability in ("full", "process"):
                for group in (True, False):
                    store = make(durability, group)
                    try:
                        for label, name, size, batches in SHAPES:
                            steps = Steps(store)
                            await steps.open()
                            calls = [ToolCall(f"call_{i}", name, f'{{"text": "{i}"}}') for i in range(size)]
                            us, without = await interleaved_us(
                                batch_runner(reg, calls, batches, steps), batch_runner(reg, calls, batches, None),
                                size * batches, rounds * ROUNDS_FACTOR,
                            )
                            baseline[label] = min(baseline[label], without)
                            added = us - without
                            costs[(store_name, durability, label, group)] = added
                            paired[(store_name, durability, label, group)] = without
                            rows.append([
                                store_name, f"`{durability}`", "yes" if group else "no", label,
                                f"{without:.1f}", f"{us:.1f}", f"{added:.1f}", f"{added / without:.2f}x",
                            ])
                    finally:
                        store.close()
    return rows, costs, baseline, paired


def targets(costs: dict[Key, float], baseline: dict[str, float], paired: dict[Key, float] | None = None) -> list[list[str]]:
    """The issue's target rows: ``costs`` the log's added µs per call; a row is compared with its own
    no-sink rounds (``paired``) when given, else with the shape's ``baseline``."""
    rows = []
    safe = "100 concurrency-safe calls"
    for store_name in sorted({key[0] for key in costs}, reverse=True):
        key = (store_name, "full", safe, True)
        ratio = costs[key] / (paired[key] if paired is not None else baseline[safe])
        rows.append([f"{store_name}, `full`, safe group of 100: log added / pipeline, per call", f"{ratio:.2f}x", "<= 1x",
                     "yes" if ratio <= 1 else "**no**"])
        for durability in ("full", "process"):
            added = costs[(store_name, durability, "100 EXCLUSIVE calls", True)]
            rows.append([f"{store_name}, `{durability}`, EXCLUSIVE calls: log added per call", f"{added:.0f} µs", "report", "-"])
    return rows


async def main(write: bool, rounds: int, backend: str) -> None:
    rows, costs, baseline, paired = await measure(rounds)
    pipeline = table(["shape", "no sink: µs per call"], [[label, f"{baseline[label]:.1f}"] for label, *_ in SHAPES])
    log = table(["store", "durability", "group commit", "shape", "no sink, same rounds: µs per call", "µs per call",
                 "log added µs", "added / pipeline"], rows)
    goals = table(["target (issue 10)", "measured", "goal", "met"], targets(costs, baseline, paired))
    stores_line = "SQLite in a temporary folder" + (
        ", PostgreSQL at `$TETHER_POSTGRES_DSN` (local server, Unix socket)" if os.environ.get("TETHER_POSTGRES_DSN") else
        "; no PostgreSQL rows (no `$TETHER_POSTGRES_DSN`)"
    )
    report = (
        f"Measured with `./tasks.sh bench` (`benchmarks/stores.py --write-docs`; {backend}; {machine_line()}; "
        f"{stores_line}; wall clock, best of {rounds * ROUNDS_FACTOR} rounds; each store row's rounds alternate with as many "
        f"no-sink rounds, and the row is compared with the best of those; the first table is the best no-sink round of "
        f"each shape over the whole run).\n\n{pipeline}\n\n{log}\n\n{goals}\n"
    )
    publish("stores", report, write)


if __name__ == "__main__":
    run_cli(main, __doc__, "stores")

"""Catalog governance costs: ``assemble`` at growing catalog sizes, and re-authorization per call.

    .venv/bin/python benchmarks/catalog.py [--backend asyncio|trio] [--write-docs]

Assembly: a registry of N tool versions (N/2 tools with two versions each;
every fourth tool needs a scope the principal lacks, every eighth is for
another tenant), timed through ``registry.assemble(context)``; the per-version
cost should stay flat as N grows (no worse than linear). Cold rows: the registry
has a deny rule, so no assembly is kept (every one is made afresh, as after a
catalog change). Warm rows: the same catalog without the deny rule, assembled
again for the same identity with a new request id each time (the catalog's cache:
the kept snapshot rebound to the request, :mod:`tether_clr.catalog.reuse`); the
target of issue 31 is 2 ms for 10,000 versions. Re-authorization: the
check right before each body, on a ``ToolAssembly`` binding (the live record,
status, tenant, scopes, one deny rule) and on a plain ``seal()`` view
(lifecycle only), and the whole pre-body step including the scope lookup
(no authority configured, so the context's scopes).
"""

from __future__ import annotations

import sys
import time
from dataclasses import replace
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import machine_line, per_call_us, publish, run_cli, table  # noqa: E402

from tether_clr import (  # noqa: E402
    RequestContext,
    ToolCall,
    ToolMetadata,
    ToolRegistrationOptions,
    ToolRegistry,
)
from tether_clr.execution.pipeline import CallPipeline  # noqa: E402
from tether_clr.foundations.cancellation import CancellationToken  # noqa: E402

SIZES = (100, 1_000, 10_000)
CONTEXT = RequestContext("acme", "alice", scopes=frozenset({"orders:read"}), request_id="bench")


class _Tool:
    """A minimal Tool: registering 10,000 of them should measure the catalog, not pydantic."""

    description = "A benchmark tool."
    json_schema: dict[str, Any] = {"type": "object", "properties": {"q": {"type": "string"}}}

    def __init__(self, name: str) -> None:
        self.name = name

    async def invoke(self, arguments: Any, cancellation: Any) -> Any:
        return None


def catalog(versions: int, deny_rule: bool = True) -> ToolRegistry:
    registry = ToolRegistry()
    for index in range(versions // 2):
        name = f"tool_{index:05d}"
        restrictions: dict[str, Any] = {}
        if index % 4 == 0:
            restrictions["required_scopes"] = {"orders:refund"}
        if index % 8 == 1:
            restrictions["tenants"] = {"globex"}
        for version in ("1.0.0", "1.1.0"):
            options = ToolRegistrationOptions(metadata=ToolMetadata(version=version, **restrictions))
            registry.register(_Tool(name), options=options)
    if deny_rule:  # host code that may answer differently each time: no assembly is kept
        registry.add_deny_rule(lambda binding, metadata, context: None)
    return registry


def best_seconds(fn: Callable[[], object], rounds: int, repeat: int) -> float:
    """Best-of-rounds seconds per call of ``fn``, each round ``repeat`` calls (small sizes need many)."""
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(repeat):
            fn()
        best = min(best, (time.perf_counter() - start) / repeat)
    return best


def assemble_rows(rounds: int) -> list[list[str]]:
    rows: list[list[str]] = []
    warm_rows: list[list[str]] = []
    previous: float | None = None
    for size in SIZES:
        registry = catalog(size)
        seconds = best_seconds(lambda: registry.assemble(CONTEXT), rounds, max(1, 20_000 // size))
        per_version = seconds / size * 1e6
        growth = "-" if previous is None else f"{per_version / previous:.2f}x"
        previous = per_version
        bound = len(registry.assemble(CONTEXT).bindings)
        rows.append([f"{size:,}", f"{bound:,}", f"{seconds * 1000:.2f}", f"{per_version:.2f}", growth])
        warm_rows.append(warm_row(size, seconds, rounds))
    return rows + warm_rows


def warm_row(size: int, cold: float, rounds: int) -> list[str]:
    """Assembling again with an unchanged catalog and identity (a new request id each time): the cache's hit."""
    registry = catalog(size, deny_rule=False)
    contexts = [replace(CONTEXT, request_id=f"bench-{index}") for index in range(2)]
    registry.assemble(contexts[0])  # kept
    turn = iter(range(1 << 62))

    def again() -> None:
        registry.assemble(contexts[next(turn) & 1])

    seconds = best_seconds(again, rounds, 2_000)
    assert registry.catalog.assembly_cache.misses == 1, "the warm rows must be answered from the cache"
    bound = len(registry.assemble(CONTEXT).bindings)
    return [f"{size:,}, warm (cached; no deny rule)", f"{bound:,}", f"{seconds * 1000:.4f}",
            f"{seconds / size * 1e6:.4f}", f"cold / warm: {cold / seconds:,.0f}x"]


async def reauthorization_rows(rounds: int) -> list[list[str]]:
    registry = catalog(100)
    assembly = registry.assemble(CONTEXT)
    plain = registry.seal()
    name = next(iter(assembly.bindings))
    bound_entry, plain_entry = assembly.resolve(name), plain.resolve(name)
    assert bound_entry is not None and plain_entry is not None
    scopes = CONTEXT.scopes
    n = 20_000

    async def check_bound() -> None:
        refusal = assembly.live_refusal
        for _ in range(n):
            refusal(bound_entry, scopes)

    async def check_plain() -> None:
        refusal = plain.live_refusal
        for _ in range(n):
            refusal(plain_entry)

    listeners = registry.listener_snapshot()
    rows = []
    for label, view, entry, check in (
        ("`ToolAssembly`: binding, status, tenant, scopes, 1 deny rule", assembly, bound_entry, check_bound),
        ("plain `seal()` view: lifecycle only", plain, plain_entry, check_plain),
    ):
        pipeline = CallPipeline(view, listeners, None)
        _, execution, _, _, _ = pipeline.begin(ToolCall("c", name, "{}"), CancellationToken.none())

        async def step(pipeline: CallPipeline = pipeline, execution: Any = execution, entry: Any = entry) -> None:
            for _ in range(n):
                await pipeline.reauthorize(execution, entry)

        check_us = await per_call_us(check, n, rounds)
        step_us = await per_call_us(step, n, rounds)
        rows.append([label, f"{check_us:.2f}", f"{step_us:.2f}"])
    return rows


async def main(write: bool, rounds: int, backend: str) -> None:
    assembly = table(["tool versions", "bound", "assemble ms", "µs per version", "per-version cost vs the size before"],
                     assemble_rows(rounds))
    reauth = table(["re-authorization", "check µs per call", "pre-body step µs per call (incl. scope lookup)"],
                   await reauthorization_rows(rounds))
    report = (
        f"Measured with `./tasks.sh bench` (`benchmarks/catalog.py --write-docs`; {backend}; {machine_line()}; "
        f"best of {rounds} rounds).\n\n{assembly}\n\n{reauth}\n"
    )
    publish("catalog", report, write)


if __name__ == "__main__":
    run_cli(main, __doc__, "catalog")

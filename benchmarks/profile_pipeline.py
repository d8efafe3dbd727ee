"""Where a no-op call's time goes in ``execute_batch``: primitives, stages, and a cProfile.

    .venv/bin/python benchmarks/profile_pipeline.py [--calls N] [--top N] [--pyinstrument]

Three views of the same path as ``benchmarks/peers.py`` (the ``echo`` tool, raw
``{"text": "hi"}``, no listeners, no sink, asyncio):

1. the two end-to-end numbers (a one-call batch; per call in 100-call batches);
2. the cost of each building block the path uses, timed alone (anyio
   primitives, JSON passes, the two validations, the records), in microseconds,
   and of the pipeline's own stages called one by one where their (private)
   entry points still exist;
3. cProfile of both paths: the functions with the most own time, per tool call.
   cProfile's own overhead inflates deep call chains; read its numbers as shares.

``--pyinstrument`` adds a statistical call tree of the one-call path (the
``bench`` extra installs pyinstrument). Nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import json
import pstats
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import anyio  # noqa: E402
import anyio.lowlevel  # noqa: E402
from peers import RAW, batch_runner, echo, tether_registry  # noqa: E402

from tether_clr import CancellationSource, CancellationToken, PythonFunction, ToolCall, ToolExecution, ToolExecutionOutcome  # noqa: E402
from tether_clr.cancellation import cancel_scope_for  # noqa: E402
from tether_clr.schema import canonical_json, parse_arguments  # noqa: E402


async def per_call_us(fn: Callable[[], Awaitable[object]], iterations: int, rounds: int = 5) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(iterations):
            await fn()
        best = min(best, (time.perf_counter() - start) / iterations)
    return best * 1e6


def sync(fn: Callable[[], object]) -> Callable[[], Awaitable[object]]:
    async def run() -> object:
        return fn()

    return run


async def building_blocks(n: int) -> list[tuple[str, float]]:
    """Each block alone; the ``async def`` wrapper costs what the first row shows."""
    tool = PythonFunction.from_callable(echo)
    registry = tether_registry(tool, 0)
    view = registry.seal()
    entry: Any = view.resolve("echo")
    arguments = json.loads(RAW)
    source = CancellationSource()
    token = source.token
    execution = ToolExecution(call_id="c0", name="echo", arguments_json=canonical_json(arguments), cancellation=token)
    call = ToolCall("c0", "echo", RAW)
    snapshot = registry.listener_snapshot()
    event = anyio.Event()
    event.set()
    semaphore = anyio.Semaphore(4)

    async def nothing() -> None:
        return None

    async def cancel_scope() -> None:
        with anyio.CancelScope():
            pass

    async def cancel_scope_for_token() -> None:
        with cancel_scope_for(token, token):
            pass

    async def event_cycle() -> None:
        done = anyio.Event()
        done.set()
        await done.wait()

    async def semaphore_cycle() -> None:
        async with semaphore:
            pass

    async def task_group_empty() -> None:
        async with anyio.create_task_group():
            pass

    async def task_group_one() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(nothing)

    def source_cycle() -> None:
        CancellationSource(token).close()

    async def await_set_event() -> None:
        await event.wait()

    async def checkpoint() -> None:
        await anyio.lowlevel.checkpoint()

    def fresh_chains() -> None:
        fresh = registry.listener_snapshot()
        for kind in ("pre_execute", "guard", "execute", "post_execute", "result_policy", "result_listener"):
            fresh.chain(kind, None)

    async def bind_and_call() -> object:
        return await tool.invoke(arguments, token)

    blocks: list[tuple[str, Callable[[], Awaitable[object]]]] = [
        ("empty `async def` awaited (the harness)", nothing),
        ("`anyio.CancelScope()` enter/exit", cancel_scope),
        ("`cancel_scope_for(token, token)` (live token: registers a callback)", cancel_scope_for_token),
        ("`anyio.Event()` + set + wait", event_cycle),
        ("`await event.wait()` on a set event (a checkpoint: one event-loop iteration)", await_set_event),
        ("`await anyio.lowlevel.checkpoint()` alone", checkpoint),
        ("`anyio.Semaphore` acquire/release", semaphore_cycle),
        ("`anyio.create_task_group()` enter/exit, no task", task_group_empty),
        ("task group + one `start_soon` no-op", task_group_one),
        ("`CancellationSource(parent)` + close", sync(source_cycle)),
        ("`anyio.Semaphore(4)` created", sync(lambda: anyio.Semaphore(4))),
        ("`json.loads(RAW)`", sync(lambda: json.loads(RAW))),
        ("`parse_arguments(RAW)` (strict)", sync(lambda: parse_arguments(RAW))),
        ("`canonical_json(arguments)`", sync(lambda: canonical_json(arguments))),
        ("`execution.arguments` (detached copy: `json.loads`)", sync(lambda: execution.arguments)),
        ("jsonschema `error_for` (`best_match(iter_errors)`), success", sync(lambda: entry.validator.error_for(arguments))),
        ("jsonschema `is_valid`, success", sync(lambda: entry.validator._validator.is_valid(arguments))),
        ("pydantic binding `tool.invoke` (bind + await echo)", bind_and_call),
        ("`ToolExecution(...)` record", sync(lambda: ToolExecution(call_id="c0", name="echo", arguments_json='{"text":"hi"}', cancellation=token))),
        ("`ToolExecutionOutcome.success` (to_jsonable + canonical JSON)", sync(lambda: ToolExecutionOutcome.success("c0", "echo", "hi"))),
        ("`view.resolve(name)`", sync(lambda: view.resolve("echo"))),
        ("`registry.classify(call, view)`", sync(lambda: registry.classify(call, view))),
        ("`registry.listener_snapshot()`", sync(registry.listener_snapshot)),
        ("`snapshot.chain(kind, None)` (memoised)", sync(lambda: snapshot.chain("pre_execute", None))),
        ("a fresh snapshot and its six chains (what every batch pays)", sync(fresh_chains)),
    ]
    rows = [(label, await per_call_us(fn, n)) for label, fn in blocks]
    rows += await pipeline_stages(registry, view, n)
    return rows


async def pipeline_stages(registry: Any, view: Any, n: int) -> list[tuple[str, float]]:
    """The pipeline's own stages one by one, through their private entry points (skipped if they moved)."""
    try:
        from tether_clr.batch import BatchRun
        from tether_clr.pipeline import CallPipeline
    except ImportError as exc:
        return [(f"pipeline stages: not available ({exc})", float("nan"))]
    calls = [ToolCall("c0", "echo", RAW)]
    token = CancellationToken.none()
    try:
        pipeline = CallPipeline(view, registry.listener_snapshot(), registry.approval)
        _, execution, entry, _ = pipeline.begin(calls[0], token)
        assert entry is not None
        outcome = ToolExecutionOutcome.success("c0", "echo", "hi")

        def new_batch() -> None:
            BatchRun(registry, calls, view, 4, None, None)._source.close()

        async def execute() -> object:
            return await pipeline.execute(execution, entry)

        async def authorize() -> object:
            return await pipeline.authorize(execution)

        async def deliver_side() -> None:
            await pipeline.review(execution, outcome)
            await pipeline.enforce_policies(execution, outcome)
            await pipeline.notify(execution, outcome)

        stages: list[tuple[str, Callable[[], Awaitable[object]]]] = [
            ("stage: `BatchRun(...)` set-up (checks, snapshot, pool, source)", sync(new_batch)),
            ("stage: `CallPipeline(...)`", sync(lambda: CallPipeline(view, registry.listener_snapshot(), registry.approval))),
            ("stage: `begin` (parse, canonical JSON, record, resolve, schema)", sync(lambda: pipeline.begin(calls[0], token))),
            ("stage: `authorize` (empty pre-execute waterfall, guards)", authorize),
            ("stage: `execute` (execute waterfall, cancel scope, bind, call, outcome)", execute),
            ("stage: `review` + `enforce_policies` + `notify`", deliver_side),
        ]
        return [(label, await per_call_us(fn, n)) for label, fn in stages]
    except Exception as exc:  # the internals changed shape: the other two views still stand
        return [(f"pipeline stages: not available ({type(exc).__name__}: {exc})", float("nan"))]


def profile(fn: Callable[[], Awaitable[object]], iterations: int, calls: int, top: int) -> str:
    """cProfile ``iterations`` invocations; own and cumulative time per tool call, top functions by own time."""

    async def loop() -> None:
        for _ in range(iterations):
            await fn()

    profiler = cProfile.Profile()
    profiler.enable()
    asyncio.run(loop())
    profiler.disable()
    stats = pstats.Stats(profiler)
    total_calls = iterations * calls
    rows = []
    for (filename, line, name), (_cc, ncalls, tottime, cumtime, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        rows.append((tottime, cumtime, ncalls, f"{Path(filename).parent.name}/{Path(filename).name}:{line}({name})"))
    rows.sort(reverse=True)
    out = io.StringIO()
    out.write(f"| own µs/call | cum µs/call | calls/call | function |\n|---|---|---|---|\n")
    for tottime, cumtime, ncalls, where in rows[:top]:
        out.write(f"| {tottime / total_calls * 1e6:.2f} | {cumtime / total_calls * 1e6:.2f} | {ncalls / total_calls:.2f} | `{where}` |\n")
    total = sum(r[0] for r in rows) / total_calls * 1e6
    out.write(f"\nprofiled total: {total:.1f} µs per tool call (with cProfile's overhead)\n")
    return out.getvalue()


def pyinstrument_tree(fn: Callable[[], Awaitable[object]], iterations: int) -> str:
    try:
        from pyinstrument import Profiler
    except ImportError:
        return "pyinstrument is not installed (the bench extra adds it)\n"

    async def loop() -> None:
        for _ in range(iterations):
            await fn()

    profiler = Profiler(interval=0.0001, async_mode="disabled")
    profiler.start()
    asyncio.run(loop())
    profiler.stop()
    return str(profiler.output_text(unicode=False, color=False, show_all=False))


def clr_profile(iterations: int, top: int) -> str:
    """cProfile of ``ClrFunction.invoke`` on the .NET echo peers.py measures (a real AIFunction when MEAI is available)."""
    from peers import Suite, _clr_echo

    from tether_clr.clr import load_runtime

    runtime = load_runtime()
    function, _direct, kind = _clr_echo(Suite())
    token = CancellationToken.none()

    async def invoke() -> object:
        return await function.invoke({"text": "hi"}, token)

    return f"## cProfile: `ClrFunction.invoke` on {runtime.description}, {kind}\n\n" + profile(invoke, iterations, 1, top)


async def end_to_end(n: int) -> tuple[float, float]:
    tool = PythonFunction.from_callable(echo)
    one = batch_runner(tether_registry(tool, 0), 1)
    hundred = batch_runner(tether_registry(tool, 0), 100)
    return await per_call_us(one, n), await per_call_us(hundred, max(1, n // 100)) / 100


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=20_000, help="tool calls per profiled path")
    parser.add_argument("--top", type=int, default=30, help="functions listed per profile")
    parser.add_argument("--clr", action="store_true", help="also profile ClrFunction.invoke on the .NET echo (needs a .NET runtime)")
    parser.add_argument("--pyinstrument", action="store_true", help="also print a pyinstrument call tree of the one-call path")
    args = parser.parse_args()
    n = max(100, args.calls // 10)

    one_us, hundred_us = asyncio.run(end_to_end(n))
    print(f"## End to end\n\none-call batch: {one_us:.1f} µs; 100-call batch (EXCLUSIVE): {hundred_us:.1f} µs per call\n")
    print("## Building blocks and stages, each alone (best of 5, µs)\n\n| block | µs |\n|---|---|")
    for label, us in asyncio.run(building_blocks(n)):
        print(f"| {label} | {us:.2f} |")
    tool = PythonFunction.from_callable(echo)
    print("\n## cProfile: one-call batches\n")
    print(profile(batch_runner(tether_registry(tool, 0), 1), args.calls, 1, args.top))
    print("## cProfile: 100-call batches (EXCLUSIVE)\n")
    print(profile(batch_runner(tether_registry(tool, 0), 100), max(1, args.calls // 100), 100, args.top))
    print("## cProfile: 100-call batches (concurrency-safe group)\n")
    print(profile(batch_runner(tether_registry(tool, 0, concurrency_safe=True), 100), max(1, args.calls // 100), 100, args.top))
    if args.clr:
        print(clr_profile(max(200, args.calls // 20), args.top))
    if args.pyinstrument:
        print("## pyinstrument: one-call batches\n\n```")
        print(pyinstrument_tree(batch_runner(tether_registry(tool, 0), 1), args.calls))
        print("```")


if __name__ == "__main__":
    main()

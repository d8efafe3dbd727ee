"""Where a no-op call's time goes in ``execute_batch``: primitives, stages, and a cProfile.

    .venv/bin/python benchmarks/profile_pipeline.py [--quick] [--calls N] [--top N] [--clr] [--pyinstrument]

Three views of the same path as ``benchmarks/peers.py`` (the ``echo`` tool, raw
``{"text": "hi"}``, no listeners, no sink, asyncio):

1. the two end-to-end numbers (a one-call batch; per call in 100-call batches);
2. the cost of each building block the path uses, timed alone (anyio
   primitives, JSON passes, the two validations, the records), in microseconds,
   and of the pipeline's own stages called one by one where their (private)
   entry points still exist;
3. the batch's cancelled-caller check (``checkpoint_if_cancelled``), ablated
   (timed with and without it, interleaved);
4. the share of each pipeline stage (cProfile cumulative time of the stage's
   frame, per tool call) for a one-call batch and per call in 100-call batches:
   the calls that run alone (``tether_clr/execution/lone.py``) and the general
   path a concurrency-safe group takes (``batch_state``, ``admitting``,
   ``delivery``, ``parallel``);
5. cProfile of both paths: the functions with the most own time, per tool call.
   cProfile's own overhead inflates deep call chains; read its numbers as shares.

``--pyinstrument`` adds a statistical call tree of the one-call path (the
``bench`` extra installs pyinstrument). ``--quick`` is a smoke run (a few hundred
calls; ``tests/test_benchmarks.py`` runs it). Nothing here asserts a time.
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

from tether_clr import (  # noqa: E402
    CancellationSource,
    CancellationToken,
    PythonFunction,
    ToolCall,
    ToolExecution,
    ToolExecutionOutcome,
)
from tether_clr.foundations.arguments import parse_arguments  # noqa: E402
from tether_clr.foundations.cancellation import cancel_scope_for  # noqa: E402
from tether_clr.foundations.json_values import canonical_json


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

    async def checkpoint_if_cancelled() -> None:
        await anyio.lowlevel.checkpoint_if_cancelled()

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
        ("`await anyio.lowlevel.checkpoint_if_cancelled()` (what a batch takes: no loop iteration)", checkpoint_if_cancelled),
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
    """The pipeline's own stages one by one, through their (private) entry points (skipped if they moved)."""
    try:
        from tether_clr.execution.batch import BatchRun
        from tether_clr.execution.pipeline import CallPipeline
    except ImportError as exc:
        return [(f"pipeline stages: not available ({exc})", float("nan"))]
    calls = [ToolCall("c0", "echo", RAW)]
    token = CancellationToken.none()
    try:
        pipeline = CallPipeline(view, registry.listener_snapshot(), registry.approval)
        _, execution, entry, _, _ = pipeline.begin(calls[0], token)
        assert entry is not None
        outcome = ToolExecutionOutcome.success("c0", "echo", "hi")

        def new_batch() -> None:
            BatchRun(calls, view, registry.listener_snapshot(), None, 4, None, None)._source.close()

        async def execute() -> object:
            return await pipeline.execute(execution, entry, False)

        async def fresh_execute() -> object:
            return await pipeline.execute(execution, entry, False, None, None, {"text": "hi"})

        async def authorize() -> object:
            return await pipeline.authorize(execution)

        async def reauthorize() -> object:
            return await pipeline.reauthorize(execution, entry)

        async def deliver_side() -> None:
            await pipeline.review(execution, outcome)
            await pipeline.enforce_policies(execution, outcome)
            await pipeline.notify(execution, outcome)

        stages: list[tuple[str, Callable[[], Awaitable[object]]]] = [
            ("stage: `BatchRun(...)` set-up (the general path only: checks, source, hooks, pipeline)", sync(new_batch)),
            ("stage: `CallPipeline(...)` (every batch)", sync(lambda: CallPipeline(view, registry.listener_snapshot(), registry.approval))),
            ("stage: `begin` (parse, canonical JSON, record, resolve, schema)", sync(lambda: pipeline.begin(calls[0], token))),
            ("stage: `authorize` (empty pre-execute waterfall, guards)", authorize),
            ("stage: `reauthorize` (a plain view: the lifecycle)", reauthorize),
            ("stage: `execute` (no cancel scope, bind, call, outcome), arguments as a detached copy", execute),
            ("stage: `execute`, the parsed arguments handed over (what a batch does)", fresh_execute),
            ("stage: `review` + `enforce_policies` + `notify`", deliver_side),
        ]
        return [(label, await per_call_us(fn, n)) for label, fn in stages]
    except Exception as exc:  # the internals changed shape: the other views still stand
        return [(f"pipeline stages: not available ({type(exc).__name__}: {exc})", float("nan"))]


def _profiled(fn: Callable[[], Awaitable[object]], iterations: int) -> pstats.Stats:
    """``iterations`` awaits of ``fn`` in one ``asyncio.run``, under cProfile."""

    async def loop() -> None:
        for _ in range(iterations):
            await fn()

    profiler = cProfile.Profile()
    profiler.enable()
    asyncio.run(loop())
    profiler.disable()
    return pstats.Stats(profiler)


def profile(fn: Callable[[], Awaitable[object]], iterations: int, calls: int, top: int) -> str:
    """cProfile ``iterations`` invocations; own and cumulative time per tool call, top functions by own time."""
    stats = _profiled(fn, iterations)
    total_calls = iterations * calls
    rows = []
    for (filename, line, name), (_cc, ncalls, tottime, cumtime, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        rows.append((tottime, cumtime, ncalls, f"{Path(filename).parent.name}/{Path(filename).name}:{line}({name})"))
    rows.sort(reverse=True)
    out = io.StringIO()
    out.write("| own µs/call | cum µs/call | calls/call | function |\n|---|---|---|---|\n")
    for tottime, cumtime, ncalls, where in rows[:top]:
        out.write(f"| {tottime / total_calls * 1e6:.2f} | {cumtime / total_calls * 1e6:.2f} | {ncalls / total_calls:.2f} | `{where}` |\n")
    total = sum(r[0] for r in rows) / total_calls * 1e6
    out.write(f"\nprofiled total: {total:.1f} µs per tool call (with cProfile's overhead)\n")
    return out.getvalue()


def _stages() -> list[tuple[str, Callable[..., Any]]]:
    """(label, function): the frames whose cumulative time is a stage; an indented label nests in the one above."""
    from tether_clr.execution import lone
    from tether_clr.execution.admitting import Admitting
    from tether_clr.execution.batch import BatchRun
    from tether_clr.execution.batch_state import BatchState
    from tether_clr.execution.delivery import Delivery
    from tether_clr.execution.pipeline import CallPipeline

    return [
        ("calls that run alone (a lone call, EXCLUSIVE calls): `run_alone`", lone.run_alone),
        ("  of which authorization, re-authorization and the body: `_admit_and_run`", lone._admit_and_run),
        ("general path set-up: `BatchState.__init__` (checks, hooks, `CallPipeline`, cancellation source, batch id)", BatchState.__init__),
        ("grouping: `BatchRun._groups` (classification; a safe group's classifier parses the arguments here)", BatchRun._groups),
        ("admission in the general path: `Admitting._resolve` (begin; with a sink, `_declared` tells it)", Admitting._resolve),
        ("authorization in the general path: `Admitting._authorize` (pre-execute waterfall, guards, approval)", Admitting._authorize),
        ("admission: `begin` (strict parse, canonical text, resolve, schema check, `ToolExecution`)", CallPipeline.begin),
        ("re-authorization: `reauthorize`", CallPipeline.reauthorize),
        ("body path: `execute` (execute waterfall, cancel scope if any, pydantic binding, the call, JSON-checked outcome)",
         CallPipeline.execute),
        ("delivery in the general path: `Delivery._deliver_in_order` (post-execute, invariant policy, result listeners)",
         Delivery._deliver_in_order),
        ("result policies: `enforce_policies` (the invariant policy)", CallPipeline.enforce_policies),
        ("the cancelled-caller check: `anyio.lowlevel.checkpoint_if_cancelled`", anyio.lowlevel.checkpoint_if_cancelled),
    ]


def stage_shares(fn: Callable[[], Awaitable[object]], iterations: int, calls: int) -> str:
    """cProfile one path and attribute its time to the pipeline's stages (cumulative time, per tool call)."""
    stats: Any = _profiled(fn, iterations).stats  # type: ignore[attr-defined]
    per_call = 1e6 / (iterations * calls)
    total = sum(tottime for (_cc, _n, tottime, _cum, _callers) in stats.values()) * per_call

    def cum(function: Callable[..., Any]) -> float:
        code = function.__code__
        key = (code.co_filename, code.co_firstlineno, code.co_name)
        return stats[key][3] * per_call if key in stats else 0.0

    rows = [(label, cum(function)) for label, function in _stages()]
    rows.append(("(stages overlap: `run_alone` holds `begin`, `execute`...; `_resolve` holds `begin`)", float("nan")))
    out = io.StringIO()
    out.write("| stage | µs per tool call (cProfile) | share |\n|---|---|---|\n")
    for label, us in rows:
        out.write(f"| {label} | {us:.2f} | {us / total * 100:.0f}% |\n")
    out.write(f"| total (with cProfile's overhead) | {total:.2f} | 100% |\n")
    return out.getvalue()


async def checkpoint_ablation(n: int) -> tuple[float, float]:
    """One-call batch with and without its cancelled-caller check (monkeypatched away here, for measuring only), interleaved."""
    lowlevel = anyio.lowlevel
    tool = PythonFunction.from_callable(echo)
    one = batch_runner(tether_registry(tool, 0), 1)
    real = lowlevel.checkpoint_if_cancelled

    async def none() -> None:
        return None

    with_us, without_us = float("inf"), float("inf")
    for _ in range(5):
        with_us = min(with_us, await per_call_us(one, n, 1))
        lowlevel.checkpoint_if_cancelled = none  # type: ignore[assignment]
        try:
            without_us = min(without_us, await per_call_us(one, n, 1))
        finally:
            lowlevel.checkpoint_if_cancelled = real  # type: ignore[assignment]
    return with_us, without_us


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


async def clr_stages(function: Any, rounds: int) -> str:
    """What ``execute_batch`` adds around a .NET call against what it adds around a Python one.

    The same rows on both tools, interleaved, best of ``rounds``, on the wall clock and
    on the event loop's thread CPU clock (``time.thread_time``: pythonnet crossings and
    any .NET code the loop's thread runs count, the thread pool's work does not).
    """
    from tether_clr.execution.batch import BatchRun
    from tether_clr.execution.grouping import classify_reading
    from tether_clr.execution.pipeline import CallPipeline

    token = CancellationToken.none()
    python_tool = PythonFunction.from_callable(echo)

    def rows_for(tool: Any, name: str) -> dict[str, Callable[[], Awaitable[object]]]:
        registry = tether_registry(tool, 0)
        view = registry.seal()
        call = ToolCall("c0", name, RAW)
        pipeline = CallPipeline(view, registry.listener_snapshot(), registry.approval)
        _, execution, entry, _, _ = pipeline.begin(call, token)
        assert entry is not None

        async def body() -> object:
            return await tool.invoke({"text": "hi"}, token)

        async def execute() -> object:
            return await pipeline.execute(execution, entry, False)

        return {
            "the body alone (`tool.invoke`)": body,
            "stage: `classify_reading` (grouping)": sync(lambda: classify_reading(call, view)),
            "stage: `BatchRun(...)` set-up": sync(lambda: BatchRun([call], view, registry.listener_snapshot(), None, 4, None, None)._source.close()),
            "stage: `begin` (admission)": sync(lambda: pipeline.begin(call, token)),
            "stage: `execute`, inline (no cancel scope), body included": execute,
            "one-call `execute_batch`": batch_runner(registry, 1, name=name),
        }

    tools = {"Python": rows_for(python_tool, "echo"), ".NET": rows_for(function, "Echo")}
    best: dict[tuple[str, str], tuple[float, float]] = {}
    for _ in range(rounds):
        for kind, rows in tools.items():
            for label, fn in rows.items():
                n = 400 if kind == ".NET" else 4000
                await fn()
                wall, cpu = time.perf_counter(), time.thread_time()
                for _ in range(n):
                    await fn()
                sample = ((time.perf_counter() - wall) / n * 1e6, (time.thread_time() - cpu) / n * 1e6)
                old = best.get((kind, label), (float("inf"), float("inf")))
                best[kind, label] = (min(old[0], sample[0]), min(old[1], sample[1]))
    out = io.StringIO()
    out.write("| row | Python wall µs | Python loop-thread CPU µs | .NET wall µs | .NET loop-thread CPU µs |\n|---|---|---|---|---|\n")
    for label in tools["Python"]:
        (pw, pc), (dw, dc) = best["Python", label], best[".NET", label]
        out.write(f"| {label} | {pw:.1f} | {pc:.1f} | {dw:.1f} | {dc:.1f} |\n")
    body, batch = "the body alone (`tool.invoke`)", "one-call `execute_batch`"
    for clock, index in (("wall", 0), ("loop-thread CPU", 1)):
        python_added = best["Python", batch][index] - best["Python", body][index]
        dotnet_added = best[".NET", batch][index] - best[".NET", body][index]
        out.write(f"\n`execute_batch` added ({clock}): {dotnet_added:.1f} µs to the .NET call, {python_added:.1f} µs to the Python one: "
                  f"{dotnet_added / python_added:.2f}x")
    return out.getvalue() + "\n"


def clr_profile(iterations: int, top: int) -> str:
    """``execute_batch`` around the .NET echo against around the Python one, then cProfile of ``ClrFunction.invoke``
    and of a one-call batch of it (a real AIFunction when MEAI is available)."""
    from peers import Suite, _clr_echo

    from tether_clr.clr import load_runtime

    runtime = load_runtime()
    function, _direct, kind = _clr_echo(Suite())
    token = CancellationToken.none()

    async def invoke() -> object:
        return await function.invoke({"text": "hi"}, token)

    head = f"## .NET: {runtime.description}, {kind}\n\n### The batch around a .NET call and around a Python call (best of 7, interleaved)\n\n"
    return (head + asyncio.run(clr_stages(function, 7))
            + "\n### cProfile: `ClrFunction.invoke`\n\n" + profile(invoke, iterations, 1, top)
            + "\n### cProfile: one-call batches of the .NET echo\n\n"
            + profile(batch_runner(tether_registry(function, 0), 1, name="Echo"), iterations, 1, top))


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
    parser.add_argument("--quick", action="store_true", help="a smoke run: 300 calls per profiled path, 20 per timing")
    args = parser.parse_args()
    if args.quick:
        args.calls = 300
    n = 20 if args.quick else max(100, args.calls // 10)

    one_us, hundred_us = asyncio.run(end_to_end(n))
    print(f"## End to end\n\none-call batch: {one_us:.1f} µs; 100-call batch (EXCLUSIVE): {hundred_us:.1f} µs per call\n")
    print("## Building blocks and stages, each alone (best of 5, µs)\n\n| block | µs |\n|---|---|")
    for label, us in asyncio.run(building_blocks(n)):
        print(f"| {label} | {us:.2f} |")
    tool = PythonFunction.from_callable(echo)
    with_us, without_us = asyncio.run(checkpoint_ablation(n))
    print(f"\n## The batch's cancelled-caller check, ablated (interleaved, best of 5)\n\none-call batch {with_us:.1f} µs with it, "
          f"{without_us:.1f} µs without: {with_us - without_us:.1f} µs ({(with_us - without_us) / with_us * 100:.0f}%)\n")
    for title, size, safe in (("one-call batches", 1, False), ("100-call batches (EXCLUSIVE)", 100, False),
                              ("100-call batches (concurrency-safe group)", 100, True)):
        print(f"## Stage shares: {title}\n")
        print(stage_shares(batch_runner(tether_registry(tool, 0, concurrency_safe=safe), size), max(1, args.calls // size), size))
    print("## cProfile: one-call batches\n")
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

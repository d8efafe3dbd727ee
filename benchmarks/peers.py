"""tether_clr's per-call cost side by side with its peers, in one process run.

    .venv/bin/python benchmarks/peers.py [--quick] [--runs N] [--rounds N] [--only tether] [--write-docs]

Every row calls the same no-op tool, ``async def echo(text: str) -> str``, with
the same raw JSON arguments ``{"text": "hi"}``, on asyncio. Each row is timed
best-of-``--rounds`` (each round calibrated to last at least 0.5 s) on the wall
clock and in process CPU time, and the whole table is measured ``--runs`` times,
interleaved, reporting the median of the runs. Rows:

* floors: ``json.loads`` + validation (pydantic, or a compiled jsonschema) + ``await echo``;
* OpenAI Agents SDK ``FunctionTool.on_invoke_tool`` (one call, and 100 under ``asyncio.gather``);
* MCP's FastMCP in-process ``call_tool``; Semantic Kernel ``Kernel.invoke_function_call``;
  LangGraph ``ToolNode.ainvoke``; pydantic-ai ``ToolManager.handle_call``;
* tether_clr ``execute_batch``: a one-call batch, and per call in 100-call batches
  (EXCLUSIVE, and one concurrency-safe group), with 0 and with 3 listeners
  (pre-execute, guard, post-execute);
* memory: RSS sampled while 100,000 one-call batches run;
* .NET (when a runtime loads): ``ClrFunction.invoke`` against a direct
  ``InvokeAsync(...).AsTask().Result`` through pythonnet, and what ``execute_batch``
  adds to a .NET call against what it adds to a Python one.

The ratios of issue 9's targets are printed under the table. A peer that is not
installed (the ``bench`` extra: ``pip install -e '.[bench]'``) is listed as skipped.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import gc
import json
import logging
import os
import platform
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from _frameworks import RAW, Invoke, echo, langgraph_invoker, openai_invoker, pydantic_ai_invoker  # noqa: E402
from _report import Timer, add_write_docs_flag, machine_line, table, versions, write_docs_section  # noqa: E402

from tether_clr import (  # noqa: E402
    CancellationToken,
    PythonFunction,
    ToolCall,
    ToolPostDecision,
    ToolRegistrationOptions,
    ToolRegistry,
)

PEER_PACKAGES = ("openai-agents", "langgraph", "langchain-core", "mcp", "semantic-kernel", "pydantic-ai-slim")
SECTION = "peers"


@dataclass
class Row:
    key: str
    label: str
    does: str
    calls: int  # calls per invocation of ``fn``
    fn: Invoke
    timer: Timer | None = None
    samples: list[tuple[float, float]] = field(default_factory=list)  # (wall, CPU) µs per call, one per run

    def us(self, clock: str) -> float:
        """The median over runs on ``clock`` ("wall" or "cpu")."""
        return statistics.median(sample[0 if clock == "wall" else 1] for sample in self.samples)


@dataclass
class Suite:
    rows: list[Row] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, key: str, label: str, does: str, fn: Invoke, calls: int = 1) -> None:
        self.rows.append(Row(key, label, does, calls, fn))

    def get(self, key: str, clock: str = "cpu") -> float | None:
        return next((row.us(clock) for row in self.rows if row.key == key and row.samples), None)


# ------------------------------------------------------------------ floors
def add_floors(suite: Suite) -> None:
    import jsonschema
    from pydantic import BaseModel, ConfigDict

    class EchoArgs(BaseModel):
        model_config = ConfigDict(extra="forbid")
        text: str

    async def bare() -> object:
        return await echo(text="hi")

    async def pydantic_floor() -> object:
        args = EchoArgs.model_validate(json.loads(RAW))
        return await echo(args.text)

    schema = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"], "additionalProperties": False}
    validator = jsonschema.Draft202012Validator(schema)

    async def jsonschema_floor() -> object:
        args = json.loads(RAW)
        validator.validate(args)
        return await echo(**args)

    suite.add("bare", "bare `await echo(text=\"hi\")`", "the body alone", bare)
    suite.add("floor_pydantic", "floor: `json.loads` + pydantic + call", "parse, validate (pydantic model), call", pydantic_floor)
    suite.add("floor_jsonschema", "floor: `json.loads` + jsonschema + call", "parse, validate (compiled Draft 2020-12 validator), call", jsonschema_floor)


# ------------------------------------------------------------------- peers
def add_openai(suite: Suite) -> None:
    from agents import function_tool

    one = openai_invoker(function_tool(echo))

    async def gathered() -> object:
        return await asyncio.gather(*[one() for _ in range(100)])

    does = "parse + validate (pydantic), call, failures to an error string for the model"
    suite.add("openai", "OpenAI Agents `FunctionTool.on_invoke_tool`", does, one)
    suite.add("openai_gather", "OpenAI Agents `on_invoke_tool`, 100 under `asyncio.gather`", does, gathered, calls=100)


def add_fastmcp(suite: Suite) -> None:
    try:
        from mcp.server.mcpserver import MCPServer as FastMCP  # mcp 2.x (the bench extra's), FastMCP renamed
    except ImportError:
        from mcp.server.fastmcp import FastMCP  # mcp 1.x

    server = FastMCP("bench", log_level="WARNING")
    server.tool()(echo)

    async def one() -> object:
        return await server.call_tool("echo", json.loads(RAW))

    suite.add("fastmcp", "MCP FastMCP in-process `call_tool`", "`json.loads`, lookup, validate (pydantic), call, content blocks + structured result", one)


def add_semantic_kernel(suite: Suite) -> None:
    from semantic_kernel import Kernel
    from semantic_kernel.contents import ChatHistory, FunctionCallContent
    from semantic_kernel.functions import kernel_function

    kernel = Kernel()
    kernel.add_function(plugin_name="bench", function=kernel_function(echo, name="echo"))
    history = ChatHistory()
    call = FunctionCallContent(id="c1", name="bench-echo", arguments=RAW)

    async def one() -> object:
        await kernel.invoke_function_call(call, history)
        history.messages.clear()  # one result message per call; cleared so the history does not grow
        return None

    suite.add("semantic_kernel", "Semantic Kernel `Kernel.invoke_function_call`", "parse, parameter check, auto-invocation filter stack, call, result copied into the chat history", one)


def add_langgraph(suite: Suite) -> None:
    from langchain_core.tools import tool

    one = langgraph_invoker([tool(echo)])
    suite.add("langgraph", "LangGraph `ToolNode.ainvoke`", "runnable config + callbacks, validate (pydantic), call, `ToolMessage` (args arrive parsed)", one)


def add_pydantic_ai(suite: Suite) -> None:
    from pydantic_ai.toolsets import FunctionToolset

    one = pydantic_ai_invoker(FunctionToolset([echo]))
    suite.add("pydantic_ai", "pydantic-ai `ToolManager.handle_call`", "validate JSON (pydantic-core), capability hooks, retries bookkeeping, call", one)


PEERS: dict[str, Callable[[Suite], None]] = {
    "openai-agents": add_openai,
    "mcp (FastMCP)": add_fastmcp,
    "semantic-kernel": add_semantic_kernel,
    "langgraph": add_langgraph,
    "pydantic-ai": add_pydantic_ai,
}


# ------------------------------------------------------------------ tether
def tether_registry(tool: Any, listeners: int, concurrency_safe: bool = False) -> ToolRegistry:
    """A registry with one tool and either no listener or the three of the issue."""
    registry = ToolRegistry()
    registry.register(tool, options=ToolRegistrationOptions(is_concurrency_safe=True if concurrency_safe else None))
    if listeners:

        async def pre(execution: Any, next_: Any) -> Any:
            return await next_()

        async def post(execution: Any, outcome: Any, next_: Any) -> Any:
            return ToolPostDecision.accept()

        registry.register_pre_execute_listener(None, pre)
        registry.register_guard(None, lambda execution: None)
        registry.register_post_execute_listener(None, post)
    return registry


def batch_runner(registry: ToolRegistry, size: int, name: str = "echo", raw: str = RAW) -> Invoke:
    view = registry.seal()
    calls = [ToolCall(f"c{i}", name, raw) for i in range(size)]

    async def run() -> object:
        outcomes = await registry.execute_batch(calls, view)
        assert outcomes[-1].failure is None, outcomes[-1].failure
        return outcomes

    return run


def add_tether(suite: Suite) -> None:
    tool = PythonFunction.from_callable(echo)
    for listeners in (0, 3):
        suffix = f", {listeners} listeners"
        suite.add(f"tether_1_{listeners}", f"tether_clr `execute_batch`, 1 call{suffix}", "see below",
                  batch_runner(tether_registry(tool, listeners), 1))
        suite.add(f"tether_100x_{listeners}", f"tether_clr `execute_batch`, 100 EXCLUSIVE calls{suffix}", "see below",
                  batch_runner(tether_registry(tool, listeners), 100), calls=100)
        suite.add(f"tether_100p_{listeners}", f"tether_clr `execute_batch`, 100 concurrency-safe calls{suffix}", "see below",
                  batch_runner(tether_registry(tool, listeners, concurrency_safe=True), 100), calls=100)


# --------------------------------------------------------------------- .NET
def _clr_echo(suite: Suite) -> tuple[Any, Invoke, str]:
    """The .NET echo tool and a direct call of it: a real AIFunction when MEAI is available, else the bridge's method."""
    from tether_clr.clr import (
        compile_library,
        discover_functions,
        find_meai_directories,
        load_assembly,
        load_meai,
    )

    folders = find_meai_directories()
    if folders:
        try:
            abstractions = load_meai()
            references: list[Path] = [Path(str(abstractions.Location))]
            for folder in folders:
                for name in ("System.Text.Json.dll", "Microsoft.Extensions.AI.dll", "Microsoft.Bcl.AsyncInterfaces.dll"):
                    if (Path(folder) / name).is_file():
                        references.append(Path(folder) / name)
            facade = Path("/usr/lib/mono/4.5/Facades/netstandard.dll")  # mcs needs it to see netstandard types
            if facade.is_file():
                references.append(facade)
            assembly = load_assembly(compile_library("TetherBenchMeai", sorted((HERE / "dotnet" / "meai").glob("*.cs")), references))
            function = next(f for f in discover_functions(assembly) if f.name == "Echo")
            from Microsoft.Extensions.AI import AIFunctionArguments  # type: ignore[import-not-found]
            from System.Threading import CancellationToken as NetToken  # type: ignore[import-not-found]

            aifunction, none = function.clr_object, getattr(NetToken, "None")

            async def direct() -> object:
                arguments = AIFunctionArguments()
                arguments["text"] = "hi"
                return aifunction.InvokeAsync(arguments, none).AsTask().Result

            return function, direct, "a real Microsoft.Extensions.AI `AIFunction` (`AIFunctionFactory.Create`)"
        except Exception as exc:  # the fixture did not compile or load: say so and fall back
            suite.notes.append(f"MEAI echo unavailable ({type(exc).__name__}: {exc}); the bridge's wrapped method was measured instead.")
    from System.Threading import CancellationToken as NetToken

    assembly = load_assembly(compile_library("TetherBenchEcho", [HERE / "dotnet" / "EchoMethod.cs"]))
    function = next(f for f in discover_functions(assembly) if f.name == "Echo")
    handle, text, none = function._handle, json.dumps({"text": "hi"}), getattr(NetToken, "None")  # the bridge's own .NET entry

    async def direct_method() -> object:
        return handle.InvokeAsync(text, none).Result

    return function, direct_method, "the bridge's wrapped `[Description]` method (no Microsoft.Extensions.AI available)"


def add_clr(suite: Suite) -> str | None:
    """The .NET rows; returns a description of the runtime, or None when none loads."""
    try:
        from tether_clr.clr import load_runtime

        runtime = load_runtime()
        function, direct, kind = _clr_echo(suite)
    except Exception as exc:
        suite.skipped.append(f".NET rows: {type(exc).__name__}: {exc}")
        return None
    token = CancellationToken.none()
    arguments = {"text": "hi"}

    async def invoke() -> object:
        return await function.invoke(arguments, token)

    suite.add("clr_direct", "direct `InvokeAsync(...).AsTask().Result` through pythonnet", "arguments built from Python, blocking wait", direct)
    suite.add("clr_invoke", "`ClrFunction.invoke`", "JSON text in, thread-pool start, pipe wake-up, JSON result", invoke)
    suite.add("clr_batch", "tether_clr `execute_batch`, 1 .NET call, 0 listeners", "the full pipeline around the .NET echo",
              batch_runner(tether_registry(function, 0), 1, name="Echo"))
    return f"{runtime.description}; the .NET tool is {kind}"


# ------------------------------------------------------------------- memory
def rss_mib() -> float:
    try:
        import psutil

        return float(psutil.Process().memory_info().rss) / 2**20
    except ImportError:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


async def memory_samples(total: int, every: int) -> list[tuple[int, float]]:
    """RSS (after a full collection) every ``every`` one-call batches."""
    run = batch_runner(tether_registry(PythonFunction.from_callable(echo), 0), 1)
    await run()
    gc.collect()
    samples = [(0, rss_mib())]
    for done in range(every, total + 1, every):
        for _ in range(every):
            await run()
        gc.collect()
        samples.append((done, rss_mib()))
    return samples


# ------------------------------------------------------------------- report
def ratio(numerator: float | None, denominator: float | None) -> float | None:
    return None if numerator is None or denominator is None or denominator == 0 else numerator / denominator


def target_rows(suite: Suite, runtime: str | None) -> list[list[str]]:
    g = suite.get
    rows: list[list[str]] = []

    def add(what: str, value: float | None, goal: float, unit: str = "x", today: str = "") -> None:
        if value is None:
            rows.append([what, "not measured", f"<= {goal:g}{unit}", "-", today])
            return
        shown = f"{value:.0f}%" if unit == "%" else (f"{value:.1f} µs" if unit == " µs" else f"{value:.2f}x")
        rows.append([what, shown, f"<= {goal:g}{unit}", "yes" if value <= goal else "**no**", today])

    add("one-call batch / OpenAI `on_invoke_tool`", ratio(g("tether_1_0"), g("openai")), 2.0, today="8.8x")
    add("one-call batch / LangGraph `ToolNode`", ratio(g("tether_1_0"), g("langgraph")), 0.1, today="0.18x")
    add("100-call batch (EXCLUSIVE) per call / OpenAI under `gather`", ratio(g("tether_100x_0"), g("openai_gather")), 1.5, today="2.4x")
    add("100-call batch (safe group) per call / OpenAI under `gather`", ratio(g("tether_100p_0"), g("openai_gather")), 1.5, today="2.75x")
    for size, key in (("one-call", "1"), ("100 EXCLUSIVE", "100x"), ("100 safe", "100p")):
        base, three = g(f"tether_{key}_0"), g(f"tether_{key}_3")
        overhead = None if base is None or three is None else (three - base) / base * 100
        add(f"3 listeners, {size}: added cost", overhead, 15, unit="%")
    add("safe group of 100 / EXCLUSIVE, per call", ratio(g("tether_100p_0"), g("tether_100x_0")), 1.3, today="1.66x")
    if runtime is not None:
        direct, invoke, batch = g("clr_direct", "wall"), g("clr_invoke", "wall"), g("clr_batch", "wall")
        goal = 40 if runtime.startswith("Mono") else 25
        added = None if direct is None or invoke is None else invoke - direct
        add(f"`ClrFunction.invoke` - direct ({runtime.split(';')[0]})", added, goal, unit=" µs", today="+65-100 µs (Mono)")
        python_one, bare = g("tether_1_0", "wall"), g("bare", "wall")
        python_added = None if python_one is None or bare is None else python_one - bare
        dotnet_added = None if batch is None or invoke is None else batch - invoke
        add("`execute_batch` added to a .NET call / added to a Python call", ratio(dotnet_added, python_added), 1.0)
    return rows


VERSIONED = PEER_PACKAGES + ("pydantic", "anyio", "jsonschema", "pythonnet")
"""The distributions whose versions the report names."""


def cpu() -> str:
    try:
        with open("/proc/cpuinfo") as info:
            model = next((line.split(":", 1)[1].strip() for line in info if line.startswith("model name")), "")
    except OSError:
        model = platform.processor()
    try:
        load = f", load average {os.getloadavg()[0]:.2f} when the report was written"
    except OSError:
        load = ""
    return f"{model or 'unknown CPU'}, {os.cpu_count()} cores{load}"


def python_speed_ns() -> float:
    """CPU ns per iteration of a plain ``x += i`` loop: how fast this core runs bytecode right now.

    Peers whose per-call work is mostly in pydantic-core (Rust) slow down less
    than pure-Python code on a busy or slow core, so the ratios depend on it.
    """
    import time

    def loop() -> int:
        total = 0
        for i in range(1_000_000):
            total += i
        return total

    best = float("inf")
    for _ in range(5):
        start = time.process_time()
        loop()
        best = min(best, time.process_time() - start)
    return best * 1e3


def render(suite: Suite, runtime: str | None, memory: list[tuple[int, float]], args: argparse.Namespace) -> str:
    floor = suite.get("floor_pydantic")
    measured = [r for r in suite.rows if r.samples and not r.key.startswith("clr_")]
    main = table(["path", "CPU µs per call", "wall µs per call", "CPU vs pydantic floor"],
                 [[r.label, f"{r.us('cpu'):.1f}", f"{r.us('wall'):.1f}", f"{r.us('cpu') / floor:.1f}x" if floor else "-"] for r in measured])
    parts = [
        f"Measured with `./tasks.sh bench` (`benchmarks/peers.py --write-docs`) on {datetime.date.today().isoformat()}: "
        f"asyncio; {machine_line()}; {cpu()}; best of {args.rounds} rounds of at least {args.min_round:g} s "
        f"(wall clock and process CPU time each), median of {args.runs} runs; a plain Python loop ran at "
        f"{python_speed_ns():.0f} ns per iteration. Versions: {versions(VERSIONED)}.",
        "",
        main,
    ]
    if runtime is not None:
        clr_rows = [[r.label, f"{r.us('wall'):.1f}", f"{r.us('cpu'):.1f}"] for r in suite.rows if r.samples and r.key.startswith("clr_")]
        parts += ["", f".NET: {runtime}.", "", table(["path", "wall µs per call", "CPU µs per call (all threads)"], clr_rows)]
    if len(memory) > 1:
        (warm, first), (_, last) = memory[1], memory[-1]
        samples = table(["one-call batches run", *(f"{n:,}" for n, _ in memory)], [["RSS MiB", *(f"{mib:.1f}" for _, mib in memory)]])
        parts += ["", "Memory: RSS after a full collection while one-call batches run (0 listeners); "
                      f"growth from {warm:,} to {memory[-1][0]:,} calls: {last - first:+.1f} MiB.", "", samples]
    parts += ["", "Targets of issue 31 (the Python rows; 'today': when it was filed) and issue 9 (the .NET rows), from the "
                  "medians above: CPU time for the Python rows, wall time for the .NET rows "
                  "(a .NET call's cost includes waiting for the thread pool and the wake-up):", "",
              table(["target", "measured", "goal", "met", "issue's 'today'"], target_rows(suite, runtime))]
    for line in suite.skipped + suite.notes:
        parts += ["", f"Note: {line}"]
    return "\n".join(parts) + "\n"


# ---------------------------------------------------------------------- main
async def measure(suite: Suite, runs: int, rounds: int, min_round: float) -> None:
    for row in suite.rows:  # one call each first: a broken peer fails loudly, before any timing
        await row.fn()
    for run in range(runs):
        for row in suite.rows:
            if row.timer is None:
                row.timer = Timer(row.fn, row.calls, min_round)
            row.samples.append(await row.timer.best_us(rounds))
            wall, cpu = row.samples[-1]
            print(f"  run {run + 1}/{runs}  {row.label}: {cpu:.1f} µs CPU, {wall:.1f} µs wall", file=sys.stderr, flush=True)


async def main(args: argparse.Namespace) -> str:
    suite = Suite()
    add_floors(suite)
    if args.only != "tether":
        for name, add in PEERS.items():
            try:
                add(suite)
            except ImportError as exc:
                suite.skipped.append(f"{name} not installed ({exc}); `pip install -e '.[bench]'` adds it.")
    add_tether(suite)
    runtime = add_clr(suite) if args.clr else None
    # FastMCP configures logging at INFO: lift it so no peer writes a log line per call.
    logging.getLogger().setLevel(logging.WARNING)
    await measure(suite, args.runs, args.rounds, args.min_round)
    memory = await memory_samples(args.memory_calls, max(1, args.memory_calls // 10)) if args.memory_calls else []
    return render(suite, runtime, memory, args)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="a smoke run: 1 run, 2 rounds of 0.02 s, 2,000 memory calls")
    parser.add_argument("--runs", type=int, default=3, help="full measurements, interleaved; the median is reported")
    parser.add_argument("--rounds", type=int, default=5, help="rounds per measurement; the best is kept")
    parser.add_argument("--min-round", type=float, default=0.5, help="seconds each round lasts at least")
    parser.add_argument("--memory-calls", type=int, default=100_000, help="one-call batches for the memory row (0: skip)")
    parser.add_argument("--only", choices=["all", "tether"], default="all", help="'tether': floors and tether_clr rows only")
    parser.add_argument("--no-clr", dest="clr", action="store_false", help="skip the .NET rows")
    add_write_docs_flag(parser, "peers")
    args = parser.parse_args(argv)
    if args.quick:
        args.runs, args.rounds, args.min_round, args.memory_calls = 1, 2, 0.02, min(args.memory_calls, 2_000)
    return args


if __name__ == "__main__":
    arguments = parse_args()
    report = asyncio.run(main(arguments))
    print(report)
    if arguments.write_docs:
        write_docs_section(SECTION, report)

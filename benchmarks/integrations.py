"""What each framework adapter of ``tether_clr.integrations`` adds per call over the framework's own function tool.

    .venv/bin/python benchmarks/integrations.py [--quick] [--runs N] [--rounds N] [--min-round S] [--write-docs]

Issue 30's target: a governed tool costs at most the pipeline's own cost plus
10 µs more than the framework's plain function tool. For each framework, the
same no-op tool (``async def echo(text: str) -> str``, raw arguments
``{"text": "hi"}``) is called through the framework's own tool-invocation
path, the one its agent loop uses (the drivers of ``benchmarks/peers.py``,
in ``benchmarks/_frameworks.py``):

* **plain**: the framework's function tool of ``echo``;
* **governed**: the adapter's tool of ``echo`` registered in a ``ToolRegistry``
  (identity given as ``context=``, no store: nothing logged);
* **pipeline**: the pipeline's own cost: ``registry.execute_batch`` of one call,
  no sink, on the same registry and the assembly the adapter uses.

adapter overhead = governed - plain - pipeline; the target is met when it is at
most 10 µs. The per-step offer (what an adapter does once per model request,
not per call: pydantic-ai's ``for_run_step``/``get_tools``, the Agents SDK's
``is_enabled`` of each tool, LangChain's ``GovernedTools.tools``) is timed in
rows of its own. Every row is timed best-of-``--rounds`` (rounds of at least
``--min-round`` s) on the wall clock and in process CPU time, the whole set
``--runs`` times interleaved, and the median reported; the verdict uses CPU
time (a busy shared core inflates wall time, not CPU time). asyncio.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import logging
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from _frameworks import (  # noqa: E402
    RAW,
    Invoke,
    echo,
    langgraph_invoker,
    openai_invoker,
    openai_offer,
    pydantic_ai_context,
    pydantic_ai_invoker,
    pydantic_ai_offer,
)
from _report import add_write_docs_flag, machine_line, table, versions, write_docs_section  # noqa: E402
from peers import Suite, cpu, measure, python_speed_ns, tether_registry  # noqa: E402

from tether_clr import PythonFunction, RequestContext, ToolCall, ToolRegistry  # noqa: E402
from tether_clr.catalog.views import ToolAssembly  # noqa: E402

SECTION = "integrations"
CONTEXT = RequestContext("acme", "alice")
TARGET_US = 10.0
FRAMEWORK_PACKAGES = ("openai-agents", "pydantic-ai-slim", "langgraph", "langchain-core", "pydantic", "anyio")


@dataclass(frozen=True)
class Framework:
    key: str
    name: str
    entry: str  # the framework's per-call entry
    offer: str  # what its per-step offer row times


def pipeline_runner(registry: ToolRegistry, assembly: ToolAssembly) -> Invoke:
    """The pipeline's own cost: ``execute_batch`` of one call, no sink, on the adapter's assembly."""
    calls = [ToolCall("c1", "echo", RAW)]

    async def run() -> object:
        outcomes = await registry.execute_batch(calls, assembly)
        assert outcomes[0].failure is None, outcomes[0].failure
        return outcomes

    return run


async def check(suite: Suite) -> None:
    """One call of each per-call row first, untimed: a driver that does not reach the echo fails before any timing."""
    for row in suite.rows:
        if "_offer_" in row.key:
            continue
        result = await row.fn()
        if "hi" not in repr(result):
            raise AssertionError(f"{row.key}: the call did not return the echo: {result!r}")


# ---------------------------------------------------------------- frameworks
def add_pydantic_ai(suite: Suite, registry: ToolRegistry) -> Framework:
    from pydantic_ai.toolsets import FunctionToolset

    from tether_clr.integrations.pydantic_ai import GovernedToolset

    plain, governed = FunctionToolset([echo]), GovernedToolset(registry, context=CONTEXT)
    run_context = pydantic_ai_context()
    assembly = governed.core.assemble(None, (), run_context.conversation_id or run_context.run_id)
    suite.add("pydantic_ai_plain", "pydantic-ai plain", "", pydantic_ai_invoker(plain))
    suite.add("pydantic_ai_governed", "pydantic-ai governed", "", pydantic_ai_invoker(governed))
    suite.add("pydantic_ai_pipeline", "pydantic-ai pipeline", "", pipeline_runner(registry, assembly))
    suite.add("pydantic_ai_offer_plain", "pydantic-ai offer plain", "", pydantic_ai_offer(plain))
    suite.add("pydantic_ai_offer_governed", "pydantic-ai offer governed", "", pydantic_ai_offer(governed))
    return Framework("pydantic_ai", "pydantic-ai", "`ToolManager.handle_call`", "`ToolManager.for_run_step` (the toolset's `get_tools`)")


def add_openai(suite: Suite, registry: ToolRegistry) -> Framework:
    from agents import function_tool

    from tether_clr.integrations.governed import GovernedCalls
    from tether_clr.integrations.openai_agents import GovernedAgentTools

    state = GovernedAgentTools(GovernedCalls(registry, context=CONTEXT), "bench-conversation")
    tools = state.build(None)
    (governed,) = tools
    plain = function_tool(echo)
    suite.add("openai_plain", "OpenAI Agents plain", "", openai_invoker(plain))
    suite.add("openai_governed", "OpenAI Agents governed", "", openai_invoker(governed))
    suite.add("openai_pipeline", "OpenAI Agents pipeline", "", pipeline_runner(registry, state.assemble(None)))
    suite.add("openai_offer_plain", "OpenAI Agents offer plain", "", openai_offer([plain]))
    suite.add("openai_offer_governed", "OpenAI Agents offer governed", "", openai_offer(tools))
    return Framework("openai", "OpenAI Agents SDK", "`FunctionTool.on_invoke_tool`", "`Agent.get_all_tools` (each tool's `is_enabled`), 1 tool")


def add_langchain(suite: Suite, registry: ToolRegistry) -> Framework:
    from langchain_core.tools import tool

    from tether_clr.integrations.langchain import GovernedTools

    adapter = GovernedTools(registry, context=CONTEXT)
    governed = adapter.tools(None)
    suite.add("langchain_plain", "LangGraph plain", "", langgraph_invoker([tool(echo)]))
    suite.add("langchain_governed", "LangGraph governed", "", langgraph_invoker(governed))
    suite.add("langchain_pipeline", "LangGraph pipeline", "", pipeline_runner(registry, adapter.core.assemble(None, (), None)))

    async def offer() -> object:
        return adapter.tools(None, ())

    suite.add("langchain_offer_governed", "LangGraph offer governed", "", offer)
    return Framework("langchain", "LangChain / LangGraph", "`ToolNode.ainvoke`", "`GovernedTools.tools(config, messages)` (a plain tool list is static: none)")


FRAMEWORKS = {"pydantic-ai": add_pydantic_ai, "openai-agents": add_openai, "langchain": add_langchain}


# -------------------------------------------------------------------- report
def render(suite: Suite, frameworks: list[Framework], args: argparse.Namespace) -> str:
    def us(key: str, clock: str = "cpu") -> float | None:
        return suite.get(key, clock)

    def shown(value: float | None) -> str:
        return "-" if value is None else f"{value:.1f}"

    rows: list[list[str]] = []
    verdicts: list[str] = []
    for fw in frameworks:
        plain, governed, pipeline = us(f"{fw.key}_plain"), us(f"{fw.key}_governed"), us(f"{fw.key}_pipeline")
        if plain is None or governed is None or pipeline is None:
            continue
        wall = [us(f"{fw.key}_{kind}", "wall") for kind in ("plain", "governed", "pipeline")]
        overhead = governed - plain - pipeline
        met = overhead <= TARGET_US
        verdicts.append(f"{fw.name}: {'met' if met else 'missed'} ({overhead:+.1f} µs over the pipeline)")
        rows.append([
            f"{fw.name} {fw.entry}", shown(plain), shown(governed), shown(pipeline),
            f"{governed - plain:.1f}", f"{overhead:+.1f}", "yes" if met else "**no**",
            " / ".join(shown(w) for w in wall),
        ])
    offer_rows = []
    for fw in frameworks:
        plain_offer, governed_offer = us(f"{fw.key}_offer_plain"), us(f"{fw.key}_offer_governed")
        if governed_offer is None:
            continue
        added = "-" if plain_offer is None else f"{governed_offer - plain_offer:+.1f}"
        offer_rows.append([f"{fw.name}: {fw.offer}", shown(plain_offer) if plain_offer is not None else "-",
                           shown(governed_offer), added])
    parts = [
        f"Measured with `benchmarks/integrations.py --write-docs` on {datetime.date.today().isoformat()}: asyncio; "
        f"{machine_line()}; {cpu()}; best of {args.rounds} rounds of at least {args.min_round:g} s (wall clock and "
        f"process CPU time each), median of {args.runs} interleaved runs; a plain Python loop ran at "
        f"{python_speed_ns():.0f} ns per iteration. Versions: {versions(FRAMEWORK_PACKAGES)}.",
        "",
        "Per call, CPU µs (the verdict: governed - plain <= pipeline + 10 µs, i.e. adapter overhead <= 10 µs):",
        "",
        table(["framework, entry", "plain", "governed", "pipeline", "governed - plain", "adapter overhead", "met",
               "wall: plain / governed / pipeline"], rows),
        "",
        "Per step (once per model request, not per call), CPU µs:",
        "",
        table(["offer", "plain", "governed", "added"], offer_rows),
    ]
    if verdicts:
        parts += ["", "Target of issue 30 (CPU medians): " + "; ".join(verdicts) + "."]
    for line in suite.skipped:
        parts += ["", f"Note: {line}"]
    return "\n".join(parts) + "\n"


async def main(args: argparse.Namespace) -> str:
    suite = Suite()
    registry = tether_registry(PythonFunction.from_callable(echo), 0)
    frameworks: list[Framework] = []
    for name, add in FRAMEWORKS.items():
        if args.only and name not in args.only:
            continue
        try:
            frameworks.append(add(suite, registry))
        except ImportError as exc:
            suite.skipped.append(f"{name} not installed ({exc}); its extra (`pip install -e '.[{name}]'`) adds it.")
    await check(suite)
    logging.getLogger().setLevel(logging.WARNING)
    await measure(suite, args.runs, args.rounds, args.min_round)
    return render(suite, frameworks, args)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="a smoke run: 1 run, 2 rounds of 0.02 s")
    parser.add_argument("--runs", type=int, default=3, help="full measurements, interleaved; the median is reported")
    parser.add_argument("--rounds", type=int, default=5, help="rounds per measurement; the best is kept")
    parser.add_argument("--min-round", type=float, default=0.5, help="seconds each round lasts at least")
    parser.add_argument("--only", action="append", choices=sorted(FRAMEWORKS), help="measure only these frameworks")
    add_write_docs_flag(parser, SECTION)
    args = parser.parse_args(argv)
    if args.quick:
        args.runs, args.rounds = 1, 2
        args.min_round = min(args.min_round, 0.02)
    return args


if __name__ == "__main__":
    arguments = parse_args()
    report = asyncio.run(main(arguments))
    print(report)
    if arguments.write_docs:
        write_docs_section(SECTION, report)

"""Where an MCP ``tools/call`` spends its time, in memory: tether_clr's server against FastMCP.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/profile_mcp.py [--calls N] [--rounds R] [--ablate]
        [--mode legacy|2026-07-28] [--quick]
        [--profile tether|fastmcp [--sort KEY] [--top N] [--pyinstrument [--show-all]]]

Both servers serve the benchmark's ``echo`` (benchmarks/mcp_server.py: governance on, a guard and an
audit listener) to the SDK's ``mcp.Client`` over its in-memory transport, in the handshake era
(``--mode legacy``, the default: one session each), in 2026-07-28 (``--mode 2026-07-28``: a
connection per request, no session), or both in turn (``--mode both``), so the HTTP stack is out of the picture. ``--quick``: a smoke
run (few calls, one round; what tests/test_benchmarks.py runs). Without ``--profile``: ``--rounds``
alternating rounds of ``--calls`` sequential calls; per server, the median over the rounds of the
event loop thread's CPU time per call (client included: the client and the server share the
thread; CPU time, because other work on a shared machine inflates wall time far more). With it:
cProfile of that server's calls (``--sort``, ``--top``), or pyinstrument's sampling
(``--pyinstrument``; not a dependency: ``pip install pyinstrument``), which distorts coroutine
chains less. With ``--ablate``: two more tether_clr servers in the same rounds, each with a layer taken
out, so that the differences say what each layer costs where it really runs (beside the SDK, not in
a loop of its own): "cached outcome" answers every call with the outcome of its first
``execute_batch`` (the MCP layer and the SDK without the pipeline); "constant result" answers
every ``tools/call`` with a constant result (the SDK's own cost for tether_clr's handler); then the
same ``execute_batch`` timed in a loop of its own, for comparison.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import sys
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import anyio  # noqa: E402

from mcp_server import ARGS, echo, governed_server  # noqa: E402


def fastmcp_server() -> Any:
    from mcp.server.mcpserver import MCPServer

    server: Any = MCPServer("bench", log_level="WARNING")
    server.tool()(echo)
    return server


async def connect(stack: AsyncExitStack, server: Any, mode: str = "legacy") -> Any:
    from mcp import Client
    from mcp.types import Implementation

    client = Client(server, client_info=Implementation(name="acme:alice", version="1"), mode=mode)
    return await stack.enter_async_context(client)


async def calls(client: Any, count: int) -> float:
    start = time.thread_time()
    for _ in range(count):
        result = await client.call_tool("echo", ARGS)
        if result.is_error:
            raise RuntimeError(f"echo failed: {result}")
    return (time.thread_time() - start) / count


def cached_outcome_server() -> Any:
    """tether_clr's server whose registry runs the pipeline once and answers every later call with that outcome."""
    server = governed_server()
    registry = server.registry
    run = registry.execute_batch
    first: list[Any] = []

    async def execute_batch(*args: Any, **kwargs: Any) -> Any:
        if not first:
            first.append(await run(*args, **kwargs))
        return first[0]

    registry.execute_batch = execute_batch  # this instance only
    return server.sdk_server


async def pipeline_alone(calls: int, rounds: int) -> float:
    """``execute_batch`` of one ``echo`` call on the benchmark's governed registry, in a loop of its own
    (no SDK around it): CPU per call, the median of ``rounds``."""
    from tether_clr import AgentPipelineScope, CancellationSource, RequestContext, ToolCall

    registry = governed_server().registry
    scope = AgentPipelineScope().child(owner="alice", session_id="profile")
    assembly = registry.assemble(RequestContext("acme", "alice"), scope)

    async def batch(count: int) -> float:
        start = time.thread_time()
        for index in range(count):
            source = CancellationSource()
            [outcome] = await registry.execute_batch([ToolCall(f"c{index}", "echo", '{"text": "hi"}', scope)], assembly, 1, None, source.token)
            if outcome.failure is not None:
                raise RuntimeError(f"echo failed: {outcome}")
        return (time.thread_time() - start) / count

    await batch(calls)
    return statistics.median([await batch(calls) for _ in range(rounds)])


def constant_result_server() -> Any:
    """tether_clr's server whose ``tools/call`` handler answers a constant result: the SDK's cost of the handler's wiring."""
    from mcp.types import CallToolRequestParams

    server = governed_server()

    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    async def call_tool(ctx: Any, params: Any) -> dict[str, Any]:
        result: dict[str, Any] = {"content": [{"type": "text", "text": "hi"}], "structuredContent": {"result": "hi"}, "isError": False}
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            result["resultType"] = "complete"  # required from 2026-07-28 on
        return result

    server.sdk_server.add_request_handler("tools/call", CallToolRequestParams, call_tool)
    return server.sdk_server


async def main(args: argparse.Namespace) -> None:
    for mode in ("legacy", "2026-07-28") if args.mode == "both" else (args.mode,):
        if args.mode == "both":
            print(f"== client mode {mode}")
        await profile(args, mode)


async def profile(args: argparse.Namespace, mode: str) -> None:
    servers = {"FastMCP": fastmcp_server(), "tether_clr": governed_server().sdk_server}
    if args.ablate:
        servers["tether_clr, cached outcome"] = cached_outcome_server()
        servers["tether_clr, constant result"] = constant_result_server()
    async with AsyncExitStack() as stack:
        clients = {name: await connect(stack, server, mode) for name, server in servers.items()}
        for client in clients.values():
            await calls(client, args.warmup)
        if args.profile:
            name = "tether_clr" if args.profile == "tether" else "FastMCP"
            if args.pyinstrument:
                from pyinstrument import Profiler  # not a dependency: pip install pyinstrument

                sampler = Profiler(interval=0.0001, async_mode="disabled")
                sampler.start()
                await calls(clients[name], args.calls)
                sampler.stop()
                print(sampler.output_text(unicode=False, color=False, show_all=args.show_all))
                return
            profiler = cProfile.Profile()
            profiler.enable()
            await calls(clients[name], args.calls)
            profiler.disable()
            pstats.Stats(profiler).sort_stats(args.sort).print_stats(args.top)
            return
        per_call: dict[str, list[float]] = {name: [] for name in clients}
        for _ in range(args.rounds):
            for name, client in clients.items():
                per_call[name].append(await calls(client, args.calls))
        for name, values in per_call.items():
            print(f"{name}: {statistics.median(values) * 1e6:.0f} µs of loop-thread CPU per call (median of {args.rounds} rounds)")
        ratio = statistics.median(per_call["tether_clr"]) / statistics.median(per_call["FastMCP"])
        print(f"tether_clr / FastMCP: {ratio:.2f}x")
        if args.ablate:
            full, cached, constant = (statistics.median(per_call[name]) * 1e6 for name in
                                      ("tether_clr", "tether_clr, cached outcome", "tether_clr, constant result"))
            fast = statistics.median(per_call["FastMCP"]) * 1e6
            print(f"the pipeline (execute_batch): {full - cached:+.0f} µs; the MCP layer: {cached - constant:+.0f} µs; "
                  f"the SDK for tether_clr's handler against FastMCP's whole call: {constant - fast:+.0f} µs")
            alone = await pipeline_alone(args.calls, args.rounds) * 1e6
            print(f"execute_batch in a loop of its own (no SDK around it): {alone:.0f} µs per call")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=None, help="calls per round (default 1000; 20 with --quick)")
    parser.add_argument("--rounds", type=int, default=None, help="default 7; 1 with --quick")
    parser.add_argument("--warmup", type=int, default=None, help="calls per server before the rounds (default 200; 5 with --quick)")
    parser.add_argument("--mode", choices=("legacy", "2026-07-28", "both"), default="legacy",
                        help="the client's mode: the handshake era (default), 2026-07-28 (a request each), or both in turn")
    parser.add_argument("--quick", action="store_true", help="a smoke run: few calls, one round")
    parser.add_argument("--profile", choices=("tether", "fastmcp"))
    parser.add_argument("--ablate", action="store_true", help="also time tether_clr with the pipeline, then its whole handler, taken out")
    parser.add_argument("--sort", default="cumulative", help="the pstats sort key (cumulative, tottime...)")
    parser.add_argument("--top", type=int, default=45)
    parser.add_argument("--show-all", action="store_true", help="pyinstrument: show every frame")
    parser.add_argument("--pyinstrument", action="store_true", help="sample with pyinstrument (pip install pyinstrument) instead of cProfile")
    parsed = parser.parse_args()
    for name, full, quick in (("calls", 1000, 20), ("rounds", 7, 1), ("warmup", 200, 5)):
        if getattr(parsed, name) is None:
            setattr(parsed, name, quick if parsed.quick else full)
    anyio.run(main, parsed)

"""``tools/call`` over streamable HTTP on 127.0.0.1: tether_clr's MCP server against the SDK's FastMCP.

    .venv/bin/python benchmarks/mcp_server.py [--quick] [--calls N] [--concurrency C] [--rounds R]
        [--era handshake|2026-07-28] [--write-docs]

Runs in the test virtualenv (``.venv``: mcp 2.x, which ``tether_clr.mcp`` needs, and the tests'
support code), not in ``.venv-bench`` (the peers' pydantic); ``./tasks.sh bench`` runs it there.

Two servers serve the same no-op tool, ``async def echo(text: str) -> str``, each in its
own uvicorn on 127.0.0.1 in a thread (a port the OS picks; stopped when the run ends):

* tether_clr: ``tether_clr.mcp.create_server`` with governance on: ``context_for`` reads
  the tenant and principal from headers, so every request is assembled afresh for its
  caller; a guard and an audit listener are registered, so every call passes both;
* FastMCP: the SDK's ``MCPServer`` (mcp 2.x's name for ``FastMCP``) with ``@tool()``.

Both are driven by the SDK's real client (``mcp.Client`` over ``streamable_http_client``,
handshake era by default: one session per client, opened once and kept; ``--era 2026-07-28``
speaks the stateless era instead, a request each), from this process's
event loop. Measured, in rounds that alternate the two servers (A B A B ...) so that
whatever else loads the machine loads both:

* latency: ``--calls`` sequential calls per round, each timed; the median and p95 over
  every round's calls (after a warm-up);
* throughput: ``--concurrency`` concurrent calls over one session, ``--calls`` in all per
  round; calls per second, the median of the rounds;
* server CPU: the CPU time of each server's own thread during the sequential calls, per
  call (the median of the rounds). Not a goal, but what the server itself spends, which
  the other work on a shared machine inflates far less than wall time.
"""

from __future__ import annotations

import argparse
import datetime
import logging
import os
import statistics
import sys
import time
from collections.abc import Callable
import threading
from contextlib import AsyncExitStack, ExitStack
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import anyio  # noqa: E402

from tests.support.mcp_http import serving  # noqa: E402  (the same uvicorn-in-a-thread server the tests use)
from _report import add_write_docs_flag, machine_line, table, versions, write_docs_section  # noqa: E402

SECTION = "mcp"
HEADERS = {"x-tenant": "acme", "x-principal": "alice"}
ARGS = {"text": "hi"}


async def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


def governed_server() -> Any:
    """tether_clr's server for ``echo``, governance on: a guard, an audit listener, and an identity per request
    (the ``x-tenant`` / ``x-principal`` headers over HTTP; the client's name, ``tenant:principal``, in memory)."""
    from tether_clr import PythonFunction, RequestContext, ToolRegistry
    from tether_clr.mcp import McpRequest, create_server

    registry = ToolRegistry()
    registry.register(PythonFunction.from_callable(echo))
    registry.register_guard(None, lambda execution: None)
    audited: list[int] = [0]

    def audit(record: Any) -> None:
        audited[0] += 1

    registry.register_audit_listener(audit)

    def context_for(request: McpRequest) -> RequestContext | None:
        if request.transport == "http":
            tenant, principal = request.headers.get("x-tenant"), request.headers.get("x-principal")
        else:
            name = getattr(request.client_info, "name", "")
            tenant, _, principal = name.partition(":")
        return RequestContext(tenant, principal) if tenant and principal else None

    return create_server(registry, context_for=context_for)


def tether_app() -> Any:
    return governed_server().streamable_http_app(path="/mcp")


def fastmcp_app() -> Any:
    from mcp.server.mcpserver import MCPServer

    server: Any = MCPServer("bench", log_level="WARNING")
    server.tool()(echo)
    return server.streamable_http_app(streamable_http_path="/mcp")


SERVERS: list[tuple[str, Callable[[], Any]]] = [("FastMCP (`MCPServer`)", fastmcp_app), ("tether_clr, governance on", tether_app)]


ERAS = {"handshake": ("legacy", "2025-11-25"), "2026-07-28": ("auto", "2026-07-28")}
"""``--era``: the client's mode, and the protocol version it must end up speaking."""


async def connect(stack: AsyncExitStack, url: str, era: str = "handshake") -> Any:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    mode, version = ERAS[era]
    http = httpx2.AsyncClient(headers=HEADERS, timeout=30)
    client = await stack.enter_async_context(Client(streamable_http_client(url, http_client=http), mode=mode))
    if client.protocol_version != version:
        raise RuntimeError(f"the client speaks {client.protocol_version}, not {version}")
    return client


async def call(client: Any) -> None:
    result = await client.call_tool("echo", ARGS)
    if result.is_error:
        raise RuntimeError(f"echo failed: {result}")


async def sequential(client: Any, calls: int) -> list[float]:
    latencies = []
    for _ in range(calls):
        start = time.perf_counter()
        await call(client)
        latencies.append(time.perf_counter() - start)
    return latencies


async def concurrent(client: Any, calls: int, concurrency: int) -> float:
    """Calls per second with ``concurrency`` calls in flight over one session."""
    per_worker = [calls // concurrency + (1 if i < calls % concurrency else 0) for i in range(concurrency)]

    async def worker(count: int) -> None:
        for _ in range(count):
            await call(client)

    start = time.perf_counter()
    async with anyio.create_task_group() as group:
        for count in per_worker:
            group.start_soon(worker, count)
    return calls / (time.perf_counter() - start)


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]


VERSIONED = ("mcp", "uvicorn", "starlette", "httpx2", "anyio", "pydantic")
"""The distributions whose versions the report names."""


def load() -> str:
    try:
        return Path("/proc/loadavg").read_text(encoding="utf-8").split()[0]
    except OSError:
        return f"{os.getloadavg()[0]:.2f}"


class ServerClock:
    """The CPU time of the thread a server runs in (uvicorn's, started by ``serving``): what the server
    itself spends, which other work on the machine does not inflate the way it does wall time."""

    def __init__(self, before: set[int]) -> None:
        threads = [t for t in threading.enumerate() if t.ident not in before and t.ident is not None]
        if len(threads) != 1:
            raise RuntimeError(f"expected one new server thread, found {len(threads)}")
        self.clock = time.pthread_getcpuclockid(threads[0].ident)  # type: ignore[arg-type]

    def now(self) -> float:
        return time.clock_gettime(self.clock)


async def measure(args: argparse.Namespace) -> str:
    latencies: dict[str, list[float]] = {name: [] for name, _ in SERVERS}
    rates: dict[str, list[float]] = {name: [] for name, _ in SERVERS}
    cpu: dict[str, list[float]] = {name: [] for name, _ in SERVERS}
    load_before = load()
    with ExitStack() as servers:
        urls: dict[str, str] = {}
        clocks: dict[str, ServerClock] = {}
        for name, make_app in SERVERS:
            before = {t.ident for t in threading.enumerate() if t.ident is not None}
            urls[name] = servers.enter_context(serving(make_app))
            clocks[name] = ServerClock(before)
        async with AsyncExitStack() as stack:
            clients = {name: await connect(stack, url, args.era) for name, url in urls.items()}
            for client in clients.values():  # warm-up: imports, caches, the first assembly
                await sequential(client, args.warmup)
                await concurrent(client, args.warmup, args.concurrency)
            for _ in range(args.rounds):
                for name, client in clients.items():
                    start = clocks[name].now()
                    latencies[name] += await sequential(client, args.calls)
                    cpu[name].append((clocks[name].now() - start) / args.calls)
                for name, client in clients.items():
                    rates[name].append(await concurrent(client, args.calls, args.concurrency))
    fast, tether = (name for name, _ in SERVERS)
    rows = []
    for name, _ in SERVERS:
        rows.append([name, f"{statistics.median(latencies[name]) * 1e6:.0f}", f"{p95(latencies[name]) * 1e6:.0f}",
                     f"{statistics.median(rates[name]):.0f}", f"{statistics.median(cpu[name]) * 1e6:.0f}"])
    median_ratio = statistics.median(latencies[tether]) / statistics.median(latencies[fast])
    p95_ratio = p95(latencies[tether]) / p95(latencies[fast])
    rate_ratio = statistics.median(rates[tether]) / statistics.median(rates[fast])
    cpu_ratio = statistics.median(cpu[tether]) / statistics.median(cpu[fast])
    targets = [
        ["sequential latency, median: tether_clr / FastMCP", f"{median_ratio:.2f}x", "<= 1x", _met(median_ratio <= 1)],
        ["sequential latency, p95: tether_clr / FastMCP", f"{p95_ratio:.2f}x", "<= 1x", _met(p95_ratio <= 1)],
        [f"throughput, {args.concurrency} concurrent calls: tether_clr / FastMCP", f"{rate_ratio:.2f}x", ">= 1x",
         _met(rate_ratio >= 1)],
    ]
    met = all(row[3] == "yes" for row in targets)
    targets.append(["server thread CPU per sequential call: tether_clr / FastMCP (not a goal; steadier under load)",
                    f"{cpu_ratio:.2f}x", "", ""])
    today = datetime.date.today().isoformat()
    header = (f"Measured with `./tasks.sh bench` (`benchmarks/mcp_server.py --write-docs{' --quick' if args.quick else ''}`, "
              f"in `.venv`) on {today}: asyncio; {machine_line()}; {os.cpu_count()} cores, load average {load_before} "
              f"at the start, {load()} at the end; streamable HTTP on 127.0.0.1, "
              f"{'handshake era, one session per server' if args.era == 'handshake' else 'the 2026-07-28 era, a request each'}; "
              f"{args.rounds} round{'s' if args.rounds != 1 else ''} alternating the servers, each {args.calls} sequential calls then {args.calls} calls "
              f"with {args.concurrency} in flight, after {args.warmup} warm-up calls. Versions: {versions(VERSIONED)}.")
    return "\n\n".join([
        header,
        table(["server", "median µs per call", "p95 µs per call", f"calls/s, {args.concurrency} concurrent (median of rounds)",
               "server thread CPU µs per sequential call (median of rounds)"], rows),
        table(["goal (issue 16): no slower than FastMCP, with governance on", "measured", "goal", "met"], targets),
        f"Goal met: {'**yes**' if met else '**no**'}.",
    ])


def _met(ok: bool) -> str:
    return "yes" if ok else "**no**"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_write_docs_flag(parser, SECTION)
    parser.add_argument("--quick", action="store_true", help="a smoke run: few calls, one round")
    parser.add_argument("--calls", type=int, default=None, help="calls per server per round (default 500; 20 with --quick)")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--era", choices=list(ERAS), default="handshake", help="the protocol era the client speaks")
    parser.add_argument("--rounds", type=int, default=None, help="default 6; 1 with --quick")
    parser.add_argument("--warmup", type=int, default=None, help="default 100; 5 with --quick")
    args = parser.parse_args(argv)
    if args.write_docs and args.era != "handshake":
        parser.error("--write-docs writes the handshake era's table; run --era 2026-07-28 without it")
    args.calls = args.calls or (20 if args.quick else 500)
    args.rounds = args.rounds or (1 if args.quick else 6)
    args.warmup = args.warmup or (5 if args.quick else 100)
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    for name in ("mcp", "httpx", "httpx2", "uvicorn", "tether_clr"):
        logging.getLogger(name).setLevel(logging.WARNING)
    report = anyio.run(measure, args)
    print(report)
    if args.write_docs:
        write_docs_section(SECTION, report)


if __name__ == "__main__":
    main()

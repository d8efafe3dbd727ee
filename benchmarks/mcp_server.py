"""``tools/call`` over streamable HTTP on 127.0.0.1: ``tether-clr mcp serve`` against the SDK's FastMCP, both as users run them.

    .venv/bin/python benchmarks/mcp_server.py [--quick] [--calls N] [--concurrency C] [--rounds R] [--warmup W]
        [--write-docs]

Runs in the test virtualenv (``.venv``: mcp 2.x, which ``tether_clr.mcp`` needs, and the tests'
support code), not in ``.venv-bench`` (the peers' pydantic); ``./tasks.sh bench`` runs it there.

Two servers serve the same no-op tool, ``async def echo(text: str) -> str``, each a subprocess
on 127.0.0.1 on a port the OS picks (the URL read from its stderr; SIGTERM at the end):

* tether_clr: ``python -m tether_clr.cli mcp serve --transport http --port 0`` (the command
  ``tether-clr mcp serve``), with ``--tools benchmarks.mcp_server:register`` (``echo``, a guard and
  an audit listener, so every call passes both) and ``--context benchmarks.mcp_server:context_for``
  (the tenant and principal from headers, so every request gets its caller's assembly: from the catalog's
  cache while the catalog is unchanged, tether_clr.catalog.reuse);
* FastMCP: the SDK's ``MCPServer`` (mcp 2.x's name for ``FastMCP``) with ``@tool()``, its
  ``streamable_http_app()`` under a plain ``uvicorn.run(app, host="127.0.0.1", port=0)``
  (this file with ``--serve-fastmcp``).

Both are driven by the SDK's real client (``mcp.Client`` over ``streamable_http_client``) from
this process, in its default mode, ``auto`` (which speaks 2026-07-28 with both servers: a request
each, no session), and in ``legacy`` (the handshake era, 2025-11-25: one session, opened once and
kept). Measured, in rounds that alternate the servers (and the modes) so that whatever else
loads the machine loads every row:

* latency: ``--calls`` sequential calls per row per round, each timed; the median and p95 over
  every round's calls (after a warm-up);
* throughput: ``--concurrency`` concurrent calls over one client, ``--calls`` in all per
  round; calls per second, the median of the rounds;
* server CPU: the server process's CPU time (user + system, every thread, from ``/proc/<pid>/stat``)
  during the sequential calls, per call (the median of the rounds). Not a goal, but what the server
  itself spends, which other work on a shared machine inflates far less than wall time.
"""

from __future__ import annotations

import argparse
import datetime
import logging
import os
import statistics
import sys
import time
from contextlib import AsyncExitStack, ExitStack
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import anyio  # noqa: E402

from _serving import MCP_SERVE_READY, UVICORN_READY, Served, served  # noqa: E402
from _report import add_write_docs_flag, machine_line, table, versions, write_docs_section  # noqa: E402

SECTION = "mcp"
TARGET = 1.5
HEADERS = {"x-tenant": "acme", "x-principal": "alice"}
ARGS = {"text": "hi"}


async def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


def register(registry: Any) -> None:
    """``--tools benchmarks.mcp_server:register``: ``echo``, a guard and an audit listener (governance on)."""
    from tether_clr import PythonFunction

    registry.register(PythonFunction.from_callable(echo))
    registry.register_guard(None, lambda execution: None)
    audited: list[int] = [0]

    def audit(record: Any) -> None:
        audited[0] += 1

    registry.register_audit_listener(audit)


def context_for(request: Any) -> Any:
    """``--context benchmarks.mcp_server:context_for``: the identity of each request, from the ``x-tenant`` /
    ``x-principal`` headers over HTTP, from the client's name (``tenant:principal``) in memory (profile_mcp.py)."""
    from tether_clr import RequestContext

    if request.transport == "http":
        tenant, principal = request.headers.get("x-tenant"), request.headers.get("x-principal")
    else:
        tenant, _, principal = getattr(request.client_info, "name", "").partition(":")
    return RequestContext(tenant, principal) if tenant and principal else None


def governed_server() -> Any:
    """tether_clr's server for ``echo`` in this process, as the command builds it from ``register`` and
    ``context_for`` (benchmarks/profile_mcp.py profiles it in memory)."""
    from tether_clr import ToolRegistry
    from tether_clr.mcp import create_server

    registry = ToolRegistry()
    register(registry)
    return create_server(registry, context_for=context_for)


def fastmcp_app() -> Any:
    from mcp.server.mcpserver import MCPServer

    server: Any = MCPServer("bench", log_level="WARNING")
    server.tool()(echo)
    return server.streamable_http_app(streamable_http_path="/mcp")


def serve_fastmcp() -> None:
    """``--serve-fastmcp``: FastMCP under a plain ``uvicorn.run`` on 127.0.0.1, a port the OS picks (logged on stderr)."""
    import uvicorn

    uvicorn.run(fastmcp_app(), host="127.0.0.1", port=0)


TETHER = "tether_clr (`tether-clr mcp serve`), governance on"
FASTMCP = "FastMCP (`MCPServer`) under `uvicorn.run`"
SERVERS: dict[str, tuple[list[str], str, str]] = {
    TETHER: ([sys.executable, "-m", "tether_clr.cli", "mcp", "serve", "--transport", "http", "--port", "0",
              "--tools", "benchmarks.mcp_server:register", "--context", "benchmarks.mcp_server:context_for"],
             MCP_SERVE_READY, ""),
    FASTMCP: ([sys.executable, str(Path(__file__).resolve()), "--serve-fastmcp"], UVICORN_READY, "/mcp"),
}
"""Each server: its command, the stderr line that gives its URL, and what to append to that URL."""

MODES = {"auto": "2026-07-28", "legacy": "2025-11-25"}
"""The client's modes, and the protocol version each must end up speaking with both servers."""


async def connect(stack: AsyncExitStack, url: str, mode: str) -> Any:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    http = httpx2.AsyncClient(headers=HEADERS, timeout=30)
    client = await stack.enter_async_context(Client(streamable_http_client(url, http_client=http), mode=mode))
    if client.protocol_version != MODES[mode]:
        raise RuntimeError(f"the client in {mode} speaks {client.protocol_version}, not {MODES[mode]}")
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
    """Calls per second with ``concurrency`` calls in flight over one client."""
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


async def measure(args: argparse.Namespace) -> str:
    rows_keys = [(mode, name) for mode in MODES for name in SERVERS]
    latencies: dict[tuple[str, str], list[float]] = {key: [] for key in rows_keys}
    rates: dict[tuple[str, str], list[float]] = {key: [] for key in rows_keys}
    cpu: dict[tuple[str, str], list[float]] = {key: [] for key in rows_keys}
    load_before = load()
    with ExitStack() as servers:
        running: dict[str, Served] = {}
        for name, (command, ready, suffix) in SERVERS.items():
            running[name] = servers.enter_context(served(command, ready, env=_env()))
        async with AsyncExitStack() as stack:
            clients = {(mode, name): await connect(stack, running[name].url + SERVERS[name][2], mode) for mode, name in rows_keys}
            for client in clients.values():  # warm-up: imports, caches, the first assembly
                await sequential(client, args.warmup)
                await concurrent(client, args.warmup, args.concurrency)
            for round_ in range(args.rounds):
                order = rows_keys if round_ % 2 == 0 else rows_keys[::-1]
                for key in order:
                    server = running[key[1]]
                    start = server.cpu_seconds()
                    latencies[key] += await sequential(clients[key], args.calls)
                    cpu[key].append((server.cpu_seconds() - start) / args.calls)
                for key in order:
                    rates[key].append(await concurrent(clients[key], args.calls, args.concurrency))
    rows = []
    for mode, name in rows_keys:
        key = (mode, name)
        rows.append([name, f"`{mode}` ({MODES[mode]})", f"{statistics.median(latencies[key]) * 1e6:.0f}",
                     f"{p95(latencies[key]) * 1e6:.0f}", f"{statistics.median(rates[key]):.0f}",
                     f"{statistics.median(cpu[key]) * 1e6:.0f}"])
    ratios = []
    met = True
    for mode in MODES:
        tether, fast = (mode, TETHER), (mode, FASTMCP)
        median_ratio = statistics.median(latencies[tether]) / statistics.median(latencies[fast])
        p95_ratio = p95(latencies[tether]) / p95(latencies[fast])
        rate_ratio = statistics.median(rates[tether]) / statistics.median(rates[fast])
        cpu_ratio = statistics.median(cpu[tether]) / statistics.median(cpu[fast])
        goal = ""
        if mode == "auto":
            met = median_ratio <= TARGET
            goal = f"median <= {TARGET}x: {_met(met)}"
        ratios.append([f"`{mode}`", f"{median_ratio:.2f}x", f"{p95_ratio:.2f}x", f"{rate_ratio:.2f}x", f"{cpu_ratio:.2f}x", goal])
    today = datetime.date.today().isoformat()
    header = (f"Measured with `benchmarks/mcp_server.py{' --quick' if args.quick else ''} --calls {args.calls} --rounds {args.rounds}` (as `./tasks.sh bench` runs it, "
              f"in `.venv`) on {today}: {machine_line()}; {os.cpu_count()} cores, load average {load_before} "
              f"at the start, {load()} at the end; streamable HTTP on 127.0.0.1, each server a subprocess; "
              f"{args.rounds} round{'s' if args.rounds != 1 else ''} alternating the rows, each {args.calls} sequential calls then {args.calls} calls "
              f"with {args.concurrency} in flight, after {args.warmup} warm-up calls. Versions: {versions(VERSIONED)}.")
    return "\n\n".join([
        header,
        table(["server", "client mode (protocol)", "median µs per call", "p95 µs per call",
               f"calls/s, {args.concurrency} concurrent (median of rounds)",
               "server process CPU µs per sequential call (median of rounds)"], rows),
        table(["mode: tether_clr / FastMCP", "median latency", "p95 latency", "throughput", "server CPU per call",
               "goal (issue 28)"], ratios),
        f"Goal met (issue 28: in `auto`, tether_clr's median latency within {TARGET}x FastMCP's): {'**yes**' if met else '**no**'}.",
    ])


def _env() -> dict[str, str]:
    """The servers' environment: this checkout first on the path (``benchmarks.mcp_server`` and ``tether_clr``)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE.parent), env.get("PYTHONPATH")]))
    return env


def _met(ok: bool) -> str:
    return "yes" if ok else "**no**"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_write_docs_flag(parser, SECTION)
    parser.add_argument("--quick", action="store_true", help="a smoke run: few calls, one round")
    parser.add_argument("--calls", type=int, default=None, help="calls per row per round (default 300; 20 with --quick)")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=None, help="default 3; 1 with --quick")
    parser.add_argument("--warmup", type=int, default=None, help="default 50; 5 with --quick")
    parser.add_argument("--serve-fastmcp", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.calls = args.calls or (20 if args.quick else 300)
    args.rounds = args.rounds or (1 if args.quick else 3)
    args.warmup = args.warmup or (5 if args.quick else 50)
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.serve_fastmcp:
        serve_fastmcp()
        return
    logging.basicConfig(level=logging.WARNING)
    for name in ("mcp", "httpx", "httpx2", "uvicorn", "tether_clr"):
        logging.getLogger(name).setLevel(logging.WARNING)
    report = anyio.run(measure, args)
    print(report)
    if args.write_docs:
        write_docs_section(SECTION, report)


if __name__ == "__main__":
    main()

"""Concurrent calls against ``tether-clr mcp serve --transport http``, with ``--db`` on PostgreSQL and without.

    .venv/bin/python benchmarks/mcp_concurrency.py [--quick] [--clients 20] [--calls 200] [--rounds R]
        [--dsn DSN] [--write-docs]

Issue 27's section 2 target: 200 concurrent calls from 20 clients, with ``--db`` on
PostgreSQL, in at most 1.5x the time the same calls take without ``--db``. Each
configuration is a real ``tether-clr mcp serve`` subprocess (the tools of
``tests.support.mcp_cli_tools``; a fixed identity) on 127.0.0.1; ``--clients`` SDK
clients (handshake era, one MCP session each, opened and warmed up first) then send
``--calls`` ``price`` calls in all, every client's share at once, and the wall time
until the last answer is the round's. The median of ``--rounds`` rounds (after one
warm-up round), alternating the two servers so that whatever else loads the machine
loads both. With ``--db`` each MCP session is its own log session (a turn per call;
a session's turns one at a time), so different clients' calls never wait on one
another's lease; they do share the store's connections. The session log is a
throw-away schema of ``--dsn`` (default ``$TETHER_POSTGRES_DSN``), dropped at the end.
Rerun it after a store change (e.g. a connection pool) to see what the change bought.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import AsyncExitStack, contextmanager
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

import anyio  # noqa: E402

from tests.support.mcp_http import http_client  # noqa: E402
from _serving import MCP_SERVE_READY, served as subprocess_served  # noqa: E402
from _report import add_write_docs_flag, machine_line, table, versions, write_docs_section  # noqa: E402

SECTION = "mcp-concurrency"
TARGET = 1.5
SERVE = [sys.executable, "-m", "tether_clr.cli", "mcp", "serve", "--tools", "tests.support.mcp_cli_tools:register",
         "--transport", "http", "--port", "0", "--tenant", "acme", "--principal", "alice",
         "--max-sessions", "1000"]  # fmt: skip


@contextmanager
def served(*args: str) -> Iterator[str]:
    """A ``tether-clr mcp serve`` subprocess; yields its URL, stops it with SIGTERM."""
    with subprocess_served([*SERVE, *args], MCP_SERVE_READY) as server:
        yield server.url


class Clients:
    """``count`` SDK clients of one server, each with its MCP session open."""

    def __init__(self, url: str, count: int) -> None:
        self.url, self.count = url, count
        self.stack = AsyncExitStack()
        self.sessions: list[Any] = []

    async def __aenter__(self) -> Clients:
        for _ in range(self.count):
            client = await self.stack.enter_async_context(http_client(self.url, {}, "legacy"))
            await client.list_tools(cache_mode="refresh")
            self.sessions.append(client)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stack.aclose()

    async def burst(self, calls: int) -> float:
        """``calls`` calls in all, every client's share sent at once; the wall seconds until the last answer."""
        share = [calls // self.count + (1 if n < calls % self.count else 0) for n in range(self.count)]
        failures: list[Any] = []

        async def call(client: Any, n: int) -> None:
            result = await client.call_tool("price", {"product": "tea", "quantity": n})
            if result.is_error:
                failures.append(result.content)

        start = time.perf_counter()
        async with anyio.create_task_group() as group:
            for client, mine in zip(self.sessions, share, strict=True):
                for n in range(mine):
                    group.start_soon(call, client, n)
        elapsed = time.perf_counter() - start
        if failures:
            raise SystemExit(f"{len(failures)} call(s) failed, e.g. {failures[0]}")
        return elapsed


async def measure(args: argparse.Namespace, dsn: str) -> str:
    from tether_clr.testing.stores import store_location

    times: dict[str, list[float]] = {"without --db": [], "--db on PostgreSQL": []}
    with tempfile.TemporaryDirectory() as folder, store_location("postgres", folder, dsn) as location:
        with served() as plain, served("--db", location, "--session", "bench") as logged:
            async with Clients(plain, args.clients) as plain_clients, Clients(logged, args.clients) as logged_clients:
                for clients in (plain_clients, logged_clients):
                    await clients.burst(args.calls)  # warm-up
                for _ in range(args.rounds):
                    times["without --db"].append(await plain_clients.burst(args.calls))
                    times["--db on PostgreSQL"].append(await logged_clients.burst(args.calls))
    medians = {name: statistics.median(values) for name, values in times.items()}
    ratio = medians["--db on PostgreSQL"] / medians["without --db"]
    rows = [[name, f"{medians[name] * 1000:.0f}", f"{min(values) * 1000:.0f}", f"{args.calls / medians[name]:.0f}"]
            for name, values in times.items()]  # fmt: skip
    lines = [
        f"{args.calls} concurrent `tools/call` from {args.clients} clients (one MCP session each) against "
        f"`tether-clr mcp serve --transport http` on 127.0.0.1; median of {args.rounds} round(s).",
        "",
        table(["server", "wall ms, median", "wall ms, best", "calls/s"], rows),
        "",
        f"`--db` on PostgreSQL / without: **{ratio:.2f}x** (target at most {TARGET}x: "
        + ("met" if ratio <= TARGET else "not met") + ").",
        "",
        f"{machine_line()}; {versions(('mcp', 'psycopg', 'psycopg-pool', 'uvicorn'))}; "
        f"{time.strftime('%Y-%m-%d')}.",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0] if __doc__ else None)
    add_write_docs_flag(parser, SECTION)
    parser.add_argument("--quick", action="store_true", help="a smoke run: 4 clients, 20 calls, one round")
    parser.add_argument("--clients", type=int, default=None, help="default 20 (4 with --quick)")
    parser.add_argument("--calls", type=int, default=None, help="calls per round, in all (default 200; 20 with --quick)")
    parser.add_argument("--rounds", type=int, default=None, help="default 5 (1 with --quick)")
    parser.add_argument("--dsn", default=os.environ.get("TETHER_POSTGRES_DSN"),
                        help="the PostgreSQL server (default $TETHER_POSTGRES_DSN); a throw-away schema is used")
    args = parser.parse_args(argv)
    args.clients = args.clients or (4 if args.quick else 20)
    args.calls = args.calls or (20 if args.quick else 200)
    args.rounds = args.rounds or (1 if args.quick else 5)
    if not args.dsn:
        parser.error("no PostgreSQL: give --dsn or set $TETHER_POSTGRES_DSN")
    report = anyio.run(measure, args, args.dsn)
    print(report)
    if args.write_docs:
        write_docs_section(SECTION, report)


if __name__ == "__main__":
    main()

"""Three ``tether-clr mcp serve`` replicas on one PostgreSQL (``--db`` and ``--control``), driven by the SDK's HTTP
client, while the database restarts and while it is down: issue 27's operations checks.

The database is a private cluster of the test's own (:mod:`tests.support.pg_cluster`), so stopping it
touches nothing else. ``tick(n)`` writes ``n`` to a file when its body runs: every ``n`` there must be
declared in the session log (no body ran undeclared).
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.support import ROOT
from tests.support.replicas import OPS_TOOLS, SERVE, Replica, replicas
from tether_clr import PostgresSessionStore
from tether_clr.recording.session.events import TOOL_CALL

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(300)]

INTERNAL_WORDS = ("psycopg", "postgres", "sql", "select ", "connection", "server closed", "socket", "5432", "traceback")


def replica_args(dsn: str) -> list[str]:
    return [*OPS_TOOLS, "--transport", "http", "--port", "0", "--tenant", "acme", "--principal", "alice",
            "--db", dsn, "--control", dsn, "--max-staleness", "1"]  # fmt: skip


async def tick(client: Any, n: int) -> Any:
    """One ``tick`` call, bounded in time: nothing may hang while the database is away (a client's calls on one
    MCP session are answered in turn, each after at most one attempt at the store once it has given up)."""
    with anyio.fail_after(30):
        return await client.call_tool("tick", {"n": n})


async def declared_ticks(dsn: str) -> set[int]:
    """Every ``n`` a ``tick`` call declared in any session of the log."""
    found: set[int] = set()
    with PostgresSessionStore(dsn) as store:
        for session in await store.sessions():
            for event in await store.events(session):
                if event.kind == TOOL_CALL and event.payload.get("name") == "tick":
                    found.add(json.loads(event.payload["arguments"])["n"])
    return found


def run_ticks(path: Path) -> list[int]:
    return [int(line) for line in path.read_text().split()] if path.exists() else []


def log_verify(dsn: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*SERVE[:-2], "log", "verify", "--db", dsn], cwd=ROOT, capture_output=True, text=True, timeout=120)


def assert_clean_refusal(result: Any) -> str:
    """An infrastructure refusal as a tool result: UNAVAILABLE with a fixed reason, no internal text."""
    assert result.is_error is True
    text = " ".join(getattr(part, "text", "") for part in result.content).lower()
    structured = json.dumps(result.structured_content or {}).lower()
    for word in INTERNAL_WORDS:
        assert word not in text and word not in structured, (word, text, structured)
    failure = result.structured_content or {}
    assert failure.get("code") == "UNAVAILABLE", result
    reason = failure.get("reason")
    assert reason in ("log_unavailable", "control_stale"), result
    return str(reason)


async def serve_again(replica: Replica, client: Any, n: int, deadline: float) -> float:
    """Seconds until ``client`` gets a successful ``tick`` from ``replica`` (polled every 50 ms)."""
    start = time.monotonic()
    while True:
        result = await tick(client, n)
        if result.is_error is False:
            return time.monotonic() - start
        assert_clean_refusal(result)
        if time.monotonic() > deadline:
            raise AssertionError(f"the replica did not serve again: {replica.stderr[-3000:]}")
        await anyio.sleep(0.05)


async def test_a_postgresql_restart_under_three_serving_replicas_is_survived_without_a_restart(
    pg_cluster: Any, tmp_path: Path
) -> None:
    ticks = tmp_path / "ticks"
    dsn = pg_cluster.new_database()
    numbers = iter(range(1, 1_000_000))
    with replicas(3, replica_args(dsn), {"TETHER_OPS_TICKS": str(ticks)}) as served:
        clients = [replica.client() for replica in served]
        async with clients[0] as first, clients[1] as second, clients[2] as third:
            connected = [first, second, third]
            for client in connected:
                assert (await tick(client, next(numbers))).is_error is False
            outcomes: list[str] = []

            async def keep_calling(client: Any, stop: anyio.Event) -> None:
                while not stop.is_set():
                    result = await tick(client, next(numbers))
                    outcomes.append("ok" if result.is_error is False else assert_clean_refusal(result))
                    await anyio.sleep(0.02)

            stop = anyio.Event()
            async with anyio.create_task_group() as group:
                for client in connected:
                    group.start_soon(keep_calling, client, stop)
                await anyio.sleep(0.5)
                await anyio.to_thread.run_sync(pg_cluster.restart)
                back = time.monotonic()
                stop.set()
            recovered = [await serve_again(replica, client, next(numbers), back + 30)
                         for replica, client in zip(served, connected, strict=True)]  # fmt: skip
        codes = [replica.stop() for replica in served]
    print(f"\nrecovered after the restart in {[round(seconds, 3) for seconds in recovered]} s; outcomes during it: "
          f"{ {kind: outcomes.count(kind) for kind in set(outcomes)} }")  # fmt: skip
    assert codes == [0, 0, 0]
    assert all(seconds <= 2.0 for seconds in recovered), recovered
    ran = run_ticks(ticks)
    assert ran and set(ran) <= await declared_ticks(dsn)  # no body ran undeclared
    assert len(ran) == len(set(ran))  # and none ran twice
    verified = log_verify(dsn)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    for replica in served:  # an incident is logged once, then summed up: never a traceback per call
        assert replica.stderr_bytes < 64_000, replica.stderr[-3000:]


async def test_while_postgresql_is_down_calls_are_refused_unavailable_with_no_internal_text_and_nothing_hangs(
    pg_cluster: Any, tmp_path: Path
) -> None:
    ticks = tmp_path / "ticks"
    dsn = pg_cluster.new_database()
    with replicas(3, replica_args(dsn), {"TETHER_OPS_TICKS": str(ticks)}) as served:
        clients = [replica.client() for replica in served]
        async with clients[0] as first, clients[1] as second, clients[2] as third:
            connected = [first, second, third]
            for n, client in enumerate(connected):
                assert (await tick(client, n)).is_error is False
            before = set(run_ticks(ticks))
            await anyio.to_thread.run_sync(pg_cluster.stop)
            reasons: list[str] = []
            numbers = iter(range(100, 1_000_000))

            async def refused(client: Any) -> None:
                reasons.append(assert_clean_refusal(await tick(client, next(numbers))))

            try:
                down_until = time.monotonic() + 5
                while time.monotonic() < down_until:  # every client 5 calls at once, round after round
                    async with anyio.create_task_group() as group:
                        for client in connected:
                            for _ in range(5):
                                group.start_soon(refused, client)
            finally:
                await anyio.to_thread.run_sync(pg_cluster.start)
            assert set(run_ticks(ticks)) == before  # nothing ran while the log could not be written
            for replica, client in zip(served, connected, strict=True):
                await serve_again(replica, client, 10_000 + len(reasons), time.monotonic() + 30)
                reasons.append("ok")
        codes = [replica.stop() for replica in served]
    assert codes == [0, 0, 0]
    assert "log_unavailable" in reasons or "control_stale" in reasons
    for replica in served:  # the outage is logged once per incident (a traceback each), its repeats summed up
        assert replica.stderr.count("(further failures are summed up every 30s)") <= 5, replica.stderr[-5000:]
        assert replica.stderr_bytes < 32_000, replica.stderr[-5000:]
    print(f"\nwhile down: { {kind: reasons.count(kind) for kind in set(reasons)} }; each replica's stderr: "
          f"{[replica.stderr_bytes for replica in served]} bytes, {[replica.stderr.count('Traceback') for replica in served]} "
          "traceback(s)")  # fmt: skip


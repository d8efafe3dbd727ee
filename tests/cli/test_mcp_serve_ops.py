"""``tether-clr mcp serve`` as an operator runs it: replicas as subprocesses, the SDK's HTTP client, real stores.

A log session per MCP session (calls of two clients do not wait on each other), the
lease a serving replica holds (``log repair`` refuses it; a replica restarted after a
SIGKILL repairs the crashed turn before serving), graceful shutdown (SIGTERM: calls in
flight finish within ``--grace`` or are cancelled with reason shutdown; all recorded;
exit 0), and the operator's limits (``--page-size``, ``--session-idle-timeout``,
``--max-sessions``). Nothing here asserts on time: waits are bounded polls.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import httpx2
import pytest

from tests.support import ROOT
from tests.support.mcp_http import http_client
from tests.support.session_stores import expire_lease, open_store
from tether_clr.cli import EXIT_FAULT
from tether_clr.recording.session.verify import log_violations
from tether_clr.testing.stores import store_location

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]

SERVE = [sys.executable, "-m", "tether_clr.cli", "mcp", "serve", "--tools", "tests.support.mcp_ops_tools:register",
         "--transport", "http", "--port", "0", "--tenant", "acme", "--principal", "alice"]  # fmt: skip
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}  # fmt: skip
ACCEPT = {"accept": "application/json, text/event-stream"}


class Replica:
    """One ``mcp serve --transport http`` subprocess: its URL, its stderr lines (read by a thread), its exit."""

    def __init__(self, *args: str) -> None:
        self.process = subprocess.Popen([*SERVE, *args], cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.PIPE, text=True)  # fmt: skip
        self.lines: list[str] = []
        self._started = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()
        if not self._started.wait(60):
            self.process.kill()
            raise RuntimeError(f"the replica did not start: {self.lines}")
        self.url = next(line for line in self.lines if line.startswith("serving MCP at")).split()[3].rstrip(";")

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.append(line.rstrip("\n"))
            if line.startswith("serving MCP at"):
                self._started.set()
        self._started.set()

    def stop(self, sig: int = signal.SIGTERM) -> int:
        if self.process.poll() is None:
            self.process.send_signal(sig)
        return self.process.wait(60)

    @property
    def stderr(self) -> str:
        return "\n".join(self.lines)


@contextmanager
def replica(*args: str) -> Iterator[Replica]:
    served = Replica(*args)
    try:
        yield served
    finally:
        served.stop(signal.SIGKILL)


@pytest.fixture(params=["sqlite", "postgres"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """The session log: (kind, what --db names), a SQLite file or a throw-away PostgreSQL schema."""
    kind = request.param
    if kind == "postgres":
        from tests.support.session_stores import postgres_dsn

        postgres_dsn()
    with store_location(kind, tmp_path) as location:
        yield kind, location


async def tether(*args: str) -> subprocess.CompletedProcess[str]:
    """``tether-clr ARGS`` as an operator types it (a subprocess: this test's event loop is running)."""
    command = [sys.executable, "-m", "tether_clr.cli", *args]
    return await anyio.to_thread.run_sync(
        lambda: subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    )


def client(url: str) -> object:
    return http_client(url, {}, "legacy")


async def poll(check: object, what: str, seconds: float = 30) -> None:
    """Wait until ``check()`` is true (a bounded poll, not a timed assert)."""
    deadline = time.monotonic() + seconds
    while not await check():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        await anyio.sleep(0.05)


async def test_two_clients_get_two_log_sessions_and_their_calls_do_not_wait_on_each_other(db: tuple[str, str]) -> None:
    kind, location = db
    with replica("--db", location, "--session", "ops") as served:
        met: dict[str, object] = {}

        async def one(party: str) -> None:
            async with client(served.url) as c:  # type: ignore[attr-defined]
                met[party] = (await c.call_tool("rendezvous", {"party": party})).structured_content
                await c.call_tool("price", {"product": "tea"})

        async with anyio.create_task_group() as group:
            group.start_soon(one, "a")
            group.start_soon(one, "b")
        assert served.stop() == 0
    # each call ran while the other client's was running: one log session each would have made them wait
    assert met == {"a": {"result": "met"}, "b": {"result": "met"}}
    with open_store(kind, location) as store:
        sessions = await store.sessions()
        assert len(sessions) == 2 and all(name.startswith("ops-") for name in sessions)
        for name in sessions:
            events = await store.events(name)
            assert log_violations(events) == []
            assert [e.payload["name"] for e in events if e.kind == "tool/result"] == ["rendezvous", "price"]
            assert [e.turn for e in events if e.kind == "turn/start"] == [1, 2]


async def test_a_replica_killed_in_a_slow_call_is_repaired_by_its_restart_and_a_held_session_refuses_log_repair(
    db: tuple[str, str], tmp_path: Path
) -> None:
    kind, location = db
    marker = tmp_path / "started"
    with replica("--db", location, "--session", "crash") as first:
        async with anyio.create_task_group() as group:
            async with client(first.url) as c:  # type: ignore[attr-defined]
                await c.list_tools(cache_mode="refresh")
                group.start_soon(c.call_tool, "slow", {"seconds": 600, "marker": str(marker)})
                await poll(lambda: anyio.to_thread.run_sync(marker.exists), "the slow body to start")
                first.process.kill()  # SIGKILL in the call: its turn stays open
                first.process.wait(60)
                group.cancel_scope.cancel()
    with open_store(kind, location) as store:
        (crashed,) = await store.sessions()
        expire_lease(store, crashed)  # as lease_seconds after the crash
        before = await store.events(crashed)
    assert log_violations(before, open_ok=True) == [] and log_violations(before) != []

    with replica("--db", location, "--session", "crash") as second:
        assert f"session {crashed}: repaired the turn(s) 1 a crash left open" in second.stderr
        assert second.stderr.index("repaired") < second.stderr.index("serving MCP at")
        async with client(second.url) as c:  # type: ignore[attr-defined]
            priced = await c.call_tool("price", {"product": "tea"})
            assert priced.is_error is False
            with open_store(kind, location) as store:
                live = next(name for name in await store.sessions() if name != crashed)
                held = await store.events(live)
            refused = await tether("log", "repair", live, "--db", location)
            assert refused.returncode == EXIT_FAULT
            assert "a replica is serving it" in refused.stderr and "nothing was changed" in refused.stderr
            with open_store(kind, location) as store:
                assert await store.events(live) == held
            assert (await c.call_tool("price", {"product": "tea"})).is_error is False  # it still serves
        assert second.stop() == 0
    verified = await tether("log", "verify", "--db", location)
    assert verified.returncode == 0, verified.stdout
    with open_store(kind, location) as store:
        results = [e.payload for e in await store.events(crashed) if e.kind == "tool/result"]
    assert [(r["code"], r.get("reason")) for r in results] == [("ABORTED", "interrupted")]


async def test_sigterm_lets_a_call_finish_within_grace_and_cancels_a_longer_one_with_reason_shutdown(
    tmp_path: Path,
) -> None:
    location, marker = str(tmp_path / "log.sqlite"), tmp_path / "started"
    answers: dict[str, object] = {}
    with replica("--db", location, "--grace", "3") as served:
        async with client(served.url) as short, client(served.url) as long:  # type: ignore[attr-defined]
            await short.list_tools(cache_mode="refresh")  # the client checks results against the tools' schemas
            await long.list_tools(cache_mode="refresh")

            async def call(c: object, name: str, seconds: float) -> None:
                answers[name] = await c.call_tool("slow", {"seconds": seconds, "marker": str(marker)})  # type: ignore[attr-defined]

            async with anyio.create_task_group() as group:
                group.start_soon(call, long, "long", 600)
                group.start_soon(call, short, "short", 1)
                await poll(lambda: anyio.to_thread.run_sync(marker.exists), "a slow body to start")
                served.process.send_signal(signal.SIGTERM)
        code = served.stop()
    assert code == 0, served.stderr
    assert answers["short"].is_error is False  # type: ignore[attr-defined]
    assert answers["long"].is_error is True and "shutdown" in answers["long"].content[0].text  # type: ignore[attr-defined]
    assert "1 call(s) cancelled (shutdown)" in served.stderr
    with open_store("sqlite", location) as store:
        results = [e.payload for name in await store.sessions() for e in await store.events(name) if e.kind == "tool/result"]
        for name in await store.sessions():
            assert log_violations(await store.events(name)) == []
    assert sorted((r.get("code") or "OK", r.get("message") or "") for r in results) == [
        ("ABORTED", "cancelled: shutdown"), ("OK", "")]  # fmt: skip


async def test_page_size_session_limit_and_idle_timeout(tmp_path: Path) -> None:
    location = str(tmp_path / "log.sqlite")
    with replica("--db", location, "--page-size", "1", "--max-sessions", "1", "--session-idle-timeout", "2") as served:
        async with httpx2.AsyncClient(timeout=30, headers=ACCEPT) as raw:
            opened = await raw.post(served.url, json=INIT)  # a client that opens a session and goes quiet
            assert opened.status_code == 200 and opened.headers.get("mcp-session-id")
            refused = await raw.post(served.url, json=INIT)
            assert refused.status_code == 503 and "Too many open sessions" in refused.text

            async def admitted() -> bool:
                answer = await raw.post(served.url, json=INIT)
                if answer.status_code == 200:  # the quiet one idled out; give the slot back at once
                    await raw.delete(served.url, headers={"mcp-session-id": answer.headers["mcp-session-id"]})
                    return True
                return False

            await poll(admitted, "the idle session to be closed")
            async with client(served.url) as c:  # type: ignore[attr-defined]
                page = await c.list_tools(cache_mode="refresh")
                assert len(page.tools) == 1 and page.next_cursor is not None
                assert (await raw.post(served.url, json=INIT)).status_code == 503  # full again: refused cleanly
                assert (await c.call_tool("price", {"product": "tea"})).is_error is False  # the open one still works
        assert served.stop() == 0


async def test_sigterm_over_stdio_cancels_a_call_longer_than_grace_answers_it_and_frees_the_session(
    tmp_path: Path,
) -> None:
    import json

    location, marker = str(tmp_path / "log.sqlite"), tmp_path / "started"
    command = [*SERVE[:5], "--tools", "tests.support.mcp_ops_tools:register", "--tenant", "acme", "--principal", "alice",
               "--db", location, "--session", "fixed", "--grace", "0.5"]  # fmt: skip
    process = subprocess.Popen(command, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)  # fmt: skip
    assert process.stdin is not None and process.stdout is not None

    def send(message: dict[str, object]) -> None:
        process.stdin.write(json.dumps(message) + "\n")  # type: ignore[union-attr]
        process.stdin.flush()  # type: ignore[union-attr]

    try:
        send(INIT)
        assert '"id":1' in await anyio.to_thread.run_sync(process.stdout.readline)
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
              "params": {"name": "slow", "arguments": {"seconds": 600, "marker": str(marker)}}})  # fmt: skip
        await poll(lambda: anyio.to_thread.run_sync(marker.exists), "the slow body to start")
        process.send_signal(signal.SIGTERM)  # stdin stays open: the client is still there
        code = await anyio.to_thread.run_sync(lambda: process.wait(60))
        answer = json.loads(process.stdout.readline())
    finally:
        if process.poll() is None:
            process.kill()
    assert code == 0
    assert answer["id"] == 2 and answer["result"]["isError"] is True
    assert answer["result"]["structuredContent"]["message"] == "cancelled: shutdown"
    with open_store("sqlite", location) as store:
        events = await store.events("fixed")
        assert log_violations(events) == []
        # the lease was freed: a repair is not refused
        assert await store.repair("fixed") == 0

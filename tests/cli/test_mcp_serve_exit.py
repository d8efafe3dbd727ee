"""``tether-clr mcp serve`` with a .NET assembly hosted ends by itself, exit 0, when its client lets it go (issue 28, item 4).

Over stdio, the SDK's client closes the server's stdin, waits ``PROCESS_TERMINATION_TIMEOUT`` (2 s) for it to
exit, and only then kills the process tree: the test watches that escalation (the SDK's own, not a timer of
its own) and asserts it never came. Over HTTP, SIGTERM ends the server with exit 0. How quick the exit is,
with and without .NET, is measured by benchmarks/mcp_exit.py.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp.client.stdio as sdk_stdio
import pytest
from mcp import Client, StdioServerParameters

from tests.support import ROOT
from tests.support.mcp_http import http_client
from tether_clr import SqliteSessionStore
from tether_clr.recording.session.verify import log_violations

pytestmark = pytest.mark.anyio

SERVE = [sys.executable, "-m", "tether_clr.cli", "mcp", "serve", "--tools", "tests.support.mcp_cli_tools:register"]


def fixtures_dll(clr_tools: dict[str, Any]) -> str:
    from tether_clr.clr import build_fixtures

    return str(build_fixtures())


async def test_over_stdio_with_a_dotnet_assembly_it_exits_0_by_itself_before_the_sdk_client_would_kill_it(
    clr_tools: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spawned: list[Any] = []
    killed: list[int] = []
    spawn, kill = sdk_stdio._create_platform_compatible_process, sdk_stdio._terminate_process_tree

    async def watched_spawn(*args: Any, **kwargs: Any) -> Any:
        process = await spawn(*args, **kwargs)
        spawned.append(process)
        return process

    async def watched_kill(process: Any) -> None:
        killed.append(process.pid)
        await kill(process)

    monkeypatch.setattr(sdk_stdio, "_create_platform_compatible_process", watched_spawn)
    monkeypatch.setattr(sdk_stdio, "_terminate_process_tree", watched_kill)
    db = tmp_path / "mcp.sqlite"
    params = StdioServerParameters(
        command=SERVE[0], cwd=str(ROOT), env=dict(os.environ),
        args=[*SERVE[1:], "--assembly", fixtures_dll(clr_tools), "--tenant", "globex", "--principal", "bob",
              "--db", str(db), "--session", "exits"],
    )
    async with Client(params, mode="legacy") as c:
        added = await c.call_tool("Add", {"a": 2, "b": 3})
    assert added.structured_content == {"result": 5}
    assert killed == []  # the SDK's client closed stdin and the server exited within its grace: no kill
    assert [process.returncode for process in spawned] == [0]
    with SqliteSessionStore(str(db)) as store:  # closed before the quick exit: the call is recorded, the turn closed
        events = await store.events("exits")
        assert await store.open_turns("exits") == []
    assert log_violations(events) == []
    assert [e.payload.get("ok") for e in events if e.kind == "tool/result"] == [True]


async def test_over_http_with_a_dotnet_assembly_sigterm_ends_it_with_exit_0(clr_tools: dict[str, Any]) -> None:
    process = subprocess.Popen(
        [*SERVE, "--assembly", fixtures_dll(clr_tools), "--transport", "http", "--port", "0",
         "--tenant", "globex", "--principal", "bob"],
        cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert process.stderr is not None
        line = await anyio.to_thread.run_sync(process.stderr.readline)
        assert line.startswith("serving MCP at http://127.0.0.1:"), line
        async with http_client(line.split()[3].rstrip(";"), {}, "legacy") as c:
            added = await c.call_tool("Add", {"a": 2, "b": 3})
        assert added.structured_content == {"result": 5}
    finally:
        process.send_signal(signal.SIGTERM)
        code = await anyio.to_thread.run_sync(lambda: process.wait(60))
        rest = process.stderr.read() if process.stderr is not None else ""
        if process.stderr is not None:
            process.stderr.close()
    assert code == 0, rest
    assert rest.endswith("stopped\n"), rest

"""``tether-clr mcp serve`` as a subprocess, driven by the SDK's clients: stdio and streamable HTTP."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from click.testing import CliRunner
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, Implementation

from tests.support import ROOT
from tether_clr import SqliteSessionStore
from tether_clr.cli import EXIT_USAGE, cli
from tether_clr.recording.session.verify import log_violations

pytestmark = pytest.mark.anyio

SERVE = [sys.executable, "-m", "tether_clr.cli", "mcp", "serve"]
TOOLS = ["--tools", "tests.support.mcp_cli_tools:register"]


def stdio(*args: str) -> StdioServerParameters:
    return StdioServerParameters(command=SERVE[0], args=[*SERVE[1:], *args], cwd=str(ROOT), env=dict(os.environ))


def fixtures_dll(clr_tools: dict[str, Any]) -> str:
    from tether_clr.clr import build_fixtures

    return str(build_fixtures())


async def test_python_and_csharp_tools_over_stdio_with_a_fixed_identity_recorded_in_the_session_log(
    clr_tools: dict[str, Any], tmp_path: Path
) -> None:
    db = tmp_path / "mcp.sqlite"
    params = stdio(*TOOLS, "--assembly", fixtures_dll(clr_tools), "--tenant", "globex", "--principal", "bob",
                   "--db", str(db), "--session", "served")
    async with Client(params, mode="legacy") as c:
        names = [tool.name for tool in (await c.list_tools(cache_mode="refresh")).tools]
        added = await c.call_tool("Add", {"a": 2, "b": 3})
        priced = await c.call_tool("price", {"product": "tea", "quantity": 2})
        invalid = await c.call_tool("Add", {"a": "two"})
        with pytest.raises(MCPError) as invisible:
            await c.call_tool("refund", {"order": "o-1"})
    assert "Add" in names and "price" in names
    assert "refund" not in names  # acme only: the fixed identity is globex's
    assert added.is_error is False and added.structured_content == {"result": 5}
    assert priced.is_error is False and priced.structured_content == {"result": 5.0}
    assert invalid.is_error is True
    assert invisible.value.code == INVALID_PARAMS
    with SqliteSessionStore(str(db)) as store:
        events = await store.events("served")
    assert log_violations(events) == []
    results = [(e.turn, e.payload["name"] if isinstance(e.payload, dict) else None) for e in events if e.kind == "tool/result"]
    # one turn per call; the invisible tool's call is answered -32602 and recorded UNKNOWN_TOOL (issue 27, section 6)
    assert [turn for turn, _ in results] == [1, 2, 3, 4] and results[3][1] == "refund"
    assert [e.payload.get("code") for e in events if e.kind == "tool/result"][3] == "UNKNOWN_TOOL"
    assert len([e for e in events if e.kind == "turn/start"]) == 4


async def test_context_names_an_async_context_for_given_each_request() -> None:
    params = stdio(*TOOLS, "--context", "tests.support.mcp_servers:async_context_for")
    async with Client(params, mode="legacy", client_info=Implementation(name="acme:alice", version="1")) as c:
        names = [tool.name for tool in (await c.list_tools(cache_mode="refresh")).tools]
        refunded = await c.call_tool("refund", {"order": "o-1"})
    assert names == ["price", "refund"]
    assert refunded.structured_content == {"result": "refunded o-1"}


async def test_several_calls_at_once_are_each_recorded_as_a_turn(tmp_path: Path) -> None:
    db = tmp_path / "mcp.sqlite"
    params = stdio(*TOOLS, "--tenant", "acme", "--principal", "alice", "--db", str(db), "--session", "s")
    async with Client(params, mode="legacy") as c:
        async with anyio.create_task_group() as group:
            for n in range(4):
                group.start_soon(c.call_tool, "price", {"product": "tea", "quantity": n})
    with SqliteSessionStore(str(db)) as store:
        events = await store.events("s")
    assert log_violations(events) == []
    assert sorted(e.turn for e in events if e.kind == "tool/result") == [1, 2, 3, 4]


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["--tenant", "acme"],
        ["--principal", "alice"],
        ["--scope", "read"],
        ["--context", "tests.support.mcp_servers:context_for", "--tenant", "acme", "--principal", "alice"],
        ["--context", "tests.support.no_such_module:context_for"],
        ["--tenant", "acme", "--principal", "alice", "--session", "s"],
        ["--tenant", "acme", "--principal", "alice", "--path", "mcp"],
    ],
)
def test_without_an_identity_or_with_a_bad_one_it_refuses_to_start(args: list[str]) -> None:
    result = CliRunner().invoke(cli, ["mcp", "serve", *TOOLS, *args])
    assert result.exit_code == EXIT_USAGE, result.output


def test_a_usage_error_from_the_console_script_names_the_identity_options() -> None:
    finished = subprocess.run([*SERVE, *TOOLS], cwd=ROOT, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert finished.returncode == EXIT_USAGE
    assert "--tenant" in finished.stderr and "--context" in finished.stderr
    assert finished.stdout == ""


async def test_over_streamable_http_then_stopped_by_sigterm() -> None:
    process = subprocess.Popen(
        [*SERVE, *TOOLS, "--transport", "http", "--port", "0", "--tenant", "acme", "--principal", "alice"],
        cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert process.stderr is not None
        line = await anyio.to_thread.run_sync(process.stderr.readline)
        assert line.startswith("serving MCP at http://127.0.0.1:"), line
        url = line.split()[3].rstrip(";")
        transport = streamable_http_client(url, http_client=httpx2.AsyncClient(timeout=30))
        async with Client(transport, mode="legacy") as c:
            names = [tool.name for tool in (await c.list_tools(cache_mode="refresh")).tools]
            priced = await c.call_tool("price", {"product": "tea"})
        assert names == ["price", "refund"]
        assert priced.structured_content == {"result": 2.5}
    finally:
        process.send_signal(signal.SIGTERM)
        code = await anyio.to_thread.run_sync(lambda: process.wait(60))
        if process.stderr is not None:
            process.stderr.close()
    assert code == 0

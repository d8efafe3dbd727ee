"""``tether-clr mcp config``: each client's documented format, and the printed configuration run from outside the checkout."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from mcp import Client, StdioServerParameters

from tests.support import ROOT
from tether_clr.cli import EXIT_USAGE, cli

TOOLS = ["--tools", "tests.support.mcp_cli_tools:register"]
IDENTITY = ["--tenant", "acme", "--principal", "alice", "--scope", "orders:read", "--scope", "orders:write"]


def printed(client: str, *args: str) -> str:
    """What ``mcp config --client CLIENT ARGS`` prints on stdout, run in the checkout."""
    return printed_by(["mcp", "config", "--client", client, *args])


def printed_by(argv: list[str]) -> str:
    """What ``tether-clr ARGV`` prints on stdout, run in the checkout (where the tools are importable)."""
    previous = os.getcwd()
    os.chdir(ROOT)
    try:
        result = CliRunner().invoke(cli, argv)
    finally:
        os.chdir(previous)
    assert result.exit_code == 0, result.output
    return result.stdout


def entry_of(client: str, text: str, name: str = "tether") -> dict[str, Any]:
    """The server entry of ``text`` in ``client``'s documented format; fails on any other shape."""
    if client == "claude-code":
        argv = shlex.split(text)
        assert argv[:4] == ["claude", "mcp", "add-json", name] and len(argv) == 5
        entry: dict[str, Any] = json.loads(argv[4])
        assert entry.pop("type") == "stdio"
    elif client == "vscode":
        document = json.loads(text)
        assert list(document) == ["servers"] and list(document["servers"]) == [name]
        entry = document["servers"][name]
        assert entry.pop("type") == "stdio"
    else:  # claude-desktop, cursor
        document = json.loads(text)
        assert list(document) == ["mcpServers"] and list(document["mcpServers"]) == [name]
        entry = document["mcpServers"][name]
    assert set(entry) == {"command", "args", "env"}
    return entry


@pytest.mark.parametrize("client", ["claude-desktop", "claude-code", "cursor", "vscode"])
def test_each_client_gets_its_documented_format_with_an_absolute_command_and_identity_in_env(client: str) -> None:
    entry = entry_of(client, printed(client, *TOOLS, *IDENTITY, "--page-size", "3"))
    command = Path(entry["command"])
    assert command.is_absolute() and command.is_file()
    assert entry["args"][-6:] == ["mcp", "serve", *TOOLS, "--page-size", "3"]
    assert not {"--tenant", "--principal", "--scope"} & set(entry["args"])  # identity is not in argv
    env = entry["env"]
    assert (env["TETHER_TENANT"], env["TETHER_PRINCIPAL"], env["TETHER_SCOPES"]) == ("acme", "alice", "orders:read orders:write")
    assert str(ROOT) in env["PYTHONPATH"].split(os.pathsep)  # where tests.support is imported from


def test_the_name_is_the_client_s_key_for_the_server() -> None:
    assert entry_of("cursor", printed("cursor", "--name", "shop", *TOOLS, *IDENTITY), name="shop")["args"][:2] == ["mcp", "serve"]


def test_relative_paths_become_absolute_and_a_dsn_stays_as_it_is(tmp_path: Path) -> None:
    entry = entry_of("claude-desktop", printed("claude-desktop", *TOOLS, *IDENTITY, "--db", "mcp.sqlite", "--session", "s1",
                                               "--control", "host=/var/run/postgresql dbname=control"))
    args = entry["args"]
    assert args[args.index("--db") + 1] == str(ROOT / "mcp.sqlite")
    assert args[args.index("--control") + 1] == "host=/var/run/postgresql dbname=control"
    assert args[args.index("--session") + 1] == "s1"


def test_a_context_callable_needs_no_identity_and_is_made_importable() -> None:
    entry = entry_of("vscode", printed("vscode", *TOOLS, "--context", "tests.support.mcp_servers:async_context_for"))
    assert "--context" in entry["args"] and "TETHER_TENANT" not in entry["env"]
    assert str(ROOT) in entry["env"]["PYTHONPATH"].split(os.pathsep)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([*TOOLS], "say who is asking"),
        ([*TOOLS, *IDENTITY, "--context", "tests.support.mcp_servers:async_context_for"], "not both"),
        ([*TOOLS, *IDENTITY, "--transport", "http"], "stdio"),
        ([*TOOLS, *IDENTITY, "--port", "9000"], "--transport http"),
        (["--tools", "no_such_module_anywhere:register", *IDENTITY], "cannot find the module"),
        ([*TOOLS, *IDENTITY, "--assembly", "NoSuch.dll"], "no assembly"),
        ([*TOOLS, *IDENTITY, "--page-size", "0"], "--page-size"),
    ],
    ids=["no-identity", "context-and-identity", "http", "http-option", "unknown-module", "missing-assembly", "bad-value"],
)
def test_a_configuration_that_could_not_start_is_refused_as_bad_usage(args: list[str], message: str) -> None:
    result = CliRunner().invoke(cli, ["mcp", "config", "--client", "cursor", *args])
    assert result.exit_code == EXIT_USAGE and message in result.output
    assert result.stdout == ""  # nothing a user could paste


@pytest.mark.anyio
async def test_the_printed_configuration_serves_from_a_folder_outside_the_checkout(tmp_path: Path) -> None:
    """As a client runs it: in another folder, with only the default environment and the config's env."""
    entry = entry_of("claude-desktop", printed("claude-desktop", *TOOLS, "--tenant", "acme", "--principal", "alice"))
    params = StdioServerParameters(command=entry["command"], args=entry["args"], env=entry["env"], cwd=str(tmp_path))
    async with Client(params, mode="legacy") as c:
        names = sorted(tool.name for tool in (await c.list_tools(cache_mode="refresh")).tools)
        priced = await c.call_tool("price", {"product": "tea", "quantity": 2})
    assert names == ["price", "refund"]  # refund is acme's only: the identity came from env
    assert priced.is_error is False and priced.structured_content == {"result": 5.0}


def documented_config_commands() -> list[str]:
    """Every ``tether-clr mcp config`` line in a fenced block of the README and docs/."""
    fence = re.compile(r"^```[a-z]*\n(.*?)^```", re.S | re.M)
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    lines = {line.strip() for page in pages for block in fence.findall(page.read_text(encoding="utf-8"))
             for line in block.splitlines() if line.strip().startswith("tether-clr mcp config ")}
    return sorted(lines)


@pytest.mark.anyio
@pytest.mark.parametrize("command", documented_config_commands())
async def test_each_documented_config_command_prints_a_configuration_that_serves_outside_the_checkout(
    command: str, tmp_path: Path
) -> None:
    argv = shlex.split(command)[1:]  # after tether-clr
    client = argv[argv.index("--client") + 1]
    entry = entry_of(client, printed_by(argv))
    params = StdioServerParameters(command=entry["command"], args=entry["args"], env=entry["env"], cwd=str(tmp_path))
    async with Client(params, mode="legacy") as c:
        names = {tool.name for tool in (await c.list_tools(cache_mode="refresh")).tools}
        echoed = await c.call_tool("echo", {"text": "hi"})
    assert {"echo", "read_note", "delete_note"} <= names
    assert echoed.is_error is False


def test_the_documented_example_assembly_path_exists_from_any_folder(tmp_path: Path, clr_tools: dict[str, Any]) -> None:
    """docs/cli.md: ``--assembly "$(python -m tether_clr.cli.demo --print-assembly)"``."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "tether_clr.cli.demo", "--print-assembly"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120, check=True)
    path = Path(done.stdout.strip())
    assert path.is_absolute() and path.is_file() and path.name == "TetherExamples.dll"

"""``tether-clr mcp config``: a client's configuration for launching ``tether-clr mcp serve`` over stdio, printed.

    tether-clr mcp config --client claude-desktop|claude-code|cursor|vscode [--name NAME] [serve options]

It prints; it never writes a client's files. What it prints works from any
folder, since clients start servers where they like (several ignore ``cwd``, or
start in ``/``):

* the command is the absolute path of the ``tether-clr`` console script beside
  the interpreter this runs on (else that interpreter, ``-m tether_clr.cli``);
* the serve options are ``mcp serve``'s own, parsed by ``mcp serve``'s parser
  (so a bad value is refused here, not in the client's log), with paths made
  absolute (``--assembly``, a SQLite ``--db`` or ``--control``); the options
  of ``--transport http`` are refused, a client launches stdio;
* identity goes in ``env``, where clients keep what is the user's: ``--tenant``,
  ``--principal`` and ``--scope`` become ``TETHER_TENANT``, ``TETHER_PRINCIPAL``
  and ``TETHER_SCOPES`` (space-separated), which ``mcp serve`` reads as their
  defaults;
* ``env.PYTHONPATH`` holds the folder each ``--tools`` / ``--context`` module
  (and ``tether_clr`` itself) is imported from now, unless the interpreter
  searches that folder anyway (its site-packages): a module found relative to
  the current folder is found by the server wherever it starts. A module that
  cannot be found now is refused (the server could not import it either).

The formats, as each client documents them: Claude Desktop
(``claude_desktop_config.json``) and Cursor (``.cursor/mcp.json``):
``{"mcpServers": {NAME: {"command", "args", "env"}}}``; VS Code
(``.vscode/mcp.json``): ``{"servers": {NAME: {"type": "stdio", "command",
"args", "env"}}}``; Claude Code: the command line ``claude mcp add-json NAME
'{"type": "stdio", ...}'`` (``add-json`` rather than ``add -e``, whose
repeatable ``-e`` takes the server's name for an env value in some versions).
Where the text goes is said on stderr; stdout is the configuration alone.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import os
import shlex
import site
import sys
import sysconfig
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

from tether_clr.cli.control import is_postgres_dsn

__all__ = ["CLIENTS", "IDENTITY_ENV", "config_command", "server_entry", "serve_command_line"]

CLIENTS = ("claude-desktop", "claude-code", "cursor", "vscode")

IDENTITY_ENV = {"tenant": "TETHER_TENANT", "principal": "TETHER_PRINCIPAL", "scopes": "TETHER_SCOPES"}
"""``mcp serve``'s identity options and the environment variables it reads as their defaults."""

_HTTP_ONLY = frozenset({"transport", "host", "port", "http_path", "session_idle_timeout", "max_sessions"})
_PATHS = frozenset({"assemblies", "db", "control_db"})
_RUNTIME_ENV = ("TETHER_CLR_RUNTIME", "DOTNET_ROOT", "PYTHONNET_RUNTIME")  # which .NET runtime hosts --assembly

_WHERE = {
    "claude-desktop": "the \"mcpServers\" of claude_desktop_config.json (Settings > Developer > Edit Config)",
    "claude-code": "a shell: it adds the server to Claude Code (--scope project writes .mcp.json)",
    "cursor": "the \"mcpServers\" of .cursor/mcp.json (a project) or ~/.cursor/mcp.json (everywhere)",
    "vscode": "the \"servers\" of .vscode/mcp.json (a workspace), or MCP: Open User Configuration",
}


def serve_command_line() -> list[str]:
    """The absolute command that runs ``tether-clr``: the console script beside this interpreter, else
    ``python -m tether_clr.cli`` on it. Not resolved through symlinks: a virtualenv's python is one."""
    python = Path(os.path.abspath(sys.executable))
    for name in ("tether-clr", "tether-clr.exe"):
        script = python.parent / name
        if script.is_file():
            return [str(script)]
    return [str(python), "-m", "tether_clr.cli"]


def _searched_anyway() -> set[str]:
    """The folders this interpreter searches whatever the environment and the current folder."""
    paths = sysconfig.get_paths()
    found = {paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths}
    if site.ENABLE_USER_SITE:
        found.add(site.getusersitepackages())
    return {os.path.realpath(path) for path in found}


def _import_root(module: str, option: str) -> str | None:
    """The folder ``module``'s top-level package is imported from (the current folder first, as
    ``mcp serve`` does); None for one that is not a file; bad usage when it cannot be found."""
    top = module.partition(".")[0]
    spec = importlib.machinery.PathFinder.find_spec(top, [os.getcwd(), *(p for p in sys.path if p)])
    if spec is None:
        spec = importlib.util.find_spec(top)  # an import hook's (an editable install)
    if spec is None:
        raise click.UsageError(f"{option}: cannot find the module {module!r} from {os.getcwd()}: "
                               f"the client could not import it either (install it, or run this where it is)")
    if spec.submodule_search_locations:
        return os.path.dirname(os.path.realpath(list(spec.submodule_search_locations)[0]))
    if spec.origin and os.path.isfile(spec.origin):
        return os.path.dirname(os.path.realpath(spec.origin))
    return None


def _python_path(specs: list[tuple[str, str]]) -> list[str]:
    """The folders the server needs on PYTHONPATH to import each ``(option, package.module:attr)`` and tether_clr."""
    anyway = _searched_anyway()
    roots: list[str] = []
    for option, spec in [*specs, ("tether_clr", "tether_clr")]:
        root = _import_root(spec.partition(":")[0], option)
        if root is not None and root not in anyway and root not in roots:
            roots.append(root)
    return roots


def _absolute(name: str, value: str) -> str:
    if name != "assemblies" and is_postgres_dsn(value):
        return value
    path = os.path.abspath(value)
    if name == "assemblies" and not os.path.isfile(path):
        raise click.UsageError(f"--assembly: no assembly at {path!r}")
    return path


def server_entry(serve: click.Command, serve_args: list[str]) -> dict[str, Any]:
    """``{"command", "args", "env"}``: what launches ``mcp serve`` with ``serve_args`` from any folder.

    ``serve_args`` are parsed by ``serve``'s own parser (bad values are bad usage here); options left at
    their defaults are not repeated; identity moves to ``env``; paths become absolute."""
    ctx = serve.make_context("tether-clr mcp serve", list(serve_args))
    args: list[str] = ["mcp", "serve"]
    env: dict[str, str] = {}
    imports: list[tuple[str, str]] = []
    for param in serve.params:
        name = param.name
        if not isinstance(param, click.Option) or name is None or name not in ctx.params:
            continue
        value = ctx.params[name]
        if ctx.get_parameter_source(name) == ParameterSource.DEFAULT or value is None or value == ():
            continue
        values = list(value) if param.multiple else [value]
        if name in _HTTP_ONLY:
            if name == "transport" and value == "stdio":
                continue
            raise click.UsageError(f"{param.opts[0]} is for --transport http: a client launches the server over stdio")
        if name in IDENTITY_ENV:
            env[IDENTITY_ENV[name]] = " ".join(str(v) for v in values)
            continue
        if name in ("tool_specs", "context_spec"):
            imports += [(param.opts[0], str(v)) for v in values]
        for one in values:
            args += [param.opts[0], _absolute(name, str(one)) if name in _PATHS else str(one)]
    fixed = {"TETHER_TENANT", "TETHER_PRINCIPAL"} <= env.keys()
    if ctx.params.get("context_spec") is not None and env:
        raise click.UsageError("give either --context or a fixed identity (--tenant, --principal, --scope), not both")
    if ctx.params.get("context_spec") is None and not fixed:
        raise click.UsageError("say who is asking: --tenant and --principal (a fixed identity), or --context package.module:attr")
    roots = _python_path(imports)
    if roots:
        env["PYTHONPATH"] = os.pathsep.join(roots)
    if ctx.params.get("assemblies"):
        env.update({key: os.environ[key] for key in _RUNTIME_ENV if os.environ.get(key)})
    command = serve_command_line()
    return {"command": command[0], "args": [*command[1:], *args], "env": env}


def render(client: str, name: str, entry: dict[str, Any]) -> str:
    """``entry`` in the format ``client`` documents (see the module's docstring)."""
    if client == "vscode":
        return json.dumps({"servers": {name: {"type": "stdio", **entry}}}, indent=2)
    if client == "claude-code":
        return shlex.join(["claude", "mcp", "add-json", name, json.dumps({"type": "stdio", **entry})])
    return json.dumps({"mcpServers": {name: entry}}, indent=2)


def config_command(serve: click.Command) -> click.Command:
    """The ``config`` command for the ``mcp`` group, reading its serve options with ``serve``'s parser."""

    @click.command("config", context_settings={"ignore_unknown_options": True})
    @click.option("--client", type=click.Choice(CLIENTS), required=True, help="the client whose format to print.")
    @click.option("--name", default="tether", show_default=True, help="the server's name in the client.")
    @click.argument("serve_args", nargs=-1, type=click.UNPROCESSED, metavar="[SERVE OPTIONS]...")
    def mcp_config(client: str, name: str, serve_args: tuple[str, ...]) -> None:
        """Print a client's configuration that launches `tether-clr mcp serve` with SERVE OPTIONS over stdio.

        It prints, never writes. The command is this installation's absolute
        `tether-clr`; identity (--tenant, --principal, --scope) goes in env
        (TETHER_TENANT, TETHER_PRINCIPAL, TETHER_SCOPES); paths are made
        absolute; env.PYTHONPATH holds the folders the --tools and --context
        modules are imported from here, so the server imports them wherever the
        client starts it. Exit 2 on bad usage (bad serve options, no identity,
        a module or assembly that cannot be found).
        """
        entry = server_entry(serve, list(serve_args))
        click.echo(render(client, name, entry))
        click.echo(f"# for {_WHERE[client]}", err=True)

    return mcp_config

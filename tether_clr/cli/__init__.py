"""``tether-clr``, the command line: run a scripted model's tool steps, read, check and repair the session log,
serve the same tools over MCP (``mcp serve``, on :mod:`tether_clr.mcp`).

Floor 6 (an adapter): it drives the public API (the registry, the pipeline, the
session stores, the .NET host) and nothing below imports it. Built with click;
rich draws the live table. See docs/cli.md.
"""

from tether_clr.cli.app import (
    EXIT_FAULT,
    EXIT_OK,
    EXIT_PARKED,
    EXIT_USAGE,
    cli,
    main,
    open_store,
)
from tether_clr.records.script import (
    Script,
    ScriptError,
    ScriptTurn,
    load_script,
    parse_script,
)

__all__ = [
    "EXIT_FAULT",
    "EXIT_OK",
    "EXIT_PARKED",
    "EXIT_USAGE",
    "Script",
    "ScriptError",
    "ScriptTurn",
    "cli",
    "load_script",
    "main",
    "open_store",
    "parse_script",
]

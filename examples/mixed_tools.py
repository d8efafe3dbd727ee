"""Python tools for examples/mixed.json, registered by a function that takes the registry.

``tether-clr run examples/mixed.json --tools examples.mixed_tools:register --assembly "$(python -m tether_clr.cli.demo --print-assembly)" ...``

* ``echo`` and ``read_note``: reads, safe to run in parallel;
* ``delete_note``: changes the notes, so it requires approval (``--approve`` answers);
* a guard keeps every call away from the ``secrets`` note: such a call is DENIED before its body.

The C# side (``examples/dotnet/Inventory.cs``) adds ``Stock`` and ``Reserve``,
whose body throws when stock is short (a failing tool: TOOL_ERROR, an outcome).
"""

from __future__ import annotations

from typing import Any

from tether_clr import (
    PythonFunction,
    ToolExecution,
    ToolRegistrationOptions,
    ToolRegistry,
)


def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


def no_secrets(execution: ToolExecution) -> str | None:
    """Guard: nothing may touch the secrets note."""
    arguments = execution.arguments
    return "the secrets note is off limits" if isinstance(arguments, dict) and arguments.get("name") == "secrets" else None


def register(registry: ToolRegistry) -> None:
    """Register the example's Python tools (over a fresh set of notes), their options and the guard."""
    notes: dict[str, str] = {"todo": "ship the runner", "secrets": "sk-example-123"}

    def read_note(name: str) -> str:
        """Read a note by name."""
        return notes[name]

    def delete_note(name: str) -> dict[str, Any]:
        """Delete a note by name."""
        return {"deleted": name, "existed": notes.pop(name, None) is not None}

    reads = ToolRegistrationOptions(is_concurrency_safe=True)
    registry.register(PythonFunction.from_callable(echo), options=reads)
    registry.register(PythonFunction.from_callable(read_note), options=reads)
    registry.register(PythonFunction.from_callable(delete_note), options=ToolRegistrationOptions(requires_approval=True))
    registry.register_guard(None, no_secrets)

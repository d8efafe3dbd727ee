"""A scripted model: the JSON rows ``tether-clr run`` replays, read into turns of steps.

A script is a JSON list of rows, each one of:

* ``{"kind": "tool", "callId": "c1", "name": "echo", "arguments": "{\\"text\\": \\"ping\\"}"}``:
  a proposed call; ``arguments`` is the raw text the model produced (kept as
  it is, so malformed JSON reaches the pipeline and ends INVALID_ARGS), or a
  JSON object, taken as its compact text;
* ``{"kind": "text", "text": "done"}``: the model's answer, which ends the turn.

Consecutive tool rows form one step (one batch); a text row ends the turn; tool
rows after the last text row form a final turn without an answer. Anything
else is a :class:`ScriptError` (bad usage), found before anything runs.

It lives among the records, below every adapter, because two of them read the
same rows: ``tether-clr run`` (:mod:`tether_clr.cli`, which re-exports it) replays
them, and the parity check (:mod:`tether_clr.clr.parity`) takes the tool rows as
its calls, so a recorded script is checked as it is, by this one parser.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tether_clr.records.outcomes import ToolCall

__all__ = ["Script", "ScriptError", "ScriptTurn", "load_script", "parse_script"]


class ScriptError(ValueError):
    """The script is not a list of tool and text rows; nothing was run."""


@dataclass(frozen=True, slots=True)
class ScriptTurn:
    """One turn: its steps (each the calls of one batch, in model order) and the text that ends it, if any."""

    steps: tuple[tuple[ToolCall, ...], ...]
    text: str | None


@dataclass(frozen=True, slots=True)
class Script:
    turns: tuple[ScriptTurn, ...]

    @property
    def call_count(self) -> int:
        return sum(len(step) for turn in self.turns for step in turn.steps)

    @property
    def calls(self) -> tuple[ToolCall, ...]:
        """Every tool row's call, in the script's order (the text rows are left out)."""
        return tuple(call for turn in self.turns for step in turn.steps for call in step)


def _text(row: dict[str, Any], key: str, where: str) -> str:
    value = row.get(key)
    if not isinstance(value, str) or not value:
        raise ScriptError(f"{where}: {key!r} must be a non-empty string, got {value!r}")
    return value


def _tool_call(row: dict[str, Any], where: str) -> ToolCall:
    arguments = row.get("arguments", "{}")
    if isinstance(arguments, dict):
        arguments = json.dumps(arguments, separators=(",", ":"))
    if not isinstance(arguments, str):
        raise ScriptError(f"{where}: 'arguments' must be the arguments' JSON text or an object, got {arguments!r}")
    return ToolCall(_text(row, "callId", where), _text(row, "name", where), arguments)


def parse_script(rows: Any) -> Script:
    """The turns of a script already parsed from JSON; :class:`ScriptError` if it is malformed.

    A call id used twice in one step is refused: the live display and the
    approval prompt name calls by id, and a model never repeats one within a
    proposal (ids may repeat across steps, as some providers do).
    """
    if not isinstance(rows, list) or not rows:
        raise ScriptError("a script is a non-empty JSON list of rows")
    turns: list[ScriptTurn] = []
    steps: list[tuple[ToolCall, ...]] = []
    step: list[ToolCall] = []
    for number, row in enumerate(rows, 1):
        where = f"row {number}"
        if not isinstance(row, dict):
            raise ScriptError(f"{where}: a row is a JSON object, got {row!r}")
        kind = row.get("kind")
        if kind == "tool":
            call = _tool_call(row, where)
            if any(other.call_id == call.call_id for other in step):
                raise ScriptError(f"{where}: call id {call.call_id!r} is used twice in one step")
            step.append(call)
            continue
        if kind != "text":
            raise ScriptError(f"{where}: 'kind' must be 'tool' or 'text', got {kind!r}")
        text = row.get("text")
        if not isinstance(text, str):
            raise ScriptError(f"{where}: 'text' must be a string, got {text!r}")
        if step:
            steps.append(tuple(step))
            step = []
        turns.append(ScriptTurn(tuple(steps), text))
        steps = []
    if step:
        steps.append(tuple(step))
    if steps:
        turns.append(ScriptTurn(tuple(steps), None))
    return Script(tuple(turns))


def load_script(path: str | Path) -> Script:
    """Read and parse a script file; :class:`ScriptError` if it is unreadable, not JSON, or malformed."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ScriptError(f"cannot read the script {str(path)!r}: {exc}") from exc
    try:
        rows = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ScriptError(f"the script {str(path)!r} is not JSON: {exc}") from exc
    return parse_script(rows)


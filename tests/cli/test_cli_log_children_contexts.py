"""``tether-clr log verify`` knows the events of issue 17: child calls and additional contexts."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import anyio
from click.testing import CliRunner

from tether_clr import (
    ChildCalls,
    PythonFunction,
    SqliteSessionStore,
    ToolCall,
    ToolExecution,
    ToolExecutionOutcome,
    ToolPostDecision,
    ToolRegistry,
)
from tether_clr.cli import cli


async def _record(db: Path) -> None:
    registry = ToolRegistry()

    async def echo(text: str) -> str:
        return text

    async def code(calls: ChildCalls) -> Any:
        return await calls.call_tool("echo", {"text": "child"})

    async def note(execution: ToolExecution, outcome: ToolExecutionOutcome, next_: Any) -> ToolPostDecision:
        return (await next_()).with_context(f"note {execution.call_id}")

    registry.register(PythonFunction.from_callable(echo))
    registry.register(PythonFunction.from_callable(code))
    registry.register_post_execute_listener(None, note)
    with SqliteSessionStore(db) as store:
        turn = await store.begin_turn("v")
        await registry.execute_batch([ToolCall("c0", "code"), ToolCall("c1", "echo", '{"text": "b"}')], registry.seal(),
                                     sink=store.sink("v", turn, 1))
        await store.end_turn("v", turn)


def test_log_verify_accepts_child_calls_and_contexts_and_flags_a_user_message_before_a_result(tmp_path: Path) -> None:
    db = tmp_path / "v.sqlite"
    anyio.run(_record, db)
    runner = CliRunner()
    assert runner.invoke(cli, ["log", "verify", "--db", str(db)], catch_exceptions=False).exit_code == 0
    connection = sqlite3.connect(db)
    with connection:  # the model's last result now comes after the step's user/message events
        connection.execute("UPDATE session_events SET seq = seq + 1000 WHERE kind = 'tool/result' AND call_id = 'c1'")
    connection.close()
    result = runner.invoke(cli, ["log", "verify", "--db", str(db)], catch_exceptions=False)
    assert result.exit_code == 1 and "after the step's user/message" in result.output


def test_log_show_lists_the_new_events(tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite"
    anyio.run(_record, db)
    result = CliRunner().invoke(cli, ["log", "show", "v", "--db", str(db), "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "tool/ptc-dispatch" in result.output and "user/message" in result.output

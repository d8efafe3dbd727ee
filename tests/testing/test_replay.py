"""replay: a script runs through the command's own runner, records what ``tether-clr run`` records, and parks as it does."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
from click.testing import CliRunner, Result

from tether_clr import RequestContext, SessionStore, SqliteSessionStore, ToolRegistry
from tether_clr.cli import ScriptError, cli, load_script
from tether_clr.cli.loading import ToolSpecError
from tether_clr.testing import ProbeTool, ScriptedApprovals, assert_body_not_run, assert_log_sound, assert_outcomes, replay

from tests.support import ROOT

pytestmark = pytest.mark.anyio

ECHO = ROOT / "examples" / "echo.json"


@pytest.fixture(autouse=True)
def _from_the_repository(monkeypatch: pytest.MonkeyPatch) -> None:
    """``--tools examples...`` specs resolve from the current directory, as for the command."""
    monkeypatch.chdir(ROOT)
    monkeypatch.syspath_prepend(str(ROOT))


async def _command(*args: str) -> Result:
    """``tether-clr ARGS`` in a worker thread (the command runs its own event loop)."""
    return await anyio.to_thread.run_sync(lambda: CliRunner().invoke(cli, list(args), catch_exceptions=False))


def _comparable(events: Any) -> list[tuple[Any, ...]]:
    return [(e.turn, e.step, e.kind, e.call_id, json.dumps(e.payload, sort_keys=True)) for e in events]


async def test_a_replay_logs_exactly_what_the_command_logs(tmp_path: Path) -> None:
    db = tmp_path / "command.sqlite"
    command = await _command("run", str(ECHO), "--tools", "examples.echo_tools:TOOLS", "--db", str(db),
                             "--session", "s1", "--approve", "deny", "--principal", "tester")
    assert command.exit_code == 0, command.output
    with SqliteSessionStore(tmp_path / "replay.sqlite") as store:
        run = await replay(str(ECHO), tools="examples.echo_tools:TOOLS", store=store, session_id="s1")
    with SqliteSessionStore(db) as logged:
        assert _comparable(run.events) == _comparable(await logged.events("s1"))
    assert_outcomes(run, {"c1": None, "c2": None})
    assert "turn 1, step 1" in run.output and "model: done" in run.output


async def test_a_replay_takes_rows_or_a_parsed_script_and_tool_objects() -> None:
    probe = ProbeTool("echo")
    rows = [{"kind": "tool", "callId": "c1", "name": "echo", "arguments": {"text": "a"}},
            {"kind": "tool", "callId": "c2", "name": "echo", "arguments": "{\"text\": "}]
    run = await replay(rows, tools=[probe])
    assert_outcomes(run, {"c1": None, "c2": "INVALID_ARGS"})
    assert probe.arguments == [{"text": "a"}]
    again = await replay(load_script(ECHO), tools="examples.echo_tools:TOOLS", context=RequestContext("acme", "bob"))
    assert [step[0].value for step in again.steps] == ["ping"] and again.events[0].payload == {}  # nothing to continue from


async def test_a_replay_asks_the_provider_it_is_given_and_the_default_denies(tmp_path: Path) -> None:
    def register(registry: ToolRegistry) -> None:
        registry.register(delete, None, _approval())

    delete = ProbeTool("delete", requires_approval=True)
    rows = [{"kind": "tool", "callId": "c1", "name": "delete", "arguments": {}}]
    denied = await replay(rows, tools=register)
    assert_outcomes(denied, {"c1": "DENIED"})
    assert_body_not_run(delete, log=denied)
    approvals = ScriptedApprovals({"c1": "approved"})
    approved = await replay(rows, tools=register, approve=approvals)
    assert_outcomes(approved, {"c1": None}) and approvals.asked == ["c1"]


def _approval() -> Any:
    from tether_clr import ToolRegistrationOptions

    return ToolRegistrationOptions(requires_approval=True)


async def test_prompt_with_no_terminal_parks_the_call_and_tether_clr_approve_continues_the_replayed_session(
    tmp_path: Path, session_store: SessionStore, session_store_location: str
) -> None:
    script = tmp_path / "mixed.json"
    script.write_text(json.dumps([
        {"kind": "tool", "callId": "c1", "name": "delete_note", "arguments": {"name": "todo"}},
        {"kind": "text", "text": "deleted"},
    ]), encoding="utf-8")
    run = await replay(script, tools="examples.mixed_tools:register", store=session_store, approve="prompt", session_id="s1")
    assert run.suspended is not None and [p.call_id for p in run.suspended.batch.pending] == ["c1"]
    assert "no terminal to ask on" in run.output
    session_store.close()
    approved = await _command("approve", "s1", "c1", "--yes", "--db", session_store_location)
    assert approved.exit_code == 0, approved.output
    assert "model: deleted" in approved.output


async def test_bad_usage_raises_what_the_command_reports_as_exit_2() -> None:
    with pytest.raises(ScriptError):
        await replay([{"kind": "nonsense"}])
    with pytest.raises(ToolSpecError):
        await replay(ECHO, tools="examples.no_such_module:TOOLS")
    with pytest.raises(ValueError, match="approve is one of"):
        await replay(ECHO, tools="examples.echo_tools:TOOLS", approve="yes")
    assert sys.modules.get("examples.no_such_module") is None

"""The tether-clr command line: exit codes, the live output, tool loading, approvals, and the log commands."""

from __future__ import annotations

import io
import json
import sqlite3
import sys
import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner, Result
from hypothesis import given, settings
from hypothesis import strategies as st

from tether_clr import ApprovalGrant, ApprovalResult, GrantScope, SqliteSessionStore, ToolCall
from tether_clr.cli import cli, parse_script
from tether_clr.cli.approval import TerminalApprover
from tether_clr.records.script import ScriptError

from tests.support import ROOT
from tests.support.session_stores import expire_lease, postgres_dsn

EXAMPLES = ROOT / "examples"


@pytest.fixture(autouse=True)
def _examples_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT))


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def write_script(tmp_path: Path, rows: list[dict[str, Any]]) -> str:
    path = tmp_path / f"script-{uuid.uuid4().hex[:8]}.json"
    path.write_text(json.dumps(rows), encoding="utf-8")
    return str(path)


def tool_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str) -> str:
    """A uniquely named module in tmp_path (so no import cache is shared between tests); returns its name."""
    name = f"cli_tools_{uuid.uuid4().hex[:10]}"
    (tmp_path / f"{name}.py").write_text(source, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


def results(db: Path, session: str) -> list[dict[str, Any]]:
    with SqliteSessionStore(db) as store:
        events = anyio.run(store.events, session)
    return [{"call_id": e.call_id, **e.payload} for e in events if e.kind == "tool/result"]


async def crash_mid_step(store: SqliteSessionStore, session: str) -> None:
    """A step of two calls whose writer "dies" after declaring the first: no result, no step/end, its lease left behind."""
    turn = await store.begin_turn(session)
    sink = store.sink(session, turn, 1)
    await sink.batch_started([ToolCall("c1", "echo", "{}"), ToolCall("c2", "echo", "{}")])
    await sink.call_declared(ToolCall("c1", "echo", "{}"))
    await sink.flush()


ECHO = ["--tools", "examples.echo_tools:TOOLS"]

# ------------------------------------------------------------------ run: exit codes and output


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_run_exits_0_when_the_script_ends_and_shows_each_calls_status(tmp_path: Path, backend: str) -> None:
    db = tmp_path / "s.sqlite"
    result = invoke("run", str(EXAMPLES / "echo.json"), *ECHO, "--db", str(db), "--session", "s1", "--backend", backend)
    assert result.exit_code == 0, result.output
    for text in ("turn 1, step 1", "c1", "echo", "c2", "shout", '"PONG"', "model: done", "2 call(s), 2 ok"):
        assert text in result.output
    assert [r["ok"] for r in results(db, "s1")] == [True, True]


def test_run_exits_0_whatever_the_tools_outcomes(tmp_path: Path) -> None:
    script = write_script(tmp_path, [
        {"kind": "tool", "callId": "c1", "name": "nope", "arguments": "{}"},
        {"kind": "tool", "callId": "c2", "name": "echo", "arguments": "{\"text\": "},
        {"kind": "tool", "callId": "c3", "name": "echo", "arguments": {"wrong": 1}},
    ])
    result = invoke("run", script, *ECHO, "--db", str(tmp_path / "s.sqlite"))
    assert result.exit_code == 0, result.output
    assert result.output.count("UNKNOWN_TOOL") == 1 and result.output.count("INVALID_ARGS") == 2


def test_consecutive_tool_rows_are_one_step_and_a_text_row_ends_the_turn() -> None:
    script = parse_script([
        {"kind": "tool", "callId": "c1", "name": "a"},
        {"kind": "tool", "callId": "c2", "name": "b"},
        {"kind": "text", "text": "t1"},
        {"kind": "tool", "callId": "c1", "name": "a"},
    ])
    assert [[[c.call_id for c in step] for step in turn.steps] for turn in script.turns] == [[["c1", "c2"]], [["c1"]]]
    assert [turn.text for turn in script.turns] == ["t1", None]


@pytest.mark.parametrize(
    "rows",
    [[], {"kind": "text"}, [{"kind": "image"}], [{"kind": "tool", "name": "x"}], [{"kind": "tool", "callId": "c", "name": ""}],
     [{"kind": "tool", "callId": "c", "name": "x", "arguments": 3}], [{"kind": "text", "text": None}],
     [{"kind": "tool", "callId": "c", "name": "x"}, {"kind": "tool", "callId": "c", "name": "y"}]],
)
def test_a_malformed_script_is_refused_before_anything_runs(rows: Any) -> None:
    with pytest.raises(ScriptError):
        parse_script(rows)


@pytest.mark.parametrize(
    "args",
    [
        ["run", "missing.json", "--db", "x.sqlite"],
        ["run", "{script}"],  # no --db
        ["run", "{script}", "--db", "x.sqlite", "--tools", "no_colon"],
        ["run", "{script}", "--db", "x.sqlite", "--tools", "no_such_module_here:TOOLS"],
        ["run", "{script}", "--db", "x.sqlite", "--tools", "examples.echo_tools:MISSING"],
        ["run", "{script}", "--db", "x.sqlite", "--tools", "examples.echo_tools:__doc__"],
        ["run", "{script}", "--db", "x.sqlite", "--assembly", "no/such/Tools.dll"],
        ["run", "{script}", "--db", "x.sqlite", "--approve", "maybe"],
        ["run", "{notjson}", "--db", "x.sqlite"],
    ],
)
def test_run_exits_2_on_bad_usage_and_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str]) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.json").write_text("[{", encoding="utf-8")
    script = str(EXAMPLES / "echo.json")
    result = invoke(*[a.replace("{script}", script).replace("{notjson}", "bad.json") for a in args])
    assert result.exit_code == 2, result.output
    assert not (tmp_path / "x.sqlite").exists()


def test_run_exits_1_when_the_session_log_cannot_be_opened(tmp_path: Path) -> None:
    result = invoke("run", str(EXAMPLES / "echo.json"), *ECHO, "--db", str(tmp_path))  # a directory
    assert result.exit_code == 1
    assert "cannot open the session log" in result.output


def test_run_exits_1_on_an_infrastructure_fault_mid_run(tmp_path: Path) -> None:
    """A session leased by a live writer cannot take a new turn: a fault, not a tool result."""
    db = tmp_path / "s.sqlite"
    with SqliteSessionStore(db) as store:
        anyio.run(crash_mid_step, store, "busy")
    result = invoke("run", str(EXAMPLES / "echo.json"), *ECHO, "--db", str(db), "--session", "busy")
    assert result.exit_code == 1
    assert "error:" in result.output and "busy" in result.output


# ------------------------------------------------------------------ tools from module attributes

def _run_tools(tmp_path: Path, spec: str, *extra: str) -> Result:
    script = write_script(tmp_path, [
        {"kind": "tool", "callId": "c1", "name": "echo", "arguments": "{\"text\": \"hi\"}"},
        {"kind": "tool", "callId": "c2", "name": "twice", "arguments": "{\"n\": 21}"},
    ])
    return invoke("run", script, "--tools", spec, "--db", str(tmp_path / "s.sqlite"), "--session", "t", *extra)


TWO_TOOLS = '''
from tether_clr import PythonFunction, ToolRegistrationOptions
def echo(text: str) -> str:
    return text
def twice(n: int) -> int:
    return 2 * n
'''


@pytest.mark.parametrize(
    "attribute",
    [
        "CALLABLES = [echo, twice]",
        "TOOLS = (PythonFunction.from_callable(echo), PythonFunction.from_callable(twice))",
        "MIXED = [echo, PythonFunction.from_callable(twice)]",
        "def register(registry):\n    registry.register(PythonFunction.from_callable(echo))\n"
        "    registry.register(PythonFunction.from_callable(twice), options=ToolRegistrationOptions(is_concurrency_safe=True))",
        "class Holder:\n    TOOLS = [echo, twice]",
    ],
    ids=["list-of-callables", "tuple-of-tools", "mixed-list", "registering-function", "dotted-attribute"],
)
def test_tools_come_from_each_kind_of_module_attribute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, attribute: str) -> None:
    module = tool_module(tmp_path, monkeypatch, TWO_TOOLS + attribute + "\n")
    name = attribute.split()[1] if attribute.startswith(("def", "class")) else attribute.split()[0]
    name = {"register(registry):": "register", "Holder:": "Holder.TOOLS"}.get(name, name)
    result = _run_tools(tmp_path, f"{module}:{name}")
    assert result.exit_code == 0, result.output
    assert "echo, twice" in result.output  # the tools line of the header
    assert [(r["call_id"], r["ok"], r["value"]) for r in results(tmp_path / "s.sqlite", "t")] == [("c1", True, "hi"), ("c2", True, 42)]


def test_a_single_tool_attribute_is_registered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    module = tool_module(tmp_path, monkeypatch, TWO_TOOLS + "ECHO = PythonFunction.from_callable(echo)\n")
    result = _run_tools(tmp_path, f"{module}:ECHO")
    assert result.exit_code == 0, result.output
    assert [r.get("code") for r in results(tmp_path / "s.sqlite", "t")] == [None, "UNKNOWN_TOOL"]


def test_a_refused_registration_is_bad_usage(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    module = tool_module(tmp_path, monkeypatch, TWO_TOOLS + "TOOLS = [echo, echo]\n")
    result = _run_tools(tmp_path, f"{module}:TOOLS")
    assert result.exit_code == 2
    assert "already registered" in result.output


# ------------------------------------------------------------------ approvals

APPROVAL_TOOLS = TWO_TOOLS + '''
RAN = []
def delete(path: str) -> str:
    RAN.append(path)
    return "deleted " + path
def register(registry):
    registry.register(PythonFunction.from_callable(delete), options=ToolRegistrationOptions(requires_approval=True))
'''


def _run_approval(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str) -> tuple[Result, list[str], list[dict[str, Any]]]:
    module = tool_module(tmp_path, monkeypatch, APPROVAL_TOOLS)
    script = write_script(tmp_path, [{"kind": "tool", "callId": "c1", "name": "delete", "arguments": "{\"path\": \"/tmp/x\"}"}])
    db = tmp_path / "s.sqlite"
    result = invoke("run", script, "--tools", f"{module}:register", "--db", str(db), "--session", "a", "--approve", mode)
    return result, sys.modules[module].RAN, results(db, "a")


def test_approve_auto_approves_and_the_body_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result, ran, recorded = _run_approval(tmp_path, monkeypatch, "auto")
    assert result.exit_code == 0 and ran == ["/tmp/x"]
    assert recorded[0]["ok"] is True


def test_approve_deny_rejects_and_the_body_never_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result, ran, recorded = _run_approval(tmp_path, monkeypatch, "deny")
    assert result.exit_code == 0 and ran == []
    assert recorded[0]["code"] == "DENIED" and "DENIED" in result.output


def test_approve_prompt_without_a_terminal_parks_the_call_and_exits_3_with_the_command_that_decides_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result, ran, recorded = _run_approval(tmp_path, monkeypatch, "prompt")
    assert result.exit_code == 3, result.output
    assert ran == [] and recorded == []  # parked: no body, no result yet
    db = tmp_path / "s.sqlite"
    assert f"tether-clr approve a c1 --yes --db {db}" in result.output and "parked" in result.output
    assert invoke("log", "verify", "--db", str(db)).exit_code == 0  # a parked step is sound, not a violation


@pytest.mark.parametrize("answer", ["--yes", "--no"])
def test_tether_clr_approve_decides_the_parked_call_and_finishes_the_script(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, answer: str
) -> None:
    result, ran, _ = _run_approval(tmp_path, monkeypatch, "prompt")
    assert result.exit_code == 3
    db = str(tmp_path / "s.sqlite")
    decided = invoke("approve", "a", "c1", answer, "--db", db)
    assert decided.exit_code == 0, decided.output
    recorded = results(Path(db), "a")
    if answer == "--yes":
        assert ran == ["/tmp/x"] and recorded[0]["ok"] is True
    else:
        assert ran == [] and recorded[0]["code"] == "DENIED"
    assert invoke("log", "verify", "--db", db).exit_code == 0
    again = invoke("approve", "a", "c1", "--yes", "--db", db)
    assert again.exit_code == 2 and "no call waiting" in again.output
    assert len(results(Path(db), "a")) == 1


def test_tether_clr_approve_refuses_a_call_that_is_not_parked_or_no_decision(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _run_approval(tmp_path, monkeypatch, "prompt")
    db = str(tmp_path / "s.sqlite")
    wrong = invoke("approve", "a", "c9", "--yes", "--db", db)
    assert wrong.exit_code == 2 and "not parked" in wrong.output
    undecided = invoke("approve", "a", "c1", "--db", db)
    assert undecided.exit_code == 2 and "--yes" in undecided.output
    busy = invoke("run", write_script(tmp_path, [{"kind": "text", "text": "hi"}]), "--db", db, "--session", "a")
    assert busy.exit_code == 2 and "tether-clr approve" in busy.output


def test_an_approval_parked_in_one_process_and_approved_in_another_runs_the_body_once(tmp_path: Path) -> None:
    """The mixed example (Python tools) parks delete_note in turn 2; a new process approves it and
    finishes the script; the log's results equal an uninterrupted run's, and the body ran once."""
    import subprocess

    db = str(tmp_path / "m.sqlite")
    base = [sys.executable, "-m", "tether_clr.cli"]
    run_args = ["run", str(EXAMPLES / "mixed.json"), "--tools", "examples.mixed_tools:register", "--db", db]

    def cli_process(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*base, *args], cwd=ROOT, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)

    parked = cli_process(*run_args, "--session", "p", "--approve", "prompt")
    assert parked.returncode == 3, parked.stdout + parked.stderr
    assert "tether-clr approve p c1 --yes" in parked.stdout
    approved = cli_process("approve", "p", "c1", "--yes", "--db", db)
    assert approved.returncode == 0, approved.stdout + approved.stderr
    straight = cli_process(*run_args, "--session", "q", "--approve", "auto")
    assert straight.returncode == 0, straight.stdout + straight.stderr
    with SqliteSessionStore(db) as store:
        logs = {session: anyio.run(store.events, session) for session in ("p", "q")}

    def kept(events: list[Any]) -> list[tuple[Any, ...]]:
        return [(e.turn, e.step, e.kind, e.call_id, e.payload) for e in events
                if not e.kind.startswith("approval/") and e.kind != "turn/start"]

    assert kept(logs["p"]) == kept(logs["q"])
    deleted = [e.payload for e in logs["p"] if e.kind == "tool/result" and e.payload["name"] == "delete_note"]
    assert deleted == [{"index": 0, "name": "delete_note", "ok": True, "value": {"deleted": "todo", "existed": True}}]
    decisions = [e.payload["decision"] for e in logs["p"] if e.kind == "approval/decided"]
    assert decisions == ["deferred", "approved"]
    assert invoke("log", "verify", "--db", db).exit_code == 0


@pytest.mark.anyio
@pytest.mark.parametrize("answer", [True, False])
async def test_approve_prompt_on_a_terminal_asks_with_the_call_and_its_arguments(answer: bool) -> None:
    from rich.console import Console

    asked: list[str] = []

    def confirm(question: str) -> bool:
        asked.append(question)
        return answer

    approver = TerminalApprover(Console(file=io.StringIO()), interactive=True, confirm=confirm)

    class Execution:
        call_id, name, arguments_json = "c9", "delete", '{"path":"/x"}'

    result = await approver.request(Execution(), "it deletes")  # type: ignore[arg-type]
    assert result is (ApprovalResult.APPROVED if answer else ApprovalResult.REJECTED)
    assert asked == ['Approve call c9: delete({"path": "/x"}) — it deletes?']


@pytest.mark.anyio
@pytest.mark.parametrize(("key", "expected"), [
    ("y", ApprovalResult.APPROVED), ("n", ApprovalResult.REJECTED),
    ("a", ApprovalGrant.approve(GrantScope.SESSION)), ("p", ApprovalGrant.approve(GrantScope.PRINCIPAL)),
    ("?", ApprovalResult.REJECTED),
])
async def test_approve_prompt_offers_always_in_this_session_or_for_the_principal(key: str, expected: Any) -> None:
    from rich.console import Console

    approver = TerminalApprover(Console(file=io.StringIO()), interactive=True, choose=lambda question: key)

    class Execution:
        call_id, name, arguments_json = "c9", "delete", '{"path":"/x"}'

    assert await approver.request(Execution(), None) == expected  # type: ignore[arg-type]


def test_the_terminal_question_lists_the_always_answers_and_defaults_to_no() -> None:
    from tether_clr.cli.approval import choose_in_terminal

    with CliRunner().isolation(input="a\n") as streams:
        assert choose_in_terminal("Approve call c1: delete?") == "a"
    shown = streams[0].getvalue().decode()
    assert "a = always in this session" in shown and "p = always for you" in shown and "(y, n, a, p) [n]" in shown
    with CliRunner().isolation(input="\n"):
        assert choose_in_terminal("Approve?") == "n"


def test_approve_prompt_always_remembers_the_answer_for_the_rest_of_the_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tether_clr.cli.app as app

    questions: list[str] = []

    def choose(question: str) -> str:
        questions.append(question)
        return "a"

    monkeypatch.setattr(app, "approver_for", lambda mode, console, interactive: TerminalApprover(console, interactive=True, choose=choose))
    module = tool_module(tmp_path, monkeypatch, APPROVAL_TOOLS)
    delete = {"kind": "tool", "callId": "c1", "name": "delete"}
    script = write_script(tmp_path, [{**delete, "arguments": '{"path": "/a"}'}, {"kind": "text", "text": "one"},
                                     {**delete, "arguments": '{"path": "/b"}'}, {"kind": "text", "text": "two"}])
    db = tmp_path / "s.sqlite"
    result = invoke("run", script, "--tools", f"{module}:register", "--db", str(db), "--session", "g", "--approve", "prompt")
    assert result.exit_code == 0, result.output
    assert sys.modules[module].RAN == ["/a", "/b"] and len(questions) == 1
    with SqliteSessionStore(db) as store:
        events = anyio.run(store.events, "g")
    grant = next(e.payload for e in events if e.kind == "approval/grant")
    assert (grant["tool"], grant["scope"], grant["decision"]) == ("delete", "session", "approved")
    assert [e.payload.get("grant") for e in events if e.kind == "approval/decided"] == [None, grant["grant_id"]]
    shown = invoke("log", "show", "g", "--db", str(db))
    assert f"by grant {grant['grant_id']}" in shown.output and "always (session)" in shown.output
    assert invoke("log", "verify", "--db", str(db)).exit_code == 0


# ------------------------------------------------------------------ log show / verify / repair

@pytest.fixture
def ran_demo(tmp_path: Path) -> Path:
    """The mixed example (Python tools only) run into a fresh SQLite log, session 'm'."""
    db = tmp_path / "m.sqlite"
    result = invoke("run", str(EXAMPLES / "mixed.json"), "--tools", "examples.mixed_tools:register", "--db", str(db),
                    "--session", "m", "--approve", "auto")
    assert result.exit_code == 0, result.output
    return db


def test_log_show_renders_every_event(ran_demo: Path) -> None:
    result = invoke("log", "show", "m", "--db", str(ran_demo))
    assert result.exit_code == 0
    for text in ("turn/start", "assistant/message", "tool/call", "approval/asked", "approval/decided", "tool/result",
                 "step/end", "turn/end", "DENIED: the secrets note is off limits", 'ok "ping"'):
        assert text in result.output


def test_log_show_json_is_one_event_per_line(ran_demo: Path) -> None:
    result = invoke("log", "show", "m", "--db", str(ran_demo), "--json")
    events = [json.loads(line) for line in result.output.splitlines()]
    assert [e["seq"] for e in events] == sorted(e["seq"] for e in events)
    assert events[0]["kind"] == "turn/start" and events[-1]["kind"] == "turn/end"


def test_log_show_of_an_unknown_session_is_bad_usage(ran_demo: Path) -> None:
    assert invoke("log", "show", "nobody", "--db", str(ran_demo)).exit_code == 2


def test_log_verify_passes_a_sound_log(ran_demo: Path) -> None:
    result = invoke("log", "verify", "--db", str(ran_demo))
    assert result.exit_code == 0, result.output
    assert "session m: ok" in result.output and "0 violation(s)" in result.output


def _corrupt(db: Path, *statements: str) -> None:
    connection = sqlite3.connect(db)
    with connection:
        for statement in statements:
            connection.execute(statement)
    connection.close()


_RESULT = "kind = 'tool/result' AND turn = 1 AND call_id = 'c2'"


@pytest.mark.parametrize(
    ("statements", "expected"),
    [
        ([f"DELETE FROM session_events WHERE {_RESULT}"], "0 results"),
        # the copy keeps its payload (the index verify pairs by) but no position column, which the unique index would refuse
        (["INSERT INTO session_events (session_id, turn, step, kind, call_id, position, payload, at) "
          f"SELECT session_id, turn, step, kind, call_id, NULL, payload, at FROM session_events WHERE {_RESULT}"],
         "2 results"),
        (["DELETE FROM session_events WHERE kind = 'tool/call' AND turn = 1 AND call_id = 'c2'"], "result without a call"),
        ([f"UPDATE session_events SET seq = seq + 1000 WHERE {_RESULT}"], "out of model order"),
        (["UPDATE session_events SET payload = replace(payload, '\"approved\"', '\"rejected\"') WHERE kind = 'approval/decided'"],
         "after its approval was refused"),
        (["DELETE FROM session_events WHERE kind = 'turn/end' AND turn = 2"], "turn 2 is not ended"),
        ([f"UPDATE session_events SET payload = '[1, 2]' WHERE {_RESULT}"], "payload is not a JSON object"),
    ],
    ids=["result-deleted", "result-duplicated", "call-deleted", "results-reordered", "body-after-refusal", "turn-left-open",
         "payload-not-an-object"],
)
def test_log_verify_catches_a_hand_corrupted_log(ran_demo: Path, statements: list[str], expected: str) -> None:
    _corrupt(ran_demo, *statements)
    result = invoke("log", "verify", "--db", str(ran_demo))
    assert result.exit_code == 1, result.output
    assert "session m: " in result.output and expected in result.output


def test_log_repair_closes_what_a_crash_left_open_and_is_idempotent(tmp_path: Path) -> None:
    db = tmp_path / "r.sqlite"
    with SqliteSessionStore(db) as store:
        anyio.run(crash_mid_step, store, "r")
        held = invoke("log", "repair", "r", "--db", str(db))
        assert held.exit_code == 1 and "error:" in held.output  # a live writer's lease: nothing changes
        assert invoke("log", "verify", "--db", str(db)).exit_code == 1
        expire_lease(store, "r")
    repaired = invoke("log", "repair", "r", "--db", str(db))
    assert repaired.exit_code == 0 and "event(s) appended" in repaired.output
    assert invoke("log", "verify", "--db", str(db)).exit_code == 0
    assert [(r["call_id"], r["code"]) for r in results(db, "r")] == [("c1", "ABORTED"), ("c2", "ABORTED_BEFORE_DISPATCH")]
    again = invoke("log", "repair", "r", "--db", str(db))
    assert again.exit_code == 0 and "nothing was open" in again.output


# ------------------------------------------------------------------ the mixed example end to end

MIXED_STATUSES = ["ok", "ok", "ok", "DENIED", "ok", "TOOL_ERROR", "UNKNOWN_TOOL", "INVALID_ARGS"]


def _mixed_statuses(events: list[Any]) -> list[str]:
    return ["ok" if e.payload["ok"] else e.payload["code"] for e in events if e.kind == "tool/result"]


def test_the_mixed_example_runs_end_to_end_with_csharp_tools(clr_tools: object, tmp_path: Path) -> None:
    from tether_clr.cli.demo import build_example_assembly

    db = tmp_path / "mixed.sqlite"
    result = invoke("run", str(EXAMPLES / "mixed.json"), "--tools", "examples.mixed_tools:register",
                    "--assembly", str(build_example_assembly()), "--db", str(db), "--session", "x", "--approve", "auto")
    assert result.exit_code == 0, result.output
    assert "Stock" in result.output and "only 12 widget in stock" in result.output
    with SqliteSessionStore(db) as store:
        events = anyio.run(store.events, "x")
    assert _mixed_statuses(events) == MIXED_STATUSES
    assert invoke("log", "verify", "--db", str(db)).exit_code == 0


def test_the_example_runs_end_to_end_on_postgresql(tmp_path: Path) -> None:
    dsn = postgres_dsn()
    session = f"cli-{uuid.uuid4().hex}"
    result = invoke("run", str(EXAMPLES / "mixed.json"), "--tools", "examples.mixed_tools:register", "--db", dsn,
                    "--session", session, "--approve", "auto")
    assert result.exit_code == 0, result.output
    verified = invoke("log", "verify", "--db", dsn, session)
    assert verified.exit_code == 0, verified.output
    shown = invoke("log", "show", session, "--db", dsn, "--json")
    statuses = [("ok" if e["payload"]["ok"] else e["payload"]["code"])
                for e in map(json.loads, shown.output.splitlines()) if e["kind"] == "tool/result"]
    # no .NET here: the C# calls (Stock, Reserve) are unknown tools, an outcome like any other
    assert statuses == ["ok", "ok", "UNKNOWN_TOOL", "DENIED", "ok", "UNKNOWN_TOOL", "UNKNOWN_TOOL", "INVALID_ARGS"]


def test_python_m_tether_clr_cli_is_the_same_command(tmp_path: Path) -> None:
    import subprocess

    completed = subprocess.run(
        [sys.executable, "-m", "tether_clr.cli", "run", str(EXAMPLES / "echo.json"), *ECHO, "--db", str(tmp_path / "s.sqlite")],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )
    assert completed.returncode == 0, completed.stderr
    assert "shout" in completed.stdout and "2 ok" in completed.stdout


# ------------------------------------------------------------------ hostile scripts, the terminal view

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.sampled_from(["kind", "callId", "name", "arguments", "text", "x"]), children, max_size=5),
    max_leaves=20,
)
_row = st.fixed_dictionaries(
    {"kind": st.sampled_from(["tool", "text", "other"])},
    optional={"callId": _json | st.text(min_size=1, max_size=4), "name": _json | st.text(min_size=1, max_size=4),
              "arguments": _json | st.text(max_size=12), "text": _json | st.text(max_size=8)},
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_row, max_size=8) | _json)
def test_any_json_is_a_script_or_a_script_error(rows: Any) -> None:
    """A script is hostile input: whatever JSON it holds, parsing gives turns of ToolCalls or ScriptError, nothing else."""
    try:
        script = parse_script(rows)
    except ScriptError:
        return
    for turn in script.turns:
        assert turn.steps or turn.text is not None
        for step in turn.steps:
            assert step and all(isinstance(call, ToolCall) and isinstance(call.arguments, str) for call in step)
            assert len({call.call_id for call in step}) == len(step)


def test_log_show_renders_a_hand_edited_payload_raw(ran_demo: Path) -> None:
    _corrupt(ran_demo, "UPDATE session_events SET payload = '{\"calls\": [1, 2]}' WHERE kind = 'assistant/message'")
    result = invoke("log", "show", "m", "--db", str(ran_demo))
    assert result.exit_code == 0 and '{"calls":[1,2]}' in result.output


@pytest.mark.anyio
async def test_on_a_terminal_the_step_is_drawn_live_and_ends_with_its_final_table(tmp_path: Path) -> None:
    from rich.console import Console

    from tether_clr import RequestContext, ToolRegistry
    from tether_clr.cli.loading import load_python_tools
    from tether_clr.cli.runner import run_script
    from tether_clr.records.script import load_script

    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=160, color_system=None)
    registry = ToolRegistry()
    load_python_tools(registry, "examples.echo_tools:TOOLS")
    with SqliteSessionStore(tmp_path / "s.sqlite") as store:
        result = await run_script(load_script(EXAMPLES / "echo.json"), registry, store, "live", RequestContext("t", "p"), console)
    assert [o.value for o in result.steps[0]] == ["ping", "PONG"]
    text = out.getvalue()
    assert "0/2" in text  # the progress bar, drawn while the step ran
    final = text[text.rindex("turn 1, step 1"):]  # the last redraw: every call done, the progress bar gone
    assert '"PONG"' in final and "/2" not in final

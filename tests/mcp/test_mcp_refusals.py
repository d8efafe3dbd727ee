"""Issue 27, sections 3 and 6: infrastructure faults are answers (never leaks), and refusals are visible.

* A call the log cannot record is a normal ``tools/call`` result: ``isError``, UNAVAILABLE,
  ``log_unavailable``, a fixed message naming no driver; its body never runs; the server logs
  the cause once per incident (one ERROR with its traceback for 50 failing calls), then its recovery.
  The same in both protocol eras, in memory and over streamable HTTP.
* A call of an unknown tool, or of one the caller cannot see, is answered -32602 as before, and recorded
  in the log: UNKNOWN_TOOL, or DENIED ``tool_disabled`` / ``kill_switch`` where a disable or a kill switch hid it.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, Implementation

from tests.support.control_doubles import FaultyControl
from tests.support.control_stores import open_control
from tests.support.mcp_http import http_client, serving
from tests.support.mcp_servers import context_for
from tether_clr import (
    KillSwitch,
    PythonFunction,
    SqliteSessionStore,
    ToolCall,
    ToolExecutionOutcome,
    ToolMetadata,
    ToolRegistrationOptions,
    ToolRegistry,
    ToolStatus,
)
from tether_clr.cli.serve import SessionCallSink
from tether_clr.mcp import create_server
from tether_clr.mcp.failures import FIXED_MESSAGES

pytestmark = pytest.mark.anyio

ERAS = ["legacy", "2026-07-28"]
MCP_LOGGER = "tether_clr.mcp"


class Runs:
    """Counts the bodies that ran."""

    def __init__(self) -> None:
        self.count = 0

    def echo(self, text: str) -> str:
        """Echo the text."""
        self.count += 1
        return text

    def lookup(self, key: str) -> str:
        """Look a key up."""
        self.count += 1
        return key

    def purge(self) -> str:
        """Purge everything."""
        self.count += 1
        return "purged"


def registry_with(runs: Runs) -> ToolRegistry:
    registry = ToolRegistry()
    registry.register(PythonFunction.from_callable(runs.echo))
    registry.register(PythonFunction.from_callable(runs.lookup), options=ToolRegistrationOptions(metadata=ToolMetadata(version="1.0.0")))
    registry.register(PythonFunction.from_callable(runs.purge), options=ToolRegistrationOptions(metadata=ToolMetadata(version="2.0.0")))
    return registry


def client(server: Any, mode: str) -> Client:
    return Client(server.sdk_server, mode=mode, client_info=Implementation(name="acme:alice", version="1"))


class Switchable:
    """A sink whose every write fails while ``down`` is set (as a database that is restarting), with the
    driver's own kind of text, which must never reach a client."""

    def __init__(self) -> None:
        self.down = threading.Event()
        self.down.set()
        self.calls: list[ToolCall] = []
        self.outcomes: list[ToolExecutionOutcome] = []

    def _check(self) -> None:
        if self.down.is_set():
            raise ConnectionError('connection to server at "10.0.0.5", port 5432 failed: FATAL: INSERT INTO session_events')

    async def call_declared(self, call: ToolCall) -> None:
        self._check()
        self.calls.append(call)

    async def outcome_ready(self, outcome: ToolExecutionOutcome) -> None:
        self._check()
        self.outcomes.append(outcome)


def assert_log_unavailable(result: Any) -> None:
    assert result.is_error is True
    assert result.structured_content == {"code": "UNAVAILABLE", "reason": "log_unavailable", "message": FIXED_MESSAGES["log_unavailable"]}
    text = " ".join(getattr(part, "text", "") for part in result.content)
    assert text == FIXED_MESSAGES["log_unavailable"]
    for leak in ("10.0.0.5", "5432", "INSERT", "sqlite", "psycopg", "Error"):
        assert leak not in text


def mcp_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [record for record in caplog.records if record.name.startswith(MCP_LOGGER)]


# ------------------------------------------------------------------ section 3
@pytest.mark.parametrize("mode", ERAS)
async def test_a_closed_session_store_refuses_calls_log_unavailable_runs_no_body_and_logs_one_traceback(
    mode: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    runs = Runs()
    store = SqliteSessionStore(tmp_path / "log.db")
    store.close()  # every write now fails in the driver
    server = create_server(registry_with(runs), context_for=context_for, sink=SessionCallSink(store, "s-1"))
    caplog.set_level(logging.DEBUG)
    async with client(server, mode) as c:
        results = [await c.call_tool("echo", {"text": f"t{n}"}) for n in range(50)]
    for result in results:
        assert_log_unavailable(result)
    assert runs.count == 0
    records = mcp_records(caplog)
    errors = [record for record in records if record.levelno >= logging.ERROR]
    assert len(errors) == 1 and errors[0].exc_info is not None  # the cause, once, with its traceback
    assert all(record.exc_info is None for record in records if record is not errors[0])
    assert len(records) <= 3  # the first failure, at most a summary or two: never a line per call


@pytest.mark.parametrize("mode", ERAS)
async def test_a_locked_sqlite_log_is_answered_log_unavailable_without_the_drivers_text(mode: str, tmp_path: Path) -> None:
    import sqlite3

    runs = Runs()
    path = tmp_path / "log.db"
    store = SqliteSessionStore(path, busy_timeout=0.05)
    locker = sqlite3.connect(path, isolation_level=None)
    locker.execute("BEGIN EXCLUSIVE")
    try:
        server = create_server(registry_with(runs), context_for=context_for, sink=SessionCallSink(store, "s-1"))
        async with client(server, mode) as c:
            result = await c.call_tool("echo", {"text": "hi"})
        assert_log_unavailable(result)
        assert runs.count == 0
    finally:
        locker.rollback()
        locker.close()
        store.close()


@pytest.mark.parametrize("mode", ERAS)
async def test_the_incident_ends_with_one_recovery_line_and_calls_run_again(
    mode: str, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("tether_clr.mcp.failures.SETTLE", 0.0)  # the first success ends it (10 s in production)
    runs, sink = Runs(), Switchable()
    server = create_server(registry_with(runs), context_for=context_for, sink=sink)
    caplog.set_level(logging.WARNING)
    async with client(server, mode) as c:
        for _ in range(5):
            assert_log_unavailable(await c.call_tool("echo", {"text": "down"}))
        sink.down.clear()
        ok = await c.call_tool("echo", {"text": "up"})
    assert ok.is_error is False and ok.structured_content == {"result": "up"}
    assert runs.count == 1 and [call.name for call in sink.calls] == ["echo"]
    lines = [record.getMessage() for record in mcp_records(caplog)]
    assert len(lines) == 2 and "recovered after 5 failure(s)" in lines[-1]


@pytest.mark.parametrize("mode", ERAS)
async def test_an_outcome_the_log_cannot_record_is_unavailable_and_says_the_call_may_have_run(mode: str) -> None:
    runs, sink = Runs(), Switchable()
    sink.down.clear()

    class FailsOnOutcome(Switchable):
        async def outcome_ready(self, outcome: ToolExecutionOutcome) -> None:
            raise ConnectionError("server closed the connection unexpectedly")

    failing = FailsOnOutcome()
    failing.down.clear()
    server = create_server(registry_with(runs), context_for=context_for, sink=failing)
    async with client(server, mode) as c:
        result = await c.call_tool("echo", {"text": "x"})
    assert result.is_error is True and result.structured_content is not None
    assert (result.structured_content["code"], result.structured_content["reason"]) == ("UNAVAILABLE", "log_unavailable")
    assert "may have run" in result.structured_content["message"] and "closed" not in result.structured_content["message"]
    assert runs.count == 1


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_over_http_a_failing_log_is_a_tool_result_not_a_json_rpc_error(mode: str, caplog: pytest.LogCaptureFixture) -> None:
    runs, sink = Runs(), Switchable()
    server = create_server(registry_with(runs), context_for=context_for, sink=sink)
    caplog.set_level(logging.WARNING)
    headers = {"x-tenant": "acme", "x-principal": "alice"}
    with serving(lambda: server.streamable_http_app(path="/mcp")) as url:
        async with http_client(url, headers, mode) as c:
            results = [await c.call_tool("echo", {"text": "x"}) for _ in range(10)]
    for result in results:
        assert_log_unavailable(result)
    assert runs.count == 0
    assert len([r for r in mcp_records(caplog) if r.levelno >= logging.ERROR]) == 1


@pytest.mark.parametrize("mode", ERAS)
async def test_an_approval_provider_that_raises_is_answered_with_a_fixed_message(mode: str, caplog: pytest.LogCaptureFixture) -> None:
    runs = Runs()
    registry = ToolRegistry()
    registry.register(PythonFunction.from_callable(runs.echo), options=ToolRegistrationOptions(requires_approval=True))

    class Down:
        async def request(self, execution: Any, reason: str | None) -> Any:
            raise ConnectionError("could not connect to approvals.internal:8443")

    registry.approval = Down()
    server = create_server(registry, context_for=context_for, elicit_approval=False)
    caplog.set_level(logging.WARNING)
    async with client(server, mode) as c:
        results = [await c.call_tool("echo", {"text": "x"}) for _ in range(20)]
    for result in results:
        assert result.structured_content == {
            "code": "UNAVAILABLE", "reason": "approval_unavailable", "message": FIXED_MESSAGES["approval_unavailable"]}
    assert runs.count == 0
    # The approval incident is the process's (an earlier test may have opened it): at most one traceback, never one per call.
    records = [r for r in caplog.records if r.name.startswith("tether_clr")]
    assert len(records) <= 2 and len([r for r in records if r.exc_info is not None]) <= 1


@pytest.mark.parametrize("mode", ERAS)
async def test_a_stale_control_plane_is_answered_control_stale_while_the_log_records_it(mode: str, tmp_path: Path) -> None:
    runs = Runs()
    registry = registry_with(runs)
    sink = Switchable()
    sink.down.clear()
    server = create_server(registry, context_for=context_for, sink=sink)
    with open_control("sqlite", str(tmp_path / "control.db")) as store:
        faulty = FaultyControl(store)
        with registry.attach_control(faulty, max_staleness=0.05) as attachment:
            faulty.cut.set()
            import anyio

            with anyio.fail_after(10):
                while not attachment.stale:
                    await anyio.sleep(0.01)
            async with client(server, mode) as c:
                result = await c.call_tool("echo", {"text": "x"})
    assert result.structured_content is not None
    assert (result.structured_content["code"], result.structured_content["reason"]) == ("UNAVAILABLE", "control_stale")
    assert runs.count == 0
    assert [(o.code, o.reason) for o in sink.outcomes] == [("UNAVAILABLE", "control_stale")]


# ------------------------------------------------------------------ section 6
async def _refused(server: Any, name: str, mode: str) -> tuple[int, str]:
    async with client(server, mode) as c:
        with pytest.raises(MCPError) as caught:
            await c.call_tool(name, {"key": "k"})
    return caught.value.code, caught.value.message


@pytest.mark.parametrize("mode", ERAS)
async def test_unknown_disabled_and_killed_tools_get_one_answer_and_the_log_says_why(mode: str, tmp_path: Path) -> None:
    runs = Runs()
    registry = registry_with(runs)
    registry.set_status("lookup", "1.0.0", ToolStatus.DISABLED)
    registry.add_kill_switch(KillSwitch("incident 42", logical_name="purge"))
    store = SqliteSessionStore(tmp_path / "log.db")
    try:
        server = create_server(registry, context_for=context_for, sink=SessionCallSink(store, "s-1"))
        answers = [await _refused(server, name, mode) for name in ("lookup", "purge", "nowhere")]
        events = await store.events("s-1")
    finally:
        store.close()
    assert answers[0] == answers[1] == answers[2] == (INVALID_PARAMS, "Unknown tool")
    assert runs.count == 0
    results = [(e.payload["name"], e.payload["code"], e.payload["reason"]) for e in events if e.kind == "tool/result"]
    assert results == [("lookup", "DENIED", "tool_disabled"), ("purge", "DENIED", "kill_switch"), ("nowhere", "UNKNOWN_TOOL", None)]
    declared = [e.payload for e in events if e.kind == "tool/call"]
    assert [d["name"] for d in declared] == ["lookup", "purge", "nowhere"]
    assert all(d["arguments_refused"]["bytes"] == len('{"key":"k"}') for d in declared)


@pytest.mark.parametrize("mode", ERAS)
async def test_a_tool_hidden_from_the_tenant_is_recorded_unknown_not_as_its_disable(mode: str) -> None:
    runs = Runs()
    registry = ToolRegistry()
    registry.register(PythonFunction.from_callable(runs.lookup), options=ToolRegistrationOptions(
        metadata=ToolMetadata(version="1.0.0", tenants={"globex"})))
    registry.set_status("lookup", "1.0.0", ToolStatus.DISABLED)  # disabled, but acme could never see it anyway
    sink = Switchable()
    sink.down.clear()
    server = create_server(registry, context_for=context_for, sink=sink)
    assert await _refused(server, "lookup", mode) == (INVALID_PARAMS, "Unknown tool")
    assert [(o.code, o.reason) for o in sink.outcomes] == [("UNKNOWN_TOOL", None)]


@pytest.mark.parametrize("mode", ERAS)
async def test_a_hostile_tool_name_is_recorded_bounded(mode: str) -> None:
    sink = Switchable()
    sink.down.clear()
    server = create_server(registry_with(Runs()), context_for=context_for, sink=sink)
    name = "x" * 200_000
    assert await _refused(server, name, mode) == (INVALID_PARAMS, "Unknown tool")
    [call] = sink.calls
    assert len(call.name) < 200 and "200000 bytes" in call.name
    assert len(sink.outcomes[0].value_json) < 1000


@pytest.mark.parametrize("mode", ERAS)
async def test_a_log_that_fails_while_recording_a_hidden_call_changes_nothing_the_client_sees(mode: str) -> None:
    sink = Switchable()
    server = create_server(registry_with(Runs()), context_for=context_for, sink=sink)
    assert await _refused(server, "nowhere", mode) == (INVALID_PARAMS, "Unknown tool")


@pytest.mark.parametrize("mode", ERAS)
async def test_one_client_failing_among_others_succeeding_is_one_incident_not_a_traceback_a_failure(
    mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    runs, sink = Runs(), Switchable()
    server = create_server(registry_with(runs), context_for=context_for, sink=sink)
    caplog.set_level(logging.WARNING)
    async with client(server, mode) as c:
        for _ in range(10):
            sink.down.set()
            assert_log_unavailable(await c.call_tool("echo", {"text": "down"}))
            sink.down.clear()
            assert (await c.call_tool("echo", {"text": "up"})).is_error is False
    records = mcp_records(caplog)
    assert len(records) == 1 and records[0].exc_info is not None  # the first failure, with its cause; no more

"""The durable logs: what they record, in which order, what survives a reopen or a kill,\nhow outcomes pair with declarations, and opening a file other processes open too."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.support import ROOT, add, call
from tether_clr import (
    InMemoryToolLog,
    ResultPolicyError,
    SqliteToolLog,
    ToolCall,
    ToolExecutionOutcome,
    ToolFailureCodes,
    ToolRegistry,
)

pytestmark = pytest.mark.anyio


async def test_sqlite_log_records_calls_and_outcomes_in_model_order(tmp_path: Path) -> None:
    registry = ToolRegistry()

    async def slow(tag: str) -> str:
        await anyio.sleep(0.02 if tag == "first" else 0)
        return tag

    add(registry, slow, "slow", parallel=True)
    path = tmp_path / "log.sqlite3"
    with SqliteToolLog(path) as log:
        await registry.execute_batch(
            [call("a", "slow", {"tag": "first"}), call("b", "slow", {"tag": "second"}), call("c", "ghost")],
            registry.seal(),
            sink=log,
        )
    with SqliteToolLog(path) as reopened:
        assert [c.call_id for c in reopened.declared_calls()] == ["a", "b", "c"]
        assert reopened.declared_calls()[0].arguments == '{"tag": "first"}'
        outcomes = reopened.outcomes()
        assert [(o.call_id, o.value) for o in outcomes[:2]] == [("a", "first"), ("b", "second")]
        assert outcomes[2].failure.code is ToolFailureCodes.UNKNOWN_TOOL
        assert reopened.pending_calls() == []


async def test_sqlite_log_reports_calls_without_outcome_as_pending(tmp_path: Path) -> None:
    with SqliteToolLog(tmp_path / "log.sqlite3") as log:
        await log.call_declared(call("x", "deploy", {"env": "prod"}))
        assert [c.call_id for c in log.pending_calls()] == ["x"]


# ---------------------------------------------------- pairing per declaration
def _child(mode: str, path: Path, **kwargs: Any) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.support.sink_child", mode, str(path)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        **kwargs,
    )


def _quick_registry() -> ToolRegistry:
    registry = ToolRegistry()

    async def quick() -> str:
        return "ok"

    async def hang() -> str:
        return "ok"

    add(registry, quick, "quick")
    add(registry, hang, "hang")
    return registry


def _steps() -> list[ToolCall]:
    return [call("call_0", "quick"), call("call_1", "hang"), call("call_2", "quick")]


@pytest.mark.parametrize("kind", ["sqlite", "memory"])
async def test_pending_calls_pair_outcomes_with_their_own_declaration_when_ids_repeat(kind: str, tmp_path: Path) -> None:
    registry = _quick_registry()
    log: Any = SqliteToolLog(tmp_path / "log.sqlite3") if kind == "sqlite" else InMemoryToolLog()
    await registry.execute_batch(_steps(), registry.seal(), sink=log)
    # Step 2 reuses the ids; a result policy rejects call_1, so its outcome is never recorded.
    rejecting = registry.register_result_policy(None, lambda e, o: 1 / 0 if e.call_id == "call_1" else None)
    with pytest.raises(ResultPolicyError):
        await registry.execute_batch(_steps(), registry.seal(), sink=log)
    rejecting.dispose()
    await registry.execute_batch(_steps(), registry.seal(), sink=log)
    pending = log.pending_calls()
    assert [(c.call_id, c.position) for c in pending] == [("call_1", 1)]
    assert pending[0].batch_id is not None
    if kind == "sqlite":
        log.close()


async def test_in_memory_log_pending_calls_outside_a_batch_pair_by_call_id() -> None:
    log = InMemoryToolLog()
    await log.call_declared(call("x", "deploy"))
    await log.call_declared(call("y", "deploy"))
    await log.outcome_ready(ToolExecutionOutcome.success("y", "deploy", 1))
    assert [(c.call_id, c.batch_id) for c in log.pending_calls()] == [("x", None)]


async def test_call_killed_mid_batch_stays_pending_though_its_id_was_answered_before(tmp_path: Path) -> None:
    path = tmp_path / "log.sqlite3"
    registry = _quick_registry()
    with SqliteToolLog(path) as log:  # an earlier step answered call_0..call_2
        await registry.execute_batch(_steps(), registry.seal(), sink=log)
    child = _child("hang", path)
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "started"  # call_1's body runs: its declaration is durable
        child.send_signal(signal.SIGKILL)
    finally:
        child.wait()
    assert child.returncode == -signal.SIGKILL
    with SqliteToolLog(path) as log:
        assert [c.call_id for c in log.declared_calls()] == ["call_0", "call_1", "call_2", "call_0", "call_1"]
        pending = log.pending_calls()
        assert [(c.call_id, c.name, c.position) for c in pending] == [("call_1", "hang", 1)]


_OLD_SCHEMA = """
CREATE TABLE tool_calls (seq INTEGER PRIMARY KEY AUTOINCREMENT, call_id TEXT NOT NULL, name TEXT NOT NULL,
    arguments TEXT NOT NULL, parent_call_id TEXT, declared_at TEXT NOT NULL);
CREATE TABLE tool_outcomes (seq INTEGER PRIMARY KEY AUTOINCREMENT, call_id TEXT NOT NULL, name TEXT NOT NULL,
    value TEXT NOT NULL, failure_code TEXT, failure_message TEXT, recorded_at TEXT NOT NULL);
CREATE INDEX tool_outcomes_call_id ON tool_outcomes(call_id);
INSERT INTO tool_calls (call_id, name, arguments, parent_call_id, declared_at) VALUES ('old_0', 't', '{}', NULL, 'then');
INSERT INTO tool_calls (call_id, name, arguments, parent_call_id, declared_at) VALUES ('old_1', 't', '{}', NULL, 'then');
INSERT INTO tool_outcomes (call_id, name, value, failure_code, failure_message, recorded_at) VALUES ('old_1', 't', '1', NULL, NULL, 'then');
"""


async def test_log_file_of_an_older_version_is_migrated_in_place(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    old = sqlite3.connect(path)
    old.executescript(_OLD_SCHEMA)
    old.close()
    registry = _quick_registry()
    with SqliteToolLog(path) as log:
        assert [(c.call_id, c.batch_id) for c in log.pending_calls()] == [("old_0", None)]
        await registry.execute_batch([call("old_0", "quick")], registry.seal(), sink=log)
        # A new outcome with an old id answers only its own declaration, not the legacy row.
        assert [c.call_id for c in log.pending_calls()] == ["old_0"]
    with SqliteToolLog(path) as reopened:  # migrating again is a no-op
        assert len(reopened.declared_calls()) == 3 and len(reopened.outcomes()) == 2
        assert [o.attempts for o in reopened.outcomes()] == [1, 1]  # an old row read as one attempt
    check = sqlite3.connect(path)
    assert check.execute("PRAGMA user_version").fetchone()[0] == 4  # 2 added failure_reason, 3 content, 4 attempts
    assert {"failure_reason", "content", "attempts"} <= {row[1] for row in check.execute("PRAGMA table_info(tool_outcomes)")}
    check.close()


# ---------------------------------------------------------- concurrent opening
def _lock_new_file(path: Path) -> sqlite3.Connection:
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    holder.execute("CREATE TABLE unrelated (x)")
    return holder


def test_opening_waits_while_another_process_holds_the_new_file(tmp_path: Path) -> None:
    path = tmp_path / "log.sqlite3"
    holder = _lock_new_file(path)
    child = _child("open", path)
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "retrying"  # the child is waiting on our lock
        holder.execute("COMMIT")
        holder.close()
        lines = [line.strip() for line in child.stdout]
    finally:
        child.wait()
    assert child.returncode == 0 and lines[-1] == "opened"


def test_opening_gives_up_after_the_open_timeout(tmp_path: Path) -> None:
    path = tmp_path / "log.sqlite3"
    holder = _lock_new_file(path)
    try:
        with pytest.raises(sqlite3.OperationalError, match="stayed locked"):
            SqliteToolLog(path, busy_timeout=0.01, open_timeout=0.05)
    finally:
        holder.close()


def test_processes_opening_a_new_log_at_once_all_succeed(tmp_path: Path) -> None:
    path = tmp_path / "log.sqlite3"
    children = [_child("race", path, stdin=subprocess.PIPE) for _ in range(3)]
    for child in children:  # a gate, so the opens really overlap
        assert child.stdin is not None
        child.stdin.write("go\n")
        child.stdin.flush()
    for child in children:
        child.communicate()
    assert [child.returncode for child in children] == [0, 0, 0]
    with SqliteToolLog(path) as log:
        assert sorted(c.call_id for c in log.declared_calls()) == sorted(f"pid-{child.pid}" for child in children)

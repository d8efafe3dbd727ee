"""The SQLite durable log: what it records, in which order, and what survives a reopen."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.helpers import add, call
from tether_clr import SqliteToolLog, ToolFailureCodes, ToolRegistry

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

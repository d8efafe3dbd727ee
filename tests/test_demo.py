"""The main job runs end to end and records every call it was given."""

from __future__ import annotations

from pathlib import Path

import pytest

from tether_clr import SqliteToolLog
from tether_clr.demo import main


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_demo_runs_and_logs_every_call(tmp_path: Path, capsys: pytest.CaptureFixture[str], backend: str) -> None:
    log = tmp_path / "log.sqlite3"
    assert main(["--no-dotnet", "--log", str(log), "--backend", backend]) == 0
    out = capsys.readouterr().out
    for code in ("DENIED", "UNKNOWN_TOOL", "INVALID_ARGS"):
        assert code in out
    assert "sk-demo-123" not in out
    with SqliteToolLog(log) as reopened:
        assert len(reopened.declared_calls()) == len(reopened.outcomes()) == 7
        assert reopened.pending_calls() == []


def test_demo_hosts_csharp_tools_next_to_python_ones(clr_tools: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "log.sqlite3"
    assert main(["--log", str(log)]) == 0
    out = capsys.readouterr().out
    assert "C# tools hosted on" in out
    assert "Hello, Ada!" in out
    with SqliteToolLog(log) as reopened:
        assert len(reopened.outcomes()) == 9

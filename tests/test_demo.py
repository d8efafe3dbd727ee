"""The main job (./tasks.sh demo) runs tether-clr on the mixed example and leaves a sound session log."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tether_clr import SqliteSessionStore, log_violations
from tether_clr.cli.demo import SESSION, main


def _events(db: Path) -> list:  # type: ignore[type-arg]
    with SqliteSessionStore(db) as store:
        return anyio.run(store.events, SESSION)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_demo_runs_the_mixed_example_and_logs_every_call(tmp_path: Path, capsys: pytest.CaptureFixture[str], backend: str) -> None:
    db = tmp_path / "session.sqlite"
    assert main(["--no-dotnet", "--db", str(db), "--backend", backend]) == 0
    out = capsys.readouterr().out
    for text in ("DENIED", "UNKNOWN_TOOL", "INVALID_ARGS", "approval/decided", "0 violation(s)"):
        assert text in out
    assert "sk-example-123" not in out  # the guard kept the secrets note from being read
    events = _events(db)
    assert log_violations(events) == []
    assert sum(e.kind == "tool/call" for e in events) == sum(e.kind == "tool/result" for e in events) == 8


def test_demo_hosts_csharp_tools_next_to_python_ones(clr_tools: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "session.sqlite"
    assert main(["--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "C# tools hosted on" in out
    assert "only 12 widget in stock" in out  # the failing C# tool: TOOL_ERROR, an outcome
    results = [e.payload for e in _events(db) if e.kind == "tool/result"]
    assert [r["code"] for r in results if not r["ok"]] == ["DENIED", "TOOL_ERROR", "UNKNOWN_TOOL", "INVALID_ARGS"]
    assert results[2]["value"] == 12  # Stock, from C#

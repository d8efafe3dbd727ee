"""docs/projections.md stays true: each provider's example runs as written, in a fresh process, and prints what the page says.

Marked ``dotnet`` through the ``clr_tools`` fixture (the examples host a C# tool), so they run on each runtime.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support import ROOT

PAGE = ROOT / "docs" / "projections.md"


def _section(title: str) -> str:
    text = PAGE.read_text(encoding="utf-8")
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end != -1 else len(text)]


def _blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", text, re.S | re.M)


def _run(section: str, tmp_path: Path) -> list[str]:
    (source,) = _blocks(PAGE.read_text(encoding="utf-8").split("\n## ")[0], "csharp")
    (code,) = _blocks(_section(section), "python")
    (tmp_path / "Inventory.cs").write_text(source, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=110)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_the_page_has_a_section_per_provider() -> None:
    for title in ("OpenAI", "Anthropic", "MCP", "MEAI"):
        assert _blocks(_section(title), "python"), title


def test_the_openai_example_runs_as_written(tmp_path: Path, clr_tools: dict[str, Any]) -> None:
    lines = _run("OpenAI", tmp_path)
    assert lines[:3] == ["c1 None 12", "c2 None 2.5", "12 widgets in stock, 2.5 each."]
    assert lines[3:] == ["[('Stock', 'default', 'dropped'), ('price', 'default', 'dropped')]"]


def test_the_anthropic_example_runs_as_written(tmp_path: Path, clr_tools: dict[str, Any]) -> None:
    assert _run("Anthropic", tmp_path) == ["t1 None False", "t2 INVALID_ARGS True", "12 in stock; I could not price 'many'."]


def test_the_mcp_example_runs_as_written(tmp_path: Path, clr_tools: dict[str, Any]) -> None:
    lines = _run("MCP", tmp_path)
    assert lines[:4] == ["Stock Stock None None", "price Price True True", "r1 False {'result': 12}", "r2 False {'result': 10.0}"]
    assert lines[4].startswith("r3 True {'code': 'UNKNOWN_TOOL', 'reason': None, 'message': ")


def test_the_meai_example_runs_as_written(tmp_path: Path, clr_tools: dict[str, Any]) -> None:
    lines = _run("MEAI", tmp_path)
    assert lines == [
        "['Stock', 'price']",
        '{"$type":"functionResult","callId":"f1","result":12}',
        '{"$type":"functionResult","callId":"f2","result":7.5}',
        '["product"]',
    ]

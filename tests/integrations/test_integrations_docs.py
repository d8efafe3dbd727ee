"""docs/integrations.md stays true: the pydantic-ai example runs as a file from an empty folder and prints what the page says."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "integrations.md"


def _section(title: str, language: str) -> list[str]:
    text = PAGE.read_text(encoding="utf-8")
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return re.findall(rf"^```{language}\n(.*?)^```$", text[start:end if end != -1 else len(text)], re.S | re.M)


def test_the_pydantic_ai_example_runs_as_a_file_and_prints_what_the_page_says(tmp_path: Path) -> None:
    (code,) = _section("pydantic-ai", "python")
    (shown,) = _section("pydantic-ai", "text")
    (tmp_path / "example.py").write_text(code, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "example.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=110)
    assert done.returncode == 0, done.stderr
    assert done.stdout == shown

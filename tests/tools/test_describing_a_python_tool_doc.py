"""docs/csharp-tools.md, "Describing a Python tool": its example runs as a standalone file and prints what the page says.

The file is run from an empty temporary folder by a fresh interpreter, importing
nothing but ``tether_clr`` and its dependencies. The checkout is put on
``PYTHONPATH`` so the file imports this checkout's package (the docs harness,
tests/test_docs.py, is meant to run it against the installed package instead).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "csharp-tools.md"


def _section(title: str) -> str:
    page = PAGE.read_text(encoding="utf-8")
    start = page.index(f"## {title}\n")
    end = page.find("\n## ", start + 1)
    return page[start : end if end != -1 else len(page)]


def test_the_describing_a_python_tool_example_prints_what_the_page_says(tmp_path: Path) -> None:
    section = _section("Describing a Python tool")
    (code,) = re.findall(r"^```python\n(.*?)^```$", section, re.S | re.M)
    (printed,) = re.findall(r"It prints:\n\n```text\n(.*?)^```$", section, re.S | re.M)
    script = tmp_path / "describe.py"
    script.write_text(code, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, script.name], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == printed


def test_text_after_a_docstring_section_stays_in_the_tool_description() -> None:
    """The page says text before, between and after the sections is kept."""
    from tether_clr import PythonFunction

    def fn(x: int) -> int:
        """Before.

        Args:
            x: The x.

        After.
        """
        return x

    tool = PythonFunction.from_callable(fn)
    assert tool.description == "Before.\n\nAfter."
    assert tool.json_schema["properties"]["x"]["description"] == "The x."

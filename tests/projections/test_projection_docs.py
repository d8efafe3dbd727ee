"""docs/projections.md keeps an example per provider.

The examples themselves run once each in tests/test_docs.py's shared runner (as files, from a folder
outside the checkout, on the installed package, on each .NET runtime), which also holds what each prints
(``EXPECTED``) and runs ``mypy --strict`` over them.
"""

from __future__ import annotations

import re

from tests.support import ROOT
from tests.test_docs import EXAMPLES, EXPECTED

PAGE = ROOT / "docs" / "projections.md"


def _section(title: str) -> str:
    text = PAGE.read_text(encoding="utf-8")
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end != -1 else len(text)]


def test_the_page_has_a_section_per_provider() -> None:
    for title in ("OpenAI", "Anthropic", "MCP", "MEAI"):
        assert re.findall(r"^```python\n", _section(title), re.M), title


def test_each_example_of_the_page_is_run_and_its_output_checked_by_the_shared_runner() -> None:
    ids = {example.id for example in EXAMPLES if example.page == "docs/projections.md"}
    assert ids == {"docs/projections.md::OpenAI::0", "docs/projections.md::OpenAI::1", "docs/projections.md::Anthropic::0",
                   "docs/projections.md::MCP::0", "docs/projections.md::MEAI::0"}
    assert ids <= set(EXPECTED)

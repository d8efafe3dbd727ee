"""The README and docs/ stay true: links resolve, the benchmark sections exist, the examples run."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support import ROOT

README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README, *sorted(DOCS.glob("*.md"))]

_FENCE = re.compile(r"^```.*?^```[ \t]*$", re.S | re.M)
_CODE_SPAN = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"\[[^\]\n]*\]\(([^)\s]+)\)")
_HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$", re.M)


def _prose(text: str) -> str:
    """The text outside fenced code blocks."""
    return _FENCE.sub("", text)


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "").strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    found: set[str] = set()
    for heading in _HEADING.findall(_prose(path.read_text(encoding="utf-8"))):
        slug = _slug(heading)
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def links(path: Path) -> list[str]:
    return _LINK.findall(_CODE_SPAN.sub("", _prose(path.read_text(encoding="utf-8"))))


def broken_links(path: Path) -> list[str]:
    """Each relative link of ``path`` whose file, or whose heading (``#anchor``), does not exist."""
    problems = []
    for target in links(path):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto: ...: not checked offline
            continue
        file_part, _, anchor = target.partition("#")
        destination = (path.parent / file_part).resolve() if file_part else path
        if not destination.exists():
            problems.append(f"{path.name}: {target}: no such file")
        elif anchor and (destination.suffix != ".md" or anchor not in anchors(destination)):
            problems.append(f"{path.name}: {target}: no heading #{anchor} in {destination.name}")
    return problems


def test_the_pages_exist() -> None:
    names = {page.name for page in DOCS.glob("*.md")}
    assert {"pipeline.md", "hostile-input.md", "csharp-tools.md", "governance.md", "session-log.md", "cli.md",
            "benchmarks.md", "architecture.md", "projections.md"} <= names


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page: Path) -> None:
    assert broken_links(page) == []


def test_the_link_check_catches_a_missing_file_and_a_missing_heading(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# A\n\n## Two `code` words\n\n[ok](#two-code-words) [ok](b.md#b) [ok](https://x.invalid/)\n"
                                   "[bad](#nope) [bad](c.md) [bad](b.md#nope)\n`[in code](d.md)`\n\n```\n[in a block](e.md)\n```\n",
                                   encoding="utf-8")
    (tmp_path / "b.md").write_text("# B\n", encoding="utf-8")
    assert broken_links(tmp_path / "a.md") == ["a.md: #nope: no heading #nope in a.md", "a.md: c.md: no such file",
                                               "a.md: b.md#nope: no heading #nope in b.md"]


def test_every_docs_page_is_linked_from_the_readme() -> None:
    linked = {(ROOT / target.partition("#")[0]).resolve() for target in links(README) if target.startswith("docs/")}
    assert {page.resolve() for page in DOCS.glob("*.md")} <= linked


def test_the_benchmark_sections_live_in_docs_benchmarks() -> None:
    scripts = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "benchmarks").glob("*.py"))
    sections = set(re.findall(r'publish\("(\w+)"', scripts)) | set(re.findall(r'^SECTION = "(\w+)"', scripts, re.M))
    assert sections == {"pipeline", "catalog", "stores", "clr", "peers", "mcp", "telemetry", "control", "mcp_exit"}
    page = (DOCS / "benchmarks.md").read_text(encoding="utf-8")
    readme = README.read_text(encoding="utf-8")
    for name in sections:
        assert page.count(f"<!-- bench:{name} -->") == 1 and page.count(f"<!-- /bench:{name} -->") == 1, name
        assert page.index(f"<!-- bench:{name} -->") < page.index(f"<!-- /bench:{name} -->"), name
        assert f"bench:{name}" not in readme, name


def test_the_readme_stays_short() -> None:
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 300


def _blocks(section: str, language: str, page: Path = README) -> list[str]:
    """The ``language`` code blocks under the heading ``## section`` of ``page`` (the README by default)."""
    text = page.read_text(encoding="utf-8")
    start = text.index(f"\n## {section}\n")
    end = text.find("\n## ", start + 1)
    body = text[start:end if end != -1 else len(text)]
    return re.findall(rf"^```{language}\n(.*?)^```$", body, re.S | re.M)


def _run(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=110)


def test_the_quick_start_runs_as_written(tmp_path: Path) -> None:
    (code,) = _blocks("Quick start", "python")
    (tmp_path / "README.md").write_text(README.read_text(encoding="utf-8"), encoding="utf-8")
    done = _run(code, tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("call_1 None ") and "# tether_clr" in lines[0]
    assert lines[1].startswith("call_2 DENIED ") and "no system files" in lines[1]
    assert (tmp_path / "tool-log.sqlite3").is_file()


def test_the_control_plane_example_runs_as_written(tmp_path: Path) -> None:
    (code,) = _blocks("Attaching and write-through", "python", DOCS / "control-plane.md")
    (shown,) = _blocks("Attaching and write-through", "text", DOCS / "control-plane.md")
    done = _run(code, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == shown.splitlines()


def test_the_timeouts_and_retries_example_runs_as_written(tmp_path: Path) -> None:
    (code,) = _blocks("Timeouts and retries", "python", DOCS / "pipeline.md")
    done = _run(code, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "c1 None None 2 101.5", "c2 ABORTED timeout 1 {'message': 'timed out after 0.1 s'}", "abandoned: 0",
    ]


def test_the_csharp_example_runs_as_written(tmp_path: Path, clr_tools: dict[str, Any]) -> None:
    """Marked ``dotnet`` through the fixture (so it runs on each runtime); the example itself runs in a child process."""
    (source,) = _blocks("A C# tool", "csharp")
    (code,) = _blocks("A C# tool", "python")
    (tmp_path / "Inventory.cs").write_text(source, encoding="utf-8")
    done = _run(code, tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("c1 None ") and '"result":12' in lines[0]
    assert lines[1].startswith("c2 INVALID_ARGS ") and "sku" in lines[1]


def test_the_remembered_grants_example_runs_as_written(tmp_path: Path) -> None:
    (code,) = _blocks("Remembered grants", "python", DOCS / "session-log.md")
    done = _run(code, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "s-1 None asked 1", "s-2 None asked 1", "revoked delete 1 principal True", "s-3 None asked 2",
    ]


@pytest.mark.parametrize(
    ("section", "expected"),
    [
        ("Child calls (programmatic tool calling)", ["refused: DENIED c1/2", "5.0"]),
        ("Additional contexts", ["['c1', 'c2']", "('a.txt changed since you read it', 'b.txt changed since you read it')"]),
    ],
)
def test_the_pipeline_page_examples_run_as_written(tmp_path: Path, section: str, expected: list[str]) -> None:
    (code,) = _blocks(section, "python", DOCS / "pipeline.md")
    done = _run(code, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == expected


def test_the_child_calls_example_runs_as_written(tmp_path: Path) -> None:
    (code,) = _blocks("Child calls and additional contexts", "python")
    done = _run(code, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["3.5 ('c1: prices change hourly',)"]


def test_the_readme_timeouts_and_retries_example_runs_as_written(tmp_path: Path) -> None:
    (code,) = _blocks('Timeouts, retries and "always allow"', "python")
    done = _run(code, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["101.5 2"]


def test_the_test_kit_example_runs_as_written(tmp_path: Path) -> None:
    (code,) = _blocks("Without pytest", "python", DOCS / "testing.md")
    done = _run(code, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "['call_declared c1', 'outcome_ready c1 ok', 'call_declared c2', 'approval_decided c2 rejected', 'outcome_ready c2 DENIED']"
    ]


def test_the_readme_telemetry_example_runs_as_written(tmp_path: Path) -> None:
    (code,) = _blocks("Telemetry", "python")
    done = _run(code, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["[('tether.body', None), ('execute_tool add', None), ('execute_tool mul', 'UNKNOWN_TOOL')]"]


PORTED = ROOT / "tests" / "porting" / "test_tool_pipeline_tests.py"
TOOL_PIPELINE_TESTS = [
    "Unknown_invalid_and_throwing_calls_have_stable_failures",
    "Pre_waterfall_short_circuits_and_ask_fails_closed_without_approval",
    "Post_waterfall_replaces_or_blocks_the_settled_value",
    "Result_policy_failure_is_awaited_before_sink_and_telemetry",
    "Result_policy_failure_runs_terminal_cleanup_for_every_dispatched_call",
]


def _functions(source: str) -> dict[str, str]:
    """Each top-level test function of ``source``, by name, as its exact text."""
    import ast

    lines = source.splitlines()
    return {
        node.name: "\n".join(lines[node.lineno - 1 - len(node.decorator_list):node.end_lineno])
        for node in ast.parse(source).body
        if isinstance(node, ast.AsyncFunctionDef | ast.FunctionDef) and node.name.startswith("test_")
    }


@pytest.mark.parametrize("csharp", TOOL_PIPELINE_TESTS)
def test_the_porting_guide_shows_each_ported_test_exactly_as_it_runs(csharp: str) -> None:
    """docs/porting.md puts each C# name next to its Python test, and shows that test as it is in tests/porting/."""
    page = (DOCS / "porting.md").read_text(encoding="utf-8")
    python = f"test_{csharp.lower()}"
    function = _functions(PORTED.read_text(encoding="utf-8"))[python]
    assert f'"""C#: {csharp}"""' in function
    assert f"| `{csharp}` | [`{python}`](#{csharp.lower()}) |" in page
    start = page.index(f"\n### {csharp}\n")
    end = page.find("\n### ", start + 1)
    (shown,) = re.findall(r"^```python\n(.*?)^```$", page[start:end if end != -1 else len(page)], re.S | re.M)
    assert shown.rstrip("\n") == function


def test_the_porting_guide_shows_the_ported_file_s_imports() -> None:
    page = (DOCS / "porting.md").read_text(encoding="utf-8")
    source = PORTED.read_text(encoding="utf-8")
    (shared,) = re.findall(r"They share these imports and one schema:\n\n```python\n(.*?)^```$", page, re.S | re.M)
    assert shared.strip() in source


def test_the_telemetry_example_runs_as_written(tmp_path: Path) -> None:
    (code,) = _blocks("Telemetry", "python", DOCS / "pipeline.md")
    done = _run(code, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "tether.body None None None UNSET",
        "execute_tool add c1 body None UNSET",
        "execute_tool add c2 guard DENIED ERROR",
        "execute_tool mul c3 resolve UNKNOWN_TOOL ERROR",
        "agent step None None None UNSET",
    ]

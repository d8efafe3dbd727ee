"""The README and docs/ stay true: links resolve, the benchmark sections exist, the examples run."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

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
    assert sections == {"pipeline", "catalog", "stores", "clr", "peers", "mcp", "telemetry", "control", "mcp_exit", "integrations"}
    page = (DOCS / "benchmarks.md").read_text(encoding="utf-8")
    readme = README.read_text(encoding="utf-8")
    for name in sections:
        assert page.count(f"<!-- bench:{name} -->") == 1 and page.count(f"<!-- /bench:{name} -->") == 1, name
        assert page.index(f"<!-- bench:{name} -->") < page.index(f"<!-- /bench:{name} -->"), name
        assert f"bench:{name}" not in readme, name


def test_the_readme_stays_short() -> None:
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 300


# ---------------------------------------------------------------------------------------------------------------
# The examples. Every ```python block of README.md and docs/*.md runs as a file, ``example.py``, in a fresh
# temporary folder outside the checkout (``python example.py``, cwd that folder, stdin closed), against the
# installed package: the child's PYTHONPATH keeps no entry pointing into the checkout, so an example that
# imports ``tests.support`` fails. The C# files a page shows (a ```csharp block whose first line is
# ``// Name.cs``) are written beside it; an example that imports ``tether_clr.clr`` is marked ``dotnet`` and takes
# the ``clr_tools`` fixture, so it runs on each runtime (and skips, or fails under TETHER_REQUIRE_DOTNET=1, without
# one). docs/porting.md's blocks are not programs but ported pytest tests (its imports block, then the test
# functions): they run together as one pytest file from such a folder, with the test kit's plugin loaded
# through the installed package's pytest11 entry point. Each block runs exactly once; EXPECTED holds what an
# example must print (every line, in order: a string is the whole line, a predicate checks it).
#
# TETHER_DOCS_PACKAGE_PATH: for a local run from a checkout that is not the installed one (a git worktree,
# while the venv's editable install points elsewhere), the path of the ``tether_clr`` package folder the
# examples should import instead, e.g. ``TETHER_DOCS_PACKAGE_PATH=$PWD/tether_clr``. The child then gets a
# temporary folder holding only a link to that package on its PYTHONPATH (``tests`` stays unimportable).
# CI leaves it unset: the examples run on the package ``tasks.sh`` installed.
# ---------------------------------------------------------------------------------------------------------------

_CODE_BLOCK = re.compile(r"^```(\w*)[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)
_CSHARP_FILE = re.compile(r"\A//[ \t]*([\w.-]+\.cs)[ \t]*\n")
PORTING = DOCS / "porting.md"


@dataclass(frozen=True)
class Example:
    """One runnable example: a page's ```python block (or, for docs/porting.md, all of them as one pytest file)."""

    page: str
    section: str
    index: int
    code: str
    csharp: tuple[tuple[str, str], ...]
    pytest_file: bool = False

    @property
    def id(self) -> str:
        return f"{self.page}::{self.section}::{self.index}"

    @property
    def dotnet(self) -> bool:
        return "tether_clr.clr" in self.code


def _page_blocks(page: Path) -> list[tuple[str, str, str]]:
    """``(section, language, code)`` for each fenced block of ``page``; the section is the nearest heading above it."""
    text = page.read_text(encoding="utf-8")
    found = []
    for match in _CODE_BLOCK.finditer(text):
        headings = _HEADING.findall(_prose(text[:match.start()]))
        found.append((headings[-1] if headings else "", match.group(1), match.group(2)))
    return found


def examples() -> list[Example]:
    found: list[Example] = []
    for page in PAGES:
        blocks = _page_blocks(page)
        name = str(page.relative_to(ROOT))
        csharp = tuple((m.group(1), code) for _, language, code in blocks
                       if language == "csharp" and (m := _CSHARP_FILE.match(code)))
        python = [(section, code) for section, language, code in blocks if language == "python"]
        if page == PORTING:
            found.append(Example(name, "ported tests", 0, "\n\n".join(code for _, code in python), csharp, True))
            continue
        counts: dict[str, int] = {}
        for section, code in python:
            counts[section] = counts.get(section, -1) + 1
            found.append(Example(name, section, counts[section], code, csharp, bool(re.search(r"^def test_", code, re.M))))
    return found


EXAMPLES = examples()
Line = str | Callable[[str], bool]


def _text_block(page: Path, section: str) -> list[str]:
    """The lines of the ```text block under ``section`` of ``page`` (what the page says the example prints)."""
    (text,) = [code for heading, language, code in _page_blocks(page) if heading == section and language == "text"]
    return text.splitlines()


EXPECTED: dict[str, list[Line]] = {
    "README.md::Quick start::0": [
        lambda line: line.startswith("call_1 None ") and "# tether_clr" in line,
        lambda line: line.startswith("call_2 DENIED ") and "no system files" in line,
    ],
    "README.md::A C# tool::0": [
        lambda line: line.startswith("c1 None ") and '"result":12' in line,
        lambda line: line.startswith("c2 INVALID_ARGS ") and "sku" in line,
    ],
    'README.md::Timeouts, retries and "always allow"::0': ["101.5 2"],
    "README.md::Child calls and additional contexts::0": ["3.5 ('c1: prices change hourly',)"],
    "README.md::Telemetry::0": ["[('tether.body', None), ('execute_tool add', None), ('execute_tool mul', 'UNKNOWN_TOOL')]"],
    "docs/control-plane.md::Attaching and write-through::0": list(_text_block(DOCS / "control-plane.md", "Attaching and write-through")),
    "docs/csharp-tools.md::Describing a Python tool::0": list(_text_block(DOCS / "csharp-tools.md", "Describing a Python tool")),
    "docs/integrations.md::pydantic-ai::0": list(_text_block(DOCS / "integrations.md", "pydantic-ai")),
    "docs/integrations.md::OpenAI Agents SDK::0": list(_text_block(DOCS / "integrations.md", "OpenAI Agents SDK")),
    "docs/integrations.md::LangChain / LangGraph::0": list(_text_block(DOCS / "integrations.md", "LangChain / LangGraph")),
    "docs/pipeline.md::Timeouts and retries::0": [
        "c1 None None 2 101.5", "c2 ABORTED timeout 1 {'message': 'timed out after 0.1 s'}", "abandoned: 0",
    ],
    "docs/pipeline.md::Child calls (programmatic tool calling)::0": ["refused: DENIED c1/2", "5.0"],
    "docs/pipeline.md::Additional contexts::0": [
        "['c1', 'c2']", "('a.txt changed since you read it', 'b.txt changed since you read it')",
    ],
    "docs/pipeline.md::Telemetry::0": [
        "tether.body None None None UNSET",
        "execute_tool add c1 body None UNSET",
        "execute_tool add c2 guard DENIED ERROR",
        "execute_tool mul c3 resolve UNKNOWN_TOOL ERROR",
        "agent step None None None UNSET",
    ],
    "docs/session-log.md::Remembered grants::0": [
        "s-1 None asked 1", "s-2 None asked 1", "revoked delete 1 principal True", "s-3 None asked 2",
    ],
    "docs/testing.md::Without pytest::0": [
        "['call_declared c1', 'outcome_ready c1 ok', 'call_declared c2', 'approval_decided c2 rejected', 'outcome_ready c2 DENIED']"
    ],
    "docs/projections.md::OpenAI::0": [
        "c1 None 12", "c2 None 2.5", "12 widgets in stock, 2.5 each.",
        "[('Stock', 'default', 'dropped'), ('price', 'default', 'dropped')]",
    ],
    "docs/projections.md::OpenAI::1": ["c1 None", "c2 INVALID_ARGS", "12 in stock; I could not price 'many'."],
    "docs/projections.md::Anthropic::0": ["t1 None False", "t2 INVALID_ARGS True", "12 in stock; I could not price 'many'."],
    "docs/projections.md::MCP::0": [
        "Stock Stock None None", "price Price True True", "r1 False {'result': 12}", "r2 False {'result': 10.0}",
        lambda line: line.startswith("r3 True {'code': 'UNKNOWN_TOOL', 'reason': None, 'message': "),
    ],
    "docs/projections.md::MEAI::0": [
        "['Stock', 'price']",
        '{"$type":"functionResult","callId":"f1","result":12}',
        '{"$type":"functionResult","callId":"f2","result":7.5}',
        '["product"]',
    ],
}


def _setup(example: Example, folder: Path) -> None:
    """Files an example reads besides its page's C# files: the Quick start reads a README.md in its folder."""
    for name, source in example.csharp:
        (folder / name).write_text(source, encoding="utf-8")
    if example.id == "README.md::Quick start::0":
        (folder / "README.md").write_text(README.read_text(encoding="utf-8"), encoding="utf-8")


def _in_checkout(entry: str) -> bool:
    path = Path(entry).resolve()
    return path == ROOT or ROOT in path.parents or (path / "tests" / "support").is_dir()


@pytest.fixture(scope="session")
def example_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The examples' environment: no PYTHONPATH entry into the checkout; TETHER_DOCS_PACKAGE_PATH's package if set."""
    kept = [entry for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep) if entry and not _in_checkout(entry)]
    package = os.environ.get("TETHER_DOCS_PACKAGE_PATH")
    if package:
        folder = tmp_path_factory.mktemp("package")
        (folder / "tether_clr").symlink_to(Path(package).resolve(), target_is_directory=True)
        kept.insert(0, str(folder))
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    if kept:
        env["PYTHONPATH"] = os.pathsep.join(kept)
    return env


def run_example(example: Example, folder: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run ``example`` in ``folder`` (outside the checkout) as its user would: as a file, or as a pytest file."""
    _setup(example, folder)
    if example.pytest_file:
        (folder / "test_example.py").write_text(example.code, encoding="utf-8")
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_example.py"]
    else:
        (folder / "example.py").write_text(example.code, encoding="utf-8")
        command = [sys.executable, "example.py"]
    return subprocess.run(command, cwd=folder, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=110)


def _matches(lines: list[str], expected: list[Line]) -> bool:
    return len(lines) == len(expected) and all(
        line == want if isinstance(want, str) else want(line) for line, want in zip(lines, expected))


@pytest.mark.parametrize(
    "example",
    [pytest.param(example, id=example.id, marks=[pytest.mark.dotnet] if example.dotnet else []) for example in EXAMPLES],
)
def test_every_example_runs_as_a_file_outside_the_checkout(example: Example, tmp_path: Path, example_env: dict[str, str],
                                                          request: pytest.FixtureRequest) -> None:
    if example.dotnet:
        request.getfixturevalue("clr_tools")  # skips without a runtime (fails under TETHER_REQUIRE_DOTNET=1)
    if "assert_parity" in example.code and not os.environ.get("TETHER_MEAI_DIR"):  # tests/conftest.py's convention
        if os.environ.get("TETHER_REQUIRE_MEAI") == "1":
            pytest.fail("TETHER_REQUIRE_MEAI=1 but TETHER_MEAI_DIR is not set")
        pytest.skip("Microsoft.Extensions.AI not available: set TETHER_MEAI_DIR (e.g. ../shared/meai/lib)")
    assert ROOT not in tmp_path.resolve().parents
    done = run_example(example, tmp_path, example_env)
    assert done.returncode == 0, done.stdout + done.stderr
    if example.pytest_file:
        assert re.search(r"^\d+ passed", done.stdout.splitlines()[-1]), done.stdout
    elif example.id in EXPECTED:
        assert _matches(done.stdout.splitlines(), EXPECTED[example.id]), done.stdout
    if example.id == "README.md::Quick start::0":
        assert (tmp_path / "tool-log.sqlite3").is_file()


def test_every_expectation_names_an_example_and_every_page_example_is_collected() -> None:
    ids = [example.id for example in EXAMPLES]
    assert len(ids) == len(set(ids))
    assert set(EXPECTED) <= set(ids)
    shown = sum(language == "python" for page in PAGES for _, language, _ in _page_blocks(page))
    ported = sum(language == "python" for _, language, _ in _page_blocks(PORTING))
    assert len(EXAMPLES) == shown - ported + 1


def test_the_examples_cannot_import_the_checkout_s_tests(tmp_path: Path, example_env: dict[str, str]) -> None:
    probe = Example("probe", "probe", 0, "import importlib.util, tether_clr\nprint(importlib.util.find_spec('tests') is None)\n", ())
    done = run_example(probe, tmp_path, example_env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["True"]


# mypy --strict over the documented loops, as files: every example of these pages, in one mypy run.
TYPED_PAGES = {"docs/projections.md"}

CROSSED = """from openai import AsyncOpenAI

from tether_clr import ToolAssembly
from tether_clr.projections import to_anthropic_tools


async def crossed(client: AsyncOpenAI, assembly: ToolAssembly) -> None:
    await client.chat.completions.create(model="m", messages=[], tools=to_anthropic_tools(assembly))
"""
"""A control file in the same run: Anthropic's tools handed to OpenAI must be refused, which shows the
projections' types are the SDKs' own, not ``Any`` (a clean run of the loops alone would prove nothing)."""


@pytest.mark.timeout(300)
def test_the_documented_loops_pass_mypy_strict_and_crossed_types_do_not(tmp_path: Path) -> None:
    """The loops type-check against the SDKs' own types with no cast and no narrowing, as a user's files would
    (mypy finds ``tether_clr`` through MYPYPATH: an editable install's import hook is invisible to it)."""
    files = []
    for example in EXAMPLES:
        if example.page in TYPED_PAGES:
            name = re.sub(r"\W+", "_", f"{Path(example.page).stem}_{example.section}_{example.index}").lower()
            (tmp_path / f"{name}.py").write_text(example.code, encoding="utf-8")
            files.append(f"{name}.py")
    assert files
    (tmp_path / "crossed.py").write_text(CROSSED, encoding="utf-8")
    env = {**os.environ, "MYPYPATH": str(ROOT)}
    env.pop("PYTHONPATH", None)
    done = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--config-file", str(ROOT / "pyproject.toml"),
                           "--cache-dir", str(tmp_path / ".mypy_cache"), *files, "crossed.py"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=280)
    errors = [line for line in done.stdout.splitlines() if ": error:" in line]
    assert errors and all(line.startswith("crossed.py:") for line in errors), done.stdout + done.stderr
    assert any('"tools"' in line and "create" in line for line in errors), done.stdout


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

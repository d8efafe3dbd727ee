"""The benchmarks run without the bench extra (no timing is asserted) and write their tables into docs/benchmarks.md."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.support import ROOT


def test_peers_benchmark_tether_rows_run_and_report_the_targets() -> None:
    command = [sys.executable, str(ROOT / "benchmarks" / "peers.py"), "--quick", "--only", "tether", "--no-clr",
               "--min-round", "0.002", "--memory-calls", "100"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=100, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    for row in ("floor: `json.loads` + pydantic + call", "tether_clr `execute_batch`, 1 call, 0 listeners",
                "100 concurrency-safe calls, 3 listeners", "Targets of issue 31", "RSS MiB"):
        assert row in done.stdout


def test_profile_pipeline_runs_every_view_of_the_path_on_the_current_layout() -> None:
    """The profile reaches into the pipeline's private stages: a layout change must keep it running, every stage found."""
    command = [sys.executable, str(ROOT / "benchmarks" / "profile_pipeline.py"), "--quick"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert "not available" not in done.stdout
    for section in ("## End to end", "stage: `begin`", "cancelled-caller check, ablated", "Stage shares: one-call batches",
                    "`run_alone`", "`Admitting._resolve`", "## cProfile: 100-call batches (concurrency-safe group)"):
        assert section in done.stdout
    shares = done.stdout.split("## Stage shares: 100-call batches (concurrency-safe group)")[1].split("## cProfile")[0]
    declared = next(line for line in shares.splitlines() if "`Admitting._resolve`" in line)
    assert float(declared.split("|")[2]) > 0  # the general path's stages are found in the profile


def test_mcp_server_benchmark_runs_the_command_and_fastmcp_as_subprocesses_in_both_client_modes() -> None:
    pytest.importorskip("tether_clr.mcp", reason="the MCP server needs the mcp extra (mcp 2.x)")
    command = [sys.executable, str(ROOT / "benchmarks" / "mcp_server.py"), "--quick", "--calls", "10", "--warmup", "2"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    for server in ("| tether_clr (`tether-clr mcp serve`), governance on |", "| FastMCP (`MCPServer`) under `uvicorn.run` |"):
        for mode in ("| `auto` (2026-07-28) |", "| `legacy` (2025-11-25) |"):
            assert f"{server} {mode[2:]}" in done.stdout, (server, mode)
    for row in ("127.0.0.1", "each server a subprocess", "| `auto` | ", "| `legacy` | ", "Goal met (issue 28"):
        assert row in done.stdout, row


def test_mcp_exit_benchmark_times_the_exit_of_the_command_over_stdio_and_http() -> None:
    pytest.importorskip("tether_clr.mcp", reason="the MCP server needs the mcp extra (mcp 2.x)")
    command = [sys.executable, str(ROOT / "benchmarks" / "mcp_exit.py"), "--rounds", "1", "--no-clr"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    for row in ("| stdio | stdin closed | none |", "| http | SIGTERM | none |", "no call in flight"):
        assert row in done.stdout, row


def test_catalog_benchmark_builds_its_catalog_and_measures_re_authorization() -> None:
    import anyio

    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import catalog as bench
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    registry = bench.catalog(100)
    assembly = registry.assemble(bench.CONTEXT)
    assert len(assembly.bindings) == 30 and len(assembly.omitted) == 70
    rows = anyio.run(bench.reauthorization_rows, 1)
    assert [len(row) for row in rows] == [3, 3]


def test_stores_benchmark_runs_a_logged_batch_and_reports_the_target(tmp_path: Path) -> None:
    import anyio

    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import stores as bench
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    from tether_clr import SqliteSessionStore, ToolCall, log_violations

    async def run() -> None:
        with SqliteSessionStore(tmp_path / "bench.sqlite", durability="process") as store:
            steps = bench.Steps(store)
            await steps.open()
            calls = [ToolCall(f"call_{i}", "echo", '{"text": "x"}') for i in range(3)]
            await bench.batch_runner(bench.registry(), calls, 2, steps)()
            assert log_violations(await store.events(steps.session), open_ok=True) == []

    anyio.run(run)
    costs = {(store, level, shape, group): 50.0 for store in ("SQLite",) for level in ("full", "process")
             for shape, *_ in bench.SHAPES for group in (True, False)}
    rows = bench.targets(costs, {shape: 100.0 for shape, *_ in bench.SHAPES})
    assert rows[0][1:] == ["0.50x", "<= 1x", "yes"]


def _bench_module(name: str) -> ModuleType:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))


def test_the_tables_are_written_into_docs_benchmarks_md(tmp_path: Path) -> None:
    report = _bench_module("_report")
    assert report.DOCS == ROOT / "docs" / "benchmarks.md" and report.DOCS.is_file()
    page = tmp_path / "benchmarks.md"
    page.write_text("# B\n\n<!-- bench:a -->\nold a\n<!-- /bench:a -->\n\nprose\n\n<!-- bench:b -->\nold b\n<!-- /bench:b -->\n",
                    encoding="utf-8")
    report.write_docs_section("a", "new a\n| t |\n", page)
    assert page.read_text(encoding="utf-8") == ("# B\n\n<!-- bench:a -->\nnew a\n| t |\n<!-- /bench:a -->\n\nprose\n\n"
                                                "<!-- bench:b -->\nold b\n<!-- /bench:b -->\n")
    with pytest.raises(SystemExit, match="no <!-- bench:c --> section"):
        report.write_docs_section("c", "x", page)


def test_write_docs_is_the_flag_and_write_readme_still_works() -> None:
    report = _bench_module("_report")
    assert report.parse_cli(None, "pipeline", ["--write-docs"]).write_docs is True
    assert report.parse_cli(None, "pipeline", ["--write-readme"]).write_docs is True
    assert report.parse_cli(None, "pipeline", []).write_docs is False
    peers = _bench_module("peers")
    assert peers.parse_args(["--quick", "--write-readme"]).write_docs is True
    assert peers.parse_args(["--write-docs"]).write_docs is True
    assert peers.parse_args([]).write_docs is False


def test_mcp_concurrency_benchmark_serves_with_and_without_the_session_log_and_reports_the_ratio() -> None:
    pytest.importorskip("tether_clr.mcp", reason="the MCP server needs the mcp extra (mcp 2.x)")
    from tests.support.session_stores import postgres_dsn

    dsn = postgres_dsn()
    command = [sys.executable, str(ROOT / "benchmarks" / "mcp_concurrency.py"), "--quick", "--dsn", dsn]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    for row in ("| without --db |", "| --db on PostgreSQL |", "`--db` on PostgreSQL / without:", "target at most 1.5x"):
        assert row in done.stdout, row


def test_integrations_benchmark_reports_plain_governed_and_pipeline_rows_per_framework() -> None:
    for framework in ("pydantic_ai", "agents", "langgraph"):
        pytest.importorskip(framework, reason="the framework adapters need their extras")
    command = [sys.executable, str(ROOT / "benchmarks" / "integrations.py"), "--quick", "--rounds", "1", "--min-round", "0.002"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    for row in ("| pydantic-ai `ToolManager.handle_call` |", "| OpenAI Agents SDK `FunctionTool.on_invoke_tool` |",
                "| LangChain / LangGraph `ToolNode.ainvoke` |", "`Agent.get_all_tools`", "`ToolManager.for_run_step`",
                "`GovernedTools.tools(config, messages)`", "Target of issue 30"):
        assert row in done.stdout, row


def test_mcp_profile_runs_its_ablation_in_both_client_modes() -> None:
    """benchmarks/profile_mcp.py (in memory: the MCP layer's and the pipeline's share of a call) keeps running."""
    pytest.importorskip("tether_clr.mcp", reason="the MCP server needs the mcp extra (mcp 2.x)")
    command = [sys.executable, str(ROOT / "benchmarks" / "profile_mcp.py"), "--quick", "--ablate", "--mode", "both"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    for mode in ("legacy", "2026-07-28"):
        assert f"== client mode {mode}" in done.stdout, mode
    lines = done.stdout.splitlines()
    for row in ("FastMCP: ", "tether_clr: ", "tether_clr, cached outcome: ", "tether_clr, constant result: ",
                "the pipeline (execute_batch): ", "execute_batch in a loop of its own"):
        assert sum(line.startswith(row) for line in lines) == 2, row

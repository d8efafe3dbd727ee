"""The peers benchmark's tether-only smoke run works without the bench extra (no timing is asserted)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_peers_benchmark_tether_rows_run_and_report_the_targets() -> None:
    command = [sys.executable, str(ROOT / "benchmarks" / "peers.py"), "--quick", "--only", "tether", "--no-clr",
               "--min-round", "0.002", "--memory-calls", "100"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=100, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    for row in ("floor: `json.loads` + pydantic + call", "tether_clr `execute_batch`, 1 call, 0 listeners",
                "100 concurrency-safe calls, 3 listeners", "Targets of issue 9", "RSS MiB"):
        assert row in done.stdout


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

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

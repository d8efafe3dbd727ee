"""The kit loads only where it should: never with ``import tether_clr``, without pytest when imported, and
as a pytest plugin through the ``pytest11`` entry point (and the sample in examples/ really runs)."""

from __future__ import annotations

import importlib.metadata
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.support import ROOT


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT)


def _pytest(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
                          capture_output=True, text=True, timeout=300, cwd=cwd,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_importing_tether_clr_loads_nothing_of_the_kit() -> None:
    done = _python("import sys, tether_clr, tether_clr.cli; print(sorted(m for m in sys.modules if m.startswith('tether_clr.testing')))")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_the_kit_imports_without_pytest() -> None:
    done = _python("import sys, tether_clr.testing; print('pytest' in sys.modules, 'tether_clr.testing.plugin' in sys.modules)")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False False"


def test_the_plugin_is_registered_by_the_pytest11_entry_point() -> None:
    points = [point for point in importlib.metadata.entry_points(group="pytest11") if point.name == "tether_clr"]
    assert [point.value for point in points] == ["tether_clr.testing.plugin"]


def test_pytest_loads_the_plugin_and_no_p_turns_it_off(tmp_path: Path) -> None:
    (tmp_path / "test_uses_kit.py").write_text(textwrap.dedent("""
        import sys

        def test_the_fixture_is_there(tether_registry):
            assert "tether_clr.testing.plugin" in sys.modules
            assert tether_registry.scope.owner == "tester"
    """), encoding="utf-8")
    loaded = _pytest("-q", str(tmp_path), cwd=tmp_path)
    assert loaded.returncode == 0 and "1 passed" in loaded.stdout, loaded.stdout + loaded.stderr
    off = _pytest("-q", "-p", "no:tether_clr", str(tmp_path), cwd=tmp_path)
    assert off.returncode != 0 and "fixture 'tether_registry' not found" in off.stdout, off.stdout


def test_the_sample_in_examples_passes_every_test_under_both_backends() -> None:
    """CI's pytest collects tests/ only: this runs examples/test_kit_sample.py and counts its passes,
    so the sample can neither fail nor be skipped unnoticed."""
    sample = ROOT / "examples" / "test_kit_sample.py"
    source = sample.read_text(encoding="utf-8")
    tests = re.findall(r"^async def (test_\w+)\((.*?)\) -> None:", source, re.M | re.S)
    stores = 2 if os.environ.get("TETHER_POSTGRES_DSN") else 1
    expected = sum(2 * (stores if "session_store" in parameters else 1) for _, parameters in tests)
    done = _pytest("-q", "-rA", str(sample))
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(rf"\b{expected} passed\b", done.stdout), done.stdout
    assert not re.search(r"\b(skipped|failed|error|xfailed|deselected)\b", done.stdout.splitlines()[-1]), done.stdout
    for name in ("tether_registry", "session_store", "recording_sink", "scripted_approvals", "ProbeTool", "replay",
                 "assert_outcomes", "assert_log_sound", "assert_body_not_run", "assert_model_order", "events("):
        assert name in source, f"the sample does not use {name}"

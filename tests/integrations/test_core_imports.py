"""Importing tether_clr, or the integrations' core, imports no agent framework (each adapter is an optional extra)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_importing_tether_clr_and_the_integrations_core_imports_no_framework() -> None:
    code = (
        "import sys, tether_clr, tether_clr.integrations\n"
        "loaded = [m for m in ('pydantic_ai', 'agents', 'langchain_core', 'langgraph') if m in sys.modules]\n"
        "assert not loaded, loaded\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr

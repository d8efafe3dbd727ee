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


def test_without_opentelemetry_the_integrations_run_their_batches_with_nothing_to_adopt() -> None:
    code = (
        "import sys\n"
        "sys.modules['opentelemetry'] = None  # as if opentelemetry-api were not installed\n"
        "import anyio\n"
        "from tether_clr import PythonFunction, RequestContext, ToolCall, ToolRegistry\n"
        "from tether_clr.integrations import GovernedCalls\n"
        "from tether_clr.integrations.tracing import adopted_spans, span_to_adopt\n"
        "registry = ToolRegistry()\n"
        "registry.register(PythonFunction.from_callable(lambda a: a, name='echo'))\n"
        "core = GovernedCalls(registry, context=RequestContext('acme', 'alice'))\n"
        "async def main():\n"
        "    assert span_to_adopt('c1') is None\n"
        "    with adopted_spans({'c1': object()}):\n"
        "        batch = await core.run([ToolCall('c1', 'echo', '{\"a\": 1}')], core.assemble(None))\n"
        "    assert batch.outcomes['c1'].failure is None, batch\n"
        "anyio.run(main)\n"
        "assert 'tether_clr.telemetry' not in sys.modules or sys.modules['tether_clr.telemetry'] is None\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr

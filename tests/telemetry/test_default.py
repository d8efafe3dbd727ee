"""On by default: a plain ``ToolRegistry()`` records as soon as the host configures the global providers
(even after the registry was made), ``instrument(capture_content=True)`` opts in to content, and
without ``opentelemetry-api`` nothing is instrumented and calls run as before. Each in a child process
(the global providers can be set once per process), under asyncio and trio."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from tests.support import ROOT


def _child(mode: str, backend: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "tests.support.telemetry_child", mode, backend],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@pytest.mark.parametrize("mode", ["global", "instrument"])
def test_a_plain_registry_records_under_the_hosts_global_providers_and_span(mode: str, backend: str) -> None:
    found = _child(mode, backend)
    assert sorted(span["name"] for span in found["spans"]) == ["execute_tool echo", "execute_tool nope"]
    assert {span["parent"] for span in found["spans"]} == {found["host"]}
    assert {span["arguments"] for span in found["spans"]} == {mode == "instrument"}
    assert found["calls"] == 2


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_without_the_api_nothing_is_instrumented_and_calls_run_as_before(backend: str) -> None:
    assert _child("absent", backend) == {"instrumented": False, "codes": [None, "UNKNOWN_TOOL"]}

"""The public surface: what ``from tether_clr import ...`` offers, and that it needs nothing else imported."""

from __future__ import annotations

import inspect
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import tether_clr

from tests.support import ROOT

API_PAGE = ROOT / "docs" / "api.md"


def test_exported_names_are_exactly_the_documented_list() -> None:
    documented = set(re.findall(r"^\| `([A-Za-z_][A-Za-z0-9_]*)` \|", API_PAGE.read_text(encoding="utf-8"), re.M))
    assert documented == set(tether_clr.__all__)


def test_all_is_sorted_and_has_no_duplicates() -> None:
    assert tether_clr.__all__ == sorted(set(tether_clr.__all__))


def test_every_exported_class_and_function_says_its_module_is_tether_clr() -> None:
    wrong = {
        name: getattr(value, "__module__", None)
        for name in tether_clr.__all__
        if (inspect.isclass(value := getattr(tether_clr, name)) or inspect.isfunction(value))
        and value.__module__ != "tether_clr"
    }
    assert wrong == {}


def test_every_export_is_reachable_as_an_attribute() -> None:
    assert [name for name in tether_clr.__all__ if not hasattr(tether_clr, name)] == []


def test_tool_registry_runs_resumes_and_cancels_with_nothing_but_the_registry_module_imported(tmp_path: Path) -> None:
    """No install hook: the registry module alone runs a batch, parks a call and resumes it (a fresh process)."""
    script = textwrap.dedent(
        f"""
        import anyio
        from tether_clr.registry import ToolRegistry
        from tether_clr.records.scope import AgentPipelineScope
        from tether_clr.records.outcomes import ToolCall
        from tether_clr.records.decisions import ApprovalResult
        from tether_clr.recording.session.sqlite import SqliteSessionStore
        from tether_clr.tools.python_function import PythonFunction
        from tether_clr.catalog.registration import ToolRegistrationOptions

        class Later:
            async def request(self, execution, reason):
                return ApprovalResult.DEFERRED

        async def main():
            registry = ToolRegistry()
            registry.register(PythonFunction.from_callable(lambda x: x + 1, name="inc"), None,
                              ToolRegistrationOptions(requires_approval=True))
            registry.approval = Later()
            scope = AgentPipelineScope(session_id="s", owner="alice")
            with SqliteSessionStore({str(tmp_path / "log.sqlite3")!r}) as store:
                turn = await store.begin_turn("s")
                suspended = await registry.execute_batch([ToolCall("c1", "inc", '{{"x": 1}}', scope=scope)],
                                                         registry.seal(scope), sink=store.sink("s", turn, 1))
                outcomes = await registry.resume(store, "s", {{"c1": ApprovalResult.APPROVED}})
                print(type(suspended).__name__, [o.value for o in outcomes])

        anyio.run(main)
        """
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "BatchSuspended [2]"

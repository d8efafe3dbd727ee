"""``tether-clr parity Tools.dll calls.json`` on the README's example assembly (examples/dotnet/Inventory.cs),
compiled here from source together with one approval-gated AIFunction and one content-returning one,
against the real MEAI 10.0.1 (TETHER_MEAI_DIR; skips without it unless TETHER_REQUIRE_MEAI=1)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from tests.support import ROOT
from tether_clr.cli import cli

EXAMPLES = ROOT / "examples"

# What a MEAI user adds beside the README's Inventory: Reserve behind an approval, and a tool whose
# result is MEAI content (a single TextContent, which tether_clr sends as a list of parts).
EXTRA_SOURCE = """
using System;
using Microsoft.Extensions.AI;

namespace Tether.Examples
{
    public static class Gated
    {
        public static AIFunction ReserveWithApproval
        {
            get
            {
                // Not Reserve itself (nor a lambda mcs turns into Reserve): discovery would then keep this
                // AIFunction alone and drop the ungated Reserve.
                return new ApprovalRequiredAIFunction(AIFunctionFactory.Create(
                    (Func<string, int, string>)((product, quantity) => "approved: " + Inventory.Reserve(product, quantity)),
                    "ReserveWithApproval", "Reserves items once a person approves."));
            }
        }

        public static AIFunction Label
        {
            get { return AIFunctionFactory.Create((Func<string, TextContent>)(text => new TextContent("label: " + text)), "Label", "Labels a text."); }
        }
    }
}
"""

CALLS = [
    {"call_id": "ok", "name": "Stock", "arguments": {"product": "widget"}},
    {"call_id": "reserved", "name": "Reserve", "arguments": {"product": "widget", "quantity": 3}},
    {"call_id": "short", "name": "Reserve", "arguments": {"product": "widget", "quantity": 30}},
    {"call_id": "cancelled", "name": "Stock", "arguments": {"product": "widget"}, "cancelled": True},
    {"call_id": "gated", "name": "ReserveWithApproval", "arguments": {"product": "widget", "quantity": 1}},
    {"call_id": "malformed", "name": "Stock", "arguments": '{"product": "wid'},
    {"call_id": "nosuch", "name": "Restock", "arguments": {"product": "widget"}},
    {"call_id": "extra", "name": "Stock", "arguments": {"product": "widget", "colour": "red"}},
]

VERDICTS = {
    "ok": ("", "same"),
    "reserved": ("", "same"),
    "short": ("result", "deliberate: failure_text"),
    "cancelled": ("result, exception", "deliberate: cancellation"),
    "gated": ("call_id", "deliberate: approval"),
    "malformed": ("result", "deliberate: parse_error"),
    "nosuch": ("result, exception", "deliberate: failure_text"),
    "extra": ("result, exception", "deliberate: unknown_arguments"),
}


@pytest.fixture(scope="module")
def example_assembly(meai: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tether_clr.clr import compile_library

    folder = Path(os.environ["TETHER_MEAI_DIR"]).resolve()
    extra = tmp_path_factory.mktemp("parity-example") / "Gated.cs"
    extra.write_text(EXTRA_SOURCE, encoding="utf-8")
    references: list[str | Path] = [folder / name for name in ("Microsoft.Extensions.AI.Abstractions.dll", "System.Text.Json.dll",
                                                               "Microsoft.Bcl.AsyncInterfaces.dll")]
    references += [f"STTE={folder / 'System.Threading.Tasks.Extensions.dll'}", f"SM={folder / 'System.Memory.dll'}"]
    return compile_library("TetherParityExample", [ROOT / "examples" / "dotnet" / "Inventory.cs", extra], references)


def _parity(assembly: Path, tmp_path: Path, calls: list[dict[str, Any]], *options: str) -> Result:
    calls_file = tmp_path / "calls.json"
    calls_file.write_text(json.dumps(calls), encoding="utf-8")
    return CliRunner().invoke(cli, ["parity", str(assembly), str(calls_file), *options], catch_exceptions=False)


def _verdicts(output: str) -> dict[str, tuple[str, str]]:
    """call id -> (differs, verdict), from the table's rows (those two columns never wrap)."""
    found: dict[str, tuple[str, str]] = {}
    for line in output.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("│").split("│")]
        if len(cells) == 6 and cells[0] and cells[0] != "call":
            found[cells[0]] = (cells[4], cells[5])
    return found


def test_parity_on_the_readme_example_reports_every_difference_as_deliberate_and_exits_0(example_assembly: Path, tmp_path: Path) -> None:
    result = _parity(example_assembly, tmp_path, CALLS)
    assert result.exit_code == 0, result.output
    verdicts = _verdicts(result.output)
    assert verdicts == VERDICTS
    assert "8 call(s), 6 differ, 0 unexpected" in result.output
    for category in ("approval", "cancellation", "failure_text", "parse_error", "unknown_arguments"):
        assert f"deliberate ({category}):" in result.output


def test_parity_exits_1_on_an_unexpected_difference_and_0_once_it_is_expected(example_assembly: Path, tmp_path: Path) -> None:
    calls = [CALLS[0], {"call_id": "label", "name": "Label", "arguments": {"text": "x"}}]
    failed = _parity(example_assembly, tmp_path, calls)
    assert failed.exit_code == 1, failed.output
    assert _verdicts(failed.output)["label"] == ("result", "UNEXPECTED")
    assert "2 call(s), 1 differ, 1 unexpected" in failed.output
    accepted = _parity(example_assembly, tmp_path, calls, "--expect", "label")
    assert accepted.exit_code == 0, accepted.output
    stale = _parity(example_assembly, tmp_path, [CALLS[0]], "--expect", "ok")
    assert stale.exit_code == 1 and "expected differences that did not happen: ok" in stale.output


@pytest.mark.parametrize("calls, message", [({"call_id": "a"}, "must be a JSON list"), ([{"call_id": "a"}], "name must be")])
def test_parity_with_a_malformed_calls_file_is_bad_usage(tmp_path: Path, calls: Any, message: str) -> None:
    """Refused before any .NET loads: the assembly is not even read."""
    (tmp_path / "Tools.dll").write_bytes(b"not read")
    result = _parity(tmp_path / "Tools.dll", tmp_path, calls)
    assert result.exit_code == 2 and message in result.output


def test_parity_without_the_assembly_is_bad_usage(tmp_path: Path) -> None:
    (tmp_path / "calls.json").write_text("[]", encoding="utf-8")
    result = CliRunner().invoke(cli, ["parity", str(tmp_path / "Missing.dll"), str(tmp_path / "calls.json")])
    assert result.exit_code == 2 and "no assembly at" in result.output


# CALLS as `tether-clr run` records them (docs/cli.md: "kind", "callId", the arguments as the model's text), with
# the model's text answers between the steps; "cancelled" has no script form, so that one call is left out.
SCRIPT = [
    {"kind": "tool", "callId": "ok", "name": "Stock", "arguments": "{\"product\": \"widget\"}"},
    {"kind": "tool", "callId": "reserved", "name": "Reserve", "arguments": "{\"product\": \"widget\", \"quantity\": 3}"},
    {"kind": "text", "text": "12 widgets in stock; 3 reserved."},
    {"kind": "tool", "callId": "short", "name": "Reserve", "arguments": "{\"product\": \"widget\", \"quantity\": 30}"},
    {"kind": "tool", "callId": "gated", "name": "ReserveWithApproval", "arguments": {"product": "widget", "quantity": 1}},
    {"kind": "tool", "callId": "malformed", "name": "Stock", "arguments": "{\"product\": \"wid"},
    {"kind": "text", "text": "Not enough widgets."},
    {"kind": "tool", "callId": "nosuch", "name": "Restock", "arguments": "{\"product\": \"widget\"}"},
    {"kind": "tool", "callId": "extra", "name": "Stock", "arguments": "{\"product\": \"widget\", \"colour\": \"red\"}"},
]


def test_parity_as_a_subprocess_takes_a_run_script_and_compares_its_tool_rows_as_the_equivalent_parity_calls(
        example_assembly: Path, tmp_path: Path) -> None:
    """The script's text rows are ignored; its tool rows give the very verdicts the same calls in parity's own format give."""
    from tether_clr.cli import load_script

    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT), encoding="utf-8")
    assert load_script(script).call_count == 7  # a script `tether-clr run` takes as it is
    finished = subprocess.run([sys.executable, "-m", "tether_clr.cli", "parity", str(example_assembly), str(script)],
                              cwd=ROOT, capture_output=True, text=True, timeout=100, stdin=subprocess.DEVNULL)
    assert finished.returncode == 0, finished.stdout + finished.stderr
    parity_rows = [call for call in CALLS if not call.get("cancelled")]
    equivalent = _parity(example_assembly, tmp_path, parity_rows)
    assert equivalent.exit_code == 0, equivalent.output
    assert _verdicts(finished.stdout) == _verdicts(equivalent.output) == {k: v for k, v in VERDICTS.items() if k != "cancelled"}
    assert "7 call(s), 5 differ, 0 unexpected" in finished.stdout


def test_parity_takes_the_mixed_example_script_as_recorded_with_its_call_ids_repeated_across_turns(
        example_assembly: Path, tmp_path: Path) -> None:
    """examples/mixed.json, the run tests' script: its two text rows are ignored, its eight tool rows compared in order
    (ids c1..c4 come back in its second turn); the Python tools are unknown to a C# assembly, which both sides report."""
    result = CliRunner().invoke(cli, ["parity", str(example_assembly), str(EXAMPLES / "mixed.json")], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    table_rows = [[cell.strip() for cell in line.strip().strip("│").split("│")] for line in result.output.splitlines()]
    compared = [(cells[0], cells[1], cells[5]) for cells in table_rows if len(cells) == 6 and cells[0] not in ("", "call")]
    unknown = "deliberate: failure_text"
    assert compared == [("c1", "echo", unknown), ("c2", "read_note", unknown), ("c3", "Stock", "same"), ("c4", "read_note", unknown),
                        ("c1", "delete_note", unknown), ("c2", "Reserve", "deliberate: failure_text"),
                        ("c3", "launch_missiles", unknown), ("c4", "echo", unknown)]
    assert "8 call(s), 7 differ, 0 unexpected" in result.output


@pytest.mark.parametrize("rows, message", [
    ([{"kind": "tool", "callId": "a", "name": "Stock"}, {"kind": "tool", "name": "Stock"}], "row 2: 'callId' must be"),
    ([{"kind": "tool", "callId": "a", "name": "Stock"}, {"kind": "answer", "text": "x"}], "row 2: 'kind' must be"),
    ([{"kind": "tool", "callId": "a", "name": "Stock"}, {"call_id": "b", "name": "Stock"}], "row 2 (calls[1]) has no 'kind'"),
    ([{"kind": "text", "text": "only an answer"}], "no tool rows"),
])
def test_parity_refuses_a_malformed_run_script_as_bad_usage_naming_the_row(tmp_path: Path, rows: Any, message: str) -> None:
    """Refused before any .NET loads: the assembly is not even read."""
    (tmp_path / "Tools.dll").write_bytes(b"not read")
    result = _parity(tmp_path / "Tools.dll", tmp_path, rows)
    assert result.exit_code == 2 and message in result.output, result.output

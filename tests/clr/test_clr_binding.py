"""Argument binding on both .NET paths, held to the same expectations.

* System.Text.Json: every AIFunction (the bridge parses the text once; MEAI binds each
  JsonElement), and a ``[Description]`` method wherever the runtime can load System.Text.Json
  (with Microsoft.Extensions.AI loaded; on CoreCLR always).
* The fallback (bridge/Json.cs and Binder.cs): a ``[Description]`` method on Mono without
  Microsoft.Extensions.AI, run in a child process so nothing has loaded System.Text.Json.

Each test first asserts which path was taken (``ClrFunction.binder``), then that the same
arguments give the same .NET values (``Binding.Report`` in dotnet_fixtures/Tools.cs shows
each parameter's type and value), that the same wrong ones end INVALID_ARGS before the body
runs, and that hostile input ends as nothing but a value, INVALID_ARGS or TOOL_ERROR.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from typing import Any

import anyio
import pytest

from tests.support import ROOT, call, codes
from tests.support.clr_binding_child import bind_all
from tether_clr import CancellationToken, ToolRegistry

pytestmark = pytest.mark.anyio

TEXT = 'héllo wörld ✓ 😀 新しい "q" \\ \n\t\u0000 \u202e\ufeff\u200b'

BASE: dict[str, Any] = {
    "text": "plain",
    "count": 3,
    "flag": True,
    "unit": "Fahrenheit",
    "numbers": [1, 2, 3],
    "address": {"city": "Paris", "lines": ["1 rue X"], "location": {"x": 2, "y": 48}},
}

DEFAULTS = {
    "text": "String:plain",
    "count": "Int32:3",
    "flag": "Boolean:True",
    "unit": "Unit:Fahrenheit",
    "numbers": "List`1[Int32:1,Int32:2,Int32:3]",
    "address": "Address{city=String:Paris,lines=List`1[String:1 rue X],location=(2,48)}",
    "big": "Int64:0",
    "ratio": "Double:0.5",
    "price": "Decimal:0",
    "maybe": "null",
    "words": "null",
    "tally": "null",
    "note": "String:none",
    "other": "Unit:Celsius",
}

# (arguments, what Binding.Report must say): strings, numbers, bools, nulls, nested objects,
# arrays, enums, optional parameters left out and given, unicode.
CASES: list[tuple[dict[str, Any], dict[str, str]]] = [
    (BASE, DEFAULTS),
    (
        {
            "text": TEXT,
            "count": -(2**31),
            "flag": False,
            "unit": "fahrenheit",  # enum names in any case
            "numbers": [],
            "address": {"City": "Zürich", "lines": None, "location": None},  # member names in any case; nulls
            "big": 2**53 + 1,  # not a double: must stay exact
            "ratio": -1.25e-7,
            "price": 12.5,
            "maybe": 42,
            "words": ["a", "ä", ""],
            "tally": {"ключ": 1, "": 0, "a b": -5},
            "note": None,
            "other": 1,  # an enum by its (defined) number
        },
        {
            "text": "String:" + TEXT,
            "count": "Int32:-2147483648",
            "flag": "Boolean:False",
            "unit": "Unit:Fahrenheit",
            "numbers": "List`1[]",
            "address": "Address{city=String:Zürich,lines=null,location=null}",
            "big": "Int64:9007199254740993",
            "ratio": "Double:-1.25E-07",
            "price": "Decimal:12.5",
            "maybe": "Int32:42",
            "words": "String[][String:a,String:ä,String:]",
            "tally": "Dictionary{=0,a b=-5,ключ=1}",
            "note": "null",
            "other": "Unit:Fahrenheit",
        },
    ),
    ({**BASE, "maybe": None, "unit": 0, "numbers": [-(2**31), 2**31 - 1]},
     {**DEFAULTS, "unit": "Unit:Celsius", "numbers": "List`1[Int32:-2147483648,Int32:2147483647]"}),
]

# (the argument the message names, arguments, also refused by an AIFunction): INVALID_ARGS everywhere.
ERRORS: list[tuple[str, dict[str, Any], bool]] = [
    ("count", {**BASE, "count": "three"}, True),
    ("count", {**BASE, "count": 1.5}, True),
    ("count", {**BASE, "count": None}, True),
    ("count", {**BASE, "count": 2**40}, True),
    ("flag", {**BASE, "flag": "yes"}, True),
    ("text", {**BASE, "text": 5}, True),
    ("unit", {**BASE, "unit": "Kelvin"}, True),
    ("numbers", {**BASE, "numbers": {"a": 1}}, True),
    ("numbers", {**BASE, "numbers": [1, "two"]}, True),
    ("address", {**BASE, "address": [1]}, True),
    ("address", {**BASE, "address": {"location": {"x": "far"}}}, True),
    ("text", {k: v for k, v in BASE.items() if k != "text"}, True),  # missing
    ("extra", {**BASE, "extra": 1}, True),  # unknown
    ("address", {**BASE, "address": {"zip": "75001"}}, False),  # an unknown member: MEAI's own options ignore it
]


def _nest(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"x": 1, "y": 2}
    for _ in range(depth):
        value = {"city": "c", "location": value}
    return value


# Input no model should send: it may bind or not, but must end as a value, INVALID_ARGS or TOOL_ERROR.
# The expected code, where every binder must agree, else None.
HOSTILE: list[tuple[dict[str, Any], str | None]] = [
    ({"arguments": {**BASE, "address": _nest(200)}}, "INVALID_ARGS"),  # deeper than both readers' 64 levels
    ({"arguments": {**BASE, "numbers": [[[[[[[[1]]]]]]]]}}, "INVALID_ARGS"),
    ({"arguments": {**BASE, "count": 10**400}}, "INVALID_ARGS"),
    ({"arguments": {**BASE, "ratio": 10**400}}, None),
    ({"arguments": {**BASE, "text": "x" * 200_000}}, None),
    ({"arguments": {**BASE, "tally": {str(i): i for i in range(5000)}}}, None),
    ({"arguments": {**BASE, "unit": 99}}, None),  # System.Text.Json takes any number for an enum
    ({"arguments": {**BASE, "unit": "Celsius, Fahrenheit"}}, None),
    ({"arguments": {**BASE, "address": {"city": "a", "City": "b"}}}, None),
    ({"arguments": {**BASE, "text": "\ud800"}}, "INVALID_ARGS"),  # no .NET string can hold it: refused before crossing
    ({"arguments": {**BASE, "\u0000": 1}}, "INVALID_ARGS"),
    ({"arguments": {**BASE, "__proto__": {}}}, "INVALID_ARGS"),
    ({"arguments": {**BASE, "numbers": {"$type": "System.Object"}}}, "INVALID_ARGS"),
    ({"raw": ""}, "INVALID_ARGS"),  # blank is no arguments: text and the rest are missing
    ({"raw": "not json"}, "INVALID_ARGS"),
    ({"raw": "[1, 2]"}, "INVALID_ARGS"),
    ({"raw": "null"}, "INVALID_ARGS"),
    ({"raw": '{"text": "a",}'}, "INVALID_ARGS"),
    ({"raw": '{"text": "a" /* c */}'}, "INVALID_ARGS"),
    ({"raw": '{"text": "a"} {"text": "b"}'}, "INVALID_ARGS"),
    ({"raw": '{"text": "a", "text": "b"}'}, "INVALID_ARGS"),  # a duplicate name
    ({"raw": '{"text": "\\u0061", "\\u0074ext": "b"}'}, "INVALID_ARGS"),  # the same name, escaped
    ({"raw": '{"count": NaN}'}, "INVALID_ARGS"),
    ({"raw": '{"text": "abc'}, "INVALID_ARGS"),
    ({"raw": '{"\\ud800": 1}'}, "INVALID_ARGS"),  # a lone surrogate as a name
    ({"raw": json.dumps(BASE).replace('"plain"', '"\\ud800"')}, "INVALID_ARGS"),  # a lone surrogate in a value
    ({"raw": json.dumps(BASE).replace('"plain"', '"\\udc00\\ud800"')}, "INVALID_ARGS"),  # a pair the wrong way round
    ({"raw": json.dumps(BASE).replace('"plain"', '"\\ud83d\\ude00"')}, None),  # a real pair: 😀
    ({"raw": json.dumps(BASE).replace('"plain"', '"tab\tinside"')}, "INVALID_ARGS"),  # a raw control character
    ({"raw": "[" * 10_000 + "]" * 10_000}, "INVALID_ARGS"),
    ({"raw": json.dumps(BASE).replace('"count": 3', '"count": 1e999')}, "INVALID_ARGS"),
    ({"raw": json.dumps(BASE).replace('"count": 3', '"count": 3, "ratio": -1e999')}, None),
]


def _expect_cases(results: list[dict[str, Any]], label: str) -> None:
    for (arguments, expected), result in zip(CASES, results, strict=True):
        assert result == {"value": expected}, (label, arguments)


def _expect_errors(results: list[dict[str, Any]], label: str, *, named: bool) -> None:
    for (name, arguments, _), result in zip(ERRORS, results, strict=True):
        assert result.get("error") == "INVALID_ARGS", (label, arguments, result)
        if named:  # the bridge's own binders name the argument (the fallback adds a path inside it: numbers[1], address.location.x)
            assert re.match(re.escape(name) + r"[:.\[]", result["message"]), (label, result["message"])


def _expect_hostile(results: list[dict[str, Any]], label: str) -> None:
    for (case, expected), result in zip(HOSTILE, results, strict=True):
        code = result.get("error")
        assert code in (None, "INVALID_ARGS", "TOOL_ERROR"), (label, str(case)[:120], result)
        if expected is not None:
            assert code == expected, (label, str(case)[:120], result)


def _all_cases(meai_too: bool = False) -> list[dict[str, Any]]:
    errors = [arguments for _, arguments, by_meai in ERRORS if by_meai or not meai_too]
    return [{"arguments": a} for a, _ in CASES] + [{"arguments": a} for a in errors] + [case for case, _ in HOSTILE]


def _split(results: list[dict[str, Any]], meai_too: bool = False) -> tuple[list[Any], list[Any], list[Any]]:
    errors = len([1 for *_, by_meai in ERRORS if by_meai or not meai_too])
    return results[: len(CASES)], results[len(CASES) : len(CASES) + errors], results[len(CASES) + errors :]


# ------------------------------------------------------------- System.Text.Json (MEAI loaded)
async def test_with_meai_described_methods_and_aifunctions_bind_through_system_text_json(
    meai: dict[str, Any], clr_tools: dict[str, Any]
) -> None:
    from tether_clr.clr import discover_functions, wrap_aifunction

    # Discovered again now that MEAI (and with it System.Text.Json) is loaded: the binder is chosen on wrapping.
    described = {f.name: f for f in discover_functions(clr_tools["assembly"])}["Report"]
    aifunction = wrap_aifunction(meai["MeaiTools"].Wrap(described.clr_object))
    assert (described.kind, described.binder) == ("method", "System.Text.Json")
    assert (aifunction.kind, aifunction.binder) == ("aifunction", "System.Text.Json")
    assert "binder='System.Text.Json'" in repr(described)

    with anyio.fail_after(60):
        ours = await bind_all(described, _all_cases())
        theirs = await bind_all(aifunction, _all_cases(meai_too=True))
    cases, errors, hostile = _split(ours)
    _expect_cases(cases, "System.Text.Json")
    _expect_errors(errors, "System.Text.Json", named=True)
    _expect_hostile(hostile, "System.Text.Json")

    cases, errors, hostile = _split(theirs, meai_too=True)
    _expect_cases(cases, "AIFunction")
    assert all(r.get("error") == "INVALID_ARGS" for r in errors), errors  # MEAI's messages are its own
    _expect_hostile(hostile, "AIFunction")


async def test_an_aifunction_is_handed_each_argument_as_a_json_element(meai: dict[str, Any]) -> None:
    """The arguments text is parsed once; each value goes into AIFunctionArguments as the JsonElement
    FunctionInvokingChatClient would pass, a JSON null included (as C# null MEAI would bind a value
    type's default instead of refusing it)."""
    kinds = meai["functions"]["ArgumentKinds"]
    assert kinds.binder == "System.Text.Json"
    arguments = {"n": 1.5, "s": "ü", "t": True, "f": False, "z": None, "a": [1, {"b": []}], "o": {"k": None}}
    assert await kinds.invoke(arguments, CancellationToken.none()) == {
        "n": "System.Text.Json.JsonElement:Number",
        "s": "System.Text.Json.JsonElement:String",
        "t": "System.Text.Json.JsonElement:True",
        "f": "System.Text.Json.JsonElement:False",
        "z": "System.Text.Json.JsonElement:Null",
        "a": "System.Text.Json.JsonElement:Array",
        "o": "System.Text.Json.JsonElement:Object",
    }


# --------------------------------------------------- without MEAI: the runtime decides (child)
def _run_child(runtime: str, cases: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k not in ("TETHER_MEAI_DIR", "TETHER_CLR_RUNTIME")}
    result = subprocess.run(
        [sys.executable, "-m", "tests.support.clr_binding_child", runtime],
        input=json.dumps(cases), capture_output=True, text=True, env=env, cwd=ROOT, timeout=300, check=False,
    )
    assert result.returncode == 0, result.stderr
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def _runtime_available(runtime: str) -> str | None:
    """Why ``runtime`` cannot host a child here, or None when it can."""
    if runtime == "mono":
        from clr_loader.util.find import find_libmono

        try:
            find_libmono()
        except Exception as exc:  # pragma: no cover - depends on the machine
            return f"no Mono here: {exc}"
        return None
    from tether_clr.clr.runtime import _coreclr_spec

    return None if _coreclr_spec() is not None else "no .NET 8+ CoreCLR here (set DOTNET_ROOT, as tasks.sh does for its CoreCLR pass)"


@pytest.mark.dotnet
@pytest.mark.parametrize(("runtime", "binder"), [("mono", "fallback"), ("coreclr", "System.Text.Json")])
def test_without_meai_described_methods_bind_alike_on_either_path(runtime: str, binder: str) -> None:
    """Mono without MEAI has no System.Text.Json: the fallback binds, to the same values and errors.
    CoreCLR ships System.Text.Json, so even without MEAI its described methods never take the fallback."""
    reason = _runtime_available(runtime)
    if reason is not None:
        pytest.skip(reason)
    report = _run_child(runtime, {"Report": _all_cases()})
    assert report["runtime"] == runtime
    function = report["functions"]["Report"]
    assert function["binder"] == binder
    cases, errors, hostile = _split(function["results"])
    _expect_cases(cases, binder)
    _expect_errors(errors, binder, named=True)
    _expect_hostile(hostile, binder)


# ------------------------------------------------------------- the pipeline, either binder
async def test_hostile_arguments_through_the_pipeline_end_as_values_or_argument_errors(clr_tools: dict[str, Any]) -> None:
    """Whichever binder this process's functions took: schema checks first, then the .NET binder."""
    report = clr_tools["functions"]["Report"]
    assert report.binder in ("System.Text.Json", "fallback")
    registry = ToolRegistry()
    registry.register(report)
    calls = [call(str(i), "Report", case["raw"] if "raw" in case else case["arguments"]) for i, (case, _) in enumerate(HOSTILE)]
    calls += [call(f"e{i}", "Report", arguments) for i, (_, arguments, _) in enumerate(ERRORS)]
    calls.append(call("ok", "Report", BASE))
    with anyio.fail_after(60):
        outcomes = await registry.execute_batch(calls, registry.seal())
    assert isinstance(outcomes, list)  # no approval step here: never suspended
    assert set(codes(outcomes[:-1])) <= {None, "INVALID_ARGS", "TOOL_ERROR"}
    assert codes(outcomes[len(HOSTILE) : -1]) == ["INVALID_ARGS"] * len(ERRORS)
    assert outcomes[-1].value == DEFAULTS

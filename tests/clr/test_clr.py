"""C# tools through pythonnet: schemas, invocation, exception mapping, cancellation,
overlap, a mixed Python + C# scope tree, and result records.

The C# in dotnet_fixtures/ is compiled at test time. Without a .NET runtime the
tests skip, saying why, unless TETHER_REQUIRE_DOTNET=1 (CI sets it) makes that
a failure.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.support import call, codes, registry_of, run_batch
from tether_clr import (
    AgentPipelineScope,
    CancellationSource,
    CancellationToken,
    PythonFunction,
    ToolArgumentError,
    ToolCall,
    ToolExecutionMode,
    ToolExecutionOutcome,
    ToolFailureCodes,
    ToolRegistrationOptions,
    ToolRegistry,
)

pytestmark = pytest.mark.anyio


def _registry(clr_tools: dict[str, Any], *names: str, scope: AgentPipelineScope | None = None) -> ToolRegistry:
    return registry_of(*(clr_tools["functions"][name] for name in names), scope=scope)


# --------------------------------------------------------------------------- schema
def test_discovery_finds_described_methods_only(clr_tools: dict[str, Any]) -> None:
    names = set(clr_tools["functions"])
    assert {"Add", "Greet", "Convert", "Sum", "MakePoint", "Twice", "Touch", "TouchAsync", "Delay", "UntilCancelled"} <= names
    assert "Hidden" not in names and "Reset" not in names
    assert all(f.kind == "method" for f in clr_tools["functions"].values())


def test_schema_of_sync_method_with_descriptions(clr_tools: dict[str, Any]) -> None:
    add = clr_tools["functions"]["Add"]
    assert add.description == "Adds two integers."
    assert add.json_schema == {
        "type": "object",
        "properties": {
            "a": {"type": "integer", "description": "The first addend"},
            "b": {"type": "integer", "description": "The second addend"},
        },
        "required": ["a", "b"],
        "additionalProperties": False,
    }


def test_schema_defaults_enums_nullables_arrays_objects(clr_tools: dict[str, Any]) -> None:
    functions = clr_tools["functions"]
    assert functions["Greet"].json_schema["properties"]["greeting"] == {"type": "string", "default": "Hello"}
    assert functions["Greet"].json_schema["required"] == ["name"]
    assert functions["Convert"].json_schema["properties"]["to"] == {
        "type": "string", "default": "Fahrenheit", "enum": ["Celsius", "Fahrenheit"],
    }
    sum_schema = functions["Sum"].json_schema["properties"]
    assert sum_schema["values"] == {"type": "array", "items": {"type": "integer"}}
    assert sum_schema["scale"] == {"type": ["integer", "null"], "default": None}
    assert functions["Move"].json_schema["properties"]["point"]["properties"] == {"x": {"type": "integer"}, "y": {"type": "integer"}}


def test_schema_of_async_void_and_task_methods(clr_tools: dict[str, Any]) -> None:
    functions = clr_tools["functions"]
    for name in ("Touch", "TouchAsync"):
        assert functions[name].json_schema["required"] == ["path"]
    assert functions["MakePoint"].json_schema["required"] == ["x", "y"]
    # CancellationToken parameters are injected, never declared.
    assert set(functions["Delay"].json_schema["properties"]) == {"milliseconds", "label"}
    assert functions["UntilCancelled"].json_schema["properties"] == {}


def test_clr_tools_register_and_declare_like_python_tools(clr_tools: dict[str, Any]) -> None:
    registry = _registry(clr_tools, "Add", "Greet")
    registry.register(PythonFunction.from_callable(lambda: 1, name="py_tool"))
    assert [d.name for d in registry.get_declarations()] == ["Add", "Greet", "py_tool"]


# ------------------------------------------------------------------------- invocation
async def test_invoke_sync_async_valuetask_and_void(clr_tools: dict[str, Any]) -> None:
    registry = _registry(clr_tools, "Add", "Greet", "MakePoint", "Twice", "Touch", "TouchAsync", "Convert", "Sum", "Move")
    outcomes = await run_batch(
        registry,
        call("1", "Add", {"a": 40, "b": 2}),
        call("2", "Greet", {"name": "Ada"}),
        call("3", "MakePoint", {"x": 1, "y": 2}),
        call("4", "Twice", {"value": 21}),
        call("5", "Touch", {"path": "/tmp/sync"}),
        call("6", "TouchAsync", {"path": "/tmp/async"}),
        call("7", "Convert", {"celsius": 100, "to": "Fahrenheit"}),
        call("8", "Sum", {"values": [1, 2, 3], "scale": 2}),
        call("9", "Move", {"point": {"x": 1, "y": 1}, "dx": 3}),
    )
    assert codes(outcomes) == [None] * 9
    assert [o.value for o in outcomes] == [42, "Hello, Ada!", {"x": 1, "y": 2}, 42, None, None, 212, 12, {"x": 4, "y": 1}]
    touched = list(clr_tools["Calculator"].Touched)
    assert "/tmp/sync" in touched and "/tmp/async" in touched


# ------------------------------------------------------------------- exception mapping
async def test_dotnet_exceptions_become_tool_error_naming_the_innermost_type(clr_tools: dict[str, Any]) -> None:
    registry = _registry(clr_tools, "Fail", "FailAsync", "FailWrapped")
    outcomes = await run_batch(
        registry,
        call("1", "Fail", {"message": "boom"}),
        call("2", "FailAsync", {"message": "nothing here"}),
        call("3", "FailWrapped"),
    )
    assert codes(outcomes) == ["TOOL_ERROR"] * 3
    assert [o.failure.message for o in outcomes] == [
        "System.InvalidOperationException: boom",  # TargetInvocationException unwrapped
        "System.Collections.Generic.KeyNotFoundException: nothing here",
        "System.TimeoutException: backend timed out",  # AggregateException unwrapped
    ]


async def test_dotnet_binding_failure_becomes_invalid_args(clr_tools: dict[str, Any]) -> None:
    registry = _registry(clr_tools, "Add")
    (outcome,) = await run_batch(registry, call("1", "Add", {"a": 2**40, "b": 1}))  # valid JSON integer, too big for int
    assert outcome.failure.code is ToolFailureCodes.INVALID_ARGS
    if clr_tools["functions"]["Add"].binder == "fallback":  # Mono without MEAI: bridge/Binder.cs
        assert outcome.failure.message.startswith("a: number is out of range for Int32")
    else:  # System.Text.Json's own message, after the argument's name (tests/test_clr_binding.py has both paths)
        assert outcome.failure.message.startswith("a: The JSON value could not be converted to System.Int32.")
    with pytest.raises(ToolArgumentError, match="unexpected argument"):
        await clr_tools["functions"]["Add"].invoke({"a": 1, "b": 2, "c": 3}, CancellationToken.none())


# ------------------------------------------------------------------------ cancellation
async def _wait_until(predicate: Any) -> None:
    while not predicate():
        await anyio.sleep(0.005)


async def test_cancellation_reaches_the_dotnet_token(clr_tools: dict[str, Any]) -> None:
    waiter = clr_tools["Waiter"]
    waiter.Reset()
    registry = _registry(clr_tools, "UntilCancelled")
    source = CancellationSource()
    result: list[ToolExecutionOutcome] = []

    async def run() -> None:
        result.extend(await registry.execute_batch([call("1", "UntilCancelled")], registry.seal(), cancellation=source.token))

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            await _wait_until(lambda: waiter.Started == 1)
            source.cancel("user stopped")
    assert codes(result) == ["ABORTED"]
    assert waiter.Cancelled == 1  # the .NET body saw its CancellationToken fire


async def test_anyio_cancellation_cancels_and_drains_the_dotnet_task(clr_tools: dict[str, Any]) -> None:
    waiter = clr_tools["Waiter"]
    waiter.Reset()
    tool = clr_tools["functions"]["UntilCancelled"]
    with anyio.move_on_after(30):
        async with anyio.create_task_group() as tg:

            async def invoke() -> None:
                await tool.invoke({}, CancellationToken.none())

            tg.start_soon(invoke)
            await _wait_until(lambda: waiter.Started == 1)
            tg.cancel_scope.cancel()
    assert waiter.Cancelled == 1


# ----------------------------------------------------------------------------- overlap
async def test_two_async_dotnet_tools_overlap_in_one_parallel_group(clr_tools: dict[str, Any]) -> None:
    waiter = clr_tools["Waiter"]
    waiter.Reset()
    registry = _registry(clr_tools, "Delay")
    view = registry.seal()
    calls = [call("1", "Delay", {"milliseconds": 400, "label": "first"}), call("2", "Delay", {"milliseconds": 400, "label": "second"})]
    assert [registry.classify(c, view) for c in calls] == [ToolExecutionMode.PARALLEL] * 2
    outcomes = await run_batch(registry, *calls, max_parallelism=2)
    assert [o.value for o in outcomes] == ["first", "second"]
    assert waiter.PeakRunning == 2  # measured inside .NET: both bodies were running at once


async def test_dotnet_tool_is_exclusive_unless_declared_safe(clr_tools: dict[str, Any]) -> None:
    registry = _registry(clr_tools, "Add")
    assert registry.classify(call("1", "Add", {"a": 1, "b": 2}), registry.seal()) is ToolExecutionMode.EXCLUSIVE
    override = ToolRegistry()
    override.register(clr_tools["functions"]["Add"], options=ToolRegistrationOptions(is_concurrency_safe=True))
    assert override.classify(call("1", "Add", {"a": 1, "b": 2}), override.seal()) is ToolExecutionMode.PARALLEL


# ----------------------------------------------------------- mixed catalog, one pipeline
async def test_mixed_catalog_scoped_shadowing_and_one_guard_for_both_languages(clr_tools: dict[str, Any]) -> None:
    registry = ToolRegistry()
    root = AgentPipelineScope(session_id="s", owner="alice")
    child = root.child()
    registry.register(clr_tools["functions"]["Add"], root)
    registry.register(clr_tools["functions"]["Touch"], root)
    python_ran: list[str] = []

    def python_add(a: int, b: int) -> str:
        python_ran.append("add")
        return f"python says {a + b}"

    def python_delete(path: str) -> None:
        python_ran.append("delete")

    registry.register(PythonFunction.from_callable(python_add, name="Add"), child)
    registry.register(PythonFunction.from_callable(python_delete, name="delete"), root)
    registry.register_guard(root, lambda e: "writes are frozen" if e.name in ("Touch", "delete") else None)

    (in_root,) = await run_batch(registry, call("1", "Add", {"a": 1, "b": 2}), scope=root)
    (in_child,) = await run_batch(registry, call("2", "Add", {"a": 1, "b": 2}), scope=child)
    denied = await run_batch(registry, call("3", "Touch", {"path": "/frozen"}), call("4", "delete", {"path": "/frozen"}), scope=child)
    assert in_root.value == 3  # C# Add
    assert in_child.value == "python says 3"  # the child's Python Add shadows it
    assert codes(denied) == ["DENIED", "DENIED"]
    assert python_ran == ["add"]
    assert "/frozen" not in list(clr_tools["Calculator"].Touched)


# ---------------------------------------------------------------------------- records
async def test_dotnet_results_project_to_function_result_content(clr_tools: dict[str, Any]) -> None:
    registry = _registry(clr_tools, "MakePoint", "Fail")
    ok, failed = await run_batch(registry, call("c1", "MakePoint", {"x": 3, "y": 4}), call("c2", "Fail", {"message": "no"}))
    assert ok.to_function_result().to_json() == '{"$type":"functionResult","callId":"c1","result":{"x":3,"y":4}}'
    assert failed.to_function_result().exception == "TOOL_ERROR: System.InvalidOperationException: no"


def test_clr_function_result_without_meai_is_a_clear_error(clr_tools: dict[str, Any]) -> None:
    # In a fresh process: this one may have loaded Microsoft.Extensions.AI for other tests.
    script = (
        "from tether_clr import ToolExecutionOutcome\n"
        "from tether_clr.clr import ClrUnavailableError, load_runtime, to_clr_function_result\n"
        "from tether_clr.clr.bridge import bridge\n"
        f"load_runtime({clr_tools['runtime'].kind!r}); bridge()\n"
        "try:\n"
        "    to_clr_function_result(ToolExecutionOutcome.success('c', 't', 1))\n"
        "except ClrUnavailableError as exc:\n"
        "    print(exc)\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr
    assert "needs Microsoft.Extensions.AI.Abstractions loaded" in result.stdout


def test_from_function_call_accepts_the_dict_shape() -> None:
    tool_call = ToolCall.from_function_call({"$type": "functionCall", "callId": "c9", "name": "Add", "arguments": {"b": 2, "a": 1}})
    assert (tool_call.call_id, tool_call.name, tool_call.arguments) == ("c9", "Add", '{"a":1,"b":2}')
    with pytest.raises(ValueError):
        ToolCall.from_function_call({"$type": "functionResult", "callId": "c", "name": "x"})


# --------------------------------------------------------------------- runtime & build
def test_runtime_cannot_be_switched_once_loaded(clr_tools: dict[str, Any]) -> None:
    from tether_clr.clr import ClrUnavailableError, load_runtime

    runtime = clr_tools["runtime"]
    assert load_runtime() is runtime and load_runtime(runtime.kind) is runtime
    other = "coreclr" if runtime.kind == "mono" else "mono"
    with pytest.raises(ClrUnavailableError, match="already"):
        load_runtime(other)  # type: ignore[arg-type]


def test_missing_assembly_is_a_clear_error(clr_tools: dict[str, Any], tmp_path: Path) -> None:
    from tether_clr.clr import load_assembly

    with pytest.raises(FileNotFoundError, match="no .NET assembly"):
        load_assembly(tmp_path / "Nope.dll")


def test_build_is_cached_by_source_hash(clr_tools: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tether_clr.clr import ClrBuildError, compile_library

    monkeypatch.setenv("TETHER_CACHE_DIR", str(tmp_path / "cache"))
    source = tmp_path / "Tiny.cs"
    source.write_text("public static class Tiny { public static int One() { return 1; } }\n")
    first = compile_library("Tiny", [source])
    assert compile_library("Tiny", [source]) == first and first.is_file()
    source.write_text("public static class Tiny { public static int Two() { return 2; } }\n")
    assert compile_library("Tiny", [source]) != first
    source.write_text("this is not C#")
    with pytest.raises(ClrBuildError, match="error"):
        compile_library("Tiny", [source])


# -------------------------------------------- real Microsoft.Extensions.AI (when present)
async def test_real_aifunctions_are_discovered_and_invoked(meai: dict[str, Any]) -> None:
    functions = meai["functions"]
    assert {"Multiply", "Shout", "Refuse"} <= set(functions)
    assert functions["Multiply"].kind == "aifunction"
    assert functions["Multiply"].json_schema["type"] == "object"
    registry = ToolRegistry()
    for name in ("Multiply", "Shout", "Refuse"):
        registry.register(functions[name])
    outcomes = await run_batch(registry, call("1", "Multiply", {"a": 6, "b": 7}), call("2", "Shout", {"text": "hi"}), call("3", "Refuse", {"text": "way"}))
    assert [o.value for o in outcomes[:2]] == [42, "HI"]
    assert outcomes[2].failure.code is ToolFailureCodes.TOOL_ERROR
    assert "InvalidOperationException: no way" in outcomes[2].failure.message


def test_real_function_call_and_result_records(meai: dict[str, Any]) -> None:
    from tether_clr.clr import function_call_to_tool_call, to_clr_function_result

    content = meai["MeaiTools"].SampleCall()
    tool_call = function_call_to_tool_call(content)
    assert (tool_call.call_id, tool_call.name, tool_call.arguments) == ("call-1", "Multiply", '{"a":6,"b":7}')
    assert tool_call.argument_error is None
    result = to_clr_function_result(ToolExecutionOutcome.success("call-1", "Multiply", 42))
    assert str(result.CallId) == "call-1"
    assert str(result.Result.GetRawText()) == "42"


async def test_dotnet_body_is_drained_even_when_its_cancellation_callback_throws(clr_tools: dict[str, Any]) -> None:
    """Cancelling the awaiting task calls CancellationTokenSource.Cancel(); a .NET callback that throws
    there must not skip the drain, or the body would still be running after execute_batch returned."""
    from Tether.Fixtures import Stubborn  # type: ignore[import-not-found]

    registry = _registry(clr_tools, "IgnoreCancellation")
    started, finished = int(Stubborn.Started), int(Stubborn.Finished)
    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            async def batch() -> None:
                await registry.execute_batch([call("1", "IgnoreCancellation")], registry.seal())

            tg.start_soon(batch)
            while int(Stubborn.Started) == started:  # the body is running on the .NET thread pool
                await anyio.sleep(0.005)
            tg.cancel_scope.cancel()
    assert int(Stubborn.Finished) == finished + 1


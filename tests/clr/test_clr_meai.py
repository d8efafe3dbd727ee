"""Real Microsoft.Extensions.AI 10 functions (dotnet_fixtures/meai/, compiled at test
time against the assemblies in TETHER_MEAI_DIR): each test is a rule a defect
found with the real assemblies broke (issue 7). CI runs this file on Mono and on
CoreCLR (TETHER_CLR_RUNTIME), with TETHER_REQUIRE_MEAI=1 so it cannot skip.
Approval-required functions are tested with Python tools in tests/execution/test_approval.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.support import call, codes, registry_of, run_batch
from tether_clr import (
    CancellationToken,
    PythonFunction,
    ToolArgumentError,
    ToolExecutionMode,
    ToolFailureCodes,
    ToolRegistry,
)

pytestmark = pytest.mark.anyio


def test_meai_loads_with_its_own_system_text_json_on_this_runtime(meai: dict[str, Any]) -> None:
    """On CoreCLR, .NET 8 ships System.Text.Json 8.0; MEAI 10 must bind the folder's 10.0."""
    json_assembly = meai["functions"]["Multiply"].clr_object.JsonSchema.GetType().Assembly
    assert json_assembly.GetName().Version.Major >= 10
    assert Path(str(json_assembly.Location)).parent == Path(os.environ["TETHER_MEAI_DIR"]).resolve()


# 2 ----------------------------------------------------------------------------------
async def test_function_call_whose_arguments_failed_to_parse_ends_invalid_args_and_never_runs(meai: dict[str, Any]) -> None:
    from tether_clr.clr import function_call_to_tool_call

    content = meai["MeaiTools"].UnparsableCall()
    assert content.Arguments is None and content.Exception is not None
    tool_call = function_call_to_tool_call(content)
    assert tool_call.argument_error is not None and tool_call.argument_error.startswith(str(content.Exception.Message))
    before = int(meai["Weather"].ForecastRuns)
    (outcome,) = await run_batch(registry_of(meai["functions"]["Forecast"]), tool_call)
    assert outcome.failure.code is ToolFailureCodes.INVALID_ARGS
    assert outcome.failure.message == tool_call.argument_error
    assert int(meai["Weather"].ForecastRuns) == before


# 3 ----------------------------------------------------------------------------------
async def test_method_also_exposed_as_aifunction_is_discovered_once_as_the_aifunction(meai: dict[str, Any]) -> None:
    from tether_clr.clr import discover_functions

    found = [f for f in discover_functions(meai["assembly"]) if f.name == "Forecast"]
    assert [f.kind for f in found] == ["aifunction"]
    registry = ToolRegistry()
    for function in discover_functions(meai["assembly"]):  # registering everything must not raise DuplicateToolError
        registry.register(function)
    (outcome,) = await run_batch(registry, call("1", "Forecast", {"city": "Paris"}))
    assert outcome.value == "sunny in Paris"


async def test_method_exposed_only_through_an_approval_required_aifunction_never_runs_unapproved(meai: dict[str, Any]) -> None:
    from Tether.Fixtures.Meai import Disks  # type: ignore[import-not-found]

    from tether_clr.clr import discover_functions

    registry = ToolRegistry()
    for function in discover_functions(meai["assembly"]):
        registry.register(function)
    assert "Wipe" not in registry.seal() and "wipe_with_approval" in registry.seal()
    before = int(Disks.WipeRuns)
    (outcome,) = await run_batch(registry, call("1", "wipe_with_approval", {"disk": "sda"}))
    assert outcome.failure.code is ToolFailureCodes.DENIED  # no approval provider: fails closed
    assert int(Disks.WipeRuns) == before


# 4 ----------------------------------------------------------------------------------
async def test_aifunction_subclass_with_default_empty_schema_registers_as_any_object(meai: dict[str, Any]) -> None:
    echo = meai["functions"]["Echo"]
    assert echo.json_schema == {}
    registry = registry_of(echo)
    assert registry.get_declarations()[0].parameters == {"type": "object"}
    (outcome,) = await run_batch(registry, call("1", "Echo"))
    assert outcome.value == "echo 0"


def test_aifunction_schema_declaring_another_type_is_refused(meai: dict[str, Any]) -> None:
    from tether_clr.clr import wrap_aifunction

    stringy = wrap_aifunction(meai["MeaiTools"].StringSchemaFunction())
    with pytest.raises(ValueError, match="object schema"):
        ToolRegistry().register(stringy)


# 5 ----------------------------------------------------------------------------------
async def test_result_serialization_failure_after_the_body_is_tool_error(meai: dict[str, Any]) -> None:
    (outcome,) = await run_batch(registry_of(meai["functions"]["Cyclic"]), call("1", "Cyclic", {"name": "loop"}))
    assert outcome.failure.code is ToolFailureCodes.TOOL_ERROR
    assert "System.Text.Json.JsonException" in outcome.failure.message


async def test_binding_failure_before_the_body_is_invalid_args(meai: dict[str, Any]) -> None:
    before = int(meai["MeaiTools"].ScheduleRuns)
    (outcome,) = await run_batch(registry_of(meai["functions"]["Schedule"]), call("1", "Schedule", {"when": "not a date"}))
    assert outcome.failure.code is ToolFailureCodes.INVALID_ARGS  # the schema's "format" let it through; MEAI's binding did not
    assert int(meai["MeaiTools"].ScheduleRuns) == before
    (ok,) = await run_batch(registry_of(meai["functions"]["Schedule"]), call("2", "Schedule", {"when": "2031-05-06T07:08:09Z"}))
    assert ok.value == 2031


async def test_nested_aifunction_binding_failure_inside_the_body_is_tool_error(meai: dict[str, Any]) -> None:
    """Only this function's own binding is the model's fault: its body ran (side effects possible)."""
    before = int(meai["MeaiTools"].RelayRuns)
    (outcome,) = await run_batch(registry_of(meai["functions"]["RelayTo"]), call("1", "RelayTo", {"when": "not a date"}))
    assert int(meai["MeaiTools"].RelayRuns) == before + 1
    assert outcome.failure.code is ToolFailureCodes.TOOL_ERROR
    (ok,) = await run_batch(registry_of(meai["functions"]["RelayTo"]), call("2", "RelayTo", {"when": "2031-05-06T07:08:09Z"}))
    assert ok.value == "scheduled 2031"


async def test_argument_exception_thrown_by_the_body_is_tool_error(meai: dict[str, Any]) -> None:
    (outcome,) = await run_batch(registry_of(meai["functions"]["Picky"]), call("1", "Picky", {"n": 3}))
    assert outcome.failure.code is ToolFailureCodes.TOOL_ERROR
    assert outcome.failure.message.startswith("System.ArgumentException: n is odd")


# 6 ----------------------------------------------------------------------------------
def test_concurrency_safe_on_the_underlying_method_or_its_type_counts(meai: dict[str, Any]) -> None:
    functions = meai["functions"]
    registry = registry_of(functions["Peek"], functions["Look"], functions["Multiply"])
    view = registry.seal()
    modes = [registry.classify(call(str(i), name, {}), view) for i, name in enumerate(("Peek", "Look", "Multiply"))]
    assert modes == [ToolExecutionMode.PARALLEL, ToolExecutionMode.PARALLEL, ToolExecutionMode.EXCLUSIVE]


# 7 ----------------------------------------------------------------------------------
async def test_services_and_context_reach_the_function_as_aifunction_arguments(meai: dict[str, Any]) -> None:
    from tether_clr.clr import wrap_aifunction

    tools = meai["MeaiTools"]
    greeter = wrap_aifunction(tools.Greeter, services=tools.MakeServices("Bonjour"))
    tenant = wrap_aifunction(tools.WhoAmI, context={"tenant": "acme"})
    assert "services" not in greeter.json_schema["properties"]  # injected, never declared
    outcomes = await run_batch(registry_of(greeter, tenant), call("1", "GreetWith", {"name": "Ada"}), call("2", "Tenant"))
    assert [o.value for o in outcomes] == ["Bonjour, Ada", "acme"]


async def test_services_given_to_discovery_reach_every_function(meai: dict[str, Any]) -> None:
    from tether_clr.clr import discover_functions

    found = {f.name: f for f in discover_functions(meai["assembly"], services=meai["MeaiTools"].MakeServices("Hej"))}
    (outcome,) = await run_batch(registry_of(found["GreetWith"]), call("1", "GreetWith", {"name": "Ada"}))
    assert outcome.value == "Hej, Ada"


async def test_missing_service_provider_is_tool_error_not_invalid_args(meai: dict[str, Any]) -> None:
    (outcome,) = await run_batch(registry_of(meai["functions"]["GreetWith"]), call("1", "GreetWith", {"name": "Ada"}))
    assert outcome.failure.code is ToolFailureCodes.TOOL_ERROR
    assert "IServiceProvider" in outcome.failure.message


async def test_missing_service_in_the_provider_is_tool_error(meai: dict[str, Any]) -> None:
    from tether_clr.clr import wrap_aifunction

    greeter = wrap_aifunction(meai["MeaiTools"].Greeter, services=meai["MeaiTools"].EmptyServices())
    (outcome,) = await run_batch(registry_of(greeter), call("1", "GreetWith", {"name": "Ada"}))
    assert outcome.failure.code is ToolFailureCodes.TOOL_ERROR
    assert "no IGreeting service" in outcome.failure.message


def test_services_must_be_a_service_provider(meai: dict[str, Any]) -> None:
    from tether_clr.clr import wrap_aifunction

    with pytest.raises(TypeError, match="IServiceProvider"):
        wrap_aifunction(meai["MeaiTools"].Greeter, services=meai["MeaiTools"].SampleCall())


def test_context_holding_a_python_object_is_refused_at_wrap_time(meai: dict[str, Any]) -> None:
    """.NET threads read the context: a Python object there would make them call into Python."""
    from tether_clr.clr import wrap_aifunction

    with pytest.raises(TypeError, match="context"):
        wrap_aifunction(meai["MeaiTools"].WhoAmI, context={"tenant": object()})
    with pytest.raises(TypeError, match="context"):
        wrap_aifunction(meai["MeaiTools"].WhoAmI, context={("a", "b"): "x"})


async def test_context_scalars_are_converted_to_dotnet_values(meai: dict[str, Any]) -> None:
    from tether_clr.clr import wrap_aifunction

    tenant = wrap_aifunction(meai["MeaiTools"].WhoAmI, context={"tenant": "acme", "limit": 3, "ratio": 0.5, "on": True, "none": None})
    (outcome,) = await run_batch(registry_of(tenant), call("1", "Tenant"))
    assert outcome.value == "acme"


def test_service_provider_implemented_in_python_is_refused(meai: dict[str, Any]) -> None:
    from System import IServiceProvider  # type: ignore[import-not-found]

    from tether_clr.clr import wrap_aifunction

    class PythonServices(IServiceProvider):  # type: ignore[misc]
        __namespace__ = "Tether.Tests"

        def GetService(self, service_type: Any) -> Any:
            return None

    with pytest.raises(TypeError, match="implemented in .NET"):
        wrap_aifunction(meai["MeaiTools"].Greeter, services=PythonServices())


# 8 ----------------------------------------------------------------------------------
async def test_unknown_argument_names_are_rejected_for_aifunctions_and_wrapped_methods_alike(
    meai: dict[str, Any], clr_tools: dict[str, Any]
) -> None:
    registry = registry_of(meai["functions"]["Multiply"], meai["functions"]["Echo"], clr_tools["functions"]["Add"])
    outcomes = await run_batch(
        registry,
        call("1", "Multiply", {"a": 1, "b": 2, "c": 3}),
        call("2", "Echo", {"anything": 1}),  # {} lists no names at all
        call("3", "Add", {"a": 1, "b": 2, "c": 3}),
    )
    assert codes(outcomes) == ["INVALID_ARGS"] * 3
    assert [o.failure.message for o in outcomes[:2]] == ["c: unexpected argument", "anything: unexpected argument"]
    assert "c" in outcomes[2].failure.message
    with pytest.raises(ToolArgumentError, match="c: unexpected argument"):  # the bridge itself, not only the schema
        await meai["functions"]["Multiply"].invoke({"a": 1, "b": 2, "c": 3}, CancellationToken.none())


# --------------------------------------------------------------- loading, no environment
def test_assembly_in_a_build_output_folder_finds_its_dependencies_there(meai: dict[str, Any], tmp_path: Path) -> None:
    """An app's bin/ folder: the tool assembly beside MEAI and System.Text.Json, no TETHER_MEAI_DIR."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for dll in Path(os.environ["TETHER_MEAI_DIR"]).glob("*.dll"):
        (bin_dir / dll.name).symlink_to(dll.resolve())
    (bin_dir / "TetherMeaiFixtures.dll").symlink_to(Path(str(meai["assembly"].Location)).resolve())
    script = textwrap.dedent(
        f"""
        import anyio
        from tether_clr import ToolCall, ToolRegistry
        from tether_clr.clr import discover_functions, load_assembly, load_runtime
        runtime = load_runtime({meai["runtime"].kind!r})
        functions = {{f.name: f for f in discover_functions(load_assembly({str(bin_dir / "TetherMeaiFixtures.dll")!r}))}}
        registry = ToolRegistry()
        registry.register(functions["Multiply"])
        async def main():
            return await registry.execute_batch([ToolCall("1", "Multiply", '{{"a": 6, "b": 7}}')], registry.seal())
        print(runtime.kind, anyio.run(main)[0].value)
        """
    )
    env = {k: v for k, v in os.environ.items() if k not in ("TETHER_MEAI_DIR", "TETHER_SOURCE_ROOT")}
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [meai["runtime"].kind, "42"]


def test_python_tools_and_real_aifunctions_share_one_catalog(meai: dict[str, Any]) -> None:
    registry = registry_of(meai["functions"]["Multiply"], PythonFunction.from_callable(lambda: 1, name="py_tool"))
    assert [d.name for d in registry.get_declarations()] == ["Multiply", "py_tool"]

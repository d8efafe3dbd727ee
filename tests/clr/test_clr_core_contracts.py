"""What the core promises the .NET side, checked without .NET: calls that carry an
argument-parse failure, MEAI's schema-less object schema, and the layering rule
that the core never imports ``tether_clr.clr``.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support import call
from tether_clr import PythonFunction, ToolCall, ToolFailureCodes, ToolRegistry

pytestmark = pytest.mark.anyio


class _Tool:
    def __init__(self, schema: dict[str, Any]) -> None:
        self.name, self.description, self.json_schema = "t", "", schema
        self.ran: list[Any] = []

    async def invoke(self, arguments: dict[str, Any], cancellation: Any) -> Any:
        self.ran.append(arguments)
        return "ran"


async def test_call_carrying_an_argument_error_ends_invalid_args_with_that_message_and_never_runs() -> None:
    registry = ToolRegistry()
    ran: list[int] = []
    registry.register(PythonFunction.from_callable(lambda: ran.append(1), name="t"))
    (outcome,) = await registry.execute_batch([ToolCall("c1", "t", "{}", argument_error="Error parsing function call arguments.")], registry.seal())
    assert (outcome.failure.code, outcome.failure.message) == (ToolFailureCodes.INVALID_ARGS, "Error parsing function call arguments.")
    assert ran == []


async def test_unknown_tool_still_wins_over_an_argument_error() -> None:
    registry = ToolRegistry()
    (outcome,) = await registry.execute_batch([ToolCall("c1", "nope", "", argument_error="bad")], registry.seal())
    assert outcome.failure.code is ToolFailureCodes.UNKNOWN_TOOL


@given(message=st.text(min_size=1, max_size=40), raw=st.text(max_size=40))
def test_any_argument_error_blocks_the_call_whatever_the_argument_text(message: str, raw: str) -> None:
    import anyio

    registry = ToolRegistry()
    tool = _Tool({"type": "object"})
    registry.register(tool)

    async def main() -> Any:
        return await registry.execute_batch([ToolCall("c1", "t", raw, argument_error=message)], registry.seal())

    (outcome,) = anyio.run(main)
    assert outcome.failure.code is ToolFailureCodes.INVALID_ARGS and outcome.failure.message == message
    assert tool.ran == []


def test_from_function_call_takes_only_the_dict_shape_in_the_core() -> None:
    with pytest.raises(TypeError, match="function_call_to_tool_call"):
        ToolCall.from_function_call(object())  # type: ignore[arg-type]


async def test_schema_without_type_registers_as_any_object() -> None:
    registry = ToolRegistry()
    tool = _Tool({})
    registry.register(tool)
    assert registry.get_declarations()[0].parameters == {"type": "object"}
    outcomes = await registry.execute_batch([call("1", "t", {"x": 1})], registry.seal())
    assert outcomes[0].value == "ran"


@pytest.mark.parametrize("schema", [{"type": "string"}, {"type": ["object", "null"]}, {"type": "array"}])
def test_schema_declaring_another_type_is_refused(schema: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="object schema"):
        ToolRegistry().register(_Tool(schema))


def test_importing_the_core_loads_nothing_of_dotnet() -> None:
    code = "import sys, tether_clr; print(sorted(m for m in sys.modules if m.startswith(('tether_clr.clr', 'clr', 'pythonnet'))))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"

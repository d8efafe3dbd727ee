"""PythonFunction: schema and binding from type hints, sync and async callables."""

from __future__ import annotations

import enum
import threading
from typing import Annotated, Literal

import pytest
from pydantic import BaseModel, Field

from tether_clr import (
    CancellationSource,
    CancellationToken,
    PythonFunction,
    Tool,
    ToolArgumentError,
)

pytestmark = pytest.mark.anyio


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Point(BaseModel):
    x: int
    y: int


def test_schema_from_type_hints() -> None:
    def paint(
        area: Annotated[str, Field(description="Where to paint")],
        colour: Colour = Colour.RED,
        coats: int = 1,
        finish: Literal["matte", "gloss"] = "matte",
    ) -> str:
        """Paint an area."""
        return area

    tool = PythonFunction.from_callable(paint)
    schema = tool.json_schema
    assert tool.name == "paint" and tool.description == "Paint an area."
    assert schema["type"] == "object"
    assert schema["required"] == ["area"]
    assert schema["additionalProperties"] is False
    assert schema["properties"]["area"] == {"type": "string", "description": "Where to paint"}
    assert schema["properties"]["coats"] == {"type": "integer", "default": 1}
    assert schema["properties"]["finish"]["enum"] == ["matte", "gloss"]
    assert "$defs" in schema and "Colour" in schema["$defs"]
    assert isinstance(tool, Tool)


def test_name_and_description_overrides() -> None:
    tool = PythonFunction.from_callable(lambda: 1, name="renamed", description="custom")
    assert (tool.name, tool.description) == ("renamed", "custom")


def test_var_args_cannot_be_described() -> None:
    with pytest.raises(TypeError, match="args"):
        PythonFunction.from_callable(lambda *items: items, name="bad")


def test_schema_reads_are_detached() -> None:
    tool = PythonFunction.from_callable(lambda q: q, name="t")
    tool.json_schema["properties"]["q"]["x"] = 1
    assert "x" not in tool.json_schema["properties"]["q"]


async def test_binding_converts_to_declared_types() -> None:
    def move(point: Point, colour: Colour) -> str:
        return f"{point.x},{point.y}:{colour.value}"

    tool = PythonFunction.from_callable(move)
    assert await tool.invoke({"point": {"x": 1, "y": 2}, "colour": "blue"}, CancellationToken.none()) == "1,2:blue"


async def test_binding_failure_raises_tool_argument_error() -> None:
    tool = PythonFunction.from_callable(lambda count: count, name="t")
    with pytest.raises(ToolArgumentError, match="count"):
        await tool.invoke({}, CancellationToken.none())
    typed = PythonFunction.from_callable(_typed)
    with pytest.raises(ToolArgumentError, match="count"):
        await typed.invoke({"count": "lots"}, CancellationToken.none())


def _typed(count: int) -> int:
    return count


async def test_positional_only_and_parameter_names_that_clash_with_pydantic() -> None:
    def clash(schema: str, /, copy: int, json: bool = False) -> list[object]:
        return [schema, copy, json]

    tool = PythonFunction.from_callable(clash)
    assert set(tool.json_schema["properties"]) == {"schema", "copy", "json"}
    assert await tool.invoke({"schema": "s", "copy": 2}, CancellationToken.none()) == ["s", 2, False]


async def test_cancellation_parameter_is_injected_not_declared() -> None:
    async def waits(n: int, token: CancellationToken) -> bool:
        return token.is_cancelled

    tool = PythonFunction.from_callable(waits)
    assert list(tool.json_schema["properties"]) == ["n"]
    source = CancellationSource()
    source.cancel()
    assert await tool.invoke({"n": 1}, source.token) is True


async def test_sync_callable_runs_in_worker_thread_by_default() -> None:
    loop_thread = threading.get_ident()

    def where() -> bool:
        return threading.get_ident() != loop_thread

    assert await PythonFunction.from_callable(where).invoke({}, CancellationToken.none()) is True
    inline = PythonFunction.from_callable(where, run_sync_in_thread=False)
    assert await inline.invoke({}, CancellationToken.none()) is False


async def test_async_callable_object_is_awaited() -> None:
    class Greeter:
        __name__ = "greet"

        async def __call__(self, who: str) -> str:
            return f"hi {who}"

    tool = PythonFunction.from_callable(Greeter())
    assert await tool.invoke({"who": "bob"}, CancellationToken.none()) == "hi bob"


async def test_cancellation_token_callbacks_links_and_wait() -> None:
    parent = CancellationSource()
    child = CancellationSource(parent.token)
    fired: list[str] = []
    child.token.register(lambda: fired.append("child"))
    removed = child.token.register(lambda: fired.append("removed"))
    removed.dispose()
    parent.cancel("stop")
    assert child.token.is_cancelled and child.token.reason == "stop"
    assert fired == ["child"]
    await child.token.wait()
    late = CancellationSource(parent.token)
    assert late.token.is_cancelled
    with pytest.raises(Exception, match="stop"):
        late.token.raise_if_cancelled()
    assert not CancellationToken.none().can_be_cancelled

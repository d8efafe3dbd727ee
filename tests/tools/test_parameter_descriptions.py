"""Where a Python tool's descriptions come from, and what it refuses at registration.

A parameter's description: a ``Field`` description, else an ``Annotated`` string,
else its docstring section (Google, NumPy or Sphinx, parsed with griffe). The
tool's description: the docstring without its sections. A parameter the JSON
schema cannot express is refused at construction, naming the tool and the parameter.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from typing import Annotated, Any

import pytest
from pydantic import Field

from tether_clr import CancellationToken, PythonFunction, ToolCall, ToolFailureCodes, ToolRegistry
from tether_clr.tools.docstrings import detect_style, parse_docstring


def google(city: str, days: int = 3) -> str:
    """Forecast the weather.

    Uses the nearest station.

    Args:
        city: The city to forecast,
            by its English name.
        days: How many days ahead.

    Returns:
        The forecast as text.
    """
    return city


def numpy(city: str, days: int = 3) -> str:
    """Forecast the weather.

    Uses the nearest station.

    Parameters
    ----------
    city : str
        The city to forecast,
        by its English name.
    days : int
        How many days ahead.

    Returns
    -------
    str
        The forecast as text.
    """
    return city


def sphinx(city: str, days: int = 3) -> str:
    """Forecast the weather.

    Uses the nearest station.

    :param city: The city to forecast,
        by its English name.
    :param int days: How many days ahead.
    :returns: The forecast as text.
    """
    return city


@pytest.mark.parametrize(("fn", "style"), [(google, "google"), (numpy, "numpy"), (sphinx, "sphinx")])
def test_each_docstring_style_describes_each_parameter_and_leaves_the_text_as_the_tool_description(
    fn: Callable[..., Any], style: str
) -> None:
    tool = PythonFunction.from_callable(fn)
    assert tool.description == "Forecast the weather.\n\nUses the nearest station."
    properties = tool.json_schema["properties"]
    assert properties["city"] == {"type": "string", "description": "The city to forecast,\nby its English name."}
    assert properties["days"] == {"type": "integer", "default": 3, "description": "How many days ahead."}
    assert parse_docstring(inspect.getdoc(fn)).style == style


def test_a_docstring_without_sections_is_the_description_as_written() -> None:
    def plain(x: int) -> int:
        """Double a number.

        Note that the result may be negative: args are not checked.
        """
        return 2 * x

    tool = PythonFunction.from_callable(plain)
    assert tool.description == "Double a number.\n\nNote that the result may be negative: args are not checked."
    assert tool.json_schema["properties"]["x"] == {"type": "integer"}


def test_style_detection_tries_sphinx_then_google_then_numpy_and_falls_back_to_google() -> None:
    assert detect_style("Text.\n\n:param x: one") == "sphinx"
    assert detect_style(":param x: one\nArgs:\n    x: two") == "sphinx"
    assert detect_style("Text.\n\nArgs:\n    x: one") == "google"
    assert detect_style("Text.\n\nParameters\n----------\nx\n    one") == "numpy"
    assert detect_style("Just text.") == "google"


def test_an_explicit_description_wins_over_the_docstring() -> None:
    def tool_fn(
        a: str = Field(description="from Field"),
        b: Annotated[str, Field(description="from Annotated Field")] = "",
        c: Annotated[str, "from Annotated text"] = "",
        d: str = "",
    ) -> str:
        """Do it.

        Args:
            a: from docstring a
            b: from docstring b
            c: from docstring c
            d: from docstring d
        """
        return a

    properties = PythonFunction.from_callable(tool_fn).json_schema["properties"]
    assert {name: prop["description"] for name, prop in properties.items()} == {
        "a": "from Field",
        "b": "from Annotated Field",
        "c": "from Annotated text",
        "d": "from docstring d",
    }


def test_an_explicit_tool_description_still_takes_parameter_descriptions_from_the_docstring() -> None:
    tool = PythonFunction.from_callable(google, description="Weather.")
    assert tool.description == "Weather."
    assert tool.json_schema["properties"]["days"]["description"] == "How many days ahead."


def test_griffe_logs_nothing_for_a_docstring_it_cannot_fully_parse(caplog: pytest.LogCaptureFixture) -> None:
    def sloppy(x: int) -> int:
        """Do it.

        Args:
            x has no colon here
            y: not a parameter

        Returns:
        """
        return x

    with caplog.at_level(logging.DEBUG):
        PythonFunction.from_callable(sloppy)
        PythonFunction.from_callable(numpy)
    assert [r for r in caplog.records if r.name.startswith("griffe")] == []


class Opaque:
    """A class pydantic knows nothing about."""


def test_a_parameter_the_schema_cannot_express_is_refused_naming_it_and_the_tool() -> None:
    def bad(ok: int, handle: Opaque) -> None: ...

    with pytest.raises(TypeError, match=r"^bad: parameter 'handle' cannot be described by a JSON schema"):
        PythonFunction.from_callable(bad)

    def callback(ok: int, on_done: Callable[[], None]) -> None: ...

    with pytest.raises(TypeError, match=r"^callback: parameter 'on_done' cannot be described"):
        PythonFunction.from_callable(callback)


def test_var_args_and_field_aliases_are_refused_naming_the_parameter() -> None:
    with pytest.raises(TypeError, match=r"bad: parameter 'items': \*args/\*\*kwargs"):
        PythonFunction.from_callable(lambda *items: items, name="bad")
    with pytest.raises(TypeError, match=r"bad: parameter 'options': \*args/\*\*kwargs"):
        PythonFunction.from_callable(lambda **options: options, name="bad")

    def aliased(x: int = Field(1, alias="y")) -> int:
        return x

    with pytest.raises(TypeError, match=r"aliased: parameter 'x' has a Field alias"):
        PythonFunction.from_callable(aliased)


@pytest.mark.anyio
async def test_a_call_without_a_required_field_parameter_is_invalid_args_and_the_body_never_runs() -> None:
    ran: list[object] = []

    def greet(name: str = Field(description="who")) -> str:
        ran.append(name)
        return f"hi {name}"

    registry = ToolRegistry()
    registry.register(PythonFunction.from_callable(greet))
    [missing, given] = await registry.execute_batch(
        [ToolCall("c1", "greet", "{}"), ToolCall("c2", "greet", '{"name": "bo"}')], registry.seal()
    )
    assert missing.failure is not None and missing.failure.code is ToolFailureCodes.INVALID_ARGS
    assert "name" in missing.failure.message
    assert given.value == "hi bo"
    assert ran == ["bo"]


@pytest.mark.anyio
async def test_a_field_default_factory_gives_the_body_a_fresh_value_never_the_field_info() -> None:
    def collect(tags: list[str] = Field(default_factory=list, description="labels")) -> list[str]:
        tags.append("x")
        return tags

    tool = PythonFunction.from_callable(collect)
    assert tool.json_schema["properties"]["tags"] == {"type": "array", "items": {"type": "string"}, "description": "labels"}
    assert await tool.invoke({}, CancellationToken.none()) == ["x"]
    assert await tool.invoke({}, CancellationToken.none()) == ["x"]


@pytest.mark.anyio
async def test_a_required_field_may_follow_a_defaulted_parameter_since_arguments_bind_by_name() -> None:
    """validate_call refuses this signature; Python allows it (the Field is a default), and a tool binds by name."""

    def late(first: int = 1, second: str = Field(description="required")) -> list[object]:
        return [first, second]

    tool = PythonFunction.from_callable(late)
    assert tool.json_schema["required"] == ["second"]
    assert await tool.invoke({"second": "s"}, CancellationToken.none()) == [1, "s"]


def test_text_after_a_docstring_section_stays_in_the_tool_description() -> None:
    """The page says text before, between and after the sections is kept."""
    def fn(x: int) -> int:
        """Before.

        Args:
            x: The x.

        After.
        """
        return x

    tool = PythonFunction.from_callable(fn)
    assert tool.description == "Before.\n\nAfter."
    assert tool.json_schema["properties"]["x"]["description"] == "The x."

"""A PythonFunction reads its parameters as pydantic's ``validate_call`` reads them, side by side on the same functions.

``Field()`` as a default, ``Annotated[T, Field(...)]``, the two together and
``default_factory``: the same JSON schema (so the same required set and the same
defaults), and the same verdict and the same values in the body for the same
inputs, through ``invoke`` and through the pipeline (``execute_batch``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Annotated, Any, Literal

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import Field, TypeAdapter, ValidationError, validate_call

from tether_clr import CancellationToken, PythonFunction, ToolArgumentError, ToolCall, ToolFailureCodes, ToolRegistry


def greet(name: str = Field(description="who", min_length=2)) -> dict[str, Any]:
    return {"name": name}


def count(n: Annotated[int, Field(gt=0)] = 5, tags: list[str] = Field(default_factory=list)) -> dict[str, Any]:
    return {"n": n, "tags": tags}


def mixed(
    a: int,
    g: int = Field(description="required: a Field without a default"),
    b: str = Field("x", max_length=3),
    c: Annotated[float, Field(ge=0, le=1)] = Field(0.5, description="ratio"),
    d: Annotated[int, Field(default=4)] = 7,
    f: int | None = Field(None),
    k: Literal["up", "down"] = Field("up", description="direction"),
) -> dict[str, Any]:
    return {"a": a, "g": g, "b": b, "c": c, "d": d, "f": f, "k": k}


FUNCTIONS: dict[str, Callable[..., dict[str, Any]]] = {"greet": greet, "count": count, "mixed": mixed}

# Inputs as a model sends them (JSON values of the declared JSON types), accepted and refused.
TABLE: list[tuple[str, dict[str, Any]]] = [
    ("greet", {"name": "bob"}),
    ("greet", {}),
    ("greet", {"name": "b"}),
    ("greet", {"name": 3}),
    ("greet", {"name": "bob", "other": 1}),
    ("count", {}),
    ("count", {"n": 2}),
    ("count", {"n": 0}),
    ("count", {"tags": ["a", "b"]}),
    ("count", {"tags": [1]}),
    ("mixed", {"a": 1, "g": 2}),
    ("mixed", {"a": 1}),
    ("mixed", {"g": 2}),
    ("mixed", {"a": 1, "g": 2, "b": "abc", "c": 1, "d": 0, "f": 3, "k": "down"}),
    ("mixed", {"a": 1, "g": 2, "b": "abcd"}),
    ("mixed", {"a": 1, "g": 2, "c": 1.5}),
    ("mixed", {"a": 1, "g": 2, "c": -0.1}),
    ("mixed", {"a": 1, "g": 2, "f": None}),
    ("mixed", {"a": 1, "g": 2, "k": "sideways"}),
]


def _strip_titles(schema: dict[str, Any]) -> dict[str, Any]:
    schema = json.loads(json.dumps(schema))
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
    return schema


def _validate_call_verdict(fn: Callable[..., dict[str, Any]], arguments: dict[str, Any]) -> dict[str, Any] | None:
    """The values the body receives under validate_call, or None when it refuses the call."""
    try:
        return validate_call(fn)(**arguments)
    except ValidationError:
        return None


async def _invoke_verdict(fn: Callable[..., dict[str, Any]], arguments: dict[str, Any]) -> dict[str, Any] | None:
    tool = PythonFunction.from_callable(fn, run_sync_in_thread=False)
    try:
        received: dict[str, Any] = await tool.invoke(dict(arguments), CancellationToken.none())
    except ToolArgumentError:
        return None
    return received


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_the_schema_is_validate_calls_own_so_the_required_set_and_defaults_agree(name: str) -> None:
    fn = FUNCTIONS[name]
    ours = PythonFunction.from_callable(fn).json_schema
    theirs = _strip_titles(TypeAdapter(fn).json_schema())
    assert ours == theirs
    assert set(ours.get("required", [])) == set(theirs.get("required", []))


def test_field_without_default_is_required_and_its_description_and_constraints_reach_the_schema() -> None:
    schema = PythonFunction.from_callable(greet).json_schema
    assert schema["required"] == ["name"]
    assert schema["properties"]["name"] == {"type": "string", "description": "who", "minLength": 2}
    mixed_schema = PythonFunction.from_callable(mixed).json_schema
    assert mixed_schema["properties"]["c"] == {
        "type": "number", "description": "ratio", "minimum": 0, "maximum": 1, "default": 0.5,
    }
    assert mixed_schema["properties"]["b"] == {"type": "string", "maxLength": 3, "default": "x"}


@pytest.mark.anyio
@pytest.mark.parametrize(("name", "arguments"), TABLE, ids=[f"{n}-{json.dumps(a)}" for n, a in TABLE])
async def test_invoke_accepts_refuses_and_binds_as_validate_call_does(name: str, arguments: dict[str, Any]) -> None:
    fn = FUNCTIONS[name]
    expected = _validate_call_verdict(fn, arguments)
    assert await _invoke_verdict(fn, arguments) == expected


@pytest.mark.anyio
@pytest.mark.parametrize(("name", "arguments"), TABLE, ids=[f"{n}-{json.dumps(a)}" for n, a in TABLE])
async def test_the_pipeline_accepts_refuses_and_binds_as_validate_call_does(name: str, arguments: dict[str, Any]) -> None:
    fn = FUNCTIONS[name]
    registry = ToolRegistry()
    registry.register(PythonFunction.from_callable(fn))
    [outcome] = await registry.execute_batch([ToolCall("c1", name, json.dumps(arguments))], registry.seal())
    expected = _validate_call_verdict(fn, arguments)
    if expected is None:
        assert outcome.is_error and outcome.failure is not None and outcome.failure.code is ToolFailureCodes.INVALID_ARGS
    else:
        assert not outcome.is_error, outcome.failure
        assert outcome.value == expected  # the body returns the values it received


_JSON_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-3, max_value=3),
    st.floats(min_value=-2, max_value=2, allow_nan=False),
    st.sampled_from(["", "a", "ab", "abcd", "up", "down", "5", "0.5"]),
    st.lists(st.sampled_from(["a", "b", 1]), max_size=2),
)


def _arguments(name: str) -> st.SearchStrategy[dict[str, Any]]:
    keys = [*TypeAdapter(FUNCTIONS[name]).json_schema()["properties"], "unknown"]
    return st.dictionaries(st.sampled_from(keys), _JSON_VALUES, max_size=len(keys))


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@pytest.mark.parametrize("name", sorted(FUNCTIONS))
@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_arguments_get_the_same_verdict_and_values_as_validate_call(backend: str, name: str, data: st.DataObject) -> None:
    fn = FUNCTIONS[name]
    arguments = data.draw(_arguments(name))
    ours = anyio.run(_invoke_verdict, fn, arguments, backend=backend)
    assert ours == _validate_call_verdict(fn, arguments)

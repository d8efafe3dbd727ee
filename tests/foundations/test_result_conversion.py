"""Results are JSON without loss, or TOOL_ERROR naming the stage that produced them:
no silent coercion, and the same value is recorded the same way in every process."""

from __future__ import annotations

import collections
import dataclasses
import datetime
import enum
import os
import subprocess
import sys
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, HttpUrl

from tests.support import ROOT, add, call
from tether_clr import (
    JsonConversionError,
    ToolExecutionOutcome,
    ToolFailureCodes,
    ToolPostDecision,
    ToolRegistry,
    to_json_value,
)

pytestmark = pytest.mark.anyio


def _deep_list(depth: int) -> list[Any]:
    root: list[Any] = []
    current = root
    for _ in range(depth):
        child: list[Any] = []
        current.append(child)
        current = child
    return root


def _cycle() -> list[Any]:
    value: list[Any] = [1]
    value.append(value)
    return value


def _generator() -> Any:
    return (x for x in range(3))


UNCONVERTIBLE: dict[str, Any] = {
    "bytes that are not UTF-8": b"\xff\xfe",
    "a reference cycle": _cycle(),
    "a 100,000-deep list": _deep_list(100_000),
    "NaN": float("nan"),
    "infinity inside a dict": {"x": float("inf")},
    "an int key and its text colliding": {1: "a", "1": "b"},
    "a generator": _generator(),
    "an iterator": iter([1, 2]),
    "a complex number": 1 + 2j,
    "a tuple key": {(1, 2): "x"},
    "a float key": {1.5: "x"},
    "a None key": {None: "x"},
    "a bool key": {True: "x"},
    "a lone surrogate": "\ud800",
    "a lone surrogate key": {"\udc00": 1},
    "an integer Python will not write": 10**5000,
    "an arbitrary object": object(),
}


@pytest.mark.parametrize("value", UNCONVERTIBLE.values(), ids=UNCONVERTIBLE.keys())
async def test_tool_result_that_cannot_become_json_is_tool_error_naming_the_tool(value: Any) -> None:
    registry = ToolRegistry()

    async def tool() -> Any:
        return value

    add(registry, tool, "t")
    [outcome] = await registry.execute_batch([call("c1", "t")], registry.seal())
    assert outcome.code is ToolFailureCodes.TOOL_ERROR
    assert outcome.failure.message.startswith("tool result is not JSON-compatible: $")
    outcome.to_function_result().to_json()


@pytest.mark.parametrize("value", UNCONVERTIBLE.values(), ids=UNCONVERTIBLE.keys())
async def test_post_execute_replacement_that_cannot_become_json_is_tool_error_naming_the_listener(value: Any) -> None:
    registry = ToolRegistry()
    add(registry, lambda: "fine", "t")

    async def replace(execution: Any, outcome: Any, next_: Any) -> Any:
        return ToolPostDecision.replace(value)

    registry.register_post_execute_listener(None, replace)
    [outcome] = await registry.execute_batch([call("c1", "t")], registry.seal())
    assert outcome.code is ToolFailureCodes.TOOL_ERROR
    assert outcome.failure.message.startswith("post-execute replacement is not JSON-compatible: $")


@pytest.mark.parametrize("value", UNCONVERTIBLE.values(), ids=UNCONVERTIBLE.keys())
def test_outcome_success_raises_only_type_error(value: Any) -> None:
    with pytest.raises(TypeError) as caught:
        ToolExecutionOutcome.success("c1", "t", value)
    assert type(caught.value) is JsonConversionError


def test_conversion_errors_say_where_and_why() -> None:
    with pytest.raises(JsonConversionError, match=r"^\$\['a'\]\[1\]: complex is not a JSON value"):
        to_json_value({"a": [1, 2j]})
    with pytest.raises(JsonConversionError, match="would lose a value"):
        to_json_value({1: "a", "1": "b"})
    with pytest.raises(JsonConversionError, match="would be consumed"):
        to_json_value({"a": _generator()})
    with pytest.raises(JsonConversionError, match="reference cycle"):
        to_json_value(_cycle())
    with pytest.raises(JsonConversionError, match="deeper than 128"):
        to_json_value(_deep_list(129))
    assert to_json_value(_deep_list(127)) == _deep_list(127)
    ToolExecutionOutcome.success("c", "t", _deep_list(127)).to_function_result().to_json()


class Color(enum.Enum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


class Point(BaseModel):
    x: int
    tags: set[str]


class Link(BaseModel):
    url: HttpUrl


@dataclasses.dataclass
class Box:
    point: Point
    when: datetime.date


CONVERTED: dict[str, tuple[Any, Any]] = {
    "a tuple": ((1, "a"), [1, "a"]),
    "an int key": ({1: "a"}, {"1": "a"}),
    "an enum key and value": ({Color.RED: Level.HIGH}, {"red": 3}),
    "a set, sorted": ({"b", "a", "c"}, ["a", "b", "c"]),
    "a frozenset of mixed types, sorted by JSON text": (frozenset({2, "1", 10}), ["1", 10, 2]),
    "UTF-8 bytes": (b"caf\xc3\xa9", "café"),
    "a pydantic model": (Point(x=1, tags={"z", "y"}), {"x": 1, "tags": ["y", "z"]}),
    "a dataclass": (Box(Point(x=2, tags=set()), datetime.date(2024, 2, 29)), {"point": {"x": 2, "tags": []}, "when": "2024-02-29"}),
    "a datetime": (datetime.datetime(2024, 1, 1, tzinfo=datetime.UTC), "2024-01-01T00:00:00Z"),
    "a timedelta": (datetime.timedelta(seconds=90), "PT1M30S"),
    "a UUID": (uuid.UUID(int=1), "00000000-0000-0000-0000-000000000001"),
    "a Decimal": (Decimal("1.10"), "1.10"),
    "a path": (Path("/tmp/x"), "/tmp/x"),
    "a str subclass": (type("Name", (str,), {})("n"), "n"),
    "a big int": (10**100, 10**100),
    "a deque": (collections.deque([1, 2]), [1, 2]),
    "a pydantic URL in a model": (Link(url="https://example.org/a"), {"url": "https://example.org/a"}),
}


@pytest.mark.parametrize(("value", "expected"), CONVERTED.values(), ids=CONVERTED.keys())
def test_documented_types_are_converted_without_loss(value: Any, expected: Any) -> None:
    assert ToolExecutionOutcome.success("c1", "t", value).value == expected


_SET_SCRIPT = """
from tether_clr import ToolExecutionOutcome
values = {"alpha", "beta", "gamma", "delta", "epsilon", ("t", 1) and "zeta", 3, 1.5}
print(ToolExecutionOutcome.success("c", "t", {"s": values, "f": frozenset(values)}).value_json)
"""


def test_sets_are_recorded_identically_in_processes_with_different_hash_seeds() -> None:
    children = [
        subprocess.Popen(
            [sys.executable, "-c", _SET_SCRIPT],
            env={**os.environ, "PYTHONHASHSEED": seed},
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        for seed in ("1", "2", "3")
    ]
    texts = {child.communicate()[0] for child in children}
    assert all(child.returncode == 0 for child in children)
    assert len(texts) == 1 and texts.pop().startswith('{"f":["alpha","beta","delta","epsilon","gamma","zeta",1.5,3]')

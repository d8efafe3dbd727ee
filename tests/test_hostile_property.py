"""Property: whatever a hostile model sends and whatever a tool returns or raises, every
call gets exactly one outcome, in model order, and every outcome serializes and is
recorded by the SQLite log."""

from __future__ import annotations

import datetime
import functools
import json
import math
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support import Unprintable
from tether_clr import (
    ArgumentLimits,
    PythonFunction,
    SqliteToolLog,
    ToolCall,
    ToolError,
    ToolPostDecision,
    ToolRegistrationOptions,
    ToolRegistry,
)

pytestmark = pytest.mark.anyio

# ---------------------------------------------------------------- strategies
SURROGATES = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF, exclude_categories=())
ANY_CHAR = st.one_of(st.characters(exclude_categories=()), SURROGATES)
HOSTILE_TEXT = st.text(ANY_CHAR, max_size=12)
# Empty ids and names are excluded: the invariant result policy refuses them on purpose,
# raising ResultPolicyError (tests/execution/test_pipeline.py), which is not what this property is about.
NONEMPTY_TEXT = st.text(ANY_CHAR, min_size=1, max_size=12)
NAMES = st.one_of(st.sampled_from(["produce", "fail", "nothing"]), NONEMPTY_TEXT)
CALL_IDS = st.one_of(st.sampled_from(["call_0", "call_1", "call_2"]), NONEMPTY_TEXT)


def _nest(depth: int) -> str:
    return '{"i": 0, "x": ' + "[" * depth + "]" * depth + "}"


ARGUMENT_TEXT = st.one_of(
    st.integers(0, 7).map(lambda i: json.dumps({"i": i})),
    st.integers(0, 7).map(lambda i: f'{{"i": {i}, "extra": "\\ud800"}}'),
    st.integers(0, 7).map(lambda i: f'{{"i": {i}, "extra": "\udc00"}}'),
    st.sampled_from(["", " ", "{}", "[]", "null", '{"i": 1e400}', '{"i": NaN}', '{"i": "0"}', "{", '"\\ud800"']),
    st.integers(60, 3000).map(_nest),
    st.integers(4000, 6000).map(lambda n: '{"i": 1' + "0" * n + "}"),
    st.text(ANY_CHAR, max_size=30),
)


def _odd(kind: str) -> Any:
    return {"huge": 10**5000, "object": object(), "nan": math.nan}[kind]


def _deep(depth: int) -> list[Any]:
    root: list[Any] = []
    node = root
    for _ in range(depth):
        node.append([])
        node = node[0]
    return root


def _cycle(items: list[Any]) -> list[Any]:
    items = list(items)
    items.append(items)
    return items


def _generator(items: list[Any]) -> Iterator[Any]:
    return (item for item in items)


SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    HOSTILE_TEXT,
    st.binary(max_size=6),
    st.complex_numbers(max_magnitude=10),
    st.datetimes(timezones=st.just(datetime.UTC)),
    st.sampled_from(["huge", "object", "nan"]).map(_odd),
)
KEYS = st.one_of(HOSTILE_TEXT, st.integers(-3, 3), st.tuples(st.integers(0, 2)), st.booleans(), st.none())
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(KEYS, inner, max_size=4),
        st.frozensets(st.one_of(st.integers(), HOSTILE_TEXT), max_size=4),
        st.lists(inner, max_size=3).map(_cycle),
        st.lists(inner, max_size=3).map(_generator),
    ),
    max_leaves=6,
)
RESULTS = st.one_of(VALUES, st.integers(100, 300).map(_deep))
ERRORS = st.one_of(
    st.just(Unprintable()),
    HOSTILE_TEXT.map(ToolError),
    HOSTILE_TEXT.map(ValueError),
)


@st.composite
def batches(draw: st.DrawFn) -> tuple[list[ToolCall], list[Any], list[BaseException], list[Any]]:
    calls = [
        ToolCall(draw(CALL_IDS), draw(NAMES), draw(ARGUMENT_TEXT), parent_call_id=draw(st.none() | HOSTILE_TEXT))
        for _ in range(draw(st.integers(1, 8)))
    ]
    results = draw(st.lists(RESULTS, min_size=4, max_size=4))
    errors = draw(st.lists(ERRORS, min_size=4, max_size=4))
    replacements = draw(st.lists(st.one_of(st.just(None), st.just(None), RESULTS), min_size=4, max_size=4))
    return calls, results, errors, replacements


# --------------------------------------------------------------------- test
_EXAMPLE: dict[str, list[Any]] = {}


@functools.cache
def _registry() -> ToolRegistry:
    """One registry for every example (registration compiles schemas); tools read the example's values."""
    registry = ToolRegistry(argument_limits=ArgumentLimits(max_chars=20_000))

    def produce(i: int) -> Any:
        return _EXAMPLE["results"][i % 4]

    def fail(i: int = 0) -> Any:
        raise _EXAMPLE["errors"][i % 4]

    registry.register(
        PythonFunction.from_callable(produce), None, ToolRegistrationOptions(is_concurrency_safe=lambda a: a.get("i", 0) % 2 == 0)
    )
    registry.register(PythonFunction.from_callable(fail), None, ToolRegistrationOptions(is_concurrency_safe=True))

    async def maybe_replace(execution: Any, outcome: Any, next_: Any) -> Any:
        replacement = _EXAMPLE["replacements"][len(execution.call_id) % 4]
        return ToolPostDecision.replace(replacement) if replacement is not None else await next_()

    registry.register_post_execute_listener(None, maybe_replace)
    return registry


@pytest.fixture
def folder(tmp_path: Path) -> Iterator[Path]:
    """Where each example's log goes: memory-backed when the machine has it (the log fsyncs)."""
    shm = Path("/dev/shm")
    if not shm.is_dir():
        yield tmp_path
        return
    folder = Path(tempfile.mkdtemp(prefix="tether-property-", dir=shm))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@settings(max_examples=100, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(batch=batches())
async def test_every_hostile_call_gets_one_recorded_serializable_outcome_in_model_order(
    batch: tuple[list[ToolCall], list[Any], list[BaseException], list[Any]], folder: Path
) -> None:
    calls, results, errors, replacements = batch
    registry = _registry()
    _EXAMPLE.update(results=results, errors=errors, replacements=replacements)
    path = folder / f"{uuid.uuid4().hex}.sqlite3"
    with SqliteToolLog(path) as log:
        outcomes = await registry.execute_batch(calls, registry.seal(), max_parallelism=3, sink=log)
        declared, recorded, pending = log.declared_calls(), log.outcomes(), log.pending_calls()

    assert [o.call_id for o in outcomes] == [c.recordable().call_id for c in calls]
    for outcome in outcomes:
        text = outcome.to_function_result().to_json()
        assert json.loads(text)["callId"] == outcome.call_id
        outcome.value_json.encode("utf-8")
    assert [d.call_id for d in declared] == [o.call_id for o in outcomes]
    assert [d.position for d in declared] == list(range(len(calls)))
    assert recorded == outcomes
    assert pending == []

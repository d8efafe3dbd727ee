"""Hostile model input stops at the edge as a stable failure: argument text over the
limits or beyond what JSON can hold, text that is not valid Unicode, and schemas
that would reach the network."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support import add, call, run_one
from tether_clr import (
    ArgumentLimits,
    InMemoryToolLog,
    SqliteToolLog,
    ToolCall,
    ToolExecutionMode,
    ToolExecutionOutcome,
    ToolFailureCodes,
    ToolRegistry,
)

pytestmark = pytest.mark.anyio

INVALID = ToolFailureCodes.INVALID_ARGS


def _echo_registry(**kwargs: Any) -> ToolRegistry:
    registry = ToolRegistry(**kwargs)

    def echo(a: Any = None) -> Any:
        return a

    add(registry, echo, "echo", parallel=lambda _args: True)
    return registry


def _nested(depth: int) -> str:
    return '{"a": ' + "[" * depth + "]" * depth + "}"


def _assert_recordable(outcome: ToolExecutionOutcome) -> None:
    json.loads(outcome.to_function_result().to_json())
    outcome.value_json.encode("utf-8")


# ------------------------------------------------------------ argument text
HOSTILE_ARGUMENT_TEXT = {
    "nested 1,000 deep": _nested(1000),
    "nested 100,000 deep": _nested(100_000),
    "unbalanced 100,000 deep": "[" * 100_000,
    "integer over the digit limit": '{"a": 1' + "0" * 5000 + "}",
    "number out of float range": '{"a": 1e400}',
    "negative number out of float range": '{"a": -1e400}',
    "NaN": '{"a": NaN}',
    "Infinity": '{"a": Infinity}',
}


@pytest.mark.parametrize("raw", HOSTILE_ARGUMENT_TEXT.values(), ids=HOSTILE_ARGUMENT_TEXT.keys())
async def test_argument_text_json_cannot_hold_is_invalid_args(raw: str) -> None:
    registry = _echo_registry()
    outcome = await run_one(registry, call("c1", "echo", raw))
    assert outcome.code is INVALID
    _assert_recordable(outcome)


@pytest.mark.parametrize("raw", HOSTILE_ARGUMENT_TEXT.values(), ids=HOSTILE_ARGUMENT_TEXT.keys())
def test_classify_reads_unreadable_arguments_as_exclusive(raw: str) -> None:
    registry = _echo_registry()
    assert registry.classify(call("c1", "echo", "{}"), registry.seal()) is ToolExecutionMode.PARALLEL
    assert registry.classify(call("c1", "echo", raw), registry.seal()) is ToolExecutionMode.EXCLUSIVE


async def test_a_subclass_classifier_that_raises_fails_closed_and_every_call_still_runs_alone() -> None:
    from tether_clr import ToolRegistry

    class Raising(ToolRegistry):
        def classify(self, call: Any, view: Any) -> ToolExecutionMode:
            raise RuntimeError("the host's classifier is broken")

    def echo(text: str) -> str:
        return text

    registry = Raising()
    add(registry, echo, parallel=True)
    outcomes = await registry.execute_batch([call("c1", "echo", {"text": "a"}), call("c2", "echo", {"text": "b"})],
                                            registry.seal())  # fmt: skip
    assert [outcome.value for outcome in outcomes] == ["a", "b"]


async def test_argument_nesting_over_the_limit_is_refused_and_limit_is_configurable() -> None:
    default = _echo_registry()
    assert default.argument_limits.max_depth == 64
    at_limit = await run_one(default, call("c1", "echo", _nested(63)))  # the object itself is one level
    assert at_limit.code is None
    over = await run_one(default, call("c2", "echo", _nested(64)))
    assert over.code is INVALID and "65 levels" in over.failure.message and "limit is 64" in over.failure.message
    strict = _echo_registry(argument_limits=ArgumentLimits(max_depth=3))
    assert (await run_one(strict, call("c3", "echo", _nested(2)))).code is None
    assert (await run_one(strict, call("c4", "echo", _nested(3)))).code is INVALID


async def test_brackets_inside_strings_do_not_count_as_nesting() -> None:
    registry = _echo_registry(argument_limits=ArgumentLimits(max_depth=2))
    text = json.dumps({"a": "[[[[{{{{" * 10 + '\\"]]' + "}}"})
    outcome = await run_one(registry, call("c1", "echo", text))
    assert outcome.code is None and outcome.value == json.loads(text)["a"]


async def test_argument_text_over_the_size_limit_is_refused_before_parsing() -> None:
    registry = _echo_registry(argument_limits=ArgumentLimits(max_chars=100))
    ok = await run_one(registry, call("c1", "echo", json.dumps({"a": "x" * 80})))
    assert ok.code is None
    big = await run_one(registry, call("c2", "echo", json.dumps({"a": "x" * 200})))
    assert big.code is INVALID and "limit is 100" in big.failure.message
    assert registry.classify(call("c2", "echo", json.dumps({"a": "x" * 200})), registry.seal()) is ToolExecutionMode.EXCLUSIVE
    assert ToolRegistry().argument_limits.max_chars == 1_048_576


def test_argument_limits_must_be_positive_and_bounded() -> None:
    for bad in ({"max_chars": 0}, {"max_depth": 0}, {"max_depth": 10_000}, {"max_chars": True}):
        with pytest.raises(ValueError):
            ArgumentLimits(**bad)
    with pytest.raises(TypeError):
        ToolRegistry(argument_limits={"max_depth": 3})  # type: ignore[arg-type]


async def test_blank_argument_text_means_no_arguments() -> None:
    registry = ToolRegistry()
    add(registry, lambda: "ran", "t")
    for blank in ("", "   ", "\n\t"):
        assert (await run_one(registry, call("c1", "t", blank))).value == "ran"


# ------------------------------------------------------------ lone surrogates
async def test_escaped_lone_surrogate_in_arguments_is_invalid_args_and_recorded(tmp_path: Any) -> None:
    registry = _echo_registry()
    raw = '{"a": "\\ud800"}'
    with SqliteToolLog(tmp_path / "log.sqlite3") as log:
        outcome = await run_one(registry, call("c1", "echo", raw), sink=log)
        assert outcome.code is INVALID and "Unicode" in outcome.failure.message
        _assert_recordable(outcome)
        assert [c.arguments for c in log.declared_calls()] == [raw]
        assert [o.code for o in log.outcomes()] == [INVALID]


@pytest.mark.parametrize("field", ["call_id", "name", "arguments", "parent_call_id"])
async def test_raw_lone_surrogate_in_a_call_is_invalid_args_recorded_with_the_same_escaped_id(field: str, tmp_path: Any) -> None:
    registry = _echo_registry()
    fields: dict[str, Any] = {"call_id": "c1", "name": "echo", "arguments": '{"a": "x"}', "parent_call_id": "p"}
    fields[field] = {"call_id": "c\ud800", "name": "ec\udfffho", "arguments": '{"a": "\ud800"}', "parent_call_id": "p\ud800"}[field]
    hostile = ToolCall(**fields)
    policy_saw: list[tuple[str, str]] = []
    registry.register_result_policy(None, lambda e, o: policy_saw.append((e.call_id, o.call_id)))
    memory = InMemoryToolLog()
    with SqliteToolLog(tmp_path / "log.sqlite3") as log:
        [outcome] = await registry.execute_batch([hostile], registry.seal(), sink=log)
        await registry.execute_batch([hostile], registry.seal(), sink=memory)
        assert outcome.code is INVALID and field in outcome.failure.message
        _assert_recordable(outcome)
        # One rule: the declaration, the execution and the outcome carry the same escaped text.
        declared = log.declared_calls()[0]
        assert getattr(declared, field) == getattr(hostile, field).encode("utf-8", "backslashreplace").decode()
        assert declared.call_id == outcome.call_id == policy_saw[0][0] == policy_saw[0][1]
        assert log.pending_calls() == []
        assert memory.calls[0].call_id == memory.outcomes[0].call_id == outcome.call_id
        assert memory.pending_calls() == []


def test_tool_names_and_descriptions_that_are_not_valid_unicode_are_refused_at_registration() -> None:
    class Named:
        def __init__(self, name: str, description: str) -> None:
            self.name, self.description = name, description
            self.json_schema = {"type": "object"}

        async def invoke(self, arguments: Any, cancellation: Any) -> Any:
            return None

    registry = ToolRegistry()
    with pytest.raises(ValueError, match="Unicode"):
        registry.register(Named("bad\ud800", "d"))
    with pytest.raises(ValueError, match="Unicode"):
        registry.register(Named("ok", "bad \udc00"))
    bad_schema = Named("ok", "d")
    bad_schema.json_schema = {"type": "object", "description": "\ud800"}
    with pytest.raises(TypeError, match="surrogate"):
        registry.register(bad_schema)
    assert registry.get_declarations() == []


async def test_lone_surrogates_in_messages_are_escaped(tmp_path: Any) -> None:
    from tether_clr import ToolError, ToolPreDecision

    registry = ToolRegistry()

    def fails() -> None:
        raise ToolError("bad \ud800 thing")

    def raises() -> None:
        raise ValueError("\udfff")

    add(registry, fails, "fails")
    add(registry, raises, "raises")
    add(registry, lambda: 1, "denied")

    async def deny(execution: Any, next_: Any) -> Any:
        if execution.name == "denied":
            return ToolPreDecision.deny("no \ud800")
        return await next_()

    registry.register_pre_execute_listener(None, deny)
    with SqliteToolLog(tmp_path / "log.sqlite3") as log:
        outcomes = await registry.execute_batch(
            [call("a", "fails"), call("b", "raises"), call("c", "denied")], registry.seal(), sink=log
        )
        assert [o.failure.message for o in outcomes] == ["bad \\ud800 thing", "ValueError: \\udfff", "no \\ud800"]
        for outcome in outcomes:
            _assert_recordable(outcome)
        assert [o.failure.message for o in log.outcomes()] == [o.failure.message for o in outcomes]


def test_outcome_factories_always_give_serializable_outcomes() -> None:
    failed = ToolExecutionOutcome.failed("c\ud800", "n\udfff", "TOOL_ERROR", "m\ud800")
    _assert_recordable(failed)
    assert failed.call_id == "c\\ud800" and failed.failure.message == "m\\ud800"


# ------------------------------------------------------------ schema references
class _SchemaTool:
    description = "d"

    def __init__(self, name: str, schema: dict[str, Any]) -> None:
        self.name = name
        self.json_schema = schema

    async def invoke(self, arguments: Any, cancellation: Any) -> Any:
        return arguments


REMOTE_REFS = {
    "remote http": {"type": "object", "properties": {"a": {"$ref": "http://example.invalid/schema.json"}}},
    "remote https fragment": {"type": "object", "properties": {"a": {"$ref": "https://example.invalid/s#/x"}}},
    "relative file": {"type": "object", "properties": {"a": {"$ref": "other.json"}}},
    "missing local def": {"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}},
    "dynamic ref elsewhere": {"type": "object", "properties": {"a": {"$dynamicRef": "http://example.invalid/x#meta"}}},
    "remote in $defs": {"type": "object", "$defs": {"x": {"$ref": "http://example.invalid/x"}}},
}


@pytest.mark.parametrize("schema", REMOTE_REFS.values(), ids=REMOTE_REFS.keys())
def test_schema_references_that_do_not_resolve_locally_are_refused_at_registration(
    schema: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    import urllib.request

    def no_network(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("registration tried to reach the network")

    monkeypatch.setattr(urllib.request, "urlopen", no_network)
    with pytest.raises(ValueError, match="does not resolve inside the schema"):
        ToolRegistry().register(_SchemaTool("t", schema))


async def test_local_schema_references_keep_working_without_any_retrieval(monkeypatch: pytest.MonkeyPatch) -> None:
    import urllib.request

    def no_network(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("validation tried to reach the network")

    monkeypatch.setattr(urllib.request, "urlopen", no_network)
    schema = {
        "type": "object",
        "$defs": {
            "point": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]},
            "embedded": {"$id": "urn:tether:embedded", "type": "string", "$defs": {"inner": {"$ref": "#"}}},
        },
        "properties": {
            "p": {"$ref": "#/$defs/point"},
            "e": {"$ref": "urn:tether:embedded"},
            "const": {"const": {"$ref": "http://example.invalid/not-a-reference"}},
        },
    }
    registry = ToolRegistry()
    registry.register(_SchemaTool("t", schema))
    ok = await run_one(registry, call("c1", "t", {"p": {"x": 1}, "e": "s"}))
    assert ok.code is None
    bad = await run_one(registry, call("c2", "t", {"p": {"x": "one"}}))
    assert bad.code is INVALID and "p/x" in bad.failure.message


async def test_function_call_content_with_values_json_cannot_hold_becomes_a_refused_call() -> None:
    registry = _echo_registry()
    for arguments in ({"a": float("nan")}, {"a": "\ud800"}, {"\udc00": 1}):
        hostile = ToolCall.from_function_call({"callId": "c1", "name": "echo", "arguments": arguments})
        outcome = await run_one(registry, hostile)
        assert outcome.code is INVALID
        _assert_recordable(outcome)


class _HalvesTool:
    """A custom tool with a hand-written schema (no pydantic model behind it)."""

    name = "halves"
    description = "Takes a multiple of one half."
    json_schema = {"type": "object", "properties": {"n": {"type": "number", "multipleOf": 0.5}}}

    def __init__(self) -> None:
        self.runs = 0

    async def invoke(self, arguments: dict[str, Any], cancellation: Any) -> Any:
        self.runs += 1
        return arguments["n"]


async def test_schema_keyword_that_cannot_be_evaluated_on_the_values_is_invalid_args() -> None:
    """jsonschema's multipleOf overflows on an integer too large for a float: the model's input
    is refused (INVALID_ARGS), never an OverflowError out of execute_batch."""
    registry = ToolRegistry()
    tool = _HalvesTool()
    registry.register(tool)
    outcome = await run_one(registry, call("1", "halves", '{"n": 1' + "0" * 400 + "}"))
    assert outcome.code is INVALID
    assert "OverflowError" in outcome.failure.message  # type: ignore[union-attr]
    assert tool.runs == 0
    ok = await run_one(registry, call("2", "halves", '{"n": 1.5}'))
    assert ok.value == 1.5


@pytest.mark.parametrize(
    ("field", "value"),
    [("call_id", 1), ("name", ["echo"]), ("arguments", {"a": 1}), ("parent_call_id", 7), ("argument_error", b"x")],
)
async def test_toolcall_fields_of_the_wrong_type_are_the_hosts_error_raised_before_anything_runs(field: str, value: Any) -> None:
    registry = _echo_registry()
    log = InMemoryToolLog()
    fields: dict[str, Any] = {"call_id": "1", "name": "echo", "arguments": "{}", field: value}
    with pytest.raises(TypeError, match=f"ToolCall.{field}"):
        await registry.execute_batch([ToolCall(**fields)], registry.seal(), sink=log)
    assert log.calls == [] and log.outcomes == []

"""Registrations, scoped visibility, declarations, sealed views, classification and
change events."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from tests.support import add, call
from tether_clr import (
    AgentPipelineScope,
    DuplicateToolError,
    PythonFunction,
    ToolExecutionMode,
    ToolRegistrationOptions,
    ToolRegistry,
    ToolsChangedEvent,
)

pytestmark = pytest.mark.anyio


def test_child_scope_inherits_session_and_owner() -> None:
    root = AgentPipelineScope(session_id="s1", session={"k": 1}, owner="alice")
    child = AgentPipelineScope(root)
    assert (child.session_id, child.session, child.owner) == ("s1", {"k": 1}, "alice")
    assert AgentPipelineScope(root, owner="alice").owner == "alice"


def test_child_scope_cannot_change_owner() -> None:
    root = AgentPipelineScope(owner="alice")
    with pytest.raises(ValueError, match="owner"):
        AgentPipelineScope(root, owner="mallory")


def test_scopes_compare_by_identity() -> None:
    a = AgentPipelineScope(session_id="same", owner="o")
    b = AgentPipelineScope(session_id="same", owner="o")
    assert a != b and a == a
    assert len({a, b}) == 2


def test_scoped_tool_shadows_global_and_ancestor() -> None:
    registry = ToolRegistry()
    root = AgentPipelineScope()
    child = root.child()
    add(registry, lambda: "global", "search")
    add(registry, lambda: "root", "search", scope=root)
    child_tool = add(registry, lambda: "child", "search", scope=child)
    assert registry.seal(None).get_tool("search") is not child_tool
    assert registry.seal(child).get_tool("search") is child_tool
    assert registry.seal(AgentPipelineScope()).get_declarations()[0].name == "search"


def test_scoped_tool_is_invisible_to_siblings_and_parents() -> None:
    registry = ToolRegistry()
    root = AgentPipelineScope()
    left, right = root.child(), root.child()
    add(registry, lambda: 1, "left_only", scope=left)
    assert "left_only" in registry.seal(left)
    assert "left_only" not in registry.seal(right)
    assert "left_only" not in registry.seal(root)


def test_duplicate_name_in_one_layer_raises() -> None:
    registry = ToolRegistry()
    scope = AgentPipelineScope()
    add(registry, lambda: 1, "t")
    add(registry, lambda: 1, "t", scope=scope)
    with pytest.raises(DuplicateToolError):
        add(registry, lambda: 2, "t")
    with pytest.raises(DuplicateToolError):
        add(registry, lambda: 2, "t", scope=scope)


def test_dispose_removes_exactly_that_registration() -> None:
    registry = ToolRegistry()
    first = registry.register(PythonFunction.from_callable(lambda: 1, name="t"))
    first.dispose()
    second = registry.register(PythonFunction.from_callable(lambda: 2, name="t"))
    first.dispose()  # stale handle: must not remove the new registration
    assert "t" in registry.seal()
    with second:
        pass
    assert "t" not in registry.seal()


def test_declarations_are_ordinal_sorted_and_detached() -> None:
    registry = ToolRegistry()
    for name in ["beta", "Alpha", "alpha", "_x", "Zed"]:
        add(registry, lambda q: q, name)
    declarations = registry.get_declarations()
    assert [d.name for d in declarations] == ["Alpha", "Zed", "_x", "alpha", "beta"]
    declarations[0].parameters["properties"]["q"]["injected"] = True
    assert "injected" not in registry.get_declarations()[0].parameters["properties"]["q"]
    with pytest.raises(ValidationError):
        declarations[0].name = "renamed"  # type: ignore[misc]


def test_ordinal_order_compares_utf16_code_units() -> None:
    registry = ToolRegistry()
    for name in ["\U0001F600emoji", "\uff5ahalfwidth"]:
        add(registry, lambda: 1, name)
    # U+1F600 is D83D DE00 in UTF-16, which sorts before U+FF5A in .NET's ordinal order.
    assert [d.name for d in registry.get_declarations()] == ["\U0001F600emoji", "\uff5ahalfwidth"]


def test_sealed_view_ignores_later_registrations_and_disposals() -> None:
    registry = ToolRegistry()
    registration = registry.register(PythonFunction.from_callable(lambda: 1, name="old"))
    view = registry.seal()
    add(registry, lambda: 1, "new")
    registration.dispose()
    assert view.names == ["old"]
    assert registry.seal().names == ["new"]


def test_declaration_is_read_once_at_registration() -> None:
    class Mutable:
        name = "m"
        description = "first"
        json_schema: dict[str, Any] = {"type": "object", "properties": {}}

        async def invoke(self, arguments, cancellation):
            return None

    tool = Mutable()
    registry = ToolRegistry()
    registry.register(tool)
    tool.description = "changed"
    tool.json_schema["properties"]["x"] = {"type": "string"}
    declaration = registry.get_declarations()[0]
    assert declaration.description == "first"
    assert declaration.parameters == {"type": "object", "properties": {}}


@pytest.mark.parametrize(
    ("schema", "error"),
    [
        ({"type": "array"}, ValueError),
        ({"type": "object", "properties": {"x": {"type": "no-such-type"}}}, ValueError),
        ("not a dict", TypeError),
    ],
)
def test_invalid_schema_is_a_registration_error(schema: Any, error: type[Exception]) -> None:
    class Bad:
        name = "bad"
        description = ""
        json_schema = schema

        async def invoke(self, arguments, cancellation):
            return None

    with pytest.raises(error):
        ToolRegistry().register(Bad())


def test_non_tool_and_blank_name_are_rejected() -> None:
    registry = ToolRegistry()
    with pytest.raises(TypeError):
        registry.register(object())  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        registry.register(PythonFunction.from_callable(lambda: 1, name=" "))


@pytest.mark.parametrize(
    ("predicate", "expected"),
    [
        (None, ToolExecutionMode.EXCLUSIVE),
        (True, ToolExecutionMode.PARALLEL),
        (False, ToolExecutionMode.EXCLUSIVE),
        (lambda args: True, ToolExecutionMode.PARALLEL),
        (lambda args: 1, ToolExecutionMode.EXCLUSIVE),
        (lambda args: "yes", ToolExecutionMode.EXCLUSIVE),
        (lambda args: 1 / 0, ToolExecutionMode.EXCLUSIVE),
        (lambda args: args.get("read_only") is True, ToolExecutionMode.PARALLEL),
    ],
)
def test_classify_is_parallel_only_on_exact_true(predicate: Any, expected: ToolExecutionMode) -> None:
    registry = ToolRegistry()
    add(registry, lambda read_only=False: 1, "t", parallel=predicate)
    assert registry.classify(call("c", "t", {"read_only": True}), registry.seal()) is expected


def test_classify_unknown_or_unparseable_is_exclusive() -> None:
    registry = ToolRegistry()
    add(registry, lambda: 1, "t", parallel=True)
    view = registry.seal()
    assert registry.classify(call("c", "missing"), view) is ToolExecutionMode.EXCLUSIVE
    assert registry.classify(call("c", "t", "{oops"), view) is ToolExecutionMode.EXCLUSIVE
    assert registry.classify(call("c", "t", "{}"), view) is ToolExecutionMode.PARALLEL


def test_tool_can_declare_itself_concurrency_safe_and_option_overrides() -> None:
    registry = ToolRegistry()
    tool = PythonFunction.from_callable(lambda: 1, name="own", is_concurrency_safe=True)
    registry.register(tool)
    override = PythonFunction.from_callable(lambda: 1, name="overridden", is_concurrency_safe=True)
    registry.register(override, options=ToolRegistrationOptions(is_concurrency_safe=False))
    view = registry.seal()
    assert registry.classify(call("a", "own"), view) is ToolExecutionMode.PARALLEL
    assert registry.classify(call("b", "overridden"), view) is ToolExecutionMode.EXCLUSIVE


def test_on_change_fires_tools_change_on_every_visibility_change() -> None:
    registry = ToolRegistry()
    events: list[ToolsChangedEvent] = []
    subscription = registry.on_change(events.append)
    registry.on_change(lambda event: 1 / 0)  # a broken observer is contained
    scope = AgentPipelineScope()
    registration = registry.register(PythonFunction.from_callable(lambda: 1, name="t"), scope)
    registration.dispose()
    registration.dispose()
    subscription.dispose()
    add(registry, lambda: 1, "after")
    assert [(e.method, e.name, e.change, e.scope) for e in events] == [
        ("tools/change", "t", "added", scope),
        ("tools/change", "t", "removed", scope),
    ]


async def test_execute_batch_rejects_foreign_view_and_scope_mismatch() -> None:
    registry = ToolRegistry()
    other = ToolRegistry()
    with pytest.raises(ValueError, match="sealed by this registry"):
        await registry.execute_batch([], other.seal())
    with pytest.raises(ValueError, match="scope"):
        await registry.execute_batch([call("c", "t", scope=AgentPipelineScope())], registry.seal())
    with pytest.raises(ValueError, match="max_parallelism"):
        await registry.execute_batch([], registry.seal(), max_parallelism=0)

"""Deferred tools in the catalog: what a snapshot lists, loads and proves (issue 16, section 1)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.deferred_tools import ACME, GLOBEX, deferred_registry
from tether_clr import (
    DeferredTool,
    PythonFunction,
    RequestContext,
    ToolMetadata,
    ToolRegistrationOptions,
    ToolRegistry,
    ToolSchemaSnapshot,
)
from tether_clr.catalog.assembly import assemble_catalog
from tether_clr.catalog.candidates import ToolCandidate
from tether_clr.foundations.canonical import sha256_digest


def refund(order: str, amount: float = 0.0) -> str:
    """Refund an order."""
    return order


def lookup(order: str) -> str:
    """Look an order up."""
    return order


def test_tool_metadata_takes_deferred_and_a_search_hint() -> None:
    metadata = ToolMetadata(deferred=True, search_hint="money back")
    assert metadata.deferred is True and metadata.search_hint == "money back"
    assert ToolMetadata().deferred is False and ToolMetadata().search_hint is None
    with pytest.raises(TypeError):
        ToolMetadata(deferred=1)  # type: ignore[arg-type]
    with pytest.raises((TypeError, ValueError)):
        ToolMetadata(search_hint="")
    with pytest.raises(ValueError, match="surrogate"):
        ToolMetadata(search_hint="\ud800")


def test_a_deferred_tool_is_listed_with_name_description_and_hint_in_assembly_order() -> None:
    assembly = deferred_registry().assemble(ACME)
    assert assembly.deferred == (
        DeferredTool("acme_payroll", "Pay an employee of Acme.", "salary"),
        DeferredTool("archive_order", "Move an order to the archive.", None),
        DeferredTool("refund_order", "Refund part or all of an order.", "money back"),
    )
    assert assembly.deferred[0].as_json() == {"name": "acme_payroll", "description": "Pay an employee of Acme.", "search_hint": "salary"}


def test_a_deferred_tools_schema_is_not_among_the_definitions() -> None:
    assembly = deferred_registry().assemble(ACME)
    assert [d.name for d in assembly.definitions] == ["lookup_order", "tool_search"]
    assert [d.name for d in assembly.get_declarations()] == ["lookup_order", "tool_search"]
    assert set(assembly.bindings) == {"acme_payroll", "archive_order", "lookup_order", "refund_order", "tool_search"}


def test_deferred_lists_only_what_the_caller_may_see() -> None:
    assert "globex_payroll" not in {t.name for t in deferred_registry().assemble(ACME).deferred}
    assert "acme_payroll" not in {t.name for t in deferred_registry().assemble(GLOBEX).deferred}


def test_with_loaded_returns_a_new_snapshot_with_a_new_digest_and_leaves_the_original_unchanged() -> None:
    assembly = deferred_registry().assemble(ACME)
    before = (assembly.digest, assembly.definitions, assembly.deferred, assembly.loaded)
    loaded = assembly.with_loaded(["refund_order"])
    assert loaded is not assembly and type(loaded) is type(assembly)
    assert [d.name for d in loaded.definitions] == ["lookup_order", "refund_order", "tool_search"]
    assert [t.name for t in loaded.deferred] == ["acme_payroll", "archive_order"]
    assert loaded.loaded == frozenset({"refund_order"})
    assert loaded.digest != assembly.digest
    assert (assembly.digest, assembly.definitions, assembly.deferred, assembly.loaded) == before
    assert loaded.bindings == assembly.bindings and loaded.context == assembly.context


def test_with_loaded_is_deterministic_and_order_free() -> None:
    assembly = deferred_registry().assemble(ACME)
    one = assembly.with_loaded(["refund_order", "archive_order"])
    two = assembly.with_loaded(["archive_order"]).with_loaded(["refund_order"])
    assert one.digest == two.digest and one.definitions == two.definitions
    assert deferred_registry().assemble(ACME).with_loaded(["archive_order", "refund_order"]).digest == one.digest


def test_with_loaded_accepts_an_alias_and_a_tool_that_is_not_deferred() -> None:
    assembly = deferred_registry().assemble(ACME)
    assert assembly.with_loaded(["refund"]).loaded == frozenset({"refund_order"})
    unchanged = assembly.with_loaded(["lookup_order", "tool_search"])
    assert unchanged.loaded == frozenset() and unchanged.digest == assembly.digest


@pytest.mark.parametrize("name", ["globex_payroll", "no_such_tool"])
def test_with_loaded_answers_an_invisible_name_exactly_as_a_name_that_exists_nowhere(name: str) -> None:
    assembly = deferred_registry().assemble(ACME)
    with pytest.raises(LookupError) as caught:
        assembly.with_loaded(["refund_order", name])
    assert type(caught.value) is LookupError
    assert str(caught.value) == f"no tool named {name!r} is visible in this snapshot"


def test_with_loaded_refuses_a_bare_string_and_non_strings() -> None:
    assembly = deferred_registry().assemble(ACME)
    with pytest.raises(TypeError):
        assembly.with_loaded("refund_order")
    with pytest.raises(TypeError):
        assembly.with_loaded([1])  # type: ignore[list-item]


def test_with_native_deferral_is_a_new_snapshot_with_a_new_digest() -> None:
    assembly = deferred_registry().assemble(ACME)
    native = assembly.with_native_deferral()
    assert native.native_deferral and not assembly.native_deferral
    assert native.definitions == assembly.definitions and native.deferred == assembly.deferred
    assert native.digest != assembly.digest
    assert native.unloaded == frozenset() and assembly.unloaded == {"acme_payroll", "archive_order", "refund_order"}


def test_the_digest_of_an_assembly_with_no_deferred_tool_is_unchanged() -> None:
    """Pinned before deferral existed: a registry and a bare selection with no deferred tool hash as they did."""
    registry = ToolRegistry()
    registry.register(PythonFunction.from_callable(refund), None,
                      ToolRegistrationOptions(metadata=ToolMetadata(tags={"orders"})))
    registry.register(PythonFunction.from_callable(lookup))
    assembly = registry.assemble(RequestContext("acme", "alice", scopes={"orders:read"}))
    assert assembly.digest == "sha256:60e74460047a481c8a3a81e1567d50d459cfb4cb976c9fbd169fb1f0a3ad6a83"
    assert assembly.with_loaded(["refund"]).digest == assembly.digest
    assert assembly.with_native_deferral().digest == assembly.digest
    candidate = ToolCandidate(ToolSchemaSnapshot(name="a", description="d", parameters={"type": "object", "properties": {}}))
    selection = assemble_catalog([candidate], RequestContext("acme", "alice"))
    assert selection.digest(3, 1) == "sha256:b439c0970833f5666042043ea2c208f23dfe8207e244c7df4ade9565affbf6fa"


def test_the_digest_of_a_deferred_assembly_is_the_documented_document() -> None:
    def tool(name: str, **meta: Any) -> ToolCandidate:
        return ToolCandidate(ToolSchemaSnapshot(name=name, description=f"{name}!", parameters={"type": "object", "properties": {}}),
                             ToolMetadata(**meta))

    context = RequestContext("acme", "alice")
    selection = assemble_catalog([tool("a"), tool("b", deferred=True, search_hint="h"), tool("c", deferred=True)], context)
    chosen = {c.model_name: c for c in selection.chosen}

    def document(loaded: list[str], native: bool) -> dict[str, Any]:
        shown = [n for n in "abc" if n == "a" or n in loaded]
        return {
            "bindings": [c.binding.as_json() for c in selection.chosen],
            "context": context.identity(),
            "deferral": {
                "deferred": [{"name": n, "description": f"{n}!", "search_hint": chosen[n].metadata.search_hint}
                             for n in "bc" if n not in loaded],
                "loaded": loaded,
                "native": native,
            },
            "definitions": [chosen[n].definition.model_dump() for n in shown],
            "omitted": [],
            "policy_revision": 1,
            "registry_revision": 2,
        }

    assert selection.digest(2, 1) == sha256_digest(document([], False))
    assert selection.digest(2, 1, loaded=["c"]) == sha256_digest(document(["c"], False))
    assert selection.digest(2, 1, native_deferral=True) == sha256_digest(document([], True))
    assert [d.name for d in selection.definitions] == ["a"] and selection.deferred_names == ("b", "c")


def test_a_plain_sealed_view_defers_too() -> None:
    view = deferred_registry().seal()
    assert [d.name for d in view.get_declarations()] == ["lookup_order", "tool_search"]
    assert [t.name for t in view.deferred] == ["acme_payroll", "archive_order", "globex_payroll", "refund_order"]
    assert [d.name for d in view.with_loaded(["archive_order"]).get_declarations()] == ["archive_order", "lookup_order", "tool_search"]
    assert view.digest is None


def test_a_metadata_update_can_defer_a_tool_from_the_next_assembly() -> None:
    registry = deferred_registry()
    first = registry.assemble(ACME)
    registry.update_metadata("lookup_order", "1.0.0", deferred=True)
    assert "lookup_order" not in {t.name for t in first.deferred}
    assert "lookup_order" in {t.name for t in registry.assemble(ACME).deferred}
    assert "lookup_order" in {t.name for t in registry.seal().deferred}


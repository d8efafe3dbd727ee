"""The built-in tool search: ranking, bounds, full declarations, and only the calling request's snapshot (issue 16, section 1)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support import BATCH_TIMEOUT, call
from tests.support.deferred_tools import ACME, deferred, deferred_registry, named_tool
from tether_clr import (
    DuplicateToolError,
    RequestContext,
    TextPart,
    ToolExecutionOutcome,
    ToolMetadata,
    ToolRegistrationOptions,
    ToolRegistry,
)
from tether_clr.catalog.search import DEFAULT_SEARCH_LIMIT, MAX_SEARCH_LIMIT, search_terms

anyio_marked = pytest.mark.anyio


async def search(registry: ToolRegistry, view: Any, query: str, limit: int | None = None) -> ToolExecutionOutcome:
    arguments: dict[str, Any] = {"query": query}
    if limit is not None:
        arguments["limit"] = limit
    with anyio.fail_after(BATCH_TIMEOUT):
        (outcome,) = await registry.execute_batch([call("s", "tool_search", arguments)], view)
    return outcome


def found(outcome: ToolExecutionOutcome) -> list[str]:
    assert outcome.failure is None, outcome.failure
    return [tool["name"] for tool in outcome.value["tools"]]


def registry_with(*tools: tuple[str, str, dict[str, Any]]) -> ToolRegistry:
    registry = ToolRegistry()
    for name, description, meta in tools:
        registry.register(named_tool(name, description), None, deferred(**meta))
    registry.enable_tool_search()
    return registry


def test_enable_tool_search_registers_a_real_read_only_tool_with_bounded_arguments() -> None:
    registry = deferred_registry()
    assembly = registry.assemble(ACME)
    (definition,) = [d for d in assembly.definitions if d.name == "tool_search"]
    limit = definition.parameters["properties"]["limit"]
    assert (limit["type"], limit["minimum"], limit["maximum"]) == ("integer", 1, MAX_SEARCH_LIMIT)
    assert definition.parameters["required"] == ["query"] and definition.parameters["additionalProperties"] is False
    binding = assembly.bindings["tool_search"]
    assert binding.origin == "builtin"
    assert assembly.search_tool_name == "tool_search"
    with pytest.raises(DuplicateToolError):
        registry.enable_tool_search()


def test_enable_tool_search_takes_a_name_and_its_registration_removes_it() -> None:
    registry = ToolRegistry()
    registration = registry.enable_tool_search(name="find_tools")
    assert registry.seal().search_tool_name == "find_tools"
    registration.dispose()
    assert registry.seal().search_tool_name is None


@anyio_marked
@pytest.mark.parametrize("limit", [0, MAX_SEARCH_LIMIT + 1, "3", 2.5])
async def test_the_schema_enforces_the_bounds_of_limit(limit: Any) -> None:
    registry = deferred_registry()
    outcome = await search(registry, registry.assemble(ACME), "order", limit)
    assert outcome.code == "INVALID_ARGS"


@anyio_marked
async def test_the_largest_limit_is_accepted_and_the_default_is_documented() -> None:
    tools = [(f"tool_{i:02d}", "widget maker", {}) for i in range(MAX_SEARCH_LIMIT + 5)]
    registry = registry_with(*tools)
    assembly = registry.assemble(ACME)
    assert len(found(await search(registry, assembly, "widget", MAX_SEARCH_LIMIT))) == MAX_SEARCH_LIMIT
    assert len(found(await search(registry, assembly, "widget"))) == DEFAULT_SEARCH_LIMIT


@anyio_marked
async def test_an_exact_name_comes_first() -> None:
    registry = registry_with(
        ("refund_order_fast", "refund refund refund", {"search_hint": "refund order", "tags": {"refund"}}),
        ("refund_order", "x", {}),
        ("Refund_Order", "y", {}),
    )
    assembly = registry.assemble(ACME)
    assert found(await search(registry, assembly, "refund_order"))[:2] == ["refund_order", "Refund_Order"]
    assert found(await search(registry, assembly, "  REFUND_ORDER "))[0] in {"Refund_Order", "refund_order"}
    assert found(await search(registry, assembly, "Refund_Order"))[:2] == ["Refund_Order", "refund_order"]


@anyio_marked
async def test_ranking_weighs_name_then_hint_and_tags_then_description() -> None:
    registry = registry_with(
        ("a_desc", "sends a parcel", {}),
        ("b_hint", "x", {"search_hint": "parcel"}),
        ("c_tag", "x", {"tags": {"parcel"}}),
        ("d_parcel", "x", {}),
        ("e_none", "nothing related", {}),
    )
    assert found(await search(registry, registry.assemble(ACME), "parcel", 10)) == ["d_parcel", "b_hint", "c_tag", "a_desc"]


@anyio_marked
async def test_a_prefix_scores_half_and_ties_keep_the_snapshot_order() -> None:
    registry = registry_with(("zeta", "shipment", {}), ("alpha", "shipment", {}), ("beta", "shipping", {}))
    assert found(await search(registry, registry.assemble(ACME), "shipment", 10)) == ["alpha", "zeta"]
    assert found(await search(registry, registry.assemble(ACME), "ship", 10)) == ["alpha", "beta", "zeta"]


def test_search_terms_split_snake_kebab_and_camel_case() -> None:
    assert search_terms("getWeather refund_order HTTPServer kebab-case") == ["get", "weather", "refund", "order", "http", "server", "kebab", "case"]


@anyio_marked
async def test_the_result_carries_the_full_declarations_and_a_readable_text() -> None:
    registry = deferred_registry()
    assembly = registry.assemble(ACME)
    outcome = await search(registry, assembly, "money back")
    (tool,) = outcome.value["tools"]
    loaded = {d.name: d for d in assembly.with_loaded(["refund_order"]).definitions}["refund_order"]
    assert tool == {"name": "refund_order", "description": loaded.description, "parameters": loaded.parameters}
    assert outcome.value["query"] == "money back"
    (part,) = outcome.content
    assert isinstance(part, TextPart) and "refund_order" in part.text and '"amount"' in part.text


@anyio_marked
async def test_no_match_is_an_empty_list_and_says_so() -> None:
    registry = deferred_registry()
    outcome = await search(registry, registry.assemble(ACME), "spaceship")
    assert outcome.value["tools"] == [] and outcome.content == (TextPart("No tool matches 'spaceship'."),)


@anyio_marked
async def test_the_search_finds_only_deferred_tools_not_yet_loaded() -> None:
    registry = deferred_registry()
    assembly = registry.assemble(ACME)
    assert "lookup_order" not in found(await search(registry, assembly, "order", 20))
    assert "refund_order" not in found(await search(registry, assembly.with_loaded(["refund_order"]), "order", 20))


@anyio_marked
async def test_the_search_reads_the_snapshot_of_the_call_never_the_live_catalog() -> None:
    registry = deferred_registry()
    assembly = registry.assemble(ACME)
    registry.register(named_tool("refund_later", "refund"), None, deferred())
    registry.update_metadata("acme_payroll", "1.0.0", tenants={"globex"})
    names = found(await search(registry, assembly, "refund salary", 20))
    assert "refund_later" not in names and "acme_payroll" in names


@anyio_marked
async def test_a_search_answers_a_tool_of_another_tenant_exactly_as_a_tool_that_exists_nowhere() -> None:
    registry = deferred_registry()
    assembly = registry.assemble(ACME)
    other = await search(registry, assembly, "globex_payroll")
    nowhere = await search(registry, assembly, "initech_payroll")
    assert found(other) == found(nowhere) == ["acme_payroll"]  # by the word "payroll", never globex's
    assert other.content[0].text.replace("globex", "X") == nowhere.content[0].text.replace("initech", "X")  # type: ignore[union-attr]


@anyio_marked
async def test_a_search_outside_any_assembly_runs_on_the_sealed_view() -> None:
    registry = deferred_registry()
    assert "globex_payroll" in found(await search(registry, registry.seal(), "payroll", 20))


def test_a_tool_search_invoked_outside_a_batch_is_refused() -> None:
    from tether_clr import ToolError
    from tether_clr.catalog.search import ToolSearch

    async def direct() -> None:
        await ToolSearch().invoke({"query": "x"}, None)  # type: ignore[arg-type]

    with pytest.raises(ToolError, match="execute_batch"):
        anyio.run(direct)


# ------------------------------------------------------------- tenants, property-based
_WORDS = ["pay", "payroll", "invoice", "ship", "order", "refund", "salary", "report", "audit", "export"]


@st.composite
def tenant_catalogs(draw: st.DrawFn) -> list[tuple[str, str, str, frozenset[str] | None]]:
    """Deferred tools: (name, description, hint, tenants), each visible to every tenant, to A, to B, or to both."""
    count = draw(st.integers(1, 8))
    tools = []
    for index in range(count):
        words = draw(st.lists(st.sampled_from(_WORDS), min_size=1, max_size=3))
        tenants = draw(st.sampled_from([None, frozenset({"A"}), frozenset({"B"}), frozenset({"A", "B"})]))
        tools.append((f"{'_'.join(words)}_{index}", " ".join(draw(st.lists(st.sampled_from(_WORDS), max_size=4))),
                      draw(st.sampled_from(_WORDS)), tenants))
    return tools


def _search_names(registry: ToolRegistry, context: RequestContext, query: str) -> list[str]:
    async def go() -> list[str]:
        return found(await search(registry, registry.assemble(context), query, MAX_SEARCH_LIMIT))

    return anyio.run(go)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tenant_catalogs(), st.one_of(st.sampled_from(_WORDS), st.text(max_size=30)), st.sampled_from(["A", "B"]))
def test_a_search_from_tenant_a_never_returns_a_tool_only_tenant_b_may_see(
    catalog: list[tuple[str, str, str, frozenset[str] | None]], query: str, tenant: str
) -> None:
    registry = ToolRegistry()
    for name, description, hint, tenants in catalog:
        registry.register(named_tool(name, description), None,
                          ToolRegistrationOptions(metadata=ToolMetadata(deferred=True, search_hint=hint, tenants=tenants)))
    registry.enable_tool_search()
    context = RequestContext(tenant, "p")
    names = _search_names(registry, context, query)
    visible = {name for name, _, _, tenants in catalog if tenants is None or tenant in tenants}
    assert set(names) <= visible
    # The answer depends on the tools this tenant may see only: the same search over a registry that
    # never held the other tenant's tools answers the same.
    alone = ToolRegistry()
    for name, description, hint, tenants in catalog:
        if name in visible:
            alone.register(named_tool(name, description), None,
                           ToolRegistrationOptions(metadata=ToolMetadata(deferred=True, search_hint=hint, tenants=tenants)))
    alone.enable_tool_search()
    assert _search_names(alone, context, query) == names


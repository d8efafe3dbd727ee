"""The catalog's cache of assemblies: ``registry.assemble`` reuses a kept snapshot only while it is exactly what
assembling now would give (:mod:`tether_clr.catalog.reuse`), and nothing one request can change reaches another.

"Fresh" below means the catalog assembled (a cache miss); "reused" means the kept snapshot was rebound.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tether_clr import (
    AgentPipelineScope,
    CapabilityQuery,
    KillSwitch,
    PythonFunction,
    RequestContext,
    ToolCall,
    ToolMetadata,
    ToolRegistrationOptions,
    ToolRegistry,
    ToolStatus,
)
from tether_clr.catalog.reuse import AssemblyCache

ALICE = RequestContext("acme", "alice", scopes=frozenset({"orders:read"}), request_id="r1", session_id="s1")


def echo(text: str) -> str:
    """Return the text."""
    return text


def refund(order: str) -> str:
    """Refund an order."""
    return order


def _options(**metadata: Any) -> ToolRegistrationOptions:
    return ToolRegistrationOptions(metadata=ToolMetadata(**metadata))


def catalog() -> ToolRegistry:
    """``echo`` 1.0.0 and 1.1.0, ``refund`` (needs ``orders:refund``, acme only, deferred)."""
    registry = ToolRegistry()
    for version in ("1.0.0", "1.1.0"):
        registry.register(PythonFunction.from_callable(echo), options=_options(version=version, domain="text"))
    registry.register(PythonFunction.from_callable(refund), options=_options(
        required_scopes=frozenset({"orders:refund"}), tenants=frozenset({"acme"}), deferred=True))
    return registry


def fresh_counter(registry: ToolRegistry) -> Callable[[], int]:
    """A function answering how many fresh assemblies were made since it was last called."""
    cache = registry.catalog.assembly_cache
    last = [cache.misses]

    def made() -> int:
        now = cache.misses
        delta, last[0] = now - last[0], now
        return delta

    return made


def uncached(registry: ToolRegistry, context: RequestContext, scope: AgentPipelineScope | None = None) -> Any:
    """What assembling afresh gives now (the cache turned off for one call)."""
    cache = registry.catalog.assembly_cache
    limit, cache.limit = cache.limit, 0
    try:
        cache.clear()
        return registry.assemble(context, scope)
    finally:
        cache.limit = limit


# ---------------------------------------------------------------- reuse while exact
def test_an_unchanged_catalog_and_identity_reuse_the_snapshot_rebound_to_the_request() -> None:
    registry = catalog()
    made = fresh_counter(registry)
    first = registry.assemble(ALICE)
    later = RequestContext("acme", "alice", scopes=frozenset({"orders:read"}), request_id="r2", session_id="s2")
    second = registry.assemble(later)
    assert made() == 1
    assert second is not first and second.context is later and first.context is ALICE
    assert (second.digest, second.names, second.omitted, second.bindings) == (first.digest, first.names, first.omitted, first.bindings)
    assert registry.assemble(ALICE) is first  # the very same request: the kept snapshot itself (immutable)
    assert made() == 0


def test_a_reused_snapshot_has_the_omissions_and_digest_of_a_fresh_one() -> None:
    registry = catalog()
    registry.assemble(ALICE)
    reused = registry.assemble(RequestContext("acme", "alice", scopes=frozenset({"orders:read"}), request_id="r9"))
    fresh = uncached(registry, RequestContext("acme", "alice", scopes=frozenset({"orders:read"}), request_id="r9"))
    assert reused.omitted == fresh.omitted and [o.reason for o in reused.omitted] == ["superseded", "missing_scope"]
    assert reused.digest == fresh.digest and reused.discovery() == fresh.discovery()


def test_fresh_scopes_that_see_the_same_layers_share_it_each_bound_to_its_own_scope() -> None:
    registry = catalog()
    root = AgentPipelineScope()
    made = fresh_counter(registry)
    one, two = root.child(owner="alice", session_id="a"), root.child(owner="alice", session_id="b")
    first, second = registry.assemble(ALICE, one), registry.assemble(ALICE, two)
    assert made() == 1 and (first.scope, second.scope) == (one, two) and first.digest == second.digest
    own = root.child(owner="alice", session_id="c")  # a scope with registrations of its own sees another catalog
    registry.register(PythonFunction.from_callable(lambda: 1, name="local", description="A scoped tool."), own)
    assert "local" in registry.assemble(ALICE, own).names and "local" not in registry.assemble(ALICE, one).names
    assert made() == 2


def test_a_call_runs_in_the_request_scope_of_a_reused_snapshot() -> None:
    registry = catalog()
    root = AgentPipelineScope()
    registry.assemble(ALICE, root.child(owner="alice", session_id="a"))
    scope = root.child(owner="alice", session_id="b")
    reused = registry.assemble(ALICE, scope)
    import anyio

    [outcome] = anyio.run(registry.execute_batch, [ToolCall("c1", "echo", '{"text": "hi"}', scope)], reused)
    assert outcome.failure is None and outcome.value == "hi"


# ---------------------------------------------------------------- every revision bump assembles afresh
def _register(registry: ToolRegistry) -> None:
    registry.register(PythonFunction.from_callable(lambda: 1, name="extra", description="Another tool."))


def _dispose(registry: ToolRegistry) -> None:
    registry.register(PythonFunction.from_callable(lambda: 1, name="gone", description="Gone soon.")).dispose()


CHANGES: dict[str, Callable[[ToolRegistry], Any]] = {
    "register": _register,
    "dispose": _dispose,
    "status": lambda r: r.set_status("echo", "1.1.0", ToolStatus.DISABLED),
    "metadata": lambda r: r.update_metadata("echo", "1.1.0", tenants=frozenset({"globex"})),
    "pin": lambda r: r.pin("echo", "1.0.0", tenant_id="acme"),
    "unpin": lambda r: (r.pin("echo", "1.0.0"), r.unpin("echo")),
    "kill switch": lambda r: r.add_kill_switch(KillSwitch("stop", logical_name="echo")),
    "kill switch lifted": lambda r: r.add_kill_switch(KillSwitch("stop", logical_name="echo")).dispose(),
    "deny rule added and removed": lambda r: r.add_deny_rule(lambda binding, metadata, context: None).dispose(),
    "authority": lambda r: setattr(r, "authority", None),
}


@pytest.mark.parametrize("change", list(CHANGES))
def test_every_kind_of_revision_bump_assembles_afresh(change: str) -> None:
    registry = catalog()
    made = fresh_counter(registry)
    registry.assemble(ALICE)
    registry.assemble(ALICE)
    assert made() == 1
    before = (registry.revision, registry.policy_revision)
    CHANGES[change](registry)
    assert (registry.revision, registry.policy_revision) != before
    after = registry.assemble(ALICE)
    assert made() == 1
    assert after.registry_revision == registry.revision and after.policy_revision == registry.policy_revision
    fresh = uncached(registry, ALICE)
    assert (after.names, after.omitted, after.digest) == (fresh.names, fresh.omitted, fresh.digest)
    registry.assemble(ALICE)
    made()
    registry.assemble(ALICE)
    assert made() == 0  # and kept again at the new revisions


def test_a_change_is_seen_by_the_next_assembly() -> None:
    registry = catalog()
    assert registry.assemble(ALICE).bindings["echo"].version == "1.1.0"
    registry.set_status("echo", "1.1.0", ToolStatus.DISABLED)
    assert registry.assemble(ALICE).bindings["echo"].version == "1.0.0"
    registry.set_status("echo", "1.0.0", ToolStatus.DISABLED)
    assert "echo" not in registry.assemble(ALICE).names


# ---------------------------------------------------------------- never kept
def test_with_a_deny_rule_every_assembly_is_fresh_and_sees_the_rule_answer_now() -> None:
    registry = catalog()
    denied = [False]
    registry.add_deny_rule(lambda binding, metadata, context: "no" if denied[0] and binding.model_name == "echo" else None)
    made = fresh_counter(registry)
    assert "echo" in registry.assemble(ALICE).names
    denied[0] = True  # a deny rule may answer differently with no revision bump
    assert "echo" not in registry.assemble(ALICE).names
    assert made() == 2 and len(registry.catalog.assembly_cache) == 0


def test_with_a_feature_flag_every_assembly_is_fresh_and_sees_the_flag_now() -> None:
    registry = catalog()
    enabled = [True]
    registry.register(PythonFunction.from_callable(lambda: 1, name="beta", description="Flagged."),
                      options=_options(enabled_when=lambda context: enabled[0]))
    made = fresh_counter(registry)
    assert "beta" in registry.assemble(ALICE).names
    enabled[0] = False
    assert "beta" not in registry.assemble(ALICE).names
    assert made() == 2


def test_with_a_live_synchronous_authority_every_assembly_is_fresh_and_asks_it() -> None:
    registry = catalog()
    held = {"orders:read", "orders:refund"}
    registry.authority = lambda context: set(held)
    made = fresh_counter(registry)
    assert "refund" in registry.assemble(ALICE).names
    held.discard("orders:refund")  # revoked with no revision bump
    assert "refund" not in registry.assemble(ALICE).names
    assert made() == 2


def test_an_asynchronous_authority_is_not_asked_by_assembling_so_the_snapshot_is_kept() -> None:
    registry = catalog()

    async def authority(context: RequestContext) -> set[str]:
        return {"orders:refund"}

    registry.authority = authority
    made = fresh_counter(registry)
    registry.assemble(ALICE)
    registry.assemble(ALICE)
    assert made() == 1


# ---------------------------------------------------------------- identities and requests never share
OTHERS = {
    "principal": RequestContext("acme", "bob", scopes=frozenset({"orders:read"})),
    "tenant": RequestContext("globex", "alice", scopes=frozenset({"orders:read"})),
    "scopes": RequestContext("acme", "alice", scopes=frozenset({"orders:read", "orders:refund"})),
    "environment": RequestContext("acme", "alice", scopes=frozenset({"orders:read"}), environment="prod"),
    "region": RequestContext("acme", "alice", scopes=frozenset({"orders:read"}), region="eu"),
    "agent id": RequestContext("acme", "alice", scopes=frozenset({"orders:read"}), agent_id="bot"),
    "agent version": RequestContext("acme", "alice", scopes=frozenset({"orders:read"}), agent_version="2"),
}


@pytest.mark.parametrize("field", list(OTHERS))
def test_different_identities_never_share_an_assembly(field: str) -> None:
    registry = catalog()
    made = fresh_counter(registry)
    mine = registry.assemble(ALICE)
    theirs = registry.assemble(OTHERS[field])
    assert made() == 2 and theirs.context is OTHERS[field]
    assert theirs.context.identity() != mine.context.identity() and theirs.digest != mine.digest
    assert registry.assemble(ALICE).digest == mine.digest and made() == 0  # both kept, side by side


def test_what_a_tenant_or_scope_hides_stays_hidden_from_another_identity() -> None:
    registry = catalog()
    refunder = RequestContext("acme", "alice", scopes=frozenset({"orders:read", "orders:refund"}))
    assert "refund" in registry.assemble(refunder).names
    assert "refund" not in registry.assemble(ALICE).names
    assert "refund" not in registry.assemble(RequestContext("globex", "alice", scopes=refunder.scopes)).names


def test_a_query_is_part_of_the_key() -> None:
    registry = catalog()
    text = CapabilityQuery(domains=frozenset({"text"}))
    assert registry.assemble(ALICE, query=text).names == ["echo"]
    assert registry.assemble(ALICE).names == ["echo"]  # refund needs a scope alice lacks
    assert registry.assemble(ALICE, query=CapabilityQuery(domains=frozenset({"none"}))).names == []
    assert registry.assemble(ALICE, query=text).names == ["echo"]


def test_what_a_request_loads_or_sets_never_reaches_the_next_request() -> None:
    registry = catalog()
    refunder = RequestContext("acme", "alice", scopes=frozenset({"orders:refund"}), request_id="r1")
    first = registry.assemble(refunder)
    loaded = first.with_loaded(["refund"]).with_native_deferral()
    assert loaded.loaded == frozenset({"refund"}) and loaded.native_deferral
    second = registry.assemble(RequestContext("acme", "alice", scopes=frozenset({"orders:refund"}), request_id="r2"))
    assert second.loaded == frozenset() and not second.native_deferral and second.unloaded == frozenset({"refund"})
    assert second.digest == first.digest != loaded.digest
    assert (first.context.request_id, second.context.request_id) == ("r1", "r2")
    assert second.context.session_id is None and ALICE.session_id == "s1"


def test_audit_records_carry_each_request_own_id() -> None:
    import anyio

    registry = catalog()
    audited: list[Any] = []
    registry.register_audit_listener(audited.append)
    for request_id in ("r1", "r2"):
        context = RequestContext("acme", "alice", scopes=frozenset({"orders:read"}), request_id=request_id)
        anyio.run(registry.execute_batch, [ToolCall(f"c-{request_id}", "echo", '{"text": "hi"}')], registry.assemble(context))
    assert [record.request_id for record in audited] == ["r1", "r2"]
    assert registry.catalog.assembly_cache.hits >= 1


def test_a_hidden_tool_reason_is_read_from_the_live_catalog_not_the_cache() -> None:
    registry = catalog()
    registry.assemble(ALICE)
    registry.set_status("echo", "1.0.0", ToolStatus.DISABLED)
    registry.set_status("echo", "1.1.0", ToolStatus.DISABLED)
    assert "echo" not in registry.assemble(ALICE).names
    assert registry.catalog.hidden_reason(ALICE, None, "echo") == "tool_disabled"


# ---------------------------------------------------------------- the cache itself
def test_the_cache_is_bounded_least_recently_used_first_out() -> None:
    registry = catalog()
    cache = registry.catalog.assembly_cache
    cache.limit = 2
    made = fresh_counter(registry)
    a, b, c = (RequestContext("acme", name) for name in ("a", "b", "c"))
    registry.assemble(a)
    registry.assemble(b)
    registry.assemble(a)  # a is now the most recent
    registry.assemble(c)  # evicts b
    assert made() == 3 and len(cache) == 2
    registry.assemble(a)
    assert made() == 0
    registry.assemble(b)
    assert made() == 1


def test_a_bump_empties_the_cache() -> None:
    registry = catalog()
    registry.assemble(ALICE, AgentPipelineScope())
    assert len(registry.catalog.assembly_cache) == 1
    _register(registry)
    assert len(registry.catalog.assembly_cache) == 0  # and it holds no scope any more


def test_an_assembly_made_at_older_revisions_is_never_kept() -> None:
    registry = catalog()
    cache = AssemblyCache()
    assembly = registry.assemble(ALICE)
    key = AssemblyCache.key((None,), ALICE, None)
    assert cache.get(key, (5, 1), ALICE, None) is None  # the cache is now at revisions (5, 1)
    cache.keep(key, (4, 1), assembly, None)  # made before a bump
    assert len(cache) == 0
    cache.keep(key, (5, 1), assembly, None)
    assert cache.get(key, (5, 1), ALICE, None) is assembly
    assert cache.get(key, (6, 1), ALICE, None) is None and len(cache) == 0


def test_a_negative_limit_is_refused() -> None:
    with pytest.raises(ValueError):
        AssemblyCache(-1)


def test_a_rebound_snapshot_copies_every_slot_but_the_ones_it_rebinds() -> None:
    """``_twin`` names the slots it copies (for speed): a slot added to the views must be added there too."""
    from tether_clr.catalog.views import SealedToolCatalogView, ToolAssembly

    registry = catalog()
    for view in (registry.assemble(ALICE).with_loaded(["echo"]), registry.seal()):
        twin = view._twin()
        slots = {name for klass in type(view).__mro__ for name in getattr(klass, "__slots__", ()) if name != "__weakref__"}
        assert slots and all(getattr(twin, name) is getattr(view, name) for name in slots if hasattr(view, name))
        assert all(hasattr(twin, name) == hasattr(view, name) for name in slots)
    assert {SealedToolCatalogView, ToolAssembly} >= {type(registry.seal()), type(registry.assemble(ALICE))}

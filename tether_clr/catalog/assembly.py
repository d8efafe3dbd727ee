"""Catalog assembly: which tool versions one request may see and call, and why the others may not.

One pure function, :func:`assemble_catalog`, composed of separate steps in
the order the rule fixes, so each omission names the *first* step that
excluded a version:

1. per version, :data:`VERSION_FILTERS`: status, tenant, scopes, context
   (environments, regions), flag (``enabled_when``), deny rule, kill switch
   (:mod:`~tether_clr.catalog.kill_switches`), query;
2. :func:`shadow` per model name: a plugin tool never shadows a built-in one
   (in any layer; a warning is logged), and between tools of the same origin
   the inner scope (higher ``layer``) shadows the outer;
3. :func:`choose_versions` per model name: the most specific matching pin if
   its version is ACTIVE or DEPRECATED, else the highest ACTIVE version by
   semantic-version order; the others are ``superseded``; a name with no
   callable version is ``not_active``.

The result is in a stable order (built-in tools by ordinal name, then plugin
tools by ordinal name) so that prompts cache, and :func:`assembly_digest`
proves later exactly what a request saw. :func:`~tether_clr.catalog.reauthorization.reauthorize`
repeats the check right before a body runs, against the live registry.

Floor 3 (the catalog): it decides what is visible and callable; it runs nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from tether_clr.catalog.candidates import (
    DenyRule,
    ToolCandidate,
    deny_detail,
    describe_answer,
)
from tether_clr.catalog.kill_switches import KillSwitch, matching_switch
from tether_clr.catalog.lifecycle import ToolStatus
from tether_clr.catalog.metadata import CapabilityQuery
from tether_clr.catalog.records import (
    DiscoveryResult,
    Omission,
    OmissionReason,
    ToolBinding,
    ToolPin,
)
from tether_clr.foundations.canonical import (
    canonical_bytes,
    ordinal_key,
    sha256_of,
)
from tether_clr.records.context import RequestContext
from tether_clr.records.declaration import ToolSchemaSnapshot

__all__ = [
    "AssemblyRequest",
    "CatalogSelection",
    "Exclusion",
       "VERSION_FILTERS",
    "VersionFilter",
    "apply_filters",
    "assemble_catalog",
    "assembly_digest",
    "choose_versions",
    "context_filter",
    "deny_rule_filter",
    "flag_filter",
    "kill_switch_filter",
    "query_filter",
    "resolve_aliases",
    "scope_filter",
    "shadow",
    "status_filter",
    "tenant_filter",
]

logger = logging.getLogger("tether_clr")

@dataclass(frozen=True, slots=True)
class AssemblyRequest:
    """Everything the steps read besides the candidates.

    ``scopes`` are the principal's effective scopes (from the host's authority,
    or the context's own); ``pins`` and ``deny_rules`` are the registry's.
    """

    context: RequestContext
    scopes: frozenset[str]
    pins: tuple[ToolPin, ...] = ()
    deny_rules: tuple[DenyRule, ...] = ()
    query: CapabilityQuery | None = None
    kill_switches: tuple[KillSwitch, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.context, RequestContext):
            raise TypeError(f"context must be a RequestContext, got {type(self.context).__name__}")
        object.__setattr__(self, "scopes", frozenset(self.scopes))
        object.__setattr__(self, "pins", tuple(self.pins))
        object.__setattr__(self, "deny_rules", tuple(self.deny_rules))
        object.__setattr__(self, "kill_switches", tuple(self.kill_switches))
        if self.query is not None and not isinstance(self.query, CapabilityQuery):
            raise TypeError(f"query must be a CapabilityQuery or None, got {type(self.query).__name__}")


Exclusion = tuple[OmissionReason, str]
"""``(reason, detail)``: why a step left a version out."""

VersionFilter = Callable[[ToolCandidate, AssemblyRequest], "Exclusion | None"]
"""A per-version step: ``None`` keeps the version, an :data:`Exclusion` omits it."""


# ------------------------------------------------------------------ per-version steps
def status_filter(candidate: ToolCandidate, request: AssemblyRequest) -> Exclusion | None:
    """Only ACTIVE and DEPRECATED versions are assembled."""
    if candidate.status.is_callable:
        return None
    return ("not_active", f"status is {candidate.status.name}")


def tenant_filter(candidate: ToolCandidate, request: AssemblyRequest) -> Exclusion | None:
    tenants = candidate.metadata.tenants
    if tenants is None or request.context.tenant_id in tenants:
        return None
    return ("tenant_denied", f"tenant {request.context.tenant_id!r} is not allowed")


def scope_filter(candidate: ToolCandidate, request: AssemblyRequest) -> Exclusion | None:
    required = candidate.metadata.required_scopes
    if required <= request.scopes:
        return None
    return ("missing_scope", f"requires scope(s) {sorted(required - request.scopes)}")


def context_filter(candidate: ToolCandidate, request: AssemblyRequest) -> Exclusion | None:
    """Environment and region allow-lists; a context without the field does not match one."""
    metadata, context = candidate.metadata, request.context
    if metadata.environments is not None and context.environment not in metadata.environments:
        return ("context_mismatch", f"environment {context.environment!r} is not in {sorted(metadata.environments)}")
    if metadata.regions is not None and context.region not in metadata.regions:
        return ("context_mismatch", f"region {context.region!r} is not in {sorted(metadata.regions)}")
    return None


def flag_filter(candidate: ToolCandidate, request: AssemblyRequest) -> Exclusion | None:
    """``enabled_when(context)`` must return exactly ``True``; raising or anything else disables."""
    flag = candidate.metadata.enabled_when
    if flag is None:
        return None
    try:
        answer = flag(request.context)
    except Exception as exc:
        return ("flag_disabled", f"enabled_when raised {type(exc).__name__}")
    if answer is True:
        return None
    return ("flag_disabled", f"enabled_when returned {describe_answer(answer)}")


def deny_rule_filter(candidate: ToolCandidate, request: AssemblyRequest) -> Exclusion | None:
    for rule in request.deny_rules:
        detail = deny_detail(rule, candidate.binding, candidate.metadata, request.context)
        if detail is not None:
            return ("deny_rule", detail)
    return None


def kill_switch_filter(candidate: ToolCandidate, request: AssemblyRequest) -> Exclusion | None:
    """A kill switch (data, from the control plane or ``registry.add_kill_switch``) that matches omits the version."""
    switches = request.kill_switches
    if not switches:
        return None
    switch = matching_switch(switches, candidate.logical_name, candidate.semver, request.context)
    if switch is None:
        return None
    return ("kill_switch", f"kill switch {switch.switch_id}: {switch.reason}")


def query_filter(candidate: ToolCandidate, request: AssemblyRequest) -> Exclusion | None:
    query = request.query
    if query is None or query.matches(candidate.metadata):
        return None
    return ("query_mismatch", f"does not match {query.describe()}")


VERSION_FILTERS: tuple[VersionFilter, ...] = (
    status_filter,
    tenant_filter,
    scope_filter,
    context_filter,
    flag_filter,
    deny_rule_filter,
    kill_switch_filter,
    query_filter,
)
"""The per-version steps, in the order the rule fixes."""


_Excluded = tuple[ToolCandidate, OmissionReason, str]


def apply_filters(
    candidates: Iterable[ToolCandidate],
    request: AssemblyRequest,
    filters: Sequence[VersionFilter] = VERSION_FILTERS,
) -> tuple[list[ToolCandidate], list[_Excluded]]:
    """Run each candidate through ``filters`` in order; the first exclusion is the one recorded."""
    kept: list[ToolCandidate] = []
    excluded: list[_Excluded] = []
    for candidate in candidates:
        for step in filters:
            found = step(candidate, request)
            if found is not None:
                excluded.append((candidate, found[0], found[1]))
                break
        else:
            kept.append(candidate)
    return kept, excluded


# ------------------------------------------------------------------ per-name steps
def _by_model_name(candidates: Iterable[ToolCandidate]) -> dict[str, list[ToolCandidate]]:
    groups: dict[str, list[ToolCandidate]] = {}
    for candidate in candidates:
        groups.setdefault(candidate.model_name, []).append(candidate)
    return groups


def shadow(candidates: Iterable[ToolCandidate]) -> tuple[list[ToolCandidate], list[_Excluded]]:
    """Leave one origin and one layer per model name.

    A built-in tool always beats a plugin tool of the same name, whatever
    their layers (a plugin cannot hijack a built-in name by registering
    deeper); the conflict is logged as a warning. Then the innermost layer
    wins, as scoped registrations shadow outer ones.
    """
    kept: list[ToolCandidate] = []
    excluded: list[_Excluded] = []
    for name, group in _by_model_name(candidates).items():
        if len(group) == 1:
            kept.append(group[0])
            continue
        if len({c.origin for c in group}) > 1:
            logger.warning("plugin tool %r is shadowed by a built-in tool of the same name; the built-in wins", name)
            excluded.extend((c, "shadowed", "a built-in tool has this name") for c in group if c.origin == "plugin")
            group = [c for c in group if c.origin == "builtin"]
        innermost = max(c.layer for c in group)
        for candidate in group:
            if candidate.layer == innermost:
                kept.append(candidate)
            else:
                excluded.append((candidate, "shadowed", f"shadowed by a tool of this name in an inner scope (layer {innermost})"))
    return kept, excluded


def _best_pin(group: Sequence[ToolCandidate], request: AssemblyRequest) -> ToolPin | None:
    names = {c.logical_name for c in group}
    best: ToolPin | None = None
    for pin in request.pins:  # later pins win ties: the registry lists them in the order they were set
        if pin.logical_name in names and pin.matches(request.context):
            if best is None or pin.specificity >= best.specificity:
                best = pin
    return best


def choose_versions(
    candidates: Iterable[ToolCandidate], request: AssemblyRequest | None = None
) -> tuple[list[ToolCandidate], list[_Excluded]]:
    """One version per model name: the best matching pin if callable, else the highest ACTIVE.

    Without a ``request`` (a plain ``seal()``: no context) no pin applies.
    """
    kept: list[ToolCandidate] = []
    excluded: list[_Excluded] = []
    for group in _by_model_name(candidates).values():
        chosen: ToolCandidate | None = None
        pin = _best_pin(group, request) if request is not None and request.pins else None
        if pin is not None:
            chosen = next(
                (
                    c
                    for c in group
                    if c.logical_name == pin.logical_name and c.version == pin.version and c.status.is_callable
                ),
                None,
            )
        if chosen is None:
            active = [c for c in group if c.status is ToolStatus.ACTIVE]
            chosen = max(active, key=lambda c: c.semver) if active else None
        if chosen is None:
            excluded.extend((c, "not_active", "no ACTIVE version and no pin to a callable one") for c in group)
            continue
        kept.append(chosen)
        how = "pinned" if pin is not None and chosen.version == pin.version else "highest ACTIVE"
        excluded.extend(
            (c, "superseded", f"version {chosen.version} is used ({how})") for c in group if c is not chosen
        )
    return kept, excluded


# ------------------------------------------------------------------ the assembly
@dataclass(frozen=True, slots=True)
class CatalogSelection:
    """The outcome of :func:`assemble_catalog`: what the model may see and call, and what was left out.

    ``chosen`` is in catalog order (built-in tools by ordinal name, then plugin
    tools); ``omitted`` is sorted by logical name, then version, so equal
    inputs give equal selections. ``aliases`` maps each usable alias to the
    model name it resolves to. ``reusable``: no feature flag (``enabled_when``)
    and no deny rule took part, so the selection is a function of the
    candidates, the context's identity, the scopes and the pins alone (what a
    cache of assemblies may rely on; see :attr:`ToolAssembly.reusable
    <tether_clr.catalog.views.ToolAssembly.reusable>`).
    """

    context: RequestContext
    chosen: tuple[ToolCandidate, ...]
    omitted: tuple[Omission, ...]
    aliases: Mapping[str, str]
    reusable: bool = False

    @property
    def definitions(self) -> tuple[ToolSchemaSnapshot, ...]:
        """The chosen tools' definitions, in catalog order, as fresh deep copies: a caller that
        edits one (its ``parameters`` dict is mutable) cannot change what later assemblies show
        the model while their digest stays the same. A deferred tool's definition is not among
        them (see :meth:`shown_definitions` for a snapshot that loaded some)."""
        return self.shown_definitions()

    def shown_definitions(self, loaded: frozenset[str] = frozenset()) -> tuple[ToolSchemaSnapshot, ...]:
        """The definitions shown with full parameters: every chosen tool but the deferred ones
        not in ``loaded`` (model names), in catalog order, as fresh deep copies."""
        return tuple(
            c.definition.model_copy(deep=True) for c in self.chosen if not c.metadata.deferred or c.model_name in loaded
        )

    @property
    def deferred_names(self) -> tuple[str, ...]:
        """The model names of the chosen deferred tools, in catalog order."""
        return tuple(c.model_name for c in self.chosen if c.metadata.deferred)

    @property
    def bindings(self) -> Mapping[str, ToolBinding]:
        """Model name -> binding, in catalog order."""
        return MappingProxyType({c.model_name: c.binding for c in self.chosen})

    def discovery(self, registry_revision: int, policy_revision: int) -> DiscoveryResult:
        return DiscoveryResult(tuple(c.binding for c in self.chosen), self.omitted, registry_revision, policy_revision)

    def digest(
        self, registry_revision: int, policy_revision: int, *, loaded: Iterable[str] = (), native_deferral: bool = False
    ) -> str:
        return assembly_digest(
            self.chosen, self.omitted, self.context, registry_revision, policy_revision,
            loaded=loaded, native_deferral=native_deferral,
        )


def _catalog_order(candidate: ToolCandidate) -> tuple[bool, bytes]:
    return (candidate.origin != "builtin", ordinal_key(candidate.model_name))


def _omission_order(item: _Excluded) -> tuple[Any, ...]:
    candidate, reason, detail = item
    return (ordinal_key(candidate.logical_name), candidate.semver, candidate.layer, candidate.origin, reason, detail)


def resolve_aliases(chosen: Sequence[ToolCandidate], primary: Iterable[str] | None = None) -> Mapping[str, str]:
    """Alias -> model name for the chosen tools.

    An alias never shadows a primary name (a chosen tool's model name, or any
    of ``primary`` when given: the names of every chosen tool, when only those
    with aliases are passed), and an alias two chosen tools both claim resolves
    to neither (a warning is logged): a call under it is UNKNOWN_TOOL rather
    than a guess.
    """
    primary = {c.model_name for c in chosen} if primary is None else set(primary)
    claims: dict[str, set[str]] = {}
    for candidate in chosen:
        for alias in candidate.metadata.aliases:
            if alias not in primary:
                claims.setdefault(alias, set()).add(candidate.model_name)
    resolved: dict[str, str] = {}
    for alias, owners in claims.items():
        if len(owners) == 1:
            resolved[alias] = next(iter(owners))
        else:
            logger.warning("alias %r is claimed by %s; it resolves to none of them", alias, sorted(owners))
    return MappingProxyType(resolved)


def assemble_catalog(
    candidates: Iterable[ToolCandidate],
    context: RequestContext,
    *,
    scopes: Iterable[str] | None = None,
    pins: Iterable[ToolPin] = (),
    deny_rules: Iterable[DenyRule] = (),
    query: CapabilityQuery | None = None,
    filters: Sequence[VersionFilter] = VERSION_FILTERS,
    kill_switches: Iterable[KillSwitch] = (),
) -> CatalogSelection:
    """Compute what ``context`` may see and call from ``candidates``.

    ``scopes`` are the effective scopes (``None``: the context's own). Every
    candidate ends up either chosen or in ``omitted`` exactly once, with the
    reason of the first step that excluded it. Pure apart from logging
    warnings; linear in the number of candidates but for the final sorts.
    """
    request = AssemblyRequest(
        context,
        context.scopes if scopes is None else frozenset(scopes),
        tuple(pins),
        tuple(deny_rules),
        query,
        tuple(kill_switches),
    )
    candidates = list(candidates)
    # Flags and deny rules are host code that may answer differently for the same inputs.
    reusable = not request.deny_rules and all(c.metadata.enabled_when is None for c in candidates)
    visible, excluded = apply_filters(candidates, request, filters)
    unshadowed, shadowed = shadow(visible)
    chosen, superseded = choose_versions(unshadowed, request)
    chosen.sort(key=_catalog_order)
    omitted = sorted(excluded + shadowed + superseded, key=_omission_order)
    return CatalogSelection(
        context,
        tuple(chosen),
        tuple(Omission(c.logical_name, c.version, reason, detail) for c, reason, detail in omitted),
        resolve_aliases(chosen),
        reusable,
    )


def assembly_digest(
    chosen: Sequence[ToolCandidate],
    omitted: Sequence[Omission],
    context: RequestContext,
    registry_revision: int,
    policy_revision: int,
    *,
    loaded: Iterable[str] = (),
    native_deferral: bool = False,
) -> str:
    """``"sha256:"`` and hex over the RFC 8785 form of what a request saw and was bound to.

    The document hashed is::

        {"bindings": [binding, ...], "context": context.identity(),
         "definitions": [definition, ...], "omitted": [omission, ...],
         "policy_revision": n, "registry_revision": n}

    in catalog order; the request id is not part of it, so two requests with
    the same identity that saw the same tools have the same digest. The bytes
    are put together from each definition's and binding's canonical form,
    computed once per candidate; the result is exactly the canonical form of the
    whole document.

    When a chosen tool is deferred (``ToolMetadata.deferred``), ``definitions``
    holds only those shown with their parameters (not deferred, or named in
    ``loaded``), and the document has one more key, ``"deferral"``::

        {"deferred": [{"description", "name", "search_hint"}, ...],
         "loaded": [model name, ...], "native": bool}

    (the deferred tools not loaded, and the loaded ones, in catalog order;
    ``native`` is ``native_deferral``). With no deferred tool the document, and
    so the digest, is exactly the one above: ``loaded`` and ``native_deferral``
    change nothing.
    """
    loaded_names = frozenset(loaded)
    deferral = b""
    shown: Sequence[ToolCandidate] = chosen
    if any(c.metadata.deferred for c in chosen):
        shown = [c for c in chosen if not c.metadata.deferred or c.model_name in loaded_names]
        waiting = [c for c in chosen if c.metadata.deferred and c.model_name not in loaded_names]
        document = {
            "deferred": [
                {"description": c.definition.description, "name": c.model_name, "search_hint": c.metadata.search_hint}
                for c in waiting
            ],
            "loaded": [c.model_name for c in chosen if c.metadata.deferred and c.model_name in loaded_names],
            "native": bool(native_deferral),
        }
        deferral = b',"deferral":' + canonical_bytes(document)
    parts = [
        b'{"bindings":[',
        b",".join(c.binding_json for c in chosen),
        b'],"context":',
        canonical_bytes(context.identity()),
        deferral,
        b',"definitions":[',
        b",".join(c.definition_json for c in shown),
        b'],"omitted":',
        canonical_bytes([o.as_json() for o in omitted]),
        b',"policy_revision":',
        canonical_bytes(policy_revision),
        b',"registry_revision":',
        canonical_bytes(registry_revision),
        b"}",
    ]
    return sha256_of(b"".join(parts))

"""What a catalog decision produces: bindings, omissions, discovery results, pins, and the reason vocabularies.

Floor 2 (records). Every record is immutable and checked when built.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal, get_args

from tether_clr.catalog.metadata import ToolOrigin
from tether_clr.foundations.checks import optional_str, require_str
from tether_clr.foundations.versions import SemVer
from tether_clr.records.context import RequestContext

__all__ = [
    "CATALOG_FAILURE_REASONS",
    "CatalogFailureReason",
    "DeferredTool",
    "DiscoveryResult",
    "OMISSION_REASONS",
    "Omission",
    "OmissionReason",
    "REAUTHORIZATION_REASONS",
    "ReauthorizationReason",
    "ToolBinding",
    "ToolPin",
]

OmissionReason = Literal[
    "tenant_denied",
    "missing_scope",
    "context_mismatch",
    "not_active",
    "flag_disabled",
    "deny_rule",
    "kill_switch",
    "shadowed",
    "superseded",
    "query_mismatch",
]
OMISSION_REASONS: tuple[OmissionReason, ...] = get_args(OmissionReason)

# Why a call bound in a snapshot is refused (DENIED) right before its body would run.
ReauthorizationReason = Literal[
    "tool_disabled", "tool_retired", "tenant_denied", "scope_revoked", "deny_rule", "stale_binding", "kill_switch"
]
REAUTHORIZATION_REASONS: tuple[ReauthorizationReason, ...] = get_args(ReauthorizationReason)

# Every machine-readable ``failure.reason`` the catalog adds to the eight failure codes:
# re-authorization (DENIED), an authority that fails (UNAVAILABLE), an oversized result (TOOL_ERROR),
# a call to a deferred tool whose schema the snapshot has not loaded (INVALID_ARGS), a host whose view
# of the shared control plane is older than its max_staleness (UNAVAILABLE).
CatalogFailureReason = Literal[
    "tool_disabled",
    "tool_retired",
    "tenant_denied",
    "scope_revoked",
    "deny_rule",
    "stale_binding",
    "kill_switch",
    "authority_unavailable",
    "control_stale",
    "result_too_large",
    "schema_not_loaded",
]
CATALOG_FAILURE_REASONS: tuple[CatalogFailureReason, ...] = get_args(CatalogFailureReason)

_SCHEMA_HASH = re.compile(r"sha256:[0-9a-f]{64}")


@dataclass(frozen=True, slots=True)
class ToolBinding:
    """Which exact tool version a model-facing name stands for in one snapshot.

    ``schema_hash`` pins the parameters the model was shown; the call is
    refused (``stale_binding``) if that (version, hash) no longer exists.
    """

    model_name: str
    logical_name: str
    version: str
    schema_hash: str
    origin: ToolOrigin

    def __post_init__(self) -> None:
        require_str(self.model_name, "model_name")
        require_str(self.logical_name, "logical_name")
        SemVer.parse(self.version)
        if not isinstance(self.schema_hash, str) or _SCHEMA_HASH.fullmatch(self.schema_hash) is None:
            raise ValueError(f'schema_hash must be "sha256:" and 64 lowercase hex digits, got {self.schema_hash!r}')
        if self.origin not in ("builtin", "plugin"):
            raise ValueError(f"origin must be 'builtin' or 'plugin', got {self.origin!r}")

    def as_json(self) -> dict[str, Any]:
        return {
            "model_name": self.model_name,
            "logical_name": self.logical_name,
            "version": self.version,
            "schema_hash": self.schema_hash,
            "origin": self.origin,
        }


@dataclass(frozen=True, slots=True)
class DeferredTool:
    """A deferred tool as the model is first shown it: its name, description and search hint, no parameters."""

    name: str
    description: str
    search_hint: str | None = None

    def __post_init__(self) -> None:
        require_str(self.name, "name")
        if not isinstance(self.description, str):
            raise TypeError(f"description must be a str, got {type(self.description).__name__}")
        optional_str(self.search_hint, "search_hint")

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "search_hint": self.search_hint}


@dataclass(frozen=True, slots=True)
class Omission:
    """One tool version left out of a catalog, and the first filter that left it out."""

    logical_name: str
    version: str
    reason: OmissionReason
    detail: str = ""

    def __post_init__(self) -> None:
        require_str(self.logical_name, "logical_name")
        require_str(self.version, "version")
        if self.reason not in OMISSION_REASONS:
            raise ValueError(f"reason must be one of {OMISSION_REASONS}, got {self.reason!r}")
        if not isinstance(self.detail, str):
            raise TypeError(f"detail must be a str, got {type(self.detail).__name__}")

    def as_json(self) -> dict[str, Any]:
        return {"logical_name": self.logical_name, "version": self.version, "reason": self.reason, "detail": self.detail}


def _revision(value: Any, field: str) -> int:
    if type(value) is not int or value < 0:
        raise ValueError(f"{field} must be a non-negative int, got {value!r}")
    return value


@dataclass(frozen=True, slots=True)
class DiscoveryResult:
    """What ``discover`` answers: the bindings chosen, in catalog order, and every version left out.

    ``tools`` and ``omitted`` are tuples (immutable); the revisions say which
    state of the registry and of its policies the answer was computed from.
    """

    tools: tuple[ToolBinding, ...]
    omitted: tuple[Omission, ...]
    registry_revision: int
    policy_revision: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "tools", tuple(self.tools))
        object.__setattr__(self, "omitted", tuple(self.omitted))
        for binding in self.tools:
            if not isinstance(binding, ToolBinding):
                raise TypeError(f"tools must hold ToolBinding records, got {type(binding).__name__}")
        for omission in self.omitted:
            if not isinstance(omission, Omission):
                raise TypeError(f"omitted must hold Omission records, got {type(omission).__name__}")
        _revision(self.registry_revision, "registry_revision")
        _revision(self.policy_revision, "policy_revision")


@dataclass(frozen=True, slots=True)
class ToolPin:
    """Use ``version`` of ``logical_name`` for a tenant, an agent version, both, or everyone.

    The most specific matching pin wins: tenant and agent version, then
    tenant, then agent version, then the global pin (neither).
    """

    logical_name: str
    version: str
    tenant_id: str | None = None
    agent_version: str | None = None

    def __post_init__(self) -> None:
        require_str(self.logical_name, "logical_name")
        SemVer.parse(self.version)
        optional_str(self.tenant_id, "tenant_id")
        optional_str(self.agent_version, "agent_version")

    @property
    def specificity(self) -> int:
        """3 tenant and agent version, 2 tenant, 1 agent version, 0 global."""
        return (2 if self.tenant_id is not None else 0) + (1 if self.agent_version is not None else 0)

    def matches(self, context: RequestContext) -> bool:
        return (self.tenant_id is None or self.tenant_id == context.tenant_id) and (
            self.agent_version is None or self.agent_version == context.agent_version
        )

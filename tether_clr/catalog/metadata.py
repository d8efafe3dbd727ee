"""What a tool version declares about itself for governance, and how a capability query matches it.

Floor 2 (records).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import Enum
from typing import Any, Literal

from tether_clr.foundations.checks import (
    optional_str,
    optional_str_set,
    require_str,
    str_set,
)
from tether_clr.foundations.compatibility import COMPATIBILITY_MODES, CompatibilityMode
from tether_clr.foundations.text import is_valid_text
from tether_clr.foundations.versions import SemVer
from tether_clr.records.context import RequestContext

__all__ = ["CapabilityQuery", "IDENTITY_FIELDS", "SideEffect", "ToolMetadata", "ToolOrigin"]

ToolOrigin = Literal["builtin", "plugin"]
_ORIGINS: tuple[ToolOrigin, ...] = ("builtin", "plugin")


class SideEffect(Enum):
    """The worst thing a call can do to the world, for policies and capability queries."""

    NONE = "none"
    WRITE = "write"
    EXTERNAL_COMMUNICATION = "external_communication"
    FINANCIAL = "financial"
    DESTRUCTIVE = "destructive"


# Fields that name a version rather than govern it: changing them is a new registration.
IDENTITY_FIELDS: frozenset[str] = frozenset({"logical_name", "version", "origin"})


@dataclass(frozen=True, slots=True)
class ToolMetadata:
    """Governance facts about one tool version, checked when built.

    The defaults are the strictest posture: available to every tenant and
    environment only because nothing was restricted yet, but *not* read-only,
    not idempotent, no side-effect claim beyond NONE, compatibility ``strict``.
    ``read_only``, ``destructive``, ``idempotent`` and ``open_world`` are
    claims: ``True`` or ``False`` when the tool's author said so, ``None``
    (the default) when nobody did, so a projection can tell "not destructive"
    from "not said" and never describe a tool as safe that nobody vouched for
    (MCP's hints are omitted, which a client reads as "may be destructive, open
    world"). Governance reads ``None`` as the unsafe answer: a retry policy
    needs ``idempotent=True``.
    ``tenants``, ``environments`` and ``regions``: ``None`` means no
    restriction, a set is an allow-list (an empty set allows nobody).
    ``logical_name`` ``None`` means the tool's own (model-facing) name;
    ``version`` is a semantic version. ``enabled_when(context)`` is a feature
    flag, evaluated when a catalog is assembled, never at call time.
    ``max_result_bytes`` bounds the canonical JSON of a result (UTF-8 bytes).
    ``title`` is a human-readable display name (MCP's ``title``), ``None`` for
    the tool's name; it is shown, never used to find a tool.
    ``deferred`` lists the tool to the model without its parameters (name,
    description and ``search_hint``, a few words the tool search also ranks
    by): its schema is loaded on demand (``assembly.with_loaded``), and a call
    before that ends INVALID_ARGS ``schema_not_loaded``.
    Set-valued fields accept any iterable of strings and are kept as frozensets;
    a bare string is refused.
    """

    logical_name: str | None = None
    version: str = "1.0.0"
    provider: str | None = None
    tenants: frozenset[str] | None = None
    required_scopes: frozenset[str] = frozenset()
    environments: frozenset[str] | None = None
    regions: frozenset[str] | None = None
    side_effect: SideEffect = SideEffect.NONE
    risk_level: str = "low"
    read_only: bool | None = None
    destructive: bool | None = None
    idempotent: bool | None = None
    open_world: bool | None = None
    domain: str | None = None
    tags: frozenset[str] = frozenset()
    aliases: tuple[str, ...] = ()
    origin: ToolOrigin = "builtin"
    compatibility: CompatibilityMode = "strict"
    max_result_bytes: int | None = None
    enabled_when: Callable[[RequestContext], Any] | None = None
    title: str | None = None
    deferred: bool = False
    search_hint: str | None = None

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        optional_str(self.logical_name, "logical_name")
        SemVer.parse(self.version)
        optional_str(self.provider, "provider")
        set_(self, "tenants", optional_str_set(self.tenants, "tenants"))
        set_(self, "required_scopes", str_set(self.required_scopes, "required_scopes"))
        set_(self, "environments", optional_str_set(self.environments, "environments"))
        set_(self, "regions", optional_str_set(self.regions, "regions"))
        set_(self, "side_effect", SideEffect(self.side_effect))
        require_str(self.risk_level, "risk_level")
        for flag in ("read_only", "destructive", "idempotent", "open_world"):
            if getattr(self, flag) is not None and not isinstance(getattr(self, flag), bool):
                raise TypeError(f"{flag} must be a bool or None, got {getattr(self, flag)!r}")
        optional_str(self.domain, "domain")
        set_(self, "tags", str_set(self.tags, "tags"))
        set_(self, "aliases", _aliases(self.aliases))
        if self.origin not in _ORIGINS:
            raise ValueError(f"origin must be one of {_ORIGINS}, got {self.origin!r}")
        if self.compatibility not in COMPATIBILITY_MODES:
            raise ValueError(f"compatibility must be one of {COMPATIBILITY_MODES}, got {self.compatibility!r}")
        limit = self.max_result_bytes
        if limit is not None and (type(limit) is not int or limit <= 0):
            raise ValueError(f"max_result_bytes must be a positive int or None, got {limit!r}")
        if self.enabled_when is not None and not callable(self.enabled_when):
            raise TypeError(f"enabled_when must be callable or None, got {type(self.enabled_when).__name__}")
        optional_str(self.title, "title")
        if not isinstance(self.deferred, bool):
            raise TypeError(f"deferred must be a bool, got {self.deferred!r}")
        optional_str(self.search_hint, "search_hint")
        if self.search_hint is not None and not is_valid_text(self.search_hint):
            raise ValueError("search_hint is not valid Unicode text (it holds a lone surrogate)")

    @property
    def semver(self) -> SemVer:
        return SemVer.parse(self.version)

    def logical_name_for(self, model_name: str) -> str:
        """The logical name of a tool registered under ``model_name``."""
        return self.logical_name if self.logical_name is not None else model_name

    def updated(self, **changes: Any) -> ToolMetadata:
        """A copy with governance fields changed (what ``update_metadata`` applies).

        ``logical_name``, ``version`` and ``origin`` name a version and cannot
        change (``ValueError``): a new schema or identity is a new registration.
        Unknown fields are a ``TypeError``; every value is checked again.
        """
        fixed = sorted(IDENTITY_FIELDS & changes.keys())
        if fixed:
            raise ValueError(f"{fixed} identify a tool version and cannot be updated; register a new version")
        return dataclasses.replace(self, **changes)


def _aliases(value: Any) -> tuple[str, ...]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise TypeError(f"aliases must be a sequence of str, got {type(value).__name__}")
    aliases = tuple(value)
    for alias in aliases:
        require_str(alias, "each alias")
    if len(set(aliases)) != len(aliases):
        raise ValueError(f"aliases must be distinct, got {aliases!r}")
    return aliases


@dataclass(frozen=True, slots=True)
class CapabilityQuery:
    """Ask for tools by capability: ``domains``, ``side_effects``, ``tags``.

    A tool version matches when, for every field given (not ``None``), it has
    at least one of the listed values: its ``domain`` is listed, its
    ``side_effect`` is listed, one of its ``tags`` is listed. An empty set is a
    field given with nothing listed, so it matches nothing (fail closed).
    """

    domains: frozenset[str] | None = None
    side_effects: frozenset[SideEffect] | None = None
    tags: frozenset[str] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "domains", optional_str_set(self.domains, "domains"))
        object.__setattr__(self, "tags", optional_str_set(self.tags, "tags"))
        if self.side_effects is not None:
            if isinstance(self.side_effects, (str, bytes)) or not isinstance(self.side_effects, Iterable):
                raise TypeError(f"side_effects must be a set of SideEffect, got {type(self.side_effects).__name__}")
            object.__setattr__(self, "side_effects", frozenset(SideEffect(s) for s in self.side_effects))

    def matches(self, metadata: ToolMetadata) -> bool:
        if self.domains is not None and metadata.domain not in self.domains:
            return False
        if self.side_effects is not None and metadata.side_effect not in self.side_effects:
            return False
        if self.tags is not None and self.tags.isdisjoint(metadata.tags):
            return False
        return True

    def describe(self) -> str:
        """The given fields, for an omission's detail."""
        parts = [
            f"{name}={sorted(str(getattr(v, 'value', v)) for v in values)}"
            for name, values in (("domains", self.domains), ("side_effects", self.side_effects), ("tags", self.tags))
            if values is not None
        ]
        return ", ".join(parts) or "any"


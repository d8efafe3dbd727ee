"""Kill switches: data-defined deny entries an operator can set on every host at once.

A :class:`KillSwitch` matches a call when *every* field it gives matches
(``None`` is "any"): the tool's logical name, a version range
(:class:`VersionRange`, e.g. ``">=1.2.0,<2.0.0"``), the request's tenant and
principal. A switch that gives no field at all stops every tool: the
emergency brake. Unlike a deny rule (host code), a switch is plain data, so it
is shared through the control plane (:mod:`tether_clr.catalog.control`) and
keeps an assembly :attr:`~tether_clr.ToolAssembly.reusable`.

Checked when assembling (omission ``kill_switch``) and again right before each
body (DENIED, reason ``kill_switch``), so it stops calls bound in older
snapshots too. A call with no request context (a plain ``seal()`` view) has no
tenant or principal to compare: a switch that names one matches it, fail closed.

Floor 3 (the catalog); pure.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tether_clr.foundations.checks import optional_str, require_str
from tether_clr.foundations.text import is_valid_text
from tether_clr.foundations.versions import SemVer
from tether_clr.records.context import RequestContext

__all__ = ["KillSwitch", "VersionRange", "matching_switch"]

_COMPARATOR = re.compile(r"\s*(==|!=|>=|<=|>|<|=)?\s*([^\s,<>=!]+)\s*")
_OPERATORS: dict[str, Callable[[SemVer, SemVer], bool]] = {
    "==": lambda v, b: v.same_precedence(b),
    "=": lambda v, b: v.same_precedence(b),
    "!=": lambda v, b: not v.same_precedence(b),
    ">=": lambda v, b: not v.precedes(b),
    "<=": lambda v, b: v.precedes(b) or v.same_precedence(b),
    ">": lambda v, b: b.precedes(v),
    "<": lambda v, b: v.precedes(b),
}


@dataclass(frozen=True, slots=True)
class VersionRange:
    """A set of semantic versions: comparators joined by commas, all of which must hold.

    ``"1.2.0"`` (or ``"==1.2.0"``) is that version; ``">=1.0.0,<2.0.0"`` every
    1.x; operators ``== != >= <= > <``, compared by semver precedence (build
    metadata ignored; a prerelease by its precedence, so ``2.0.0-rc.1`` is ``<2.0.0``).
    Anything else, an empty text included, is ``ValueError``.
    ``str()`` gives back the normalized text.
    """

    text: str
    comparators: tuple[tuple[str, SemVer], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.text, str):
            raise TypeError(f"a version range must be a str, got {type(self.text).__name__}")
        parts = self.text.split(",")
        comparators: list[tuple[str, SemVer]] = []
        for part in parts:
            match = _COMPARATOR.fullmatch(part)
            if match is None:
                raise ValueError(f"not a version range (e.g. '>=1.0.0,<2.0.0'): {self.text!r}")
            operator = match[1] or "=="
            comparators.append(("==" if operator == "=" else operator, SemVer.parse(match[2])))
        object.__setattr__(self, "comparators", tuple(comparators))
        object.__setattr__(self, "text", ",".join(f"{op}{version}" for op, version in comparators))

    def __contains__(self, version: object) -> bool:
        if not isinstance(version, SemVer):
            return False
        return all(_OPERATORS[op](version, bound) for op, bound in self.comparators)

    def __str__(self) -> str:
        return self.text


def _new_id() -> str:
    return f"ks-{uuid.uuid4().hex[:12]}"


@dataclass(frozen=True, slots=True)
class KillSwitch:
    """``KillSwitch(reason, logical_name=None, versions=None, tenant_id=None, principal_id=None, switch_id=...)``.

    ``reason`` (required, non-empty) says why, for the audit trail and the
    refusal; ``versions`` is a :class:`VersionRange` or its text; ``switch_id``
    names the switch so it can be lifted (``"ks-"`` and 12 hex digits when not
    given). Every field given must match for the switch to stop a call.
    """

    reason: str
    logical_name: str | None = None
    versions: VersionRange | None = None
    tenant_id: str | None = None
    principal_id: str | None = None
    switch_id: str = field(default_factory=_new_id)

    def __post_init__(self) -> None:
        require_str(self.reason, "reason")
        if not is_valid_text(self.reason):
            raise ValueError("reason is not valid Unicode text (it holds a lone surrogate)")
        for name in ("logical_name", "tenant_id", "principal_id"):
            value = optional_str(getattr(self, name), name)
            if value is not None and not is_valid_text(value):
                raise ValueError(f"{name} is not valid Unicode text (it holds a lone surrogate)")
        require_str(self.switch_id, "switch_id")
        if not is_valid_text(self.switch_id):
            raise ValueError("switch_id is not valid Unicode text (it holds a lone surrogate)")
        if isinstance(self.versions, str):
            object.__setattr__(self, "versions", VersionRange(self.versions))
        elif self.versions is not None and not isinstance(self.versions, VersionRange):
            raise TypeError(f"versions must be a VersionRange, its text or None, got {type(self.versions).__name__}")

    def matches(self, logical_name: str, version: SemVer, context: RequestContext | None) -> bool:
        """Whether this switch stops a call of ``logical_name`` ``version`` for ``context``.

        ``context`` ``None`` (a plain view): a switch naming a tenant or a
        principal matches, since the call's could be that one (fail closed).
        """
        if self.logical_name is not None and self.logical_name != logical_name:
            return False
        if self.versions is not None and version not in self.versions:
            return False
        if context is None:
            return True
        if self.tenant_id is not None and self.tenant_id != context.tenant_id:
            return False
        return self.principal_id is None or self.principal_id == context.principal_id

    def as_json(self) -> dict[str, Any]:
        """The switch as a JSON object (what the control log stores; :meth:`from_json` reads it back)."""
        return {
            "switch_id": self.switch_id,
            "reason": self.reason,
            "logical_name": self.logical_name,
            "versions": None if self.versions is None else str(self.versions),
            "tenant_id": self.tenant_id,
            "principal_id": self.principal_id,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> KillSwitch:
        """The switch :meth:`as_json` wrote; ``ValueError`` / ``TypeError`` for anything else."""
        if not isinstance(data, Mapping):
            raise TypeError(f"a kill switch is a JSON object, got {type(data).__name__}")
        missing = sorted({"reason", "switch_id"} - data.keys())
        if missing:
            raise ValueError(f"a kill switch needs {missing}")
        return cls(
            data["reason"],
            logical_name=data.get("logical_name"),
            versions=data.get("versions"),
            tenant_id=data.get("tenant_id"),
            principal_id=data.get("principal_id"),
            switch_id=data["switch_id"],
        )

    def describe(self) -> str:
        """What the switch matches, for a message or a table."""
        given = [
            f"{name}={value}"
            for name, value in (
                ("tool", self.logical_name), ("versions", self.versions),
                ("tenant", self.tenant_id), ("principal", self.principal_id),
            )
            if value is not None
        ]  # fmt: skip
        return ", ".join(given) or "every tool"


def matching_switch(
    switches: Sequence[KillSwitch], logical_name: str, version: SemVer, context: RequestContext | None
) -> KillSwitch | None:
    """The first switch of ``switches`` that stops this call, or ``None`` (no switch: no work)."""
    for switch in switches:
        if switch.matches(logical_name, version, context):
            return switch
    return None

"""A registered tool version as assembly sees it (:class:`ToolCandidate`), and deny rules.

A candidate derives once what every later step compares: the logical name, the
semantic version, the schema hash, the binding and the canonical bytes of its
definition and binding. A deny rule is the host's veto, asked when assembling
and again before each body; a rule that raises or answers anything but ``None``
or a string denies.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tether_clr.catalog.lifecycle import ToolStatus
from tether_clr.catalog.metadata import ToolMetadata, ToolOrigin
from tether_clr.catalog.records import ToolBinding
from tether_clr.foundations.canonical import canonical_bytes, schema_hash
from tether_clr.foundations.versions import SemVer
from tether_clr.records.context import RequestContext
from tether_clr.records.declaration import ToolSchemaSnapshot

__all__ = ["DenyRule", "ToolCandidate", "deny_detail", "describe_answer"]

DenyRule = Callable[[ToolBinding, ToolMetadata, RequestContext], "str | None"]
"""``rule(binding, metadata, context) -> str | None``: a string denies (it is the detail)."""


@dataclass(frozen=True, slots=True, eq=False)
class ToolCandidate:
    """One registered tool version as assembly needs it.

    Built by the registry from its record of a registration: the
    ``definition`` (what the model is shown; its ``name`` is the model-facing
    name), the governance ``metadata``, the current ``status`` and the
    ``layer`` it was registered in (0 global, deeper scopes higher: a scope's
    ``depth + 1``). The logical name, version, schema hash, binding and the
    canonical bytes of the definition and binding are derived once, here.
    """

    definition: ToolSchemaSnapshot
    metadata: ToolMetadata = field(default_factory=ToolMetadata)
    status: ToolStatus = ToolStatus.ACTIVE
    layer: int = 0
    model_name: str = field(init=False)
    logical_name: str = field(init=False)
    semver: SemVer = field(init=False)
    schema_hash: str = field(init=False)
    origin: ToolOrigin = field(init=False)
    binding: ToolBinding = field(init=False)
    definition_json: bytes = field(init=False, repr=False)
    binding_json: bytes = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.definition, ToolSchemaSnapshot):
            raise TypeError(f"definition must be a ToolSchemaSnapshot, got {type(self.definition).__name__}")
        if not isinstance(self.metadata, ToolMetadata):
            raise TypeError(f"metadata must be a ToolMetadata, got {type(self.metadata).__name__}")
        if not isinstance(self.status, ToolStatus):
            raise TypeError(f"status must be a ToolStatus, got {type(self.status).__name__}")
        if type(self.layer) is not int or self.layer < 0:
            raise ValueError(f"layer must be a non-negative int, got {self.layer!r}")
        set_ = object.__setattr__
        model_name = self.definition.name
        set_(self, "model_name", model_name)
        set_(self, "logical_name", self.metadata.logical_name_for(model_name))
        set_(self, "semver", self.metadata.semver)
        set_(self, "schema_hash", schema_hash(self.definition.parameters))
        set_(self, "origin", self.metadata.origin)
        set_(self, "definition_json", canonical_bytes(self.definition.model_dump(mode="json")))
        binding = ToolBinding(model_name, self.logical_name, self.metadata.version, self.schema_hash, self.origin)
        set_(self, "binding", binding)
        set_(self, "binding_json", canonical_bytes(binding.as_json()))

    @property
    def version(self) -> str:
        return self.metadata.version


def describe_answer(answer: Any) -> str:
    if inspect.iscoroutine(answer):
        answer.close()  # never awaited by design: predicates here are synchronous
        return "a coroutine (it must be synchronous)"
    return f"{type(answer).__name__} {answer!r}"[:200]


def deny_detail(rule: DenyRule, binding: ToolBinding, metadata: ToolMetadata, context: RequestContext) -> str | None:
    """What one deny rule says: ``None`` allows; anything else (a raise included) denies."""
    try:
        answer = rule(binding, metadata, context)
    except Exception as exc:
        return f"deny rule raised {type(exc).__name__}"
    if answer is None:
        return None
    if isinstance(answer, str):
        return answer
    return f"deny rule returned {describe_answer(answer)}"

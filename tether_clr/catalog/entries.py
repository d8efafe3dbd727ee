"""One registered tool version: the frozen entry a view holds, the live record behind it,
and the checks that make an entry out of a tool and its registration options.

An entry is read and validated once, at registration: a tool that changes its
name, description or schema later does not change what was declared.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from tether_clr.catalog.builtin import CatalogTool
from tether_clr.catalog.candidates import ToolCandidate
from tether_clr.catalog.lifecycle import ToolStatus
from tether_clr.catalog.metadata import ToolMetadata
from tether_clr.catalog.registration import ContentHook, ToolRegistrationOptions
from tether_clr.foundations.compatibility import require_compatible
from tether_clr.foundations.text import is_valid_text, safe_text
from tether_clr.foundations.validation import ArgumentValidator
from tether_clr.records.context import refuse_identity_parameters
from tether_clr.records.declaration import ToolSchemaSnapshot
from tether_clr.records.retry import RetryPolicy
from tether_clr.records.scope import AgentPipelineScope
from tether_clr.tools.predicates import as_approval_predicate, as_concurrency_predicate
from tether_clr.tools.protocol import Tool

__all__ = ["LiveRecord", "ToolEntry", "check_compatible", "make_entry", "validation_checks"]


@dataclass(frozen=True, slots=True, eq=False)
class ToolEntry:
    """One registered tool version as a view holds it: frozen when the view was made.

    ``record`` is the live registration it came from (the registry replaces
    ``record.entry`` when the status or metadata changes, and clears
    ``record.alive`` on disposal); ``approval`` holds the tool's and the
    registration's approval predicates; ``allow_identity_parameters`` is kept
    for the DRAFT -> VALIDATED checks; ``project_content`` and ``finalize_content``
    are the registration's content hooks, pinned with the version.
    ``catalog_tool`` is true for the catalog's own tools (:class:`~tether_clr.catalog.builtin.CatalogTool`),
    whose body the pipeline runs with the view of the call.
    ``timeout`` and ``retry`` are the registration's (``None``: the registry's
    default timeout; no retry).
    """

    tool: Tool
    scope: AgentPipelineScope | None
    validator: ArgumentValidator
    name: str
    description: str
    concurrency: Callable[[Any], Any] | None
    candidate: ToolCandidate
    record: LiveRecord
    approval: tuple[Callable[[Any], Any], ...] = ()
    allow_identity_parameters: bool = False
    project_content: ContentHook | None = None
    finalize_content: ContentHook | None = None
    catalog_tool: bool = False
    timeout: float | None = None
    retry: RetryPolicy | None = None

    def declaration(self) -> ToolSchemaSnapshot:
        return ToolSchemaSnapshot(name=self.name, description=self.description, parameters=self.validator.schema)

    @property
    def max_result_bytes(self) -> int | None:
        return self.candidate.metadata.max_result_bytes


class LiveRecord:
    """The live state of one registration: its current entry, and whether it is still registered."""

    __slots__ = ("entry", "alive")

    def __init__(self) -> None:
        self.entry: ToolEntry | None = None
        self.alive = True

    @property
    def current(self) -> ToolEntry:
        entry = self.entry
        assert entry is not None
        return entry


def make_entry(tool: Tool, scope: AgentPipelineScope | None, options: ToolRegistrationOptions, record: LiveRecord) -> ToolEntry:
    if not isinstance(tool, Tool):
        raise TypeError(f"{type(tool).__name__} does not implement the Tool protocol (name, description, json_schema, invoke)")
    if scope is not None and not isinstance(scope, AgentPipelineScope):
        raise TypeError(f"scope must be an AgentPipelineScope or None, got {type(scope).__name__}")
    name = tool.name
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"a tool needs a non-empty string name, got {name!r}")
    if not is_valid_text(name):
        raise ValueError(f"tool name {safe_text(name)!r} is not valid Unicode text (it holds a lone surrogate)")
    description = tool.description or ""
    if not isinstance(description, str):
        raise TypeError(f"tool {name!r}: description must be a string")
    if not is_valid_text(description):
        raise ValueError(f"tool {name!r}: description is not valid Unicode text (it holds a lone surrogate)")
    try:
        validator = ArgumentValidator(tool.json_schema)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"tool {name!r}: {exc}") from None
    schema = validator.schema
    try:
        refuse_identity_parameters(schema, allow=options.allow_identity_parameters)
    except ValueError as exc:
        raise ValueError(f"tool {name!r}: {exc}") from None
    concurrency: Callable[[Any], Any] | None
    if options.is_concurrency_safe is not None:
        concurrency = as_concurrency_predicate(options.is_concurrency_safe)
    else:
        own = getattr(tool, "is_concurrency_safe", None)
        concurrency = own if callable(own) else None
    candidate = ToolCandidate(
        ToolSchemaSnapshot(name=name, description=description, parameters=schema),
        options.metadata or ToolMetadata(),
        options.status or ToolStatus.ACTIVE,
        0 if scope is None else scope.depth + 1,
    )
    approval = tuple(
        as_approval_predicate(source)
        for source in (getattr(tool, "requires_approval", None), options.requires_approval)
        if source is not None
    )
    return ToolEntry(
        tool, scope, validator, name, description, concurrency, candidate, record, approval,
        options.allow_identity_parameters, options.project_content, options.finalize_content,
        isinstance(tool, CatalogTool), options.timeout, options.retry,
    )


def check_compatible(versions: Iterable[LiveRecord], candidate: ToolCandidate) -> None:
    """Refuse a version whose schema breaks the highest registered one of the same major version.

    ``versions`` are the registrations of the same logical name in the same layer.
    """
    same_major = [r.current.candidate for r in versions if r.current.candidate.semver.major == candidate.semver.major]
    if not same_major:
        return
    highest = max(same_major, key=lambda c: c.semver)
    require_compatible(highest.definition.parameters, candidate.definition.parameters, candidate.metadata.compatibility)


def validation_checks(record: LiveRecord) -> None:
    """DRAFT -> VALIDATED: the schema is valid (and asks for no identity) and the tool is bound; ``ValueError`` if not."""
    entry = record.current
    if not record.alive:
        raise ValueError(f"cannot validate {entry.name!r} {entry.candidate.version}: it is no longer registered")
    if not callable(getattr(entry.tool, "invoke", None)):
        raise ValueError(f"cannot validate {entry.name!r} {entry.candidate.version}: the tool has no callable invoke")
    try:
        ArgumentValidator(entry.candidate.definition.parameters)
        refuse_identity_parameters(entry.candidate.definition.parameters, allow=entry.allow_identity_parameters)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"cannot validate {entry.name!r} {entry.candidate.version}: {exc}") from None

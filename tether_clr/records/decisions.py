"""Decisions listeners return, and the enums the scheduler and approval speak.

Decisions are values built only through their factories, so a listener cannot
return a half-formed "deny without a reason"; anything else a listener returns
is a contract violation that fails closed.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import replace as dataclass_replace
from enum import Enum
from typing import Any

from tether_clr.records.contexts import check_context

__all__ = ["ApprovalResult", "ToolExecutionMode", "ToolPostDecision", "ToolPreDecision"]


class ToolExecutionMode(Enum):
    PARALLEL = "parallel"
    EXCLUSIVE = "exclusive"


class ApprovalResult(Enum):
    """An approval provider's answer.

    ``APPROVED`` lets the call go on to the guards; ``REJECTED`` ends it DENIED
    and ``UNAVAILABLE`` UNAVAILABLE, its body never run. ``DEFERRED`` parks the
    call: nobody can decide now, so the batch suspends (see
    :mod:`tether_clr.suspension`) and the decision comes later through
    ``ToolRegistry.resume``. Parking needs a sink a suspended step can be
    resumed from (a session store's: ``parks_approvals``); with any other sink,
    or none, ``DEFERRED`` fails closed (UNAVAILABLE, reason ``approval_deferred``).

    ``APPROVED_ALWAYS`` and ``REJECTED_ALWAYS`` decide this call as ``APPROVED``
    and ``REJECTED`` do, and remember the answer as a grant for this session
    (to choose the principal instead, answer
    :class:`~tether_clr.ApprovalGrant`): later asks for the same tool, major
    version and schema are decided from the grant without asking. Grants live
    in a session store; with any other sink, or none, the answer counts for
    this call only (see :mod:`tether_clr.records.grants`).
    """

    APPROVED = "approved"
    REJECTED = "rejected"
    UNAVAILABLE = "unavailable"
    DEFERRED = "deferred"
    APPROVED_ALWAYS = "approved_always"
    REJECTED_ALWAYS = "rejected_always"


def _require_reason(reason: object, what: str) -> str:
    if not isinstance(reason, str) or not reason.strip():
        raise ValueError(f"{what} needs a non-empty reason")
    return reason


@dataclass(frozen=True, slots=True)
class ToolPreDecision:
    kind: str
    reason: str | None = None

    @classmethod
    def allow(cls) -> ToolPreDecision:
        return _ALLOW

    @classmethod
    def deny(cls, reason: str) -> ToolPreDecision:
        return cls("deny", _require_reason(reason, "deny"))

    @classmethod
    def ask(cls, reason: str | None = None) -> ToolPreDecision:
        return cls("ask", reason)

    @property
    def is_allow(self) -> bool:
        return self.kind == "allow"

    @property
    def is_deny(self) -> bool:
        return self.kind == "deny"

    @property
    def is_ask(self) -> bool:
        return self.kind == "ask"


_ALLOW = ToolPreDecision("allow")

@dataclass(frozen=True, slots=True)
class ToolPostDecision:
    """A post-execute listener's verdict on a dispatched call's outcome: accept, replace or block.

    Each factory takes ``add_context``: model-facing text the host should show
    the model after the step's results ("the file changed since you read it"),
    kept in ``contexts``. The decision the waterfall ends with is the one that
    counts, contexts included: a listener that overrides ``await next()`` keeps
    the inner contexts only by passing them on (:meth:`with_context`). Contexts
    of a child call are ignored (see docs/pipeline.md#additional-contexts).
    """

    kind: str
    value: Any = None
    reason: str | None = None
    contexts: tuple[str, ...] = ()

    @classmethod
    def accept(cls, *, add_context: str | None = None) -> ToolPostDecision:
        return _ACCEPT if add_context is None else cls("accept", contexts=_contexts(add_context))

    @classmethod
    def replace(cls, value: Any, *, add_context: str | None = None) -> ToolPostDecision:
        """Replace the outcome with a successful one carrying ``value``."""
        return cls("replace", value, contexts=_contexts(add_context))

    @classmethod
    def block(cls, reason: str, *, add_context: str | None = None) -> ToolPostDecision:
        return cls("block", reason=_require_reason(reason, "block"), contexts=_contexts(add_context))

    def with_context(self, text: str) -> ToolPostDecision:
        """This decision with ``text`` added after its contexts (a listener passing on ``await next()``'s)."""
        return dataclass_replace(self, contexts=(*self.contexts, check_context(text)))

    @property
    def is_accept(self) -> bool:
        return self.kind == "accept"

    @property
    def is_replace(self) -> bool:
        return self.kind == "replace"

    @property
    def is_block(self) -> bool:
        return self.kind == "block"


def _contexts(text: str | None) -> tuple[str, ...]:
    return () if text is None else (check_context(text),)


_ACCEPT = ToolPostDecision("accept")

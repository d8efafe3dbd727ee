"""Who is asking, as the host says: a fixed :class:`~tether_clr.RequestContext`, or one read from the framework's run context.

An agent framework hands a tool its own run context (the OpenAI Agents SDK's
``RunContextWrapper``, pydantic-ai's ``RunContext``, LangGraph's ``config``);
the host decides how that maps to a tenant and a principal. Identity never
comes from the model or from a tool's arguments: :class:`ContextSource` is the
only way an adapter learns it, and it fails closed: a ``context_for`` that
raises, or returns anything but a ``RequestContext``, is an
:class:`IdentityError`, never a default identity.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tether_clr.records.context import RequestContext

__all__ = ["ContextSource", "IdentityError"]


class IdentityError(RuntimeError):
    """The host's ``context_for`` could not say who is asking (it raised, or returned no ``RequestContext``).

    Raised before anything is offered or run: a call without a known identity never reaches the pipeline.
    """


class ContextSource:
    """Exactly one of ``context`` (the same identity for every run) or ``context_for(run_context)``.

    ``TypeError`` at construction for neither, both, a ``context`` that is not a
    ``RequestContext`` or a ``context_for`` that is not callable.
    """

    __slots__ = ("context", "context_for")

    def __init__(
        self, context: RequestContext | None = None, context_for: Callable[[Any], RequestContext] | None = None
    ) -> None:
        if (context is None) == (context_for is None):
            raise TypeError("give exactly one of context= (a RequestContext) or context_for= (run context -> RequestContext)")
        if context is not None and not isinstance(context, RequestContext):
            raise TypeError(f"context must be a RequestContext, got {type(context).__name__}")
        if context_for is not None and not callable(context_for):
            raise TypeError(f"context_for must be callable, got {type(context_for).__name__}")
        self.context = context
        self.context_for = context_for

    def resolve(self, run_context: Any) -> RequestContext:
        """The request context for this framework run context; :class:`IdentityError` when it cannot be had."""
        if self.context is not None:
            return self.context
        assert self.context_for is not None
        try:
            found = self.context_for(run_context)
        except Exception as exc:
            raise IdentityError(f"context_for raised {type(exc).__name__}: the call has no identity and is not run") from exc
        if not isinstance(found, RequestContext):
            raise IdentityError(
                f"context_for returned {type(found).__name__}, not a RequestContext: the call has no identity and is not run"
            )
        return found

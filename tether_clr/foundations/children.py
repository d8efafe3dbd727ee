"""A tool body's handle on other tools: :class:`ChildCalls`, and how a body finds it.

Programmatic tool calling (Anthropic's, or a code tool that runs a model's
code) means a tool body calls other tools. It must not call them directly:
each *child call* goes through the whole pipeline (declaration, pre-execute,
approval, guards, re-authorization, the execute waterfall, post-execute,
policies, audit, the sink) with the parent's request context and view. The
executor lends a body a :class:`ChildCalls` handle for that; this module only
says what the handle is and where a body finds it, so the tools layer can
inject it without importing the executor:

* a :class:`~tether_clr.PythonFunction` parameter annotated ``ChildCalls``
  receives it (like a ``CancellationToken`` parameter; it is not part of the
  schema, and it needs an ``async`` function);
* any other tool that says ``makes_child_calls = True`` reads
  :func:`current_child_calls` inside its body.

The handle exists only while its body runs, in the body's own context copy:
nothing else (a listener, a later call, the host) sees it. Floor 1: no records.
"""

from __future__ import annotations

import contextvars
from abc import ABC, abstractmethod
from collections.abc import Mapping
from contextvars import ContextVar
from typing import Any

__all__ = ["ChildCalls", "context_lending", "current_child_calls", "makes_child_calls"]


class ChildCalls(ABC):
    """What a tool body calls other tools through: ``await calls.call_tool(name, arguments)``.

    ``call_tool`` returns the child's value (a fresh JSON value, what
    ``outcome.value`` gives) when the child succeeds. Any other outcome raises a
    :class:`~tether_clr.ChildCallError` carrying it (``.outcome``): a refusal
    (UNKNOWN_TOOL, INVALID_ARGS, DENIED, UNAVAILABLE) as ``ChildCallRefused``, a
    cancellation (ABORTED, ABORTED_BEFORE_DISPATCH) as ``ChildCallCancelled``, a
    failure (TOOL_ERROR, BLOCKED) as ``ChildCallFailed``; never a silent ``None``.
    Uncaught, the exception ends the parent as the child ended: TOOL_ERROR with
    its message, or ABORTED when it was cancelled.

    ``call_id`` is the parent call's id (each child's is ``<call_id>/<n>``, ``n``
    counting from 1 in the order the body made them); ``depth`` is how deep the
    parent is (0 for a call the model proposed).
    """

    @property
    @abstractmethod
    def call_id(self) -> str:
        """The id of the call whose body holds this handle (the children's ``parent_call_id``)."""

    @property
    @abstractmethod
    def depth(self) -> int:
        """0 for a call the model proposed, 1 for its children, and so on."""

    @abstractmethod
    async def call_tool(self, name: str, arguments: Mapping[str, Any] | str | None = None) -> Any:
        """Run tool ``name`` as a child call with ``arguments`` (a JSON object, or its text); return its value."""


_CURRENT: ContextVar[ChildCalls | None] = ContextVar("tether_clr_child_calls", default=None)


def makes_child_calls(tool: object) -> bool:
    """Whether ``tool`` says ``makes_child_calls = True`` (exactly: anything else, or no such attribute, is no)."""
    return getattr(tool, "makes_child_calls", False) is True


def current_child_calls() -> ChildCalls | None:
    """The handle lent to the running tool body, or ``None`` outside a body that may make child calls.

    A tool (other than a ``PythonFunction``, which injects it as a parameter)
    reads it inside ``invoke``; it must say ``makes_child_calls = True``, or the
    executor lends it nothing.
    """
    return _CURRENT.get()


def context_lending(handle: ChildCalls) -> contextvars.Context:
    """A copy of the current context in which :func:`current_child_calls` is ``handle`` (the body's own context)."""
    context = contextvars.copy_context()
    context.run(_CURRENT.set, handle)
    return context

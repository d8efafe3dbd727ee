"""The host's scope authority: which scopes a principal holds *now*.

``registry.authority = fn(context) -> set[str]`` (sync or async). It is
consulted before each body of a call bound in a ``ToolAssembly``, and by the
synchronous ``discover`` / ``assemble`` when it is synchronous. Without an
authority the context's own scopes count.

Fail closed: an authority that raises, or answers anything but a set of
strings, is :class:`AuthorityUnavailableError`, which the executor turns into
UNAVAILABLE with reason ``authority_unavailable`` (and assembly into "no
scopes", so nothing that needs one is shown).

Floor 3 (the catalog); it runs no call.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from tether_clr.foundations.errors import TetherError
from tether_clr.records.context import RequestContext

__all__ = ["Authority", "AuthorityUnavailableError", "assembly_scopes", "scopes_now"]

logger = logging.getLogger("tether_clr")

Authority = Callable[[RequestContext], "frozenset[str] | set[str] | Awaitable[frozenset[str] | set[str]]"]
"""``fn(context) -> set of scope strings``, or an awaitable of one."""


class AuthorityUnavailableError(TetherError):
    """The scope authority raised or answered nonsense: nothing it guards may run."""


def _scopes(answer: Any) -> frozenset[str]:
    if not isinstance(answer, (set, frozenset)):
        raise AuthorityUnavailableError(f"the scope authority answered {type(answer).__name__}, not a set of strings")
    if not all(isinstance(scope, str) for scope in answer):
        raise AuthorityUnavailableError("the scope authority answered a set holding something other than strings")
    return frozenset(answer)


def _raised(exc: Exception) -> AuthorityUnavailableError:
    text = str(exc)
    return AuthorityUnavailableError(f"the scope authority raised {type(exc).__name__}" + (f": {text}" if text else ""))


def scopes_now(authority: Authority | None, context: RequestContext) -> frozenset[str] | Awaitable[frozenset[str]]:
    """The principal's scopes now: a set at once (no authority, or a synchronous one), else an awaitable.

    Answering synchronously when it can keeps the per-call check cheap: only
    an asynchronous authority costs an await (and the cancel scope around
    it). Raises (or the awaitable raises) :class:`AuthorityUnavailableError`.
    """
    if authority is None:
        return context.scopes
    try:
        answer = authority(context)
    except Exception as exc:
        raise _raised(exc) from exc
    if inspect.isawaitable(answer):
        return _awaited(answer)
    return _scopes(answer)


async def _awaited(answer: Awaitable[Any]) -> frozenset[str]:
    try:
        found = await answer
    except Exception as exc:
        raise _raised(exc) from exc
    return _scopes(found)


def assembly_scopes(authority: Authority | None, context: RequestContext) -> frozenset[str]:
    """The scopes a synchronous assembly uses.

    A synchronous authority is asked; an asynchronous one cannot be awaited
    here, so the context's scopes (set by the host when the request started)
    count, and execution asks the authority again before every body. An
    authority that fails gives no scopes at all (logged): fail closed.
    """
    if authority is None:
        return context.scopes
    try:
        answer = authority(context)
    except Exception as exc:
        logger.warning("%s; assembling with no scopes", _raised(exc))
        return frozenset()
    if inspect.isawaitable(answer):
        if inspect.iscoroutine(answer):
            answer.close()  # never awaited: assembly is synchronous
        return context.scopes
    try:
        return _scopes(answer)
    except AuthorityUnavailableError as exc:
        logger.warning("%s; assembling with no scopes", exc)
        return frozenset()

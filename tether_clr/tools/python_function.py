"""PythonFunction: a tool built from a plain Python callable, its schema from the type hints.

A tool only describes itself (name, description, JSON schema) and runs. It never
decides whether it may run: that is the pipeline's job.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

import anyio
import anyio.to_thread

from tether_clr.foundations.abandonment import abandon_token, run_sync_until_abandoned
from tether_clr.foundations.cancellation import CancellationToken
from tether_clr.foundations.json_values import detach
from tether_clr.tools.docstrings import parse_docstring
from tether_clr.tools.parameters import ArgumentBinder
from tether_clr.tools.predicates import as_concurrency_predicate

__all__ = ["PythonFunction"]


def _is_async_callable(fn: Callable[..., Any]) -> bool:
    while isinstance(fn, functools.partial):
        fn = fn.func
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None))


class PythonFunction:
    """A tool around a Python callable, described and bound through its type hints.

    The JSON schema comes from pydantic, with unknown arguments forbidden; each
    parameter is read as pydantic's ``validate_call`` reads it (type hint,
    default, ``Field(...)`` as default or in ``Annotated``, an ``Annotated``
    string as description) and described by its docstring section too
    (:mod:`tether_clr.tools.parameters`, :mod:`tether_clr.tools.docstrings`).
    ``from_callable`` without a description takes the docstring without its
    sections. A parameter the schema cannot express raises ``TypeError``
    naming it. A
    parameter annotated ``CancellationToken`` (or named ``cancellation``) receives
    the call's token and is not part of the schema; so does a parameter annotated
    :class:`~tether_clr.ChildCalls`, which receives the handle its body makes
    child calls through (``makes_child_calls`` is then True; the callable must be
    ``async``, since child calls are awaited). Synchronous callables run in a
    worker thread by default so that a parallel group really overlaps; such a
    thread cannot be interrupted, only the token can ask it to stop (in a timed
    call whose grace period ran out, the pipeline stops waiting for it:
    :mod:`tether_clr.foundations.abandonment`).
    """

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str,
        description: str,
        run_sync_in_thread: bool = True,
        is_concurrency_safe: Callable[[Any], Any] | bool | None = None,
    ) -> None:
        if not callable(fn):
            raise TypeError(f"expected a callable, got {type(fn).__name__}")
        self._fn = fn
        self._name = name
        self._description = description
        self._binder = ArgumentBinder(fn, name, parse_docstring(inspect.getdoc(fn)).parameters)
        self._is_async = _is_async_callable(fn)
        if self._binder.children_param is not None and not self._is_async:
            raise TypeError(f"{name}: a ChildCalls parameter needs an async function (child calls are awaited)")
        self._run_sync_in_thread = run_sync_in_thread
        if is_concurrency_safe is not None:
            self.is_concurrency_safe = as_concurrency_predicate(is_concurrency_safe)

    @classmethod
    def from_callable(
        cls,
        fn: Callable[..., Any],
        name: str | None = None,
        description: str | None = None,
        *,
        run_sync_in_thread: bool = True,
        is_concurrency_safe: Callable[[Any], Any] | bool | None = None,
    ) -> PythonFunction:
        resolved_name = name or getattr(fn, "__name__", None) or type(fn).__name__
        resolved_description = description if description is not None else parse_docstring(inspect.getdoc(fn)).description
        return cls(
            fn,
            name=resolved_name,
            description=resolved_description,
            run_sync_in_thread=run_sync_in_thread,
            is_concurrency_safe=is_concurrency_safe,
        )

    @property
    def name(self) -> str:
        return self._name

    @property
    def makes_child_calls(self) -> bool:
        """True when the callable takes a :class:`~tether_clr.ChildCalls` parameter: the executor lends it one."""
        return self._binder.children_param is not None

    @property
    def description(self) -> str:
        return self._description

    @property
    def json_schema(self) -> dict[str, Any]:
        schema: dict[str, Any] = detach(self._binder.schema)
        return schema

    async def invoke(self, arguments: dict[str, Any], cancellation: CancellationToken) -> Any:
        args, kwargs = self._binder.bind(arguments, cancellation)
        if self._is_async:
            return await self._fn(*args, **kwargs)
        if self._run_sync_in_thread:
            abandon = abandon_token()
            if abandon.can_be_cancelled:  # a timed call: the pipeline may have to stop waiting
                result = await run_sync_until_abandoned(functools.partial(self._fn, *args, **kwargs), abandon)
            else:
                result = await anyio.to_thread.run_sync(functools.partial(self._fn, *args, **kwargs))
        else:
            result = self._fn(*args, **kwargs)
        if inspect.isawaitable(result):
            result = await result
        return result

    def __repr__(self) -> str:
        return f"PythonFunction(name={self._name!r})"

"""PythonFunction: a tool built from a plain Python callable, its schema from the type hints.

A tool only describes itself (name, description, JSON schema) and runs. It never
decides whether it may run: that is the pipeline's job.
"""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable, Mapping
from typing import Any

import anyio
import anyio.to_thread
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from tether_clr.foundations.abandonment import abandon_token, run_sync_until_abandoned
from tether_clr.foundations.cancellation import CancellationToken
from tether_clr.foundations.children import ChildCalls, current_child_calls
from tether_clr.foundations.errors import ToolArgumentError
from tether_clr.foundations.json_values import detach
from tether_clr.tools.predicates import as_concurrency_predicate

__all__ = ["PythonFunction"]


_ABSENT = inspect.Parameter.empty


def _strip_titles(schema: dict[str, Any]) -> dict[str, Any]:
    """pydantic titles every model and field; models do not need them and MEAI omits them."""
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        if isinstance(prop, dict):
            prop.pop("title", None)
    return schema


class _Binder:
    """Turns validated JSON arguments into the callable's positional and keyword arguments."""

    def __init__(self, fn: Callable[..., Any], owner_name: str) -> None:
        signature = inspect.signature(fn)
        try:
            hints = typing.get_type_hints(fn, include_extras=True)
        except Exception:  # unresolved forward references: fall back to raw annotations
            hints = {}
        fields: dict[str, Any] = {}
        self.positional: list[tuple[str, str]] = []
        self.keyword: list[tuple[str, str]] = []
        self.cancellation_param: str | None = None
        self.children_param: str | None = None
        for index, param in enumerate(signature.parameters.values()):
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise TypeError(f"{owner_name}: *args/**kwargs cannot be described by a JSON schema")
            annotation = hints.get(param.name, param.annotation)
            if annotation is CancellationToken or param.name == "cancellation":
                self.cancellation_param = param.name
                continue
            if isinstance(annotation, type) and issubclass(annotation, ChildCalls):
                self.children_param = param.name
                continue
            if annotation is _ABSENT:
                annotation = Any
            field_name = f"p{index}"
            default = ... if param.default is _ABSENT else param.default
            fields[field_name] = (annotation, Field(default, alias=param.name))
            target = self.positional if param.kind is param.POSITIONAL_ONLY else self.keyword
            target.append((field_name, param.name))
        config = ConfigDict(extra="forbid", populate_by_name=False, arbitrary_types_allowed=False)
        try:
            self.model: type[BaseModel] = create_model(f"{owner_name}_arguments", __config__=config, **fields)
            self.schema = _strip_titles(self.model.model_json_schema(by_alias=True))
            self._validate: Callable[[Any], BaseModel] = self.model.__pydantic_validator__.validate_python
        except Exception as exc:
            raise TypeError(f"{owner_name}: parameters cannot be described by a JSON schema: {exc}") from exc

    def bind(self, arguments: Mapping[str, Any], cancellation: CancellationToken) -> tuple[list[Any], dict[str, Any]]:
        """Validate with the pydantic model (strictly as declared) and split into call arguments.

        The model's core validator is called directly, without ``model_validate``'s
        wrapper, and a dict (what the pipeline always passes: a private copy) is
        not copied again; the verdict is the model's either way.
        """
        try:
            model = self._validate(arguments if type(arguments) is dict else dict(arguments))
        except ValidationError as exc:
            raise ToolArgumentError(_describe_validation_error(exc)) from None
        values = model.__dict__
        args = [values[field] for field, _ in self.positional]
        kwargs = {name: values[field] for field, name in self.keyword}
        if self.cancellation_param is not None:
            kwargs[self.cancellation_param] = cancellation
        if self.children_param is not None:
            kwargs[self.children_param] = _lent_child_calls()
        return args, kwargs


def _lent_child_calls() -> ChildCalls:
    handle = current_child_calls()
    if handle is None:  # invoked outside the pipeline (a test calling invoke directly, a child too deep to lend)
        raise ToolArgumentError("this tool makes child calls: it runs only through execute_batch, which lends it a ChildCalls handle")
    return handle


def _describe_validation_error(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(p) for p in error.get("loc", ())) or "arguments"
        parts.append(f"{where}: {error.get('msg')}")
    return "; ".join(parts)


def _is_async_callable(fn: Callable[..., Any]) -> bool:
    while isinstance(fn, functools.partial):
        fn = fn.func
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None))


class PythonFunction:
    """A tool around a Python callable, described and bound through its type hints.

    The JSON schema comes from pydantic, with unknown arguments forbidden. A
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
        self._binder = _Binder(fn, name)
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
        resolved_description = description if description is not None else (inspect.getdoc(fn) or "")
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

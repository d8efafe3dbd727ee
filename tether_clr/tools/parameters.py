"""A callable's parameters as a JSON schema and a binding, read the way pydantic's ``validate_call`` reads them.

Each parameter becomes one field of a pydantic model, built from its type hint
and its default exactly as ``validate_call`` builds it
(``FieldInfo.from_annotated_attribute(annotation, default)``, or
``FieldInfo.from_annotation(annotation)`` without a default). So all of these
describe a parameter, with the schema and the binding agreeing:

* a plain default (``count: int = 1``);
* a pydantic ``Field(...)`` as the default: its description, constraints and
  default (``default=`` or ``default_factory=``) go into the schema and the
  binding; without a default (``Field(description="...")``) the parameter is
  required. The body never receives the ``FieldInfo`` itself;
* ``Annotated[T, Field(...)]``, alone or with a default, merged as
  ``validate_call`` merges them;
* ``Annotated[T, "text"]``: a bare string in the metadata is the parameter's
  description (the last one, if several);
* a docstring parameter section (:mod:`tether_clr.tools.docstrings`).

An explicit description wins: a ``Field`` description, then an ``Annotated``
string, then the docstring's. A parameter the JSON schema cannot express (a
type pydantic cannot validate or describe, ``*args``/``**kwargs``, a ``Field``
alias that would rename the argument) is refused at registration with a
``TypeError`` naming the tool and the parameter.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Mapping
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model
from pydantic.fields import FieldInfo

from tether_clr.foundations.cancellation import CancellationToken
from tether_clr.foundations.children import ChildCalls, current_child_calls
from tether_clr.foundations.errors import ToolArgumentError

__all__ = ["ArgumentBinder"]


_ABSENT = inspect.Parameter.empty
_CONFIG = ConfigDict(extra="forbid", populate_by_name=False, arbitrary_types_allowed=False)


def _strip_titles(schema: dict[str, Any]) -> dict[str, Any]:
    """pydantic titles every model and field; models do not need them and MEAI omits them."""
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        if isinstance(prop, dict):
            prop.pop("title", None)
    return schema


def _field_info(annotation: Any, default: Any) -> FieldInfo:
    """The parameter as ``validate_call`` sees it (pydantic's ``_generate_parameter_schema``)."""
    if default is _ABSENT:
        return FieldInfo.from_annotation(annotation)
    return FieldInfo.from_annotated_attribute(annotation, default)


def _annotated_description(info: FieldInfo) -> str | None:
    """The last bare string of ``Annotated[T, ..., "text"]``, which pydantic keeps in the metadata and ignores."""
    texts = [item for item in info.metadata if isinstance(item, str)]
    return texts[-1] if texts else None


def _field_spec(
    owner_name: str, param: inspect.Parameter, annotation: Any, documented: str | None
) -> tuple[Any, Any]:
    """The ``(annotation, default)`` pair for ``create_model``: the author's own, plus the alias and a description.

    The alias (the parameter's name) and a description the author did not give
    ride in one more ``Field`` in the ``Annotated`` metadata; pydantic merges it
    with the author's ``Field``s exactly as it merges theirs, so nothing the
    author set is overridden.
    """
    try:
        info = _field_info(annotation, param.default)
    except Exception as exc:
        raise TypeError(f"{owner_name}: parameter {param.name!r} cannot be described by a JSON schema: {exc}") from exc
    if info.alias is not None or info.validation_alias is not None:
        raise TypeError(
            f"{owner_name}: parameter {param.name!r} has a Field alias; the argument's name is the parameter's name"
        )
    extra: dict[str, Any] = {}
    if info.description is None:
        description = _annotated_description(info) or documented
        if description:
            extra["description"] = description
    default = ... if param.default is _ABSENT else param.default
    return Annotated[annotation, Field(alias=param.name, **extra)], default


def _unexpressible(owner_name: str, fields: Mapping[str, Any], names: Mapping[str, str]) -> str | None:
    """The first parameter whose field alone fails to make a model or a JSON schema, with pydantic's reason."""
    for field_name, spec in fields.items():
        try:
            model = create_model(f"{owner_name}_{field_name}", __config__=_CONFIG, **{field_name: spec})
            model.model_json_schema(by_alias=True)
        except Exception as exc:
            return f"parameter {names[field_name]!r} cannot be described by a JSON schema: {exc}"
    return None


class ArgumentBinder:
    """Turns validated JSON arguments into the callable's positional and keyword arguments.

    ``schema`` is the JSON schema of the arguments (unknown names forbidden);
    ``bind`` validates a call's arguments with the same pydantic model.
    ``parameter_docs`` maps parameter names to the docstring's descriptions.
    """

    def __init__(self, fn: Callable[..., Any], owner_name: str, parameter_docs: Mapping[str, str] | None = None) -> None:
        signature = inspect.signature(fn)
        try:
            hints = typing.get_type_hints(fn, include_extras=True)
        except Exception:  # unresolved forward references: fall back to raw annotations
            hints = {}
        docs = parameter_docs or {}
        fields: dict[str, Any] = {}
        names: dict[str, str] = {}
        self.positional: list[tuple[str, str]] = []
        self.keyword: list[tuple[str, str]] = []
        self.cancellation_param: str | None = None
        self.children_param: str | None = None
        for index, param in enumerate(signature.parameters.values()):
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise TypeError(
                    f"{owner_name}: parameter {param.name!r}: *args/**kwargs cannot be described by a JSON schema"
                )
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
            fields[field_name] = _field_spec(owner_name, param, annotation, docs.get(param.name))
            names[field_name] = param.name
            target = self.positional if param.kind is param.POSITIONAL_ONLY else self.keyword
            target.append((field_name, param.name))
        try:
            self.model: type[BaseModel] = create_model(f"{owner_name}_arguments", __config__=_CONFIG, **fields)
            self.schema = _strip_titles(self.model.model_json_schema(by_alias=True))
            self._validate: Callable[[Any], BaseModel] = self.model.__pydantic_validator__.validate_python
        except Exception as exc:
            reason = _unexpressible(owner_name, fields, names) or f"parameters cannot be described by a JSON schema: {exc}"
            raise TypeError(f"{owner_name}: {reason}") from exc

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

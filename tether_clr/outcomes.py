"""The records that flow through the pipeline: calls, executions, dispatches, outcomes.

All of them are immutable. JSON payloads (arguments, result values) are stored as
canonical text and handed out as fresh copies on every read, so no stage can
change what another stage saw.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .cancellation import CancellationToken
from .schema import canonical_json, to_json_text

if TYPE_CHECKING:
    from .context import RequestContext
    from .scope import AgentPipelineScope

__all__ = [
    "FunctionResultContent",
    "ToolCall",
    "ToolDispatch",
    "ToolExecution",
    "ToolExecutionOutcome",
    "ToolFailure",
    "ToolFailureCodes",
]


class ToolFailureCodes(StrEnum):
    """The stable failure vocabulary, spelled exactly as Tether spells it."""

    UNKNOWN_TOOL = "UNKNOWN_TOOL"
    INVALID_ARGS = "INVALID_ARGS"
    TOOL_ERROR = "TOOL_ERROR"
    ABORTED = "ABORTED"
    ABORTED_BEFORE_DISPATCH = "ABORTED_BEFORE_DISPATCH"
    DENIED = "DENIED"
    UNAVAILABLE = "UNAVAILABLE"
    BLOCKED = "BLOCKED"


@dataclass(frozen=True, slots=True)
class ToolFailure:
    """A failure: one of the eight stable ``code``s, a human ``message``, and an optional ``reason``.

    ``reason`` is a machine-readable refinement of the code (``scope_revoked``,
    ``result_too_large``, ...; see ``CATALOG_FAILURE_REASONS``); ``None`` when
    the code says it all. The codes stay the vocabulary; a reason never replaces one.
    """

    code: ToolFailureCodes
    message: str
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class ToolCall:
    """What a model proposed: nothing about it is trusted yet.

    ``arguments`` is the raw JSON text exactly as the model produced it.
    ``invocation_context`` is opaque caller data passed through untouched.
    """

    call_id: str
    name: str
    arguments: str = "{}"
    scope: AgentPipelineScope | None = None
    parent_call_id: str | None = None
    invocation_context: Any = None

    @classmethod
    def from_function_call(
        cls,
        content: Any,
        *,
        scope: AgentPipelineScope | None = None,
        parent_call_id: str | None = None,
        invocation_context: Any = None,
    ) -> ToolCall:
        """Build a call from a Microsoft.Extensions.AI ``FunctionCallContent``.

        Accepts the .NET object itself (``CallId``, ``Name``, ``Arguments``) or
        its JSON dict shape (``callId``, ``name``, ``arguments``). The arguments
        of a FunctionCallContent are a dictionary, which becomes canonical JSON
        text; a string is taken as raw JSON.
        """
        if isinstance(content, Mapping):
            call_id, name, arguments = content.get("callId"), content.get("name"), content.get("arguments")
            kind = content.get("$type", "functionCall")
            if kind != "functionCall":
                raise ValueError(f'expected a functionCall content, got $type {kind!r}')
        elif hasattr(content, "CallId") and hasattr(content, "Name"):
            from .clr.records import function_call_parts

            call_id, name, arguments = function_call_parts(content)
        else:
            raise TypeError(f"expected a FunctionCallContent or its dict shape, got {type(content).__name__}")
        if not isinstance(call_id, str) or not isinstance(name, str):
            raise ValueError("a function call needs string callId and name")
        if arguments is None:
            raw = "{}"
        elif isinstance(arguments, str):
            raw = arguments
        else:
            raw = to_json_text(arguments)
        return cls(call_id, name, raw, scope, parent_call_id, invocation_context)


@dataclass(frozen=True, slots=True)
class ToolExecution:
    """One call after resolution: what every pre/guard/post/policy stage sees.

    ``arguments`` returns a new copy on each read: the parsed object, or, when the
    raw text did not parse, that raw text as a JSON string. ``context`` is the
    host's :class:`~tether_clr.RequestContext` of the snapshot the call runs
    against (a ``ToolAssembly``), ``None`` for a plain ``seal()`` view; every
    stage reaches it here, never through model arguments.
    """

    call_id: str
    name: str
    arguments_json: str
    scope: AgentPipelineScope | None = None
    cancellation: CancellationToken = field(default_factory=CancellationToken.none)
    owner: Any = None
    parent_call_id: str | None = None
    invocation_context: Any = None
    context: RequestContext | None = None

    @classmethod
    def create(
        cls,
        call_id: str,
        name: str,
        arguments: Any = None,
        *,
        scope: AgentPipelineScope | None = None,
        cancellation: CancellationToken | None = None,
        parent_call_id: str | None = None,
        invocation_context: Any = None,
        context: RequestContext | None = None,
    ) -> ToolExecution:
        return cls(
            call_id=call_id,
            name=name,
            arguments_json=to_json_text({} if arguments is None else arguments),
            scope=scope,
            cancellation=cancellation or CancellationToken.none(),
            owner=None if scope is None else scope.owner,
            parent_call_id=parent_call_id,
            invocation_context=invocation_context,
            context=context,
        )

    @property
    def arguments(self) -> Any:
        return json.loads(self.arguments_json)


@dataclass(frozen=True, slots=True)
class ToolDispatch:
    """What the execute waterfall passes down: the execution plus its token.

    Execute listeners may only swap the cancellation token (for a timeout, say),
    through :meth:`with_cancellation`; the execution itself is fixed.
    """

    execution: ToolExecution
    cancellation: CancellationToken

    def with_cancellation(self, cancellation: CancellationToken) -> ToolDispatch:
        if not isinstance(cancellation, CancellationToken):
            raise TypeError("cancellation must be a CancellationToken")
        return replace(self, cancellation=cancellation)


class FunctionResultContent(BaseModel):
    """Python record of Microsoft.Extensions.AI's ``FunctionResultContent``.

    Serialises as ``{"$type": "functionResult", "callId": ..., "result": ...}``;
    ``exception`` is informational and, like the .NET property, never serialised.
    """

    model_config = ConfigDict(frozen=True, populate_by_name=True)

    type: Literal["functionResult"] = Field(default="functionResult", alias="$type")
    call_id: str = Field(alias="callId")
    result: Any = None
    exception: str | None = Field(default=None, exclude=True)

    def to_json(self) -> str:
        return self.model_dump_json(by_alias=True)


@dataclass(frozen=True, slots=True)
class ToolExecutionOutcome:
    """The terminal result of one call: a value, or a failure with a stable code.

    On failure ``value`` is ``{"message": ...}`` so a model always receives
    something it can read.
    """

    call_id: str
    name: str
    value_json: str
    failure: ToolFailure | None = None

    @classmethod
    def success(cls, call_id: str, name: str, value: Any) -> ToolExecutionOutcome:
        """Raises ``TypeError`` when ``value`` cannot become JSON."""
        return cls(call_id, name, to_json_text(value))

    @classmethod
    def failed(
        cls, call_id: str, name: str, code: ToolFailureCodes | str, message: str, reason: str | None = None
    ) -> ToolExecutionOutcome:
        code = ToolFailureCodes(code)
        return cls(call_id, name, canonical_json({"message": message}), ToolFailure(code, message, reason))

    @property
    def value(self) -> Any:
        return json.loads(self.value_json)

    @property
    def is_error(self) -> bool:
        return self.failure is not None

    @property
    def code(self) -> ToolFailureCodes | None:
        return None if self.failure is None else self.failure.code

    @property
    def reason(self) -> str | None:
        """The failure's machine-readable refinement, if any (``None`` on success)."""
        return None if self.failure is None else self.failure.reason

    def to_function_result(self) -> FunctionResultContent:
        exception = None if self.failure is None else f"{self.failure.code}: {self.failure.message}"
        return FunctionResultContent.model_validate({"callId": self.call_id, "result": self.value, "exception": exception})

    def to_clr_function_result(self) -> Any:
        """A real .NET ``FunctionResultContent``; needs Microsoft.Extensions.AI loaded."""
        from .clr.records import to_clr_function_result

        return to_clr_function_result(self)

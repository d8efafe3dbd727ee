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

from tether_clr.foundations.arguments import RefusedArguments
from tether_clr.foundations.cancellation import CancellationToken
from tether_clr.records.content import ContentPart, TextPart, as_parts
from tether_clr.foundations.json_values import canonical_json, to_json_text
from tether_clr.foundations.text import is_valid_text, safe_text_or_value
from tether_clr.records import wire

if TYPE_CHECKING:
    from tether_clr.records.context import RequestContext
    from tether_clr.records.scope import AgentPipelineScope

__all__ = [
    "FunctionResultContent",
    "ToolCall",
    "ToolDispatch",
    "ToolExecution",
    "ToolExecutionOutcome",
    "ToolFailure",
    "ToolFailureCodes",
    "built_execution",
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
    ``argument_error`` carries a failure that happened before the call reached
    us (a client that could not parse the model's argument text, like a MEAI
    ``FunctionCallContent`` whose ``Exception`` is set): such a call ends
    INVALID_ARGS with that message and never runs, whatever ``arguments`` holds.
    ``arguments_refused`` is set on the form of a refused call that sinks record
    (:meth:`with_arguments_refused`): ``arguments`` is then only a prefix of what
    was sent, and this says its full size and hash.
    """

    call_id: str
    name: str
    arguments: str = "{}"
    scope: AgentPipelineScope | None = None
    parent_call_id: str | None = None
    invocation_context: Any = None
    argument_error: str | None = None
    arguments_refused: RefusedArguments | None = None

    def with_arguments_refused(self, error: str, max_logged_bytes: int) -> ToolCall:
        """This call as the logs record it once its arguments were refused before they parsed (``error``):
        ``arguments`` cut to a prefix of at most ``max_logged_bytes`` UTF-8 bytes, ``arguments_refused``
        their size and SHA-256, ``argument_error`` the refusal, so the recorded call, read back and run
        again, is refused again and never runs. Itself when it is already in that form."""
        if self.arguments_refused is not None:
            return self
        summary = RefusedArguments.of(self.arguments if isinstance(self.arguments, str) else str(self.arguments), max_logged_bytes)
        return replace(self, arguments=summary.prefix, argument_error=error, arguments_refused=summary)

    @classmethod
    def from_function_call(
        cls,
        content: Mapping[str, Any],
        *,
        scope: AgentPipelineScope | None = None,
        parent_call_id: str | None = None,
        invocation_context: Any = None,
    ) -> ToolCall:
        """Build a call from the JSON dict shape of a Microsoft.Extensions.AI ``FunctionCallContent``.

        ``{"$type": "functionCall", "callId": ..., "name": ..., "arguments": {...}}``;
        a dict of arguments becomes canonical JSON text, a string is taken as raw
        JSON. A .NET ``FunctionCallContent`` object is the .NET side's business
        (``tether_clr.clr.function_call_to_tool_call``): the core never imports it.
        """
        if not isinstance(content, Mapping):
            raise TypeError(
                f"expected the dict shape of a FunctionCallContent, got {type(content).__name__}; "
                "for a .NET FunctionCallContent use tether_clr.clr.function_call_to_tool_call"
            )
        call_id, name, arguments = content.get("callId"), content.get("name"), content.get("arguments")
        kind = content.get("$type", "functionCall")
        if kind != "functionCall":
            raise ValueError(f'expected a functionCall content, got $type {kind!r}')
        if not isinstance(call_id, str) or not isinstance(name, str):
            raise ValueError("a function call needs string callId and name")
        if arguments is None:
            raw = "{}"
        elif isinstance(arguments, str):
            raw = arguments
        else:
            try:
                raw = to_json_text(arguments)
            except TypeError:
                # Model data JSON cannot hold (NaN, a lone surrogate): kept as the
                # escaped text a model would have sent, which the pipeline refuses (INVALID_ARGS).
                raw = json.dumps(arguments, ensure_ascii=True, allow_nan=True)
        return cls(call_id, name, raw, scope, parent_call_id, invocation_context)

    def invalid_text_fields(self) -> tuple[str, ...]:
        """Which of ``call_id``, ``name``, ``arguments``, ``parent_call_id`` hold text that is not valid Unicode."""
        call_id, name, arguments, parent = self.call_id, self.name, self.arguments, self.parent_call_id
        if (  # the usual call: ASCII text throughout, nothing to look for
            type(call_id) is str and call_id.isascii() and type(name) is str and name.isascii()
            and type(arguments) is str and arguments.isascii() and (parent is None or (type(parent) is str and parent.isascii()))
        ):
            return ()
        return tuple(
            field
            for field, text in (
                ("call_id", self.call_id),
                ("name", self.name),
                ("arguments", self.arguments),
                ("parent_call_id", self.parent_call_id),
            )
            if isinstance(text, str) and not is_valid_text(text)
        )

    def recordable(self) -> ToolCall:
        """This call, or a copy with each lone surrogate in its text written as ``\\udXXX``.

        A model can send a lone surrogate (a raw one, or ``"\\ud800"`` in JSON it
        produced); no sink can write it. The batch declares and answers the
        recordable copy, so the declaration, the execution and the outcome all
        carry the same, writable call id (see docs/hostile-input.md).
        """
        if not self.invalid_text_fields():
            return self
        return replace(
            self,
            call_id=safe_text_or_value(self.call_id),
            name=safe_text_or_value(self.name),
            arguments=safe_text_or_value(self.arguments),
            parent_call_id=safe_text_or_value(self.parent_call_id),
        )


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


def _field_setters(cls: type, names: tuple[str, ...]) -> tuple[Any, ...]:
    return tuple(cls.__dict__[name].__set__ for name in names)


_EXECUTION_FIELDS = _field_setters(ToolExecution, (
    "call_id", "name", "arguments_json", "scope", "cancellation", "owner", "parent_call_id", "invocation_context", "context",
))


def built_execution(
    call_id: str, name: str, arguments_json: str, scope: AgentPipelineScope | None, cancellation: CancellationToken,
    owner: Any, parent_call_id: str | None, invocation_context: Any, context: RequestContext | None,
) -> ToolExecution:
    """``ToolExecution(...)`` with every field given, as the pipeline builds one per call: the same frozen record,
    its slots set one by one (the generated frozen ``__init__`` costs about a microsecond per call more)."""
    execution = object.__new__(ToolExecution)
    set_call_id, set_name, set_arguments, set_scope, set_token, set_owner, set_parent, set_invocation, set_context = _EXECUTION_FIELDS
    set_call_id(execution, call_id)
    set_name(execution, name)
    set_arguments(execution, arguments_json)
    set_scope(execution, scope)
    set_token(execution, cancellation)
    set_owner(execution, owner)
    set_parent(execution, parent_call_id)
    set_invocation(execution, invocation_context)
    set_context(execution, context)
    return execution


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
    something it can read. ``content`` is what a model is shown (see
    :mod:`tether_clr.records.content`): ``explicit_content`` when a content hook
    set it (:meth:`with_content`), else the default: a success's value as text (a
    string as itself, anything else as canonical JSON), a failure's message. Built through :meth:`success` and :meth:`failed`, an
    outcome always serializes (``to_function_result().to_json()``) and can be
    recorded by any sink: its text is valid Unicode and its value is JSON.

    ``attempts`` is how many attempts the call took: 1 unless the tool has a
    :class:`~tether_clr.RetryPolicy` and an attempt was retried (the last one
    may have been refused by re-authorization before its body).
    """

    call_id: str
    name: str
    value_json: str
    failure: ToolFailure | None = None
    explicit_content: tuple[ContentPart, ...] | None = None
    attempts: int = 1

    @classmethod
    def success(cls, call_id: str, name: str, value: Any) -> ToolExecutionOutcome:
        """A successful outcome; raises ``TypeError`` (only) when ``value`` cannot become JSON without loss.

        See :func:`tether_clr.to_json_value` for what is converted.
        """
        return cls(safe_text_or_value(call_id), safe_text_or_value(name), to_json_text(value))

    @classmethod
    def failed(
        cls, call_id: str, name: str, code: ToolFailureCodes | str, message: str, reason: str | None = None
    ) -> ToolExecutionOutcome:
        """A failed outcome; a lone surrogate in the message (or id, name) is written as ``\\udXXX``.

        ``reason`` is the machine-readable refinement of ``code``, if any.
        """
        code = ToolFailureCodes(code)
        message = safe_text_or_value(message)
        return cls(
            safe_text_or_value(call_id), safe_text_or_value(name), canonical_json({"message": message}),
            ToolFailure(code, message, reason),
        )

    @property
    def value(self) -> Any:
        return json.loads(self.value_json)

    @property
    def content(self) -> tuple[ContentPart, ...]:
        """What a model is shown of this outcome: the explicit content, or the default text."""
        explicit = self.explicit_content
        if explicit is not None:
            return explicit
        if self.failure is not None:
            return (TextPart(self.failure.message),)
        value_json = self.value_json
        if value_json.startswith('"'):
            text = json.loads(value_json)
            if isinstance(text, str):
                return (TextPart(text),)
        return (TextPart(value_json),)

    def with_content(self, parts: tuple[ContentPart, ...]) -> ToolExecutionOutcome:
        """The same outcome (value, failure, call id) with ``parts`` as its content."""
        return replace(self, explicit_content=as_parts(parts, "content"))

    def with_attempts(self, attempts: int) -> ToolExecutionOutcome:
        """The same outcome, saying it took ``attempts`` attempts (itself when it already says so)."""
        return self if attempts == self.attempts else replace(self, attempts=attempts)

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
        """MEAI's ``FunctionResultContent``: ``result`` is the value, or, when the content is not
        the default text (an image, a redaction), the content as ``AIContent`` JSON
        (``{"$type": "text", ...}``, ``{"$type": "data", ...}``), so it says what a model is shown."""
        exception = None if self.failure is None else f"{self.failure.code}: {self.failure.message}"
        result = self.value if self._has_default_content() else wire.meai_contents(self.content)
        return FunctionResultContent.model_validate({"callId": self.call_id, "result": result, "exception": exception})

    def _has_default_content(self) -> bool:
        explicit = self.explicit_content
        return explicit is None or explicit == replace(self, explicit_content=None).content

    @property
    def failure_marker(self) -> str | None:
        """What leads a failure's text where an API has no error flag: ``Error [CODE]``, or
        ``Error [CODE/reason]`` when the failure has a reason; ``None`` on success."""
        failure = self.failure
        return None if failure is None else wire.failure_marker(str(failure.code), failure.reason)

    # ----------------------------------------------------------- wire forms (tether_clr.records.wire)
    def to_openai(self, api: Literal["chat", "responses"] = "chat") -> dict[str, Any]:
        """The result message for OpenAI: Chat Completions' ``{"role": "tool", "tool_call_id",
        "content"}`` (text; images go in a following user message, see
        ``tether_clr.projections.openai.chat_tool_messages``), or, with ``api="responses"``,
        the ``function_call_output`` item (text and ``input_image`` parts).

        Neither API has an error flag: a failure's text starts with its :attr:`failure_marker`
        (``Error [DENIED]: not allowed``), also when a content hook set its content
        (the marker leads the first text part, or comes first as its own part)."""
        if wire.check_openai_api(api) == "chat":
            return wire.openai_chat_tool_message(self.call_id, self.content, self.failure_marker)
        return wire.openai_function_call_output(self.call_id, self.content, self.failure_marker)

    def to_anthropic(self) -> dict[str, Any]:
        """The Messages API ``tool_result`` block: text and image blocks (no empty text block; an
        empty result has no ``content``), ``is_error: true`` on failure."""
        return wire.anthropic_tool_result(self.call_id, self.content, self.failure is not None, self.failure_marker)

    def to_mcp(self) -> dict[str, Any]:
        """MCP's ``CallToolResult`` as JSON: ``content`` (text and image), ``structuredContent`` (an
        object value, else ``{"result": value}``; a failure's ``code``, ``reason``, ``message``)
        and ``isError``. ``tether_clr.projections.mcp.to_call_tool_result`` gives the SDK object."""
        failure = self.failure
        if failure is None and self.explicit_content is None:  # the common case: the value read once
            value_json = self.value_json
            value = json.loads(value_json)
            text = value if isinstance(value, str) and value_json.startswith('"') else value_json
            if is_valid_text(text):  # else the general path refuses it, as ``content`` does
                return {
                    "content": [{"type": "text", "text": text}],
                    "structuredContent": value if isinstance(value, dict) else {"result": value},
                    "isError": False,
                }
        described = None if failure is None else (str(failure.code), failure.reason, failure.message)
        return wire.mcp_call_tool_result(self.content, self.value, described)

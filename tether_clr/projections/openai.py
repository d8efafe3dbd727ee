"""OpenAI: tools for Chat Completions and Responses (strict mode included), ``allowed_tools``, calls and results.

* :func:`to_openai_tools` projects an assembly (or a sealed view) as the ``tools``
  of either API, strict by default (:mod:`tether_clr.projections.strict`); the list
  carries ``.report``.
* :func:`openai_allowed_tools` is the ``tool_choice`` restricting a request to some tools.
* :func:`calls_from_openai` reads a Chat Completions assistant message's
  ``tool_calls`` or Responses output items back into ``ToolCall`` s, raw text untouched.
* :func:`chat_tool_messages` and :func:`responses_input_items`
  (:mod:`tether_clr.projections.results`; and ``outcome.to_openai(api=...)``) give the results.

The dicts are what the ``openai`` SDK's request parameters accept, and are typed
as them for a type checker (``ChatCompletionToolParam``, the Responses
``ToolParam``, the ``tool_choice`` params): a loop passing them to
``client.chat.completions.create(...)`` passes ``mypy --strict``. The SDK's
response objects are read by attribute. Nothing here imports the SDK at run time.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar, cast, overload

from tether_clr.catalog.views import SealedToolCatalogView
from tether_clr.projections.calls import field, make_call, openai_items
from tether_clr.projections.results import chat_tool_messages, responses_input_items
from tether_clr.projections.source import native_deferral_tools, shown_tools
from tether_clr.projections.strict import ProjectionNote, ProjectionReport, strict_schema
from tether_clr.records.outcomes import ToolCall
from tether_clr.records.wire import OpenAIApi, check_openai_api

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletionAllowedToolChoiceParam, ChatCompletionToolParam
    from openai.types.responses import ToolChoiceAllowedParam, ToolParam

__all__ = [
    "OpenAITools",
    "calls_from_openai",
    "chat_tool_messages",
    "openai_allowed_tools",
    "responses_input_items",
    "to_openai_tools",
]

_ToolT = TypeVar("_ToolT")


class OpenAITools(list[_ToolT], Generic[_ToolT]):
    """The projected tools (a plain list of dicts, ready for ``tools=``) and the :class:`ProjectionReport` of the projection.

    For a type checker it is a list of the SDK's tool params: ``OpenAITools[ChatCompletionToolParam]``
    for Chat Completions, ``OpenAITools[ToolParam]`` (``openai.types.responses``) for Responses.
    """

    report: ProjectionReport

    def __init__(self, tools: Iterable[_ToolT] = (), report: ProjectionReport | None = None) -> None:
        super().__init__(tools)
        self.report = report if report is not None else ProjectionReport()


@overload
def to_openai_tools(
    assembly: SealedToolCatalogView, api: Literal["chat"] = "chat", strict: bool = True
) -> OpenAITools[ChatCompletionToolParam]: ...
@overload
def to_openai_tools(assembly: SealedToolCatalogView, api: Literal["responses"], strict: bool = True) -> OpenAITools[ToolParam]: ...
@overload
def to_openai_tools(
    assembly: SealedToolCatalogView, api: OpenAIApi, strict: bool = True
) -> OpenAITools[ChatCompletionToolParam] | OpenAITools[ToolParam]: ...
def to_openai_tools(assembly: SealedToolCatalogView, api: OpenAIApi = "chat", strict: bool = True) -> OpenAITools[Any]:
    """The tools of ``assembly`` for OpenAI, in its order: Chat Completions'
    ``{"type": "function", "function": {...}}`` or the Responses API's flat ``{"type": "function", "name", ...}``.

    With ``strict=True`` each schema is converted to strict mode; a tool whose
    schema cannot be strict is projected as it is with ``"strict": false``, and
    ``.report`` says why. Annotations strict mode refuses are removed and reported.
    Every call builds fresh dicts.

    A snapshot made with ``with_native_deferral()`` that has deferred tools is
    projected for Responses with those tools' full schemas and
    ``"defer_loading": true`` after the others, then OpenAI's hosted
    ``{"type": "tool_search"}``, and without the library's tool search. Chat
    Completions has no native deferral: it gets the snapshot as any other (the
    deferred tools left out, the library's tool search listed).
    """
    api = check_openai_api(api)
    native = native_deferral_tools(assembly) if api == "responses" else None
    tools: list[dict[str, Any]] = []
    notes: list[ProjectionNote] = []
    if native is None:
        listed = [(tool, False) for tool in shown_tools(assembly)]
    else:
        listed = [(tool, False) for tool in native[0]] + [(tool, True) for tool in native[1]]
    for tool, deferred in listed:
        parameters, is_strict = tool.parameters, False
        if strict:
            converted = strict_schema(tool.parameters)
            notes.extend(ProjectionNote(tool.name, *note) for note in converted.notes)
            if converted.schema is not None:
                parameters, is_strict = converted.schema, True
        function: dict[str, Any] = {"name": tool.name}
        if tool.description:
            function["description"] = tool.description
        function["parameters"] = parameters
        function["strict"] = is_strict
        if deferred:
            function["defer_loading"] = True
        tools.append({"type": "function", "function": function} if api == "chat" else {"type": "function", **function})
    if native is not None:
        tools.append({"type": "tool_search"})  # hosted: OpenAI searches the deferred tools itself
    return OpenAITools(tools, ProjectionReport(tuple(notes)))


@overload
def openai_allowed_tools(
    names: Iterable[str], mode: Literal["auto", "required"] = "auto", api: Literal["chat"] = "chat"
) -> ChatCompletionAllowedToolChoiceParam: ...
@overload
def openai_allowed_tools(
    names: Iterable[str], mode: Literal["auto", "required"] = "auto", *, api: Literal["responses"]
) -> ToolChoiceAllowedParam: ...
@overload
def openai_allowed_tools(
    names: Iterable[str], mode: Literal["auto", "required"], api: Literal["responses"]
) -> ToolChoiceAllowedParam: ...
@overload
def openai_allowed_tools(
    names: Iterable[str], mode: Literal["auto", "required"], api: OpenAIApi
) -> ChatCompletionAllowedToolChoiceParam | ToolChoiceAllowedParam: ...
def openai_allowed_tools(
    names: Iterable[str], mode: Literal["auto", "required"] = "auto", api: OpenAIApi = "chat"
) -> ChatCompletionAllowedToolChoiceParam | ToolChoiceAllowedParam:
    """The ``tool_choice`` value that allows only ``names`` (``allowed_tools``), in each API's form.

    ``mode="auto"`` lets the model pick among them or answer; ``"required"`` makes it call one.
    ``names`` may be a view's ``names``; a bare string is refused (``TypeError``).
    """
    api = check_openai_api(api)
    if mode not in ("auto", "required"):
        raise ValueError(f'mode must be "auto" or "required", got {mode!r}')
    if isinstance(names, str | bytes) or not isinstance(names, Iterable):
        raise TypeError(f"names must be an iterable of tool names, got {type(names).__name__}")
    chosen = list(dict.fromkeys(names))
    for name in chosen:
        if not isinstance(name, str) or not name:
            raise TypeError(f"each tool name must be a non-empty str, got {name!r}")
    if api == "chat":
        chat: dict[str, Any] = {"type": "allowed_tools", "allowed_tools": {"mode": mode, "tools": [{"type": "function", "function": {"name": n}} for n in chosen]}}
        return cast("ChatCompletionAllowedToolChoiceParam", chat)
    responses: dict[str, Any] = {"type": "allowed_tools", "mode": mode, "tools": [{"type": "function", "name": n} for n in chosen]}
    return cast("ToolChoiceAllowedParam", responses)


def calls_from_openai(response: Any) -> list[ToolCall]:
    """The function calls a model made, in its order, as ``ToolCall`` s with the raw argument text untouched.

    Takes what a client hands back, as the ``openai`` SDK's objects or as dicts:
    a Chat Completions ``ChatCompletion`` (its first choice's message), a choice,
    an assistant message (its ``tool_calls``: ``{"id", "type": "function",
    "function": {"name", "arguments"}}``), a Responses ``Response`` (its
    ``output``) or its output items (a list; ``{"type": "function_call",
    "call_id", "name", "arguments"}``). An answer without tool calls (text) is
    ``[]``, which ends a loop; anything else (text, a number, a dict of none of
    these shapes, an Anthropic Message) is a ``TypeError`` naming what to pass.

    An item that is not a function call (text, reasoning, a custom tool call) is
    skipped; a malformed function call becomes a call that ends INVALID_ARGS.
    """
    calls: list[ToolCall] = []
    for item in openai_items(response):
        kind = field(item, "type")
        if kind == "function_call":  # a Responses output item
            calls.append(make_call(len(calls), field(item, "call_id"), field(item, "name"), field(item, "arguments"), provider="OpenAI"))
        elif kind == "function" or (kind is None and field(item, "function") is not None):  # a Chat Completions tool call
            function = field(item, "function")
            calls.append(make_call(len(calls), field(item, "id"), field(function, "name"), field(function, "arguments"), provider="OpenAI"))
    return calls

"""The governed catalog as LangChain tools, run by LangGraph: :class:`GovernedTools` and :func:`governed_tools`.

Needs ``langchain-core`` and ``langgraph`` (the ``langchain`` extra); built on
:class:`~tether_clr.integrations.GovernedCalls`. What it does with LangChain's interface:

* **Offer.** A ``BaseTool`` list is static once bound (``model.bind_tools``,
  ``ToolNode``), so the offer is built per request, or per step:
  :meth:`GovernedTools.tools` gives the tools the assembly shows to who is
  asking (``context=``, or ``context_for(config)`` with LangGraph's
  ``RunnableConfig``), with the deferred tools a tool search of this
  conversation loaded. :meth:`GovernedTools.runnable_tools` adds the deferred
  tools the caller may see, for a ``ToolNode`` built once per request that must
  be able to run them once a search loaded them (before that, the pipeline
  refuses them ``schema_not_loaded``). Each tool's schema is the catalog's
  JSON schema (``args_schema`` as a dict): LangChain does not validate, the
  pipeline does.
* **Calls.** ``_arun`` runs ONE call through ``execute_batch`` with
  LangChain's ``tool_call_id``: identity is read again from the config the tool
  is invoked with, and the assembly is the caller's, so a tool a tenant cannot
  see ends UNKNOWN_TOOL even when a ``ToolNode`` holds it. ``ToolNode`` runs the
  calls of one ``AIMessage`` concurrently (``asyncio.gather``; the sync path, a
  thread pool), so each call is a one-call batch: no barrier or model-order
  delivery between them.
* **Results.** A success is ``ToolMessage(status="success")`` with the outcome's
  text (images as content blocks); a failure ``ToolMessage(status="error")``
  whose content is :func:`~tether_clr.integrations.failure_text` and whose
  ``artifact`` (never sent to the model) holds the fields under
  ``"tether_clr"`` (:func:`failure_from` reads them back). A tool search's
  result carries the names it loaded in its artifact too
  (``{"tether_clr": {"loaded": [...]}}``).
* **Approvals.** A call the pipeline asks approval for calls LangGraph's
  ``interrupt()`` with :func:`approval_request_of`'s payload (name, canonical
  arguments, fingerprint, reason); the body does not run. The host answers
  ``Command(resume=approve(request))`` (or ``reject(request)``); LangGraph runs
  the tool again from the start, the pipeline asks again (no body), ``interrupt()``
  returns the answer, and the call runs as a one-call batch whose approval
  provider answers it only for the fingerprint in the answer: an approval for
  other arguments is DENIED ``approval_mismatch``; an answer that is not one of
  :func:`approve`/:func:`reject`'s fails closed (DENIED). Needs a checkpointer
  and a ``thread_id``. With a store, nothing parks in the session log: LangGraph's
  checkpoint holds the suspension, and the call is logged once, when decided.
* **Re-runs.** A resumed node runs every call of it again (a plain ``ToolNode``
  in a custom graph is one task for all of an ``AIMessage``'s calls). A call
  this adapter already ended in the same thread (same call id, tool and
  arguments) answers its recorded result: a body never runs twice.
* **Sync.** Governed tools are async: ``_run`` (``graph.invoke``) raises
  ``NotImplementedError``; run the graph with ``ainvoke``/``astream``.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, get_type_hints

import anyio
from langchain_core.messages import BaseMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.types import interrupt
from pydantic import ConfigDict, Field

from tether_clr.catalog.views import ToolAssembly
from tether_clr.foundations.json_values import to_json_text
from tether_clr.integrations.failures import GovernedFailure, GovernedToolError, failure_of, failure_text
from tether_clr.integrations.governed import GovernedCalls, loaded_names
from tether_clr.projections.source import shown_tools
from tether_clr.recording.session.protocol import SessionStore
from tether_clr.records.content import ImagePart, TextPart
from tether_clr.records.context import RequestContext
from tether_clr.records.decisions import ApprovalResult
from tether_clr.records.outcomes import ToolCall, ToolExecutionOutcome, ToolFailureCodes
from tether_clr.records.scope import AgentPipelineScope
from tether_clr.records.suspension import PendingApproval
from tether_clr.registry import ToolRegistry

__all__ = ["GovernedTool", "GovernedTools", "approval_request_of", "approve", "failure_from", "governed_tools", "reject"]

METADATA_KEY = "tether_clr"
APPROVAL_KIND = "tether_clr.approval"
_MEMORY = 1024  # conversations whose loaded names, and calls whose results, are remembered (oldest dropped)


class GovernedTool(BaseTool):
    """One governed catalog tool as a LangChain ``BaseTool`` (built by :class:`GovernedTools`; async only)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    governed: GovernedTools = Field(exclude=True, repr=False)

    def _to_args_and_kwargs(self, tool_input: str | dict[str, Any], tool_call_id: str | None
                            ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        # The model's arguments go to the pipeline whole, unvalidated by LangChain (the pipeline checks them),
        # with LangChain's own call id.
        return (), {"arguments": tool_input, "tool_call_id": tool_call_id}

    def _run(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(
            f"governed tool {self.name!r} runs asynchronously: run the graph with ainvoke/astream, not invoke/stream"
        )

    async def _arun(self, arguments: str | dict[str, Any], tool_call_id: str | None, config: RunnableConfig) -> Any:
        return await self.governed._call(self.name, arguments, tool_call_id, config)


class GovernedTools:
    """The governed catalog, per request and per step, as LangChain tools (see the module docstring for the rules).

    ``registry``; exactly one of ``context`` or ``context_for`` (called with
    LangGraph's ``RunnableConfig``: read the host's identity from
    ``config["configurable"]``; a raise or a non-``RequestContext`` fails the
    call with :class:`~tether_clr.integrations.IdentityError`); ``scope``;
    ``store`` and ``session_id`` to log every call as a turn of that session
    (one adapter per session); ``max_parallelism``.
    """

    def __init__(
        self,
        registry: ToolRegistry,
        *,
        context: RequestContext | None = None,
        context_for: Callable[[Any], RequestContext] | None = None,
        scope: AgentPipelineScope | None = None,
        store: SessionStore | None = None,
        session_id: str | None = None,
        max_parallelism: int = 4,
    ) -> None:
        self.core = GovernedCalls(
            registry, context=context, context_for=context_for, scope=scope, store=store, session_id=session_id,
            max_parallelism=max_parallelism,
        )
        self._loaded: dict[str | None, list[str]] = {}
        self._done: dict[tuple[str, str, str, str], tuple[ToolMessage, dict[str, Any] | None]] = {}
        self._running: dict[str | None, _Running] = {}
        self._offer: dict[tuple[str, int, bool], list[BaseTool]] = {}

    # ------------------------------------------------------------------ offer
    def tools(self, config: RunnableConfig | None = None, messages: Sequence[BaseMessage] = ()) -> list[BaseTool]:
        """The tools this step offers to who is asking (``config``: the run's ``RunnableConfig``, for
        ``context_for`` and the ``thread_id``): the assembly's shown tools, with the deferred tools a tool
        search of this conversation loaded (remembered by this adapter, and read from ``messages``)."""
        return self._tools(config, messages, runnable=False)

    def runnable_tools(self, config: RunnableConfig | None = None) -> list[BaseTool]:
        """:meth:`tools` plus the deferred tools the caller may see: what a ``ToolNode`` built once per request
        holds so that a deferred tool runs once a search loaded it (the pipeline refuses it before)."""
        return self._tools(config, (), runnable=True)

    def _tools(self, config: RunnableConfig | None, messages: Sequence[BaseMessage], runnable: bool) -> list[BaseTool]:
        thread = _thread_of(config)
        self._remember(thread, _loaded_from(messages))
        assembly = self.core.assemble(config, self._loaded.get(thread, ()), thread)
        key = (assembly.digest, id(assembly.scope), runnable)
        cached = self._offer.get(key)
        if cached is not None:
            return list(cached)  # the same tools, versions and policy: the same offer
        shown = shown_tools(assembly)
        names = {tool.name for tool in shown}
        if runnable:
            shown += [tool for tool in _deferred_tools(assembly) if tool.name not in names]
        tools: list[BaseTool] = [
            GovernedTool(name=tool.name, description=tool.description or tool.name,
                         args_schema=dict(tool.parameters), governed=self)
            for tool in shown
        ]
        if len(self._offer) >= 64:
            self._offer.pop(next(iter(self._offer)))
        self._offer[key] = tools
        return list(tools)

    def _remember(self, thread: str | None, names: Iterable[str]) -> None:
        found = [name for name in names if isinstance(name, str)]
        if not found:
            return
        known = self._loaded.get(thread)
        if known is None:
            if len(self._loaded) >= _MEMORY:
                self._loaded.pop(next(iter(self._loaded)))
            known = self._loaded[thread] = []
        known.extend(name for name in found if name not in known)

    # ------------------------------------------------------------------ calls
    async def _call(self, name: str, arguments: str | dict[str, Any], call_id: str | None, config: RunnableConfig) -> Any:
        thread = _thread_of(config)
        assembly = self.core.assemble(config, self._loaded.get(thread, ()), thread)
        text = arguments if isinstance(arguments, str) else _arguments_text(arguments)
        direct = call_id is None  # invoked without a model's tool call: a plain result, a failure raised
        call = ToolCall(call_id or f"lc-{uuid.uuid4().hex}", name, text)
        key = None if thread is None or direct else (thread, call.call_id, name, text)
        if key is not None and key in self._done:
            # A resumed node runs its calls again: the call already ended here. One that was approved asks
            # interrupt() again so that LangGraph's resume values keep matching the node's interrupts in order.
            message, asked = self._done[key]
            if asked is not None:
                interrupt(asked)
            return message
        running = self._running.get(thread)
        if running is None:
            if len(self._running) >= _MEMORY:
                for idle in [k for k, v in self._running.items() if v.count == 0][:_MEMORY // 2]:
                    del self._running[idle]
            running = self._running[thread] = _Running()
        running.enter()
        try:
            outcome, asked = await self._outcome(call, assembly, running)
        finally:
            running.leave()
        self._remember(thread, loaded_names(outcome, assembly))
        if direct:
            if outcome.failure is not None:
                found = failure_of(outcome)
                assert found is not None
                raise GovernedToolError(found)
            return _content(outcome)
        message = _message(outcome, assembly)
        if key is not None:
            if len(self._done) >= _MEMORY:
                self._done.pop(next(iter(self._done)))
            self._done[key] = (message, asked)
        return message

    async def _outcome(self, call: ToolCall, assembly: ToolAssembly, running: _Running
                       ) -> tuple[ToolExecutionOutcome, dict[str, Any] | None]:
        core = self.core
        if not core.logged:
            batch = await core.run([call], assembly)
            request = batch.asked.get(call.call_id)
            if request is None:
                return batch.outcomes[call.call_id], None
        else:  # ask first, so nothing parks in the log: LangGraph's checkpoint holds the suspension
            request = await core.approval_request(call, assembly) if core.may_require_approval(assembly, call.name) else None
            if request is None:
                batch = await core.run([call], assembly)
                found = batch.outcomes.get(call.call_id)
                if found is not None:
                    return found, None
                # a listener asked after all (its answer changed between the passes): abandon, fail closed
                cancelled = await core.cancel("the approval was asked after the call was admitted without one")
                return cancelled.outcomes.get(call.call_id) or ToolExecutionOutcome.failed(
                    call.call_id, call.name, ToolFailureCodes.DENIED, "approval was asked and not answered"), None
        payload = approval_request_of(request)
        # interrupt() ends the whole node: first let the calls running beside this one end (their results are
        # recorded above, so the resumed node answers them without running a body twice).
        running.leave()
        try:
            await running.idle()
            answer = interrupt(payload)
        finally:
            running.enter()
        return await core.run_decided(call, _decision(answer), assembly), payload


class _Running:
    """The calls of one conversation running in this adapter now (:meth:`idle`: until none is)."""

    __slots__ = ("count", "event")

    def __init__(self) -> None:
        self.count = 0
        self.event: anyio.Event | None = None

    def enter(self) -> None:
        self.count += 1

    def leave(self) -> None:
        self.count -= 1
        if self.count == 0 and self.event is not None:
            self.event.set()
            self.event = None

    async def idle(self) -> None:
        while self.count > 0:
            if self.event is None:
                self.event = anyio.Event()
            await self.event.wait()


def governed_tools(
    registry: ToolRegistry,
    *,
    context: RequestContext | None = None,
    context_for: Callable[[Any], RequestContext] | None = None,
    config: RunnableConfig | None = None,
    messages: Sequence[BaseMessage] = (),
    scope: AgentPipelineScope | None = None,
    store: SessionStore | None = None,
    session_id: str | None = None,
    max_parallelism: int = 4,
) -> list[BaseTool]:
    """The governed catalog's tools offered to who is asking, as a ``BaseTool`` list for ``ToolNode``,
    ``model.bind_tools`` or ``create_react_agent`` (one adapter: :meth:`GovernedTools.tools`).

    With ``context_for``, pass the request's ``config`` (the one the graph will run with): the list is
    that caller's, and every call reads its identity again from the config it runs with. A static list
    does not grow: deferred tools a search loads need a graph that binds :meth:`GovernedTools.tools` per step.
    """
    adapter = GovernedTools(registry, context=context, context_for=context_for, scope=scope, store=store,
                            session_id=session_id, max_parallelism=max_parallelism)
    return adapter.tools(config, messages)


# ---------------------------------------------------------------------------- approvals
def approval_request_of(request: PendingApproval) -> dict[str, Any]:
    """The value handed to ``interrupt()`` for a call waiting for approval (what the host shows its human)."""
    return {
        "kind": APPROVAL_KIND, "call_id": request.call_id, "name": request.name,
        "arguments": request.arguments, "fingerprint": request.fingerprint, "reason": request.reason,
    }


def approve(request: Mapping[str, Any]) -> dict[str, Any]:
    """The ``Command(resume=...)`` answer approving the interrupt's ``request``, bound to its fingerprint."""
    return {"approved": True, "fingerprint": str(request["fingerprint"])}


def reject(request: Mapping[str, Any]) -> dict[str, Any]:
    """The ``Command(resume=...)`` answer rejecting the interrupt's ``request`` (the call ends DENIED)."""
    return {"approved": False, "fingerprint": str(request["fingerprint"])}


def _decision(answer: Any) -> tuple[ApprovalResult, str] | None:
    """The resume value as the pipeline's decision; anything but :func:`approve`/:func:`reject`'s: None (fail closed)."""
    if not isinstance(answer, Mapping):
        return None
    fingerprint, approved = answer.get("fingerprint"), answer.get("approved")
    if not isinstance(fingerprint, str) or not isinstance(approved, bool):
        return None
    return (ApprovalResult.APPROVED if approved else ApprovalResult.REJECTED), fingerprint


# ---------------------------------------------------------------------------- results
def failure_from(message: Any) -> GovernedFailure | None:
    """The failure a governed tool's ``ToolMessage`` reports (code, reason, message), or None (a success,
    or a message this adapter did not make, e.g. ``ToolNode``'s own refusal of an unknown name)."""
    artifact = getattr(message, "artifact", None)
    if not isinstance(artifact, Mapping) or not isinstance(artifact.get(METADATA_KEY), Mapping):
        return None
    found = artifact[METADATA_KEY]
    code = found.get("code")
    if code is None:
        return None
    content = getattr(message, "content", "")
    return GovernedFailure(str(found.get("call_id", "")), str(found.get("name", "")), ToolFailureCodes(code),
                           found.get("reason"), str(found.get("message", "")), content if isinstance(content, str) else str(content))


def _message(outcome: ToolExecutionOutcome, assembly: ToolAssembly) -> ToolMessage:
    found = failure_of(outcome)
    if found is not None:
        artifact = {METADATA_KEY: {"call_id": found.call_id, "name": found.name, "code": str(found.code),
                                   "reason": found.reason, "message": found.message}}
        return ToolMessage(failure_text(outcome), tool_call_id=outcome.call_id, name=outcome.name, status="error",
                           artifact=artifact)
    loaded = loaded_names(outcome, assembly)
    return ToolMessage(_content(outcome), tool_call_id=outcome.call_id, name=outcome.name, status="success",
                       artifact={METADATA_KEY: {"loaded": loaded}} if loaded else None)


def _content(outcome: ToolExecutionOutcome) -> str | list[str | dict[Any, Any]]:
    """An outcome's content as LangChain message content: its text, or text and image blocks."""
    content = outcome.content  # made on each read: read once
    texts = [part.text for part in content if isinstance(part, TextPart)]
    images = [part for part in content if isinstance(part, ImagePart)]
    if not images:
        return "\n".join(texts)
    blocks: list[str | dict[Any, Any]] = [{"type": "text", "text": text} for text in texts]
    blocks += [{"type": "image", "base64": image.base64, "mime_type": image.mime_type} for image in images]
    return blocks


# ---------------------------------------------------------------------------- helpers
def _thread_of(config: Any) -> str | None:
    """LangGraph's conversation id: ``config["configurable"]["thread_id"]`` (None without a checkpointer)."""
    if not isinstance(config, Mapping):
        return None
    configurable = config.get("configurable")
    thread = configurable.get("thread_id") if isinstance(configurable, Mapping) else None
    return None if thread is None else str(thread)


def _arguments_text(arguments: dict[str, Any]) -> str:
    try:
        return to_json_text(arguments)
    except (TypeError, ValueError):
        return "\0"  # not JSON: the pipeline refuses it INVALID_ARGS


def _loaded_from(messages: Sequence[BaseMessage]) -> list[str]:
    """The deferred tools earlier searches loaded, read from their ``ToolMessage`` artifacts."""
    names: list[str] = []
    for message in messages:
        if isinstance(message, ToolMessage) and isinstance(message.artifact, Mapping):
            found = message.artifact.get(METADATA_KEY)
            if isinstance(found, Mapping) and isinstance(found.get("loaded"), list):
                names.extend(name for name in found["loaded"] if isinstance(name, str))
    return names


def _deferred_tools(assembly: ToolAssembly) -> list[Any]:
    """The deferred tools ``assembly`` has not loaded, as shown tools (schemas from the loaded twin)."""
    names = [tool.name for tool in assembly.deferred]
    if not names:
        return []
    return [tool for tool in shown_tools(assembly.with_loaded(names)) if tool.name in set(names)]


GovernedTool.model_rebuild()
# LangChain reads ``_arun``'s type hints on every call (to find the RunnableConfig parameter): resolved
# here once, so that it does not evaluate this module's string annotations (``from __future__``) per call.
GovernedTool._arun.__annotations__ = get_type_hints(GovernedTool._arun)

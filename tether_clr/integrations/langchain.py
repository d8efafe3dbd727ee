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
  provider answers it only for the call id and fingerprint in the answer: an approval for
  other arguments is DENIED ``approval_mismatch``; an answer for another call, or one that is not
  :func:`approve`/:func:`reject`'s, fails closed (DENIED). Needs a checkpointer
  and a ``thread_id``. With a store, the ask is logged when asked: the call parks and its
  step is closed at once (ABORTED_BEFORE_DISPATCH, reason ``cancelled``, :data:`ASKED_REASON`
  in the message), so an unanswered interrupt leaves the call in a closed log; the answer runs
  as a turn of its own. LangGraph's checkpoint holds the suspension.
* **Re-runs.** A resumed node runs every call of it again (a plain ``ToolNode``
  in a custom graph is one task for all of an ``AIMessage``'s calls). A call that
  already ended (same call id, tool, arguments, tenant and principal) answers the message it
  first got, whichever ``GovernedTools`` resumes: from memory (the same adapter); without a
  store, from the checkpoint (each pass that may run a body is a LangGraph task, kept with the
  interrupted node); with a store, from the session log (read only on a resumed node).
  A body never runs twice. The calls waiting to ask interrupt one at a time, by call id, once
  the calls beside them ended: the same order on every run, so resume values reach their calls.
* **Sync.** Governed tools are async: ``_run`` (``graph.invoke``) raises
  ``NotImplementedError``; run the graph with ``ainvoke``/``astream``.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, get_type_hints

import anyio
from langchain_core.messages import BaseMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.func import task
from langgraph.types import interrupt
from pydantic import ConfigDict, Field

from tether_clr.catalog.views import ToolAssembly
from tether_clr.foundations.json_values import to_json_text
from tether_clr.integrations.content import METADATA_KEY, loaded_from_metadata, loaded_metadata, outcome_parts
from tether_clr.integrations.failures import GovernedFailure, GovernedToolError, failure_of, failure_text
from tether_clr.integrations.governed import GovernedCalls, loaded_names
from tether_clr.projections.source import shown_tools
from tether_clr.recording.session.encoding import outcome_from_result
from tether_clr.recording.session.resume import CANCELLED
from tether_clr.recording.session.steps import DEFERRED, read_steps
from tether_clr.recording.session.protocol import SessionStore
from tether_clr.records.context import RequestContext
from tether_clr.records.decisions import ApprovalResult
from tether_clr.records.outcomes import ToolCall, ToolExecutionOutcome, ToolFailureCodes
from tether_clr.records.scope import AgentPipelineScope
from tether_clr.records.suspension import PendingApproval
from tether_clr.registry import ToolRegistry

__all__ = ["GovernedTool", "GovernedTools", "approval_request_of", "approve", "failure_from", "governed_tools", "reject"]

APPROVAL_KIND = "tether_clr.approval"
_MEMORY = 1024  # conversations whose loaded names, and calls whose results, are remembered (oldest dropped)
ASKED_REASON = "its approval is asked through LangGraph's interrupt(); the answer runs as a turn of its own"
"""With a store: the message of the result that closes the step recording an asked call (see "Approvals")."""
# LangGraph's keys in a running node's config["configurable"] (langgraph._internal._constants): set on the
# tick that resumes a checkpoint, and present where a node may call tasks (a checkpointed graph's nodes).
_RESUMING = "__pregel_resuming"
_CALL = "__pregel_call"


_Key = tuple[str, str, str, str, str, str]  # thread, tenant, principal, call id, tool, arguments


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
        # (thread, tenant, principal, call id, tool, arguments) -> the call's message, and its interrupt payload
        self._done: dict[_Key, tuple[ToolMessage, dict[str, Any] | None]] = {}
        self._asked: set[_Key] = set()  # logged: the calls whose ask this adapter recorded
        self._running: dict[str | None, _Running] = {}
        self._offer: dict[tuple[str, int, bool], list[BaseTool]] = {}
        self._writing = anyio.Lock()  # logged: an ask parks then closes its step; no other batch in between

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
        context = assembly.context
        key = None if thread is None or direct else (thread, context.tenant_id, context.principal_id, call.call_id, name, text)
        configurable = config.get("configurable") if isinstance(config, Mapping) else None
        resuming = isinstance(configurable, Mapping) and configurable.get(_RESUMING) is True
        running = self._running.get(thread)
        if running is None:
            if len(self._running) >= _MEMORY:
                for idle in [k for k, v in self._running.items() if v.count == 0 and not v.askers][:_MEMORY // 2]:
                    del self._running[idle]
            running = self._running[thread] = _Running()
        running.enter()
        try:
            recorded = False  # logged: whether the log already records this call's ask (not again on a re-run)
            done = None
            if key is not None:
                done = self._done.get(key)
                recorded = key in self._asked
                if done is None and resuming and self.core.logged and not recorded:
                    # another process (or adapter) may have run it, or recorded its ask, before the interrupt
                    done, recorded = await self._from_log(call, assembly)
            if done is not None:
                # A resumed node runs its calls again: the call already ended. One that was approved asks
                # interrupt() again, in its turn, so that LangGraph's resume values keep matching the node's
                # interrupts in order.
                message, asked = done
                if asked is not None:
                    await _in_turn(running, call.call_id, asked)
                return message
            durable = key is not None and not self.core.logged and isinstance(configurable, Mapping) \
                and _CALL in configurable
            message, asked = await self._settle(call, assembly, running, durable, key, recorded)
        finally:
            running.leave()
        self._remember(thread, _loaded_from([message]))
        if direct:
            found = failure_from(message)
            if found is not None:
                raise GovernedToolError(found)
            return message.content
        if key is not None:
            if len(self._done) >= _MEMORY:
                self._done.pop(next(iter(self._done)))
            self._done[key] = (message, asked)
        return message

    async def _settle(self, call: ToolCall, assembly: ToolAssembly, running: _Running, durable: bool,
                      key: _Key | None, recorded: bool) -> tuple[ToolMessage, dict[str, Any] | None]:
        """The call's message, and the approval payload it was interrupted with (None: it asked none).

        ``durable`` (no store, in a checkpointed graph): each pass that may run the body is a LangGraph
        task, whose result the checkpoint keeps: a node resumed from that checkpoint, by any process,
        gets it back instead of running the body again (see the module docstring, "Re-runs")."""
        first = await _durably(durable, call, "ask", lambda: self._first_pass(call, assembly, key, recorded))
        if isinstance(first, ToolMessage):
            return first, None
        payload = dict(first)
        answer = await _in_turn(running, call.call_id, payload)
        decision = _decision(answer, call.call_id)
        message = await _durably(durable, call, "decided", lambda: self._decided(call, decision, assembly))
        assert isinstance(message, ToolMessage)
        return message, payload

    async def _first_pass(self, call: ToolCall, assembly: ToolAssembly, key: _Key | None, recorded: bool
                          ) -> ToolMessage | dict[str, Any]:
        """Run ``call``, or, when its approval is asked, the ``interrupt()`` payload (no body ran; logged: the ask
        is recorded, once: not when ``recorded``, i.e. the call is run again by a resumed node)."""
        core = self.core
        if not core.logged:
            batch = await core.run([call], assembly)
            request = batch.asked.get(call.call_id)
            if request is None:
                return _message(batch.outcomes[call.call_id], assembly)
            return approval_request_of(request)
        # ask first, so nothing stays parked in the log: LangGraph's checkpoint holds the suspension
        request = await core.approval_request(call, assembly) if core.may_require_approval(assembly, call.name) else None
        async with self._writing:
            if request is None:
                batch = await core.run([call], assembly)
                found = batch.outcomes.get(call.call_id)
                if found is not None:
                    return _message(found, assembly)
                # a listener asked after all (its answer changed between the passes): abandon, fail closed
                cancelled = await core.cancel("the approval was asked after the call was admitted without one")
                return _message(cancelled.outcomes.get(call.call_id) or ToolExecutionOutcome.failed(
                    call.call_id, call.name, ToolFailureCodes.DENIED, "approval was asked and not answered"), assembly)
            if recorded:
                return approval_request_of(request)
            # Record the ask: the call parks (tool/call, approval/asked, approval/decided deferred) and its step is
            # closed at once (ABORTED_BEFORE_DISPATCH, reason "cancelled"), so an interrupt nobody answers leaves
            # the call in the log and the log closed; the answer runs later as a turn of its own.
            batch = await core.run([call], assembly)
            if call.call_id in batch.outcomes and call.call_id not in core.parked:
                return _message(batch.outcomes[call.call_id], assembly)  # ended without asking after all
            await core.cancel(ASKED_REASON)
            if key is not None:
                if len(self._asked) >= _MEMORY:
                    self._asked.pop()
                self._asked.add(key)
        return approval_request_of(request)

    async def _decided(self, call: ToolCall, decision: tuple[ApprovalResult, str] | None, assembly: ToolAssembly
                       ) -> ToolMessage:
        if not self.core.logged:
            return _message(await self.core.run_decided(call, decision, assembly), assembly)
        async with self._writing:
            return _message(await self.core.run_decided(call, decision, assembly), assembly)

    async def _from_log(self, call: ToolCall, assembly: ToolAssembly
                        ) -> tuple[tuple[ToolMessage, dict[str, Any] | None] | None, bool]:
        """What this session's log holds for ``call`` (same call id, tool and arguments): its message as it was
        first answered, with the payload to interrupt() with again when it was asked (None: no result), and
        whether its ask is recorded.

        Read only on a node resumed after an interrupt. The call's last result counts; a result that only
        records the ask (:data:`ASKED_REASON`) is not one: the call is still waiting for its answer."""
        store, session_id = self.core.store, self.core.session_id
        assert store is not None and session_id is not None
        asked = False
        found: ToolExecutionOutcome | None = None
        for step in read_steps(await store.events(session_id)).steps.values():
            for position, event in step.results.items():
                proposal = step.proposal(position) or {}
                if (event.call_id != call.call_id or event.payload.get("name") != call.name
                        or proposal.get("arguments") != call.arguments):
                    continue
                decided = step.decided.get(position)
                if (decided is not None and decided.payload.get("decision") == DEFERRED
                        and event.payload.get("reason") == CANCELLED and ASKED_REASON in str(event.payload.get("message"))):
                    asked, found = True, None  # the ask: its answer comes later
                    continue
                found = outcome_from_result(call.call_id, call.name, event.payload)
        if found is None:
            return None, asked
        return (_message(found, assembly), {"kind": APPROVAL_KIND, "call_id": call.call_id} if asked else None), asked


class _Running:
    """The calls of one conversation running in this adapter now, and those waiting to ask (see :func:`_in_turn`)."""

    __slots__ = ("askers", "count", "event")

    def __init__(self) -> None:
        self.count = 0
        self.askers: list[str] = []
        self.event: anyio.Event | None = None

    def enter(self) -> None:
        self.count += 1

    def leave(self) -> None:
        self.count -= 1
        self._changed()

    def _changed(self) -> None:
        if self.event is not None:
            self.event.set()
            self.event = None

    async def turn(self, call_id: str) -> None:
        """Until no call runs and ``call_id`` is the first (by call id) of the calls waiting to ask."""
        self.askers.append(call_id)
        while self.count > 0 or min(self.askers) != call_id:
            if self.event is None:
                self.event = anyio.Event()
            await self.event.wait()

    def asked(self, call_id: str) -> None:
        self.askers.remove(call_id)
        self._changed()


async def _in_turn(running: _Running, call_id: str, payload: dict[str, Any]) -> Any:
    """``interrupt(payload)``, once the calls running beside this one ended (their results are recorded, so the
    resumed node answers them without running a body twice: interrupt() ends the whole node) and the calls
    waiting to ask before it (by call id) asked: a node's interrupts come in one order on every run, whatever
    the timing, so LangGraph's resume values, matched by that order, reach the calls they answer."""
    running.leave()
    try:
        await running.turn(call_id)
        return interrupt(payload)
    finally:
        running.asked(call_id)
        running.enter()


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
    """The ``Command(resume=...)`` answer approving the interrupt's ``request``, bound to its call id and fingerprint."""
    return {"approved": True, "call_id": str(request["call_id"]), "fingerprint": str(request["fingerprint"])}


def reject(request: Mapping[str, Any]) -> dict[str, Any]:
    """The ``Command(resume=...)`` answer rejecting the interrupt's ``request`` (the call ends DENIED)."""
    return {"approved": False, "call_id": str(request["call_id"]), "fingerprint": str(request["fingerprint"])}


def _decision(answer: Any, call_id: str) -> tuple[ApprovalResult, str] | None:
    """The resume value as the pipeline's decision for ``call_id``; anything but :func:`approve`/:func:`reject`'s
    answer for that call (another call's answer included): None (fail closed, DENIED)."""
    if not isinstance(answer, Mapping):
        return None
    fingerprint, approved = answer.get("fingerprint"), answer.get("approved")
    if not isinstance(fingerprint, str) or not isinstance(approved, bool) or answer.get("call_id") != call_id:
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
                       artifact=loaded_metadata(loaded))


def _content(outcome: ToolExecutionOutcome) -> str | list[str | dict[Any, Any]]:
    """An outcome's content as LangChain message content: its text, or text and image blocks."""
    parts = outcome_parts(outcome)
    if not parts.images:
        return parts.text
    blocks: list[str | dict[Any, Any]] = [{"type": "text", "text": parts.text}] if parts.text else []
    blocks += [{"type": "image", "base64": image.base64, "mime_type": image.mime_type} for image in parts.images]
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


async def _durably(durable: bool, call: ToolCall, stage: str, run: Callable[[], Awaitable[Any]]) -> Any:
    """``await run()``; ``durable``: as a LangGraph task named for the call and the stage, so that the checkpoint
    keeps its result and a node resumed from it gets that result back without running it again. LangGraph finds
    a node's task results by their order in the node, as it does its interrupts; the name makes a task of another
    call never answer this one."""
    if not durable:
        return await run()
    digest = hashlib.sha256("\0".join((stage, call.call_id, call.name, call.arguments)).encode()).hexdigest()[:32]

    async def governed_call() -> Any:
        return await run()

    as_task: Any = task(name=f"tether_clr_{digest}")  # typed for a ParamSpec'd function; this one takes none
    return await as_task(governed_call)()


def _loaded_from(messages: Sequence[BaseMessage]) -> list[str]:
    """The deferred tools earlier searches loaded, read from their ``ToolMessage`` artifacts."""
    return loaded_from_metadata(message.artifact for message in messages if isinstance(message, ToolMessage))


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

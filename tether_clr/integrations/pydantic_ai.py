"""The governed catalog as a pydantic-ai toolset: :class:`GovernedToolset`, an ``AbstractToolset``.

Needs ``pydantic-ai-slim`` (the ``pydantic-ai`` extra); built on
:class:`~tether_clr.integrations.GovernedCalls`. What it does with pydantic-ai's interface:

* ``get_tools(ctx)``: the step's assembly for who is asking (``context=``, or
  ``context_for(ctx.deps)``), each shown tool as a ``ToolDefinition`` with its
  JSON schema and an argument validator that accepts any object, so the
  pipeline, not pydantic, checks arguments. Deferred tools join once the
  library's tool search returned them: the search's tool return carries their
  names in its ``metadata`` (``{"tether_clr": {"loaded": [...]}}``), which the
  next step reads back from the history (so it survives a resumed run).
* ``call_tool``: pydantic-ai starts every call of a model response at once (one
  task each). The first of them to arrive runs *every* call of that response
  that this toolset offered (and that has no result yet) as ONE batch, in the
  model's order; the others wait for it and each answers from the results. So
  ordering, barriers and model-order delivery hold as in ``execute_batch``.
  A response (the last message) holding ONE open call of this toolset is the
  fast path: that call is the whole batch, run at once with no turn bookkeeping
  (:func:`_lone_call`; the same batch the general path would run).
* failures: INVALID_ARGS raises ``ModelRetry`` (the model retries, within the
  tool's ``max_retries``); every other failure raises ``ToolFailed`` (a failed
  tool return, no retry); both carry ``Error [CODE/reason]: message``.
* approvals: a call whose approval the pipeline asks raises ``ApprovalRequired``
  with ``metadata={"fingerprint", "reason", "arguments"}``; the run ends with
  ``DeferredToolRequests``; the host answers ``DeferredToolResults(approvals=
  {call_id: True | ToolDenied(...)})`` and runs the agent again with the history.
  A denied call never reaches the toolset (pydantic-ai answers it with the
  ``ToolDenied`` message) and its body never runs. Without a store, an approved
  call runs with ``APPROVED`` bound to the fingerprint the host was shown
  (``DeferredToolResults.metadata[call_id]``, else the one this toolset asked
  with; neither: DENIED ``approval_unknown``); other arguments (an edited
  history, ``override_args``): DENIED ``approval_mismatch``. With a store, the
  first approved call resumes the parked step once, from the log, with a
  decision per approved call (the calls waiting behind a parked one have their
  own requests) and the denied waiting calls withdrawn; see docs/integrations.md.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, NoReturn

import anyio
import anyio.lowlevel
from pydantic_ai import RunContext
from pydantic_ai.exceptions import ApprovalRequired, ModelRetry, ToolFailed
from pydantic_ai.messages import (
    BinaryContent,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    ToolReturn,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets.abstract import AbstractToolset, ToolsetTool
from pydantic_core import SchemaValidator, core_schema

from tether_clr.catalog.views import ToolAssembly
from tether_clr.foundations.arguments import InvalidArgumentsJson, read_arguments
from tether_clr.foundations.json_values import to_json_text
from tether_clr.integrations.approvals import MISMATCH, Decision, Mismatch
from tether_clr.integrations.content import loaded_from_metadata, loaded_metadata, outcome_parts
from tether_clr.integrations.failures import failure_text
from tether_clr.integrations.governed import GovernedBatch, GovernedCalls, loaded_names
from tether_clr.integrations.tracing import adopted_spans, span_to_adopt
from tether_clr.projections.source import shown_tools
from tether_clr.recording.session.protocol import SessionStore
from tether_clr.records.context import RequestContext
from tether_clr.records.decisions import ApprovalResult
from tether_clr.records.outcomes import ToolCall, ToolExecutionOutcome, ToolFailureCodes
from tether_clr.records.scope import AgentPipelineScope
from tether_clr.records.suspension import PendingApproval
from tether_clr.records.wire import failure_marker
from tether_clr.registry import ToolRegistry

__all__ = ["GovernedToolset"]

_MEMORY = 1024  # calls whose shown fingerprint, and runs whose approvals, are remembered (oldest dropped)
UNKNOWN_APPROVAL = (
    "approved, but this toolset did not ask for this call's approval and DeferredToolResults.metadata does not "
    "carry the fingerprint it was shown (pass DeferredToolRequests.metadata back): it does not apply"
)
_NO_SPANS: dict[str, Any] = {}  # never written: the spans of a batch with nothing to adopt
_ANY_OBJECT = SchemaValidator(core_schema.dict_schema(core_schema.str_schema(), core_schema.any_schema()))


@dataclass(kw_only=True)
class GovernedTool(ToolsetTool[Any]):
    """A ``ToolsetTool`` that remembers the assembly the model was shown (its calls run against it)."""

    assembly: ToolAssembly
    offered: frozenset[str]


class _Done:
    """Set once by the call that runs the batch; its siblings wait. The ``anyio.Event`` is made only when
    a sibling waits before it is set: a turn of one call (the common case) never makes one."""

    __slots__ = ("_event", "_set")

    def __init__(self) -> None:
        self._set = False
        self._event: anyio.Event | None = None

    def set(self) -> None:
        self._set = True
        if self._event is not None:
            self._event.set()

    async def wait(self) -> None:
        if self._set:
            await anyio.lowlevel.checkpoint()  # as an already set Event's wait: still a checkpoint
            return
        if self._event is None:
            self._event = anyio.Event()
        await self._event.wait()


class _Turn:
    """One model response's calls of this toolset: run once, answered by each ``call_tool``."""

    def __init__(self, calls: list[ToolCall]) -> None:
        self.calls = calls
        self.ids = frozenset(call.call_id for call in calls)
        self.done = _Done()
        self.batch: GovernedBatch | None = None
        self.error: BaseException | None = None
        self.answered: set[str] = set()
        self.approved: dict[str, dict[str, Any]] = {}  # logged resume: call id -> the arguments the framework runs
        self.arrived: set[str] = set()  # the calls whose call_tool has run so far
        self.spans: dict[str, Any] = {}  # call id -> pydantic-ai's span of that call (to adopt)

    def arrive(self, call_id: str, span: Any | None) -> None:
        self.arrived.add(call_id)
        if span is not None:
            self.spans[call_id] = span

    async def lead(self, first: bool, span: Any | None, work: Callable[[], Awaitable[GovernedBatch]]) -> None:
        """The first call's task runs ``work`` once for the turn (after its siblings arrived, when traced, so
        their spans are adopted); every other call's task waits for it. A failure is kept for the siblings."""
        if not first:
            await self.done.wait()
            return
        try:
            if span is not None:
                await self.gathered()
            with adopted_spans(self.spans):
                self.batch = await work()
        except BaseException as exc:
            self.error = exc
            raise
        finally:
            self.done.set()

    async def gathered(self) -> None:
        """Wait until every call of the turn reached ``call_tool``, or a scheduler pass brought none.

        pydantic-ai starts the calls of a response as tasks created together, so a pass of the event
        loop runs each sibling up to ``call_tool``; calls it runs later (a ``sequential`` tool or
        execution mode, a call after an output tool under the ``graceful`` end strategy, a call it
        skips) never arrive now, and after one pass without arrivals the batch runs without them
        (their library spans are its own, under this call's span).
        """
        while not self.ids <= self.arrived:
            before = len(self.arrived)
            await anyio.sleep(0)
            if len(self.arrived) == before:
                return


class _Resume:
    """The approved calls of one resumed run, answered from ONE resume of the parked step.

    pydantic-ai validates every call of the resumed response before it runs any, so when the first approved
    call reaches ``call_tool`` the toolset knows every call the host approved (the validator recorded them):
    the calls of the step it does not hold were denied. The resume runs once, with a decision per approved
    call and the denied waiting calls withdrawn; each approved call is answered from it whenever its own
    ``call_tool`` comes (together, or one by one in ``sequential`` mode), and the record is dropped once the
    last one was answered.
    """

    def __init__(self, approved: dict[str, dict[str, Any]]) -> None:
        self.approved = approved  # call id -> the arguments pydantic-ai runs it with (override_args included)
        self.turn = _Turn([ToolCall(call_id, "", "{}") for call_id in approved])


class GovernedToolset(AbstractToolset[Any]):
    """The governed catalog, per step, as a pydantic-ai toolset (see the module docstring for the rules).

    ``registry``; exactly one of ``context`` or ``context_for`` (called with
    ``RunContext.deps``; a raise or a non-``RequestContext`` fails the run with
    :class:`~tether_clr.integrations.IdentityError`); ``scope``; ``store`` and
    ``session_id`` to log every model turn's batch as a turn of that session and
    park approvals durably (one toolset per session at a time: its batches are serialized;
    a parked step is read back from the log by a new toolset); ``max_parallelism``; ``id``
    (pydantic-ai's toolset id); ``max_retries``: how often the model may retry a call refused INVALID_ARGS.
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
        id: str | None = None,
        max_retries: int = 1,
    ) -> None:
        self.core = GovernedCalls(
            registry, context=context, context_for=context_for, scope=scope, store=store, session_id=session_id,
            max_parallelism=max_parallelism,
        )
        self._id = id
        self.max_retries = max_retries
        self._turns: dict[tuple[Any, ...], _Turn] = {}
        self._offer: tuple[str, AgentPipelineScope | None, ToolAssembly, dict[str, GovernedTool]] | None = None
        self._asked: dict[str, str] = {}  # not logged: call id -> the fingerprint its ApprovalRequired showed
        self._approvals: dict[Any, dict[str, dict[str, Any]]] = {}  # logged: run id -> approved call id -> its args
        self._resumes: dict[Any, _Resume] = {}  # logged: run id -> the resume its approved calls answer from

    @property
    def id(self) -> str | None:
        return self._id

    # ------------------------------------------------------------------ offer
    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        core = self.core
        assembly = core.assemble(ctx.deps, _loaded_from(ctx.messages), ctx.conversation_id or ctx.run_id)
        if core.logged and await core.restore():
            await self._settle_denied(ctx.messages, assembly)
        cached = self._offer
        if cached is not None and cached[0] == assembly.digest and cached[1] is assembly.scope:
            if cached[2] is assembly:
                return dict(cached[3])  # the same assembly (the same request): the same offer
            tools = {name: replace(tool, assembly=assembly) for name, tool in cached[3].items()}  # this request's
        else:
            tools = self._tools(assembly)
        self._offer = (assembly.digest, assembly.scope, assembly, tools)
        return dict(tools)

    def _tools(self, assembly: ToolAssembly) -> dict[str, GovernedTool]:
        shown = shown_tools(assembly)
        offered = frozenset(tool.name for tool in shown)
        validate = self._validated if self.core.logged else None
        return {
            tool.name: GovernedTool(
                toolset=self,
                tool_def=ToolDefinition(
                    name=tool.name, parameters_json_schema=tool.parameters, description=tool.description or None,
                ),
                max_retries=self.max_retries,
                args_validator=_ANY_OBJECT,
                args_validator_func=validate,
                assembly=assembly,
                offered=offered,
            )
            for tool in shown
        }

    def _validated(self, ctx: RunContext[Any], **arguments: Any) -> None:
        """Logged: pydantic-ai validates every call of a resumed response before running any: note the approved
        ones (and the arguments they run with), so the resume knows every call the host approved."""
        if ctx.tool_call_approved and ctx.tool_call_id is not None:
            approved = self._approvals.setdefault(ctx.run_id, {})
            if len(self._approvals) > _MEMORY:
                self._approvals.pop(next(iter(self._approvals)))
            approved[ctx.tool_call_id] = arguments

    async def _settle_denied(self, messages: Sequence[ModelMessage], assembly: ToolAssembly) -> None:
        """Logged: a parked step whose every parked call the host denied never reaches ``call_tool`` (an approved
        one would have resumed it); when the history shows the parked calls answered, the step ends here: the
        parked calls rejected (DENIED) and the calls that waited behind them withdrawn (DENIED, never run)."""
        answered = {
            part.tool_call_id
            for message in messages if isinstance(message, ModelRequest)
            for part in message.parts if isinstance(part, ToolReturnPart)
        }
        if all(call_id in answered for call_id in self.core.parked):
            await self.core.resume({}, assembly, withdrawn=self.core.waiting)

    # ------------------------------------------------------------------ calls
    async def call_tool(self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]) -> Any:
        if not isinstance(tool, GovernedTool):
            raise TypeError(f"tool {name!r} was not offered by this GovernedToolset")
        call_id = ctx.tool_call_id or ""
        span = span_to_adopt(call_id)  # pydantic-ai's execute_tool span of this call, when it traces
        if ctx.tool_call_approved:
            if self.core.logged:
                outcome = await self._resumed(name, call_id, tool_args, ctx, tool, span)
            else:
                outcome = await self._approved(name, call_id, tool_args, ctx, tool, span)
            return _answer(outcome, tool.assembly)
        lone = _lone_call(ctx.messages, tool.offered, call_id)
        if lone is not None:
            # the fast path: the response's only open call of this toolset is this one, so it is the turn's whole
            # batch (no sibling will arrive): run it now, with no turn bookkeeping (what the general path would do)
            core = self.core
            with adopted_spans(_NO_SPANS if span is None else {call_id: span}):
                if core.logged:
                    return self._from_batch(await core.run((lone,), tool.assembly), call_id, tool.assembly)
                ended = await core.run_one(lone, tool.assembly)
            if isinstance(ended, PendingApproval):
                self._ask(call_id, ended)
            return _answer(ended, tool.assembly)
        turn, key, first = self._turn(ctx, tool, call_id, name, tool_args)
        turn.arrive(call_id, span)
        # this call's task runs the batch (the siblings' spans adopted too, once they have arrived); its siblings wait
        await turn.lead(first, span, lambda: self.core.run(turn.calls, tool.assembly))
        return self._from_turn(turn, key, call_id, tool.assembly)

    def _turn(self, ctx: RunContext[Any], tool: GovernedTool, call_id: str, name: str, tool_args: dict[str, Any]
              ) -> tuple[_Turn, tuple[Any, ...], bool]:
        messages = ctx.messages
        index = _last_response(messages)
        key: tuple[Any, ...] = (ctx.run_id, index, len(messages))
        turn = self._turns.get(key)
        if turn is not None and call_id in turn.ids:
            return turn, key, False
        calls = _open_calls(messages, index, tool.offered)
        if not any(call.call_id == call_id for call in calls):  # not found in the history: run it alone
            calls = [ToolCall(call_id, name, to_json_text(tool_args))]
            key = (*key, call_id)
        turn = self._turns[key] = _Turn(calls)
        return turn, key, True

    def _from_turn(self, turn: _Turn, key: tuple[Any, ...], call_id: str, assembly: ToolAssembly) -> Any:
        turn.answered.add(call_id)
        if len(turn.answered) >= len(turn.calls):
            self._turns.pop(key, None)
        if turn.error is not None:
            raise turn.error
        batch = turn.batch
        assert batch is not None
        return self._from_batch(batch, call_id, assembly)

    def _from_batch(self, batch: GovernedBatch, call_id: str, assembly: ToolAssembly) -> Any:
        outcome = batch.outcomes.get(call_id)
        if outcome is not None:
            return _answer(outcome, assembly)
        asked = batch.asked.get(call_id)
        if asked is not None:
            self._ask(call_id, asked)
        held = batch.held.get(call_id)
        if held is not None:
            raise ApprovalRequired({"fingerprint": held.fingerprint, "reason": held.reason, "arguments": held.arguments,
                                    "waiting_for": list(batch.waiting.get(call_id, ()))})
        raise ToolFailed(f"{failure_marker(str(ToolFailureCodes.UNAVAILABLE))}: call {call_id!r} was not part of its batch")

    def _ask(self, call_id: str, asked: PendingApproval) -> NoReturn:
        """Hand the pipeline's approval request to pydantic-ai's human-in-the-loop (the run ends with it)."""
        if not self.core.logged:  # what the host is shown is what its approval binds to
            if len(self._asked) >= _MEMORY:
                self._asked.pop(next(iter(self._asked)))
            self._asked[call_id] = asked.fingerprint
        raise ApprovalRequired({"fingerprint": asked.fingerprint, "reason": asked.reason, "arguments": asked.arguments})

    async def _approved(
        self, name: str, call_id: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: GovernedTool, span: Any | None
    ) -> ToolExecutionOutcome:
        """Not logged: a call the host approved through ``DeferredToolResults``, run with the approval bound to the
        fingerprint the host was shown: ``DeferredToolResults.metadata[call_id]`` (the request's metadata handed
        back), else the one this toolset showed; with neither, or for other arguments, it is DENIED."""
        metadata = ctx.tool_call_metadata
        shown = metadata.get("fingerprint") if isinstance(metadata, dict) else None
        remembered = self._asked.pop(call_id, None)
        if not isinstance(shown, str):
            shown = remembered
        decision = None if shown is None else (ApprovalResult.APPROVED, shown)
        with adopted_spans({} if span is None else {call_id: span}):
            outcome = await self.core.run_decided(ToolCall(call_id, name, to_json_text(tool_args)), decision, tool.assembly)
        if shown is None and outcome.code is ToolFailureCodes.DENIED:
            return ToolExecutionOutcome.failed(call_id, name, ToolFailureCodes.DENIED, UNKNOWN_APPROVAL, "approval_unknown")
        return outcome

    async def _resumed(
        self, name: str, call_id: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: GovernedTool, span: Any | None
    ) -> ToolExecutionOutcome:
        """Logged: a call the host approved. The first of the run's approved calls resumes the parked step (from the
        log when this toolset did not park it) once for all of them; each is answered from that resume."""
        key = ctx.run_id
        resume = self._resumes.get(key)
        first = resume is None or call_id not in resume.approved
        if first:
            approved = self._approvals.pop(key, {})
            approved.setdefault(call_id, tool_args)
            resume = self._resumes[key] = _Resume(approved)
        assert resume is not None
        turn = resume.turn
        turn.arrive(call_id, span)
        await turn.lead(first, span, lambda: self._resume_step(resume.approved, tool.assembly))  # adopts the approved calls' spans
        turn.answered.add(call_id)
        if turn.answered >= turn.ids:
            self._resumes.pop(key, None)
        if turn.error is not None:
            raise turn.error
        assert turn.batch is not None
        found = turn.batch.outcomes.get(call_id)
        if found is None:
            return ToolExecutionOutcome.failed(call_id, name, ToolFailureCodes.UNAVAILABLE,
                                               "the call is not part of the resumed step (no step of the session "
                                               "holds it parked or waiting)", "approval_stale")
        return found

    async def _resume_step(self, approved: dict[str, dict[str, Any]], assembly: ToolAssembly) -> GovernedBatch:
        """Resume the parked step: a decision per approved call of the step (MISMATCH when pydantic-ai runs it with
        other arguments than the log's), the waiting calls the host did not approve withdrawn."""
        core = self.core
        if not await core.restore():
            return GovernedBatch()
        limits = core.registry.argument_limits
        decisions: dict[str, Decision | Mismatch] = {}
        for call_id, arguments in approved.items():
            pending = core.parked.get(call_id) or core.held.get(call_id)
            if pending is None:
                continue
            try:
                same = read_arguments(to_json_text(arguments), limits).json == pending.arguments
            except (InvalidArgumentsJson, ValueError):
                same = False
            decisions[call_id] = (ApprovalResult.APPROVED, pending.fingerprint) if same else MISMATCH
        withdrawn = [call_id for call_id in core.waiting if call_id not in approved]
        return await core.resume(decisions, assembly, withdrawn=withdrawn)


def _answer(outcome: ToolExecutionOutcome, assembly: ToolAssembly) -> Any:
    """An outcome as pydantic-ai expects a tool's result: a return, ``ModelRetry`` or ``ToolFailed``."""
    if outcome.failure is not None:
        if outcome.failure.code is ToolFailureCodes.INVALID_ARGS:
            raise ModelRetry(failure_text(outcome))
        raise ToolFailed(failure_text(outcome))
    parts = outcome_parts(outcome)
    loaded = loaded_names(outcome, assembly)
    if not parts.images and not loaded:
        return parts.text
    images = [BinaryContent(part.data, media_type=part.mime_type) for part in parts.images]
    return ToolReturn(return_value=parts.text, content=images or None, metadata=loaded_metadata(loaded))


def _loaded_from(messages: Sequence[ModelMessage]) -> list[str]:
    """The deferred tools earlier searches of this conversation loaded (read from their tool returns' metadata)."""
    return loaded_from_metadata(
        getattr(part, "metadata", None) for message in messages if isinstance(message, ModelRequest) for part in message.parts
    )


def _lone_call(messages: Sequence[ModelMessage], offered: frozenset[str], call_id: str) -> ToolCall | None:
    """``call_id``'s call, when it is the one open call of ``offered`` tools in the LAST message, a model response
    (nothing after it, so none of its calls has a result yet); else None (the general path then finds the turn).

    One pass over that response's parts, none over the rest of the history: for a turn of one call of this
    toolset (the common case) it gives the same batch as :func:`_open_calls`, the call itself."""
    if not messages:
        return None
    message = messages[-1]
    if not isinstance(message, ModelResponse):
        return None
    found: ToolCall | None = None
    for part in message.parts:
        if not isinstance(part, ToolCallPart) or part.tool_name not in offered:
            continue
        if found is not None or part.tool_call_id != call_id:
            return None  # another open call of this toolset: the calls run together (the general path)
        found = ToolCall(part.tool_call_id, part.tool_name, part.args_as_json_str())
    return found


def _last_response(messages: Sequence[ModelMessage]) -> int:
    """The index of the last model response in ``messages`` (-1 when there is none)."""
    for index in range(len(messages) - 1, -1, -1):
        if isinstance(messages[index], ModelResponse):
            return index
    return -1


def _open_calls(messages: Sequence[ModelMessage], index: int, offered: frozenset[str]) -> list[ToolCall]:
    """The calls of the model response at ``index`` that this toolset offered and that have no result yet, in model order."""
    if index < 0:
        return []
    message = messages[index]
    assert isinstance(message, ModelResponse)
    later = messages[index + 1:]
    answered = {
        getattr(part, "tool_call_id", None) for request in later if isinstance(request, ModelRequest) for part in request.parts
    } if later else ()
    return [
        ToolCall(part.tool_call_id, part.tool_name, part.args_as_json_str())
        for part in message.tool_calls
        if part.tool_name in offered and part.tool_call_id not in answered
    ]

"""The governed catalog as the OpenAI Agents SDK's function tools: :func:`governed_tools` -> ``list[FunctionTool]``.

Needs ``openai-agents`` (the ``openai-agents`` extra); built on
:class:`~tether_clr.integrations.GovernedCalls`. What it does with the SDK's interface:

* **The offer.** An ``Agent``'s tool list is static, so :func:`governed_tools`
  builds it from ONE request's assembly: ``context=``, or
  ``context_for(run_context)`` with the ``run_context`` the host will pass to
  ``Runner.run(context=...)``. Build the list per request (per tenant and
  principal): a tool the caller cannot see is not in it at all. The deferred
  tools the caller may see are in it too, disabled until the library's tool
  search loads them. Each step, every tool's ``is_enabled(run_context, agent)``
  asks the step's assembly again (``context_for(run_context.context)``, the
  deferred tools loaded so far): a tool hidden, denied or re-versioned (another
  schema) since the list was built is not offered; a deferred tool is offered
  once a search returned it. ``strict_json_schema`` is False: the model is shown
  the catalog's schema as it is, and the pipeline checks arguments.
* **Calls.** The SDK invokes function tools one by one (``on_invoke_tool``,
  each in its own asyncio task); each call is a ONE-CALL batch through
  ``execute_batch`` with the SDK's call id (``ToolContext.tool_call_id``), in
  the step's current assembly (so a tool hidden since the offer is refused).
  There is no barrier across a model turn's calls and the SDK, not the
  pipeline, decides their order and concurrency.
* **Failures** are returned as the tool's output, the text the SDK sends the
  model: ``Error [CODE]: message`` (:func:`~tether_clr.integrations.failure_text`);
  the host reads the same as fields in the output item's custom data
  (``ToolCallOutputItem.custom_data["tether_clr"]``: ``code``, ``reason``, ``message``).
  The SDK does not retry by itself: the model sees INVALID_ARGS and may send a
  corrected call. An unknown tool name is refused by the SDK before any tool
  (``RunConfig.tool_not_found_behavior``). A ``context_for`` that fails raises
  :class:`~tether_clr.integrations.IdentityError`, which fails the run.
* **Approvals** use ``needs_approval(run_context, params, call_id)``: True when
  the pipeline would ask approval for that call (a pass up to its approval
  step, no body run). The run ends with ``result.interruptions``; the host
  answers with ``state = result.to_state()``, ``state.approve(item)`` or
  ``state.reject(item)``, and ``Runner.run(agent, state)``. An approved call
  reaches ``on_invoke_tool`` and the pipeline gets ``APPROVED`` bound to the
  fingerprint of the arguments the approver was shown: the request this instance
  asked, kept by call id (:attr:`GovernedAgentTools.asked`, bounded by
  ``max_asked``). A state resumed by another tool list (another process:
  ``RunState.to_json`` / ``from_json``), or whose request was evicted, is bound
  again: for a call the SDK holds approved by itself, the pipeline is asked about
  the arguments of the SDK's record of the call (``ToolContext.tool_call``, the
  interruption item's raw call) and the approval is bound to that fingerprint.
  What cannot be bound fails closed with a truthful reason: a sticky
  ``always_approve=True`` covering a call this instance did not ask about is
  DENIED ``approval_mismatch`` when it asked about the tool for another call, else
  ``approval_unknown`` (as is an approved call without the SDK's record of its
  arguments); a call nobody was asked about is DENIED ``approval_not_asked``.
  A rejected call never reaches ``on_invoke_tool``; the SDK sends the model its
  rejection message.
* **The session log** (``store=`` and ``session_id=``): every invoked call is
  one turn; an approved call is parked and resumed with the decision in that
  turn, under a lock, so the SDK's concurrent calls are logged one after the
  other. A pending call is in the log only once invoked: until then the SDK's
  RunState holds it. A rejected call is recorded when this instance next sees the
  run context (the next step's ``is_enabled``, or another call's invocation):
  it is parked and resumed ``REJECTED`` (DENIED, no body), if the pipeline still
  asks approval for it. Not recorded: a rejection answered in a state resumed by
  another instance, or whose request was evicted (the SDK gives a tool no
  arguments of a call it rejected), or with no later step.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

import anyio
from agents import FunctionTool, RunContextWrapper, ToolOutputImage, ToolOutputText
from agents.tool import FunctionToolCustomDataContext
from agents.tool_context import ToolContext

from tether_clr.catalog.views import ToolAssembly
from tether_clr.integrations.approvals import MISMATCH_MESSAGE, MISMATCH_REASON
from tether_clr.integrations.content import METADATA_KEY, outcome_parts
from tether_clr.integrations.failures import GovernedFailure, failure_of
from tether_clr.integrations.governed import GovernedBatch, GovernedCalls, loaded_names
from tether_clr.projections.source import ShownTool, shown_tools
from tether_clr.recording.session.protocol import SessionStore
from tether_clr.records.context import RequestContext
from tether_clr.records.decisions import ApprovalResult
from tether_clr.records.outcomes import ToolCall, ToolExecutionOutcome, ToolFailureCodes
from tether_clr.records.scope import AgentPipelineScope
from tether_clr.records.suspension import PendingApproval
from tether_clr.registry import ToolRegistry

__all__ = ["GovernedAgentTools", "governed_tools"]

_UNSET: Any = object()
NOT_ASKED_REASON = "approval_not_asked"
UNKNOWN_REASON = "approval_unknown"
"""The DENIED reason of a call the SDK reports approved whose shown arguments the adapter cannot read."""
"""The DENIED reason of a call the pipeline asks approval for, invoked by the SDK without asking."""


def _schema_key(tool: ShownTool) -> str:
    return json.dumps([tool.description, tool.parameters], sort_keys=True, default=str)


class GovernedAgentTools:
    """The state the function tools of one :func:`governed_tools` call share.

    ``core``: the :class:`~tether_clr.integrations.GovernedCalls` they run through;
    ``tools``: the ``FunctionTool`` list; ``loaded``: the deferred tools a search
    of these tools' runs loaded; ``asked``: the approvals asked through
    ``needs_approval`` and not yet decided, by call id. :func:`governed_tools` is the
    short form of ``GovernedAgentTools(GovernedCalls(...), conversation).build(run_context)``;
    build it yourself to keep the state at hand.
    """

    max_asked = 1024
    """At most this many undecided approvals are kept in :attr:`asked` (the oldest go first). An evicted one
    is never approved by default: an approved call missing there is bound again to the arguments of the
    SDK's record of the call; a rejected one is not recorded in the log."""

    def __init__(self, core: GovernedCalls, conversation: str) -> None:
        self.core = core
        self.conversation = conversation
        self.loaded: list[str] = []
        self.asked: dict[str, PendingApproval] = {}
        self.asked_tools: set[str] = set()
        """The tools this instance asked an approval for (bounded by the tool list)."""
        self.tools: list[FunctionTool] = []
        self._built: dict[str, str] = {}
        self._offer: tuple[str, frozenset[str], dict[str, str]] | None = None
        self.failures: dict[str, GovernedFailure] = {}
        """The failed calls whose output item the SDK has not built yet, by call id (read by the extractor)."""
        self._logged = anyio.Lock()  # logged: a call's park and resume are one unit (the SDK runs calls concurrently)

    # ------------------------------------------------------------------ offer
    def assemble(self, run_context: Any) -> ToolAssembly:
        """The step's assembly for the run's host context (``RunContextWrapper.context``), with the loaded tools."""
        return self.core.assemble(run_context, self.loaded, self.conversation)

    def build(self, run_context: Any) -> list[FunctionTool]:
        """The function tools of ``run_context``'s assembly: its shown tools, then its deferred ones (disabled
        until loaded); a tool whose calls may ask approval gets the ``needs_approval`` callable."""
        assembly = self.assemble(run_context)
        deferred = [entry.name for entry in assembly.deferred]
        every = assembly.with_loaded(deferred) if deferred else assembly
        for tool in shown_tools(every):
            self._built[tool.name] = _schema_key(tool)
            self.tools.append(self._function_tool(tool, self.core.may_require_approval(every, tool.name)))
        return list(self.tools)

    def offered(self, run_context: Any) -> dict[str, str]:
        """The tools the step's assembly shows now, name -> schema key (the last one is memoized by digest)."""
        assembly = self.assemble(run_context)
        cached = self._offer
        if cached is not None and cached[0] == assembly.digest and cached[1] == assembly.loaded:
            return cached[2]
        offer = {tool.name: _schema_key(tool) for tool in shown_tools(assembly)}
        self._offer = (assembly.digest, assembly.loaded, offer)
        return offer

    def _function_tool(self, shown: ShownTool, may_ask: bool) -> FunctionTool:
        name = shown.name

        async def is_enabled(run_context: RunContextWrapper[Any], agent: Any) -> bool:
            await self.settle(run_context)
            return self.offered(run_context.context).get(name) == self._built.get(name)

        async def needs_approval(run_context: RunContextWrapper[Any], params: dict[str, Any], call_id: str) -> bool:
            return await self.needs_approval(run_context, name, params, call_id)

        async def on_invoke(context: ToolContext[Any], arguments: str) -> Any:
            return await self.invoke(context, name, arguments)

        return FunctionTool(
            name=name,
            description=shown.description,
            params_json_schema=shown.parameters,
            on_invoke_tool=on_invoke,
            strict_json_schema=False,
            is_enabled=is_enabled,
            # A tool that never asks approval says so as a bool: with a callable, the SDK asks a human
            # about any call whose arguments do not parse, before the pipeline could refuse them.
            needs_approval=needs_approval if may_ask else False,
            custom_data_extractor=self.custom_data,
        )

    # -------------------------------------------------------------- approvals
    async def needs_approval(self, run_context: RunContextWrapper[Any], name: str, params: dict[str, Any],
                             call_id: str) -> bool:
        """Whether the pipeline would ask approval for this call; the request is kept by call id."""
        await self.settle(run_context)
        assembly = self.assemble(run_context.context)
        if not self.core.may_require_approval(assembly, name):
            return False
        # params: the SDK's parse of the model's JSON (arguments that do not parse never reach here: the SDK
        # asks approval for them itself); the fingerprint is over the canonical form, so re-encoding is exact.
        request = await self.core.approval_request(ToolCall(call_id, name, json.dumps(params)), assembly)
        if request is None:
            return False
        self.asked_tools.add(name)
        self.asked.pop(call_id, None)
        self.asked[call_id] = request  # newest last: the bound evicts the oldest (a run abandoned at its interruption)
        while len(self.asked) > self.max_asked:
            self.asked.pop(next(iter(self.asked)))
        return True

    async def settle(self, run_context: RunContextWrapper[Any]) -> None:
        """The calls whose approval the host rejected leave :attr:`asked`; logged, each is recorded DENIED."""
        if not self.asked:
            return
        rejected: list[PendingApproval] = []
        for call_id, pending in list(self.asked.items()):
            if run_context.is_tool_approved(pending.name, call_id) is False and call_id in self.asked:
                del self.asked[call_id]  # claimed here, before any await: concurrent settles see it gone
                rejected.append(pending)
        if not rejected or not self.core.logged:
            return
        assembly = self.assemble(run_context.context)
        for pending in rejected:
            call = ToolCall(pending.call_id, pending.name, pending.arguments)
            if await self.core.approval_request(call, assembly) is None:
                continue  # the pipeline would not ask now: recording it would run it; the host rejected it
            async with self._logged:
                batch = await self.core.run([call], assembly)
                if pending.call_id in batch.asked:
                    decision = (ApprovalResult.REJECTED, pending.fingerprint)
                    await self.core.resume({pending.call_id: decision}, assembly)

    # ------------------------------------------------------------------ calls
    async def invoke(self, context: ToolContext[Any], name: str, arguments: str) -> Any:
        """One SDK call, as a one-call batch with the SDK's call id; its outcome as the tool output."""
        if self.asked:  # what settle() checks first: nothing was asked, nothing to settle (no await)
            await self.settle(context)
        call = ToolCall(context.tool_call_id, name, arguments)
        assembly = self.assemble(context.context)
        asked = self.asked.pop(call.call_id, None)
        if asked is None and _approved_for_this_call(context, call.call_id):
            # Approved per call by a human who was shown the RunState's interruption item, but this
            # instance did not ask (a state resumed by another tool list or process, or an evicted
            # entry): bind to the arguments of that item (the SDK's raw tool call), asked again.
            shown = _shown_arguments(context, call.call_id)
            if shown is None:
                return self.answer(self._unknown(call), assembly)
            # None: the pipeline asks nothing for those arguments now; the call runs as any other (and if
            # the arguments it runs with need approval, the approval was for others: approval_mismatch)
            asked = await self.core.approval_request(ToolCall(call.call_id, name, shown), assembly)
        approved = asked is not None and context.is_tool_approved(name, call.call_id) is True
        decided = (ApprovalResult.APPROVED, asked.fingerprint) if approved and asked is not None else None
        if not self.core.logged:
            if asked is not None:
                outcome = await self.core.run_decided(call, decided, assembly)
            else:
                ended = await self.core.run_one(call, assembly)
                outcome = self._unasked(call, context) if isinstance(ended, PendingApproval) else ended
        else:
            async with self._logged:
                batch = await self.core.run([call], assembly)
                if call.call_id in batch.asked:  # parked: the SDK's decision resumes the step
                    # no decision (never asked through needs_approval, or a sticky approval): fails closed,
                    # DENIED in the log; the model is told why below
                    batch = await self.core.resume({} if decided is None else {call.call_id: decided}, assembly)
                    if decided is None:
                        batch.outcomes.pop(call.call_id, None)
            outcome = self._only(batch, call, context)
        return self.answer(outcome, assembly)

    @staticmethod
    def _unknown(call: ToolCall) -> ToolExecutionOutcome:
        return ToolExecutionOutcome.failed(
            call.call_id, call.name, ToolFailureCodes.DENIED,
            "the SDK reports this call approved, but this tool list cannot tell which arguments the approver "
            "was shown (an approval for the whole tool, or a call without its arguments): approve this call "
            "by itself", UNKNOWN_REASON,
        )

    def _only(self, batch: GovernedBatch, call: ToolCall, context: ToolContext[Any]) -> ToolExecutionOutcome:
        outcome = batch.outcomes.get(call.call_id)
        if outcome is not None:
            return outcome
        return self._unasked(call, context)

    def _unasked(self, call: ToolCall, context: ToolContext[Any]) -> ToolExecutionOutcome:
        """What the model is told of a call the SDK invoked whose approval the pipeline asks (its body did not run)."""
        # The pipeline asks approval for a call the SDK invoked without asking through this adapter's
        # needs_approval: the body did not run. An SDK approval that covers it is a sticky one
        # (always_approve=True) or one for other arguments: it does not apply. When this instance asked
        # about the tool, it was given for another call (approval_mismatch); else (a state resumed by
        # another tool list) the adapter cannot tell which call the approver saw (approval_unknown).
        if context.is_tool_approved(call.name, call.call_id) is True:
            if call.name not in self.asked_tools and not _approved_for_this_call(context, call.call_id):
                return self._unknown(call)
            return ToolExecutionOutcome.failed(call.call_id, call.name, ToolFailureCodes.DENIED, MISMATCH_MESSAGE,
                                               MISMATCH_REASON)
        return ToolExecutionOutcome.failed(
            call.call_id, call.name, ToolFailureCodes.DENIED,
            "this call needs approval and none was asked for it (its approval policy changed since the tool "
            "list was built: build it again)", NOT_ASKED_REASON,
        )

    def custom_data(self, data: FunctionToolCustomDataContext) -> dict[str, Any] | None:
        """The SDK's custom data of a call's output item: a failed call's fields, for the host
        (``ToolCallOutputItem.custom_data["tether_clr"]``: code, reason, message), else None."""
        failure = self.failures.pop(data.tool_context.tool_call_id, None)
        if failure is None:
            return None
        return {METADATA_KEY: {"code": str(failure.code), "reason": failure.reason, "message": failure.message}}

    def answer(self, outcome: ToolExecutionOutcome, assembly: ToolAssembly) -> Any:
        """An outcome as the SDK's tool output: the failure text, the text, or text and images."""
        failure = failure_of(outcome)
        if failure is not None:
            if len(self.failures) >= 1024:  # output items the SDK never built (a cancelled run): drop the oldest
                self.failures.pop(next(iter(self.failures)))
            self.failures[outcome.call_id] = failure
            return failure.text
        for name in loaded_names(outcome, assembly):
            if name not in self.loaded:
                self.loaded.append(name)
        parts = outcome_parts(outcome)
        if not parts.images:
            return parts.text
        return [ToolOutputText(text=parts.text), *(ToolOutputImage(image_url=image.data_url) for image in parts.images)]


def _approved_for_this_call(context: RunContextWrapper[Any], call_id: str) -> bool:
    """Whether the SDK holds an approval of exactly this call id (``RunState.approve(item)`` of its
    interruption item), not a sticky one (``always_approve=True``, given while another call was shown).

    Reads the SDK's approval records (``RunContextWrapper._approvals``, openai-agents 0.24: a per-call
    approval is a list of call ids); a record this code cannot read counts as no per-call approval, so
    the call fails closed rather than run."""
    records = getattr(context, "_approvals", None)
    if not isinstance(records, dict):
        return False
    for record in records.values():
        approved = getattr(record, "approved", None)
        if isinstance(approved, list) and call_id in approved:
            return True
    return False


def _shown_arguments(context: ToolContext[Any], call_id: str) -> str | None:
    """The raw arguments of the SDK's record of the call (``ToolContext.tool_call``: the item of the
    RunState's interruption that the approver was shown), or None when the SDK gives none for this id."""
    raw = context.tool_call
    arguments = getattr(raw, "arguments", None)
    if raw is None or getattr(raw, "call_id", None) != call_id or not isinstance(arguments, str):
        return None
    return arguments


def governed_tools(
    registry: ToolRegistry,
    *,
    context: RequestContext | None = None,
    context_for: Callable[[Any], RequestContext] | None = None,
    run_context: Any = _UNSET,
    scope: AgentPipelineScope | None = None,
    store: SessionStore | None = None,
    session_id: str | None = None,
    conversation_id: str | None = None,
    max_parallelism: int = 4,
) -> list[FunctionTool]:
    """The governed catalog, for one request, as the SDK's ``FunctionTool`` list (see the module docstring).

    Exactly one of ``context`` or ``context_for`` (called with ``RunContextWrapper.context``,
    the object given to ``Runner.run(context=...)``; with ``context_for``, pass that
    object as ``run_context`` too: the list is built from its assembly). ``scope``:
    where calls run; ``store`` and ``session_id``: log every call as a turn of that
    session (one tool list per session); ``conversation_id``: the session of the
    default scope when there is no store (default: a fresh id per call of this
    function; approval needs a session and an owner). ``TypeError`` for a missing or
    doubled identity; :class:`~tether_clr.integrations.IdentityError` when
    ``context_for`` cannot say who is asking.
    """
    if context_for is not None and run_context is _UNSET:
        raise TypeError("with context_for=, pass run_context= (what Runner.run gets as context=): the tool list "
                        "is built from that caller's assembly")
    core = GovernedCalls(registry, context=context, context_for=context_for, scope=scope, store=store,
                         session_id=session_id, max_parallelism=max_parallelism)
    state = GovernedAgentTools(core, conversation_id or f"openai-agents-{uuid.uuid4().hex}")
    return state.build(None if run_context is _UNSET else run_context)

"""Tools that require approval: one mechanism for Python tools
(``ToolRegistrationOptions(requires_approval=...)``) and real
``ApprovalRequiredAIFunction``s, the same step as a pre-execute ``ask``.

The parametrized tests run each rule once for a Python tool and once for the
real MEAI function (skipped without Microsoft.Extensions.AI unless
TETHER_REQUIRE_MEAI=1).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support import Approver, BlockingApprover, call, codes, run_batch, session_scope
from tether_clr import (
    AgentPipelineScope,
    ApprovalGrant,
    ApprovalResult,
    GrantScope,
    InMemoryToolLog,
    RequestContext,
    SqliteSessionStore,
    CancellationSource,
    PythonFunction,
    ToolExecution,
    ToolExecutionOutcome,
    ToolFailureCodes,
    ToolPreDecision,
    ToolRegistrationOptions,
    ToolRegistry,
)

pytestmark = pytest.mark.anyio


class Gated:
    """A tool that requires approval, and a way to count how often its body ran."""

    def __init__(self, register: Callable[[ToolRegistry, ToolRegistrationOptions], None], runs: Callable[[], int], name: str) -> None:
        self.register = register
        self.runs = runs
        self.name = name


def _python_gated() -> Gated:
    ran: list[str] = []

    def destroy(target: str) -> str:
        ran.append(target)
        return f"destroyed {target}"

    tool = PythonFunction.from_callable(destroy, name="Dangerous")

    def register(registry: ToolRegistry, options: ToolRegistrationOptions) -> None:
        registry.register(tool, None, ToolRegistrationOptions(requires_approval=True) if options.requires_approval is None else options)

    return Gated(register, lambda: len(ran), "Dangerous")


@pytest.fixture(params=["python", pytest.param("aifunction", marks=pytest.mark.dotnet)])
def gated(request: pytest.FixtureRequest) -> Gated:
    if request.param == "python":
        return _python_gated()
    meai = request.getfixturevalue("meai")
    tool = meai["functions"]["Dangerous"]
    tools = meai["MeaiTools"]
    assert tool.requires_approval is True  # found through GetService(typeof(ApprovalRequiredAIFunction))

    def register(registry: ToolRegistry, options: ToolRegistrationOptions) -> None:
        registry.register(tool, None, options)

    return Gated(register, lambda: int(tools.DangerousRuns), "Dangerous")


def _registry(gated: Gated, approver: Any = None, options: ToolRegistrationOptions | None = None) -> ToolRegistry:
    registry = ToolRegistry()
    registry.approval = approver
    gated.register(registry, options or ToolRegistrationOptions())
    return registry


async def test_approval_required_tool_without_provider_is_denied_and_never_runs(gated: Gated) -> None:
    before = gated.runs()
    (outcome,) = await run_batch(_registry(gated), call("c1", gated.name, {"target": "prod"}), scope=session_scope())
    assert outcome.failure.code is ToolFailureCodes.DENIED
    assert "no approval provider" in outcome.failure.message
    assert gated.runs() == before


@pytest.mark.parametrize("scope_kwargs", [{}, {"session_id": "s"}, {"owner": "alice"}])
async def test_approval_required_tool_without_session_or_owner_is_denied_without_asking(gated: Gated, scope_kwargs: dict[str, Any]) -> None:
    approver = Approver()
    before = gated.runs()
    (outcome,) = await run_batch(_registry(gated, approver), call("c1", gated.name, {"target": "prod"}), scope=AgentPipelineScope(**scope_kwargs))
    assert outcome.failure.code is ToolFailureCodes.DENIED
    assert approver.requests == []
    assert gated.runs() == before


@pytest.mark.parametrize(
    ("make_approver", "code"),
    [
        (lambda: Approver(ApprovalResult.REJECTED), ToolFailureCodes.DENIED),
        (lambda: Approver(ApprovalResult.UNAVAILABLE), ToolFailureCodes.UNAVAILABLE),
        (lambda: Approver(error=ConnectionError("approval service down")), ToolFailureCodes.UNAVAILABLE),
        (lambda: Approver("yes please"), ToolFailureCodes.UNAVAILABLE),
    ],
    ids=["rejected", "unavailable", "raising", "nonsense"],
)
async def test_approval_required_tool_refused_approval_maps_to_stable_codes_and_never_runs(
    gated: Gated, make_approver: Callable[[], Approver], code: ToolFailureCodes
) -> None:
    approver = make_approver()
    before = gated.runs()
    (outcome,) = await run_batch(_registry(gated, approver), call("c1", gated.name, {"target": "prod"}), scope=session_scope())
    assert outcome.failure.code is code
    assert len(approver.requests) == 1
    assert gated.runs() == before


async def test_approved_tool_runs_and_the_request_carries_its_arguments(gated: Gated) -> None:
    approver = Approver(ApprovalResult.APPROVED)
    before = gated.runs()
    (outcome,) = await run_batch(_registry(gated, approver), call("c1", gated.name, {"target": "staging"}), scope=session_scope())
    assert outcome.value == "destroyed staging"
    assert approver.requests == [("c1", "tool 'Dangerous' requires approval", {"target": "staging"})]
    assert gated.runs() == before + 1


async def test_approved_tool_still_passes_the_guards(gated: Gated) -> None:
    registry = _registry(gated, Approver(ApprovalResult.APPROVED))
    registry.register_guard(None, lambda execution: "frozen for audit")
    before = gated.runs()
    (outcome,) = await run_batch(registry, call("c1", gated.name, {"target": "prod"}), scope=session_scope())
    assert (outcome.failure.code, outcome.failure.message) == (ToolFailureCodes.DENIED, "frozen for audit")
    assert gated.runs() == before


async def test_approval_required_tool_cancelled_while_waiting_is_aborted_before_dispatch(gated: Gated) -> None:
    approver = BlockingApprover()
    registry = _registry(gated, approver)
    source = CancellationSource()
    result: list[ToolExecutionOutcome] = []
    before = gated.runs()

    async def run() -> None:
        result.extend(await run_batch(registry, call("c1", gated.name, {"target": "prod"}), scope=session_scope(), cancellation=source.token))

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            await approver.asked.wait()
            source.cancel("user pressed stop")
    assert codes(result) == ["ABORTED_BEFORE_DISPATCH"]
    assert gated.runs() == before


@pytest.mark.parametrize(
    ("decision", "code", "questions"),
    [
        # an ask and the tool's own requirement are one question, with the listener's reason
        (ToolPreDecision.ask("touches prod"), None, [("c1", "touches prod", {"target": "prod"})]),
        # a deny ends the call before anyone is asked
        (ToolPreDecision.deny("not today"), ToolFailureCodes.DENIED, []),
    ],
    ids=["ask-asks-once", "deny-wins"],
)
async def test_pre_execute_decision_and_required_approval_combine(
    gated: Gated, decision: ToolPreDecision, code: ToolFailureCodes | None, questions: list[Any]
) -> None:
    approver = Approver(ApprovalResult.APPROVED)
    registry = _registry(gated, approver)

    async def decide(execution: ToolExecution, next_: Any) -> ToolPreDecision:
        return decision

    registry.register_pre_execute_listener(None, decide)
    (outcome,) = await run_batch(registry, call("c1", gated.name, {"target": "prod"}), scope=session_scope())
    assert (None if outcome.failure is None else outcome.failure.code) is code
    assert approver.requests == questions


async def test_registration_option_cannot_waive_an_approval_required_aifunction(meai: dict[str, Any]) -> None:
    registry = ToolRegistry()
    registry.register(meai["functions"]["Dangerous"], None, ToolRegistrationOptions(requires_approval=False))
    before = int(meai["MeaiTools"].DangerousRuns)
    (outcome,) = await run_batch(registry, call("c1", "Dangerous", {"target": "prod"}), scope=session_scope())
    assert outcome.failure.code is ToolFailureCodes.DENIED
    assert int(meai["MeaiTools"].DangerousRuns) == before


# ------------------------------------------------------- the predicate, Python tools
def _tool_with(requires_approval: Any) -> tuple[ToolRegistry, list[int]]:
    ran: list[int] = []
    registry = ToolRegistry()
    registry.register(
        PythonFunction.from_callable(lambda amount: ran.append(amount), name="pay"),
        None,
        ToolRegistrationOptions(requires_approval=requires_approval),
    )
    return registry, ran


@pytest.mark.parametrize("requires_approval", [None, False])
async def test_tool_without_approval_requirement_runs_without_asking(requires_approval: Any) -> None:
    registry, ran = _tool_with(requires_approval)
    registry.approval = approver = Approver(ApprovalResult.REJECTED)
    (outcome,) = await run_batch(registry, call("c1", "pay", {"amount": 5}), scope=session_scope())
    assert outcome.failure is None and ran == [5]
    assert approver.requests == []


async def test_approval_predicate_sees_parsed_arguments_and_decides_per_call() -> None:
    seen: list[Any] = []

    def over_limit(arguments: Any) -> bool:
        seen.append(arguments)
        return bool(arguments["amount"] > 100)

    registry, ran = _tool_with(over_limit)
    registry.approval = approver = Approver(ApprovalResult.REJECTED)
    outcomes = await run_batch(registry, call("c1", "pay", {"amount": 5}), call("c2", "pay", {"amount": 500}), scope=session_scope())
    assert codes(outcomes) == [None, "DENIED"]
    assert ran == [5] and seen == [{"amount": 5}, {"amount": 500}]
    assert [r[0] for r in approver.requests] == ["c2"]


async def test_raising_approval_predicate_means_approval_is_required() -> None:
    def broken(arguments: Any) -> bool:
        raise RuntimeError("classifier down")

    registry, ran = _tool_with(broken)
    (outcome,) = await run_batch(registry, call("c1", "pay", {"amount": 5}), scope=session_scope())
    assert outcome.failure.code is ToolFailureCodes.DENIED  # no provider: the ask cannot be put
    assert ran == []


def test_requires_approval_must_be_a_bool_or_a_callable() -> None:
    registry = ToolRegistry()
    with pytest.raises(TypeError, match="requires_approval"):
        registry.register(PythonFunction.from_callable(lambda: 1, name="t"), None, ToolRegistrationOptions(requires_approval="yes"))  # type: ignore[arg-type]


_ANSWERS = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=5),
    st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(answer=_ANSWERS)
def test_any_predicate_answer_but_exact_false_requires_approval(answer: Any) -> None:
    registry, ran = _tool_with(lambda arguments: answer)
    approver = Approver(ApprovalResult.REJECTED)
    registry.approval = approver

    async def main() -> list[ToolExecutionOutcome]:
        return await run_batch(registry, call("c1", "pay", {"amount": 1}), scope=session_scope())

    (outcome,) = anyio.run(main)
    if answer is False:
        assert outcome.failure is None and approver.requests == []
    else:
        assert outcome.failure.code is ToolFailureCodes.DENIED and ran == []
        assert len(approver.requests) == 1


@pytest.mark.parametrize(("answer", "code"), [
    (ApprovalResult.APPROVED_ALWAYS, None), (ApprovalResult.REJECTED_ALWAYS, "DENIED"),
    (ApprovalGrant.approve(GrantScope.PRINCIPAL), None), (ApprovalGrant.reject(GrantScope.SESSION), "DENIED"),
])
async def test_an_always_answer_without_a_session_store_decides_each_call_as_its_plain_answer(
    gated: Gated, answer: Any, code: str | None
) -> None:
    approver = Approver(answer)
    registry = _registry(gated, approver)
    before = gated.runs()
    for sink in (None, InMemoryToolLog()):  # nothing holds grants: asked every time
        outcomes = await run_batch(registry, call("c1", gated.name, {"target": "prod"}), scope=session_scope(), sink=sink)
        assert codes(outcomes) == [code]
    assert len(approver.requests) == 2
    assert gated.runs() == before + (2 if code is None else 0)
    if code is not None:
        assert outcomes[0].failure.message == f"approval rejected (tool '{gated.name}' requires approval)"


async def test_a_grant_decides_later_calls_of_a_python_or_dotnet_tool_without_asking(gated: Gated, tmp_path: Any) -> None:
    approver = Approver(ApprovalResult.APPROVED_ALWAYS)
    registry = _registry(gated, approver)
    before = gated.runs()
    scope = AgentPipelineScope(session_id="s", owner="alice")
    assembly = registry.assemble(RequestContext("acme", "alice"), scope)
    with SqliteSessionStore(tmp_path / "log.sqlite3") as store:
        for _ in range(2):
            turn = await store.begin_turn("s")
            outcomes = await registry.execute_batch([call("c1", gated.name, {"target": "prod"})], assembly, sink=store.sink("s", turn, 1))
            await store.end_turn("s", turn)
            assert codes(outcomes) == [None]
        [grant] = await store.grants()
    assert len(approver.requests) == 1 and gated.runs() == before + 2
    assert grant.schema_hash == assembly.bindings[gated.name].schema_hash

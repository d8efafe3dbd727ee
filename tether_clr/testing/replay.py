"""``replay``: run a script in the ``tether-clr run`` format through the command's own runner, from a test.

``await replay(script, tools=..., assemblies=..., store=..., approve=...)``
loads the script (a file, its rows, or a parsed :class:`~tether_clr.cli.Script`),
registers the tools the way ``--tools`` and ``--assembly`` do
(:func:`tether_clr.cli.loading.register_value`, ``load_assembly_tools``),
picks the approval provider the way ``--approve`` does (or takes yours, such as
:class:`~tether_clr.testing.ScriptedApprovals`), and runs the turns with
:func:`tether_clr.cli.runner.run_script`, the code ``tether-clr run`` runs, into
the session store. It returns a :class:`Replay`: every step's outcomes, the
session's events, where it stopped if a call was parked, and what the command
would have printed.
"""

from __future__ import annotations

import io
import tempfile
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from tether_clr.cli.approval import APPROVE_MODES, approver_for
from tether_clr.cli.loading import load_assembly_tools, load_python_tools, register_value
from tether_clr.cli.runner import RunSettings, Suspension, run_script
from tether_clr.records.script import Script, load_script, parse_script
from tether_clr.execution.ports import ApprovalProvider
from tether_clr.recording.session.events import SessionEvent
from tether_clr.recording.session.protocol import SessionStore
from tether_clr.recording.session.sqlite import SqliteSessionStore
from tether_clr.records.context import RequestContext
from tether_clr.records.outcomes import ToolExecutionOutcome
from tether_clr.registry import ToolRegistry

__all__ = ["DEFAULT_CONTEXT", "Replay", "replay"]

DEFAULT_CONTEXT = RequestContext("local", "tester")
"""Who a replay runs as unless told: tenant ``local`` (the command's default), principal ``tester``."""


@dataclass(frozen=True, slots=True)
class Replay:
    """What a replayed script did.

    ``steps``: each step's outcomes, in order (the last one's are those delivered
    before a parked call, when ``suspended``); ``events``: the session's log
    afterwards; ``suspended``: where a parked call stopped the run (the
    ``tether-clr run`` exit code 3), else None; ``output``: the command's
    printed tables, as text; ``registry``: the registry the tools were
    registered in, to resume or to look at.
    """

    session_id: str
    steps: tuple[tuple[ToolExecutionOutcome, ...], ...]
    events: tuple[SessionEvent, ...]
    suspended: Suspension | None
    output: str
    registry: ToolRegistry

    @property
    def outcomes(self) -> tuple[ToolExecutionOutcome, ...]:
        """Every step's outcomes in one tuple, in order."""
        return tuple(outcome for step in self.steps for outcome in step)


async def replay(
    script: str | Path | Sequence[Any] | Script,
    tools: Any = (),
    assemblies: Sequence[str | Path] = (),
    store: SessionStore | None = None,
    approve: str | ApprovalProvider = "deny",
    *,
    session_id: str | None = None,
    context: RequestContext = DEFAULT_CONTEXT,
    max_parallelism: int = 4,
    registry: ToolRegistry | None = None,
) -> Replay:
    """Run ``script`` as ``tether-clr run`` would, and return what it did (see :class:`Replay`).

    * ``script``: a path to a script file, the rows of one (a list), or a parsed :class:`~tether_clr.cli.Script`;
    * ``tools``: what ``--tools`` accepts: ``"package.module:attr"`` specs, and the objects such an
      attribute may hold (a list of tools or callables, a tool, a function taking the registry);
      a list may mix specs and objects;
    * ``assemblies``: .NET assemblies whose functions become tools (``--assembly``);
    * ``store``: the session store (default: a SQLite file in a temporary folder, removed afterwards);
    * ``approve``: ``"auto"``, ``"deny"`` (the default: a test approves on purpose) or ``"prompt"``
      (which, with no terminal, parks the call, as the command does), or any approval provider;
    * ``registry``: register into this registry (its listeners and guards apply) instead of a new one.

    Bad usage (a malformed script, a ``--tools`` value that cannot be used) raises what the command
    reports as exit 2 (:class:`~tether_clr.cli.ScriptError`, ``ToolSpecError``); an infrastructure
    fault raises as it would stop the command.
    """
    parsed = _script(script)
    registry = registry if registry is not None else ToolRegistry()
    specs = _register(registry, tools)
    for path in assemblies:
        load_assembly_tools(registry, path)
    buffer = io.StringIO()
    console = Console(file=buffer, width=160, color_system=None, highlight=False)
    if isinstance(approve, str):
        if approve not in APPROVE_MODES:
            raise ValueError(f"approve is one of {APPROVE_MODES} or an approval provider, got {approve!r}")
        registry.approval = approver_for(approve, console, interactive=False)
    else:
        registry.approval = approve
    session = session_id or f"replay-{uuid.uuid4().hex[:12]}"
    settings = _settings(script, specs, tools, assemblies, approve, context, max_parallelism)
    with tempfile.TemporaryDirectory(prefix="tether-replay-") as folder:
        own = store is None
        opened: SessionStore = SqliteSessionStore(Path(folder) / "session.sqlite") if store is None else store
        try:
            result = await run_script(
                parsed, registry, opened, session, context, console, max_parallelism=max_parallelism, settings=settings
            )
            events = tuple(await opened.events(session))
        finally:
            if own:
                opened.close()
    return Replay(session, result.steps, events, result.suspended, buffer.getvalue(), registry)


def _script(script: str | Path | Sequence[Any] | Script) -> Script:
    if isinstance(script, Script):
        return script
    if isinstance(script, str | Path):
        return load_script(script)
    return parse_script(list(script))


def _register(registry: ToolRegistry, tools: Any) -> list[str]:
    """Register ``tools``; returns the ``--tools`` specs among them."""
    items = [tools] if isinstance(tools, str) else list(tools) if isinstance(tools, list | tuple) else [tools]
    specs = [item for item in items if isinstance(item, str)]
    for spec in specs:
        load_python_tools(registry, spec)
    objects = [item for item in items if not isinstance(item, str)]
    if objects:
        register_value(registry, objects if isinstance(tools, list | tuple) else objects[0], repr(tools))
    return specs


def _settings(
    script: Any, specs: list[str], tools: Any, assemblies: Sequence[str | Path], approve: Any,
    context: RequestContext, max_parallelism: int,
) -> RunSettings | None:
    """The ``turn/start`` note ``tether-clr run`` records, when everything it names could be loaded again
    (a script file, ``--tools`` specs only, a named ``--approve`` mode): then ``tether-clr approve``
    can continue a replayed session that parked a call. Otherwise None: nothing to record."""
    only_specs = isinstance(tools, str) or (isinstance(tools, list | tuple) and len(specs) == len(tools))
    if not isinstance(script, str | Path) or not only_specs or not isinstance(approve, str):
        return None
    return RunSettings.of(script, specs, assemblies, context, approve, max_parallelism)

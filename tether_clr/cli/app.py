"""The ``tether-clr`` command line (click): ``run``, ``approve``, ``log show``, ``log verify``, ``log repair``,
``mcp serve``, ``mcp config``, ``parity``.

Exit codes of ``run`` and ``approve``: 0 when the script ran to its end,
whatever the tools' outcomes (a failed call is an outcome, recorded and shown);
3 when a call was parked for an approval decision (``--approve prompt`` with no
terminal: the command that decides it is printed); 1 on an infrastructure
fault (the session store, a result policy, a .NET runtime that cannot load);
2 on bad usage (a missing or malformed script, a ``--tools`` value that cannot
be imported or registered, an unknown option, a call that is not parked).

``parity`` exits 0 when every difference from Microsoft.Extensions.AI's own
invoker is deliberate (or accepted with ``--expect``), 1 on an unexpected
difference or an infrastructure fault, 2 on bad usage (no such assembly, a
malformed calls.json). Its calls file is either parity calls (``call_id``) or a
``run`` script (rows with ``kind``: its tool rows are the calls, text rows are ignored).
"""

from __future__ import annotations

import functools
import getpass
import shlex
import sys
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import anyio
import click
from rich.console import Console

from tether_clr.cli.approval import APPROVE_MODES, approver_for
from tether_clr.cli.control import CONTROL_HELP, catalog, is_postgres_dsn, opened, opened_control, shown
from tether_clr.cli.exiting import exit_now
from tether_clr.cli.loading import ToolSpecError, load_assembly_tools, load_python_tools, resolve_attribute
from tether_clr.cli.logview import event_json, events_table
from tether_clr.cli.mcp_config import config_command
from tether_clr.cli.parity import parity_table
from tether_clr.cli.runner import RunResult, RunSettings, continue_script, run_script
from tether_clr.records.script import Script, ScriptError, load_script
from tether_clr.cli.serving import serve_http, serve_stdio
from tether_clr.clr.parity import ParityCallsError, load_parity_calls, run_parity
from tether_clr.foundations.text import describe_exception
from tether_clr.recording.session.events import TURN_START, SessionEvent, SessionLeasedError
from tether_clr.recording.session.grant_checks import stored_grant_events
from tether_clr.recording.session.steps import read_steps
from tether_clr.recording.session.sql_store import SqlSessionStore
from tether_clr.recording.session.verify import log_violations
from tether_clr.records.context import RequestContext
from tether_clr.records.decisions import ApprovalResult
from tether_clr.registry import ToolRegistry

__all__ = ["EXIT_FAULT", "EXIT_OK", "EXIT_PARKED", "EXIT_USAGE", "cli", "main", "open_store"]

EXIT_OK, EXIT_FAULT, EXIT_USAGE, EXIT_PARKED = 0, 1, 2, 3

_T = TypeVar("_T")

_DB_HELP = "the session log: a SQLite file path, or a PostgreSQL DSN (postgresql://... or 'host=... dbname=...')"

def open_store(db: str) -> SqlSessionStore:
    """The session store ``--db`` names: PostgreSQL for a ``postgresql://`` / ``postgres://`` URL or a
    libpq ``key=value`` string, else a SQLite file."""
    if is_postgres_dsn(db):
        from tether_clr.recording.session.postgres import PostgresSessionStore

        return PostgresSessionStore(db)
    from tether_clr.recording.session.sqlite import SqliteSessionStore

    return SqliteSessionStore(db)


def _console(stderr: bool = False) -> Console:
    """Rich output; off a terminal (pipes, CI, tests) a wide fixed width, so tables never wrap a status."""
    console = Console(stderr=stderr, highlight=False)
    if not console.is_terminal:
        console = Console(stderr=stderr, highlight=False, width=160)
    return console


def _fault(message: str) -> NoReturn:
    _console(stderr=True).print(f"[bold red]error:[/bold red] {message}")
    sys.exit(EXIT_FAULT)


def _store(db: str) -> AbstractContextManager[SqlSessionStore]:
    """The opened session store, closed on exit; failing to open it is an infrastructure fault (exit 1)."""
    return opened(open_store, "session log", db)


def _run_async(function: Callable[..., Any], *args: Any, backend: str = "asyncio") -> Any:
    """Run ``function(*args)`` under anyio; any exception is an infrastructure fault (exit 1)."""
    try:
        return anyio.run(function, *args, backend=backend)
    except Exception as exc:
        _fault(describe_exception(exc))


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def cli() -> None:
    """tether-clr: run an agent's tool steps through the governed, fail-closed pipeline, with a durable session log."""


def _registry(tool_specs: tuple[str, ...], assemblies: tuple[str, ...]) -> tuple[ToolRegistry, list[str]]:
    """A registry with the Python and .NET tools named; bad specs are bad usage (exit 2), a .NET fault exit 1."""
    registry = ToolRegistry()
    try:
        names = [name for spec in tool_specs for name in load_python_tools(registry, spec)]
        for path in assemblies:
            try:
                names += load_assembly_tools(registry, path)
            except ToolSpecError:
                raise
            except Exception as exc:
                _fault(f"cannot host the .NET tools of {path!r}: {describe_exception(exc)}")
    except ToolSpecError as exc:
        raise click.UsageError(str(exc)) from exc
    return registry, names


def _finish(result: RunResult, db: str, console: Console) -> None:
    """Say how the run ended; exit 3 (printing the command that decides it) when a call is parked."""
    outcomes = [outcome for step in result.steps for outcome in step]
    failed = sum(outcome.failure is not None for outcome in outcomes)
    summary = f"{len(outcomes)} call(s), {len(outcomes) - failed} ok, {failed} failed"
    if result.suspended is None:
        console.print(f"done: {summary}; the log: tether-clr log show {result.session_id} --db {shlex.quote(db)}")
        return
    console.print(f"suspended at turn {result.suspended.turn}, step {result.suspended.step} after {summary}")
    for pending in result.suspended.batch.pending:
        reason = f": {pending.reason}" if pending.reason else ""
        console.print(f"parked: call {pending.call_id} ({pending.name}) awaits a decision{reason}", markup=False)
        command = f"tether-clr approve {shlex.quote(result.session_id)} {shlex.quote(pending.call_id)} --yes --db {shlex.quote(db)}"
        console.print(f"decide it with: {command}   (or --no to reject)", markup=False)
    sys.exit(EXIT_PARKED)


@cli.command()
@click.argument("script", type=click.Path(dir_okay=False))
@click.option("--tools", "tool_specs", multiple=True, metavar="package.module:attr",
              help="Python tools: a list of tools or callables, a tool, or a function taking the registry (repeatable).")
@click.option("--assembly", "assemblies", multiple=True, metavar="Tools.dll",
              help="a .NET assembly whose functions become tools; its folder resolves its dependencies (repeatable).")
@click.option("--db", required=True, help=_DB_HELP)
@click.option("--approve", type=click.Choice(APPROVE_MODES), default="prompt", show_default=True,
              help="who answers a tool's approval request: auto approves, deny rejects, prompt asks on the terminal "
                   "(with no terminal: parks the call and exits 3; `tether-clr approve` decides it).")
@click.option("--session", "session_id", help="the session to log into (default: a new one); a later run continues it.")
@click.option("--tenant", default="local", show_default=True, help="the request context's tenant.")
@click.option("--principal", default=None, help="the request context's principal (default: the current user).")
@click.option("--scope", "scopes", multiple=True, help="a scope the principal holds (repeatable).")
@click.option("--max-parallelism", default=4, show_default=True, type=click.IntRange(min=1))
@click.option("--backend", type=click.Choice(["asyncio", "trio"]), default="asyncio", show_default=True)
def run(
    script: str,
    tool_specs: tuple[str, ...],
    assemblies: tuple[str, ...],
    db: str,
    approve: str,
    session_id: str | None,
    tenant: str,
    principal: str | None,
    scopes: tuple[str, ...],
    max_parallelism: int,
    backend: str,
) -> None:
    """Run SCRIPT, a scripted model (a JSON list of tool and text rows), step by step through the pipeline.

    Each step assembles the catalog for the request context, runs as one batch
    with the session log's sink, and shows each call's status and timing live.
    Exit 0 when the script ran to its end, 3 when a call was parked for approval,
    1 on an infrastructure fault, 2 on bad usage.
    """
    try:
        parsed = load_script(script)
    except ScriptError as exc:
        raise click.UsageError(str(exc)) from exc
    console = _console()
    registry, names = _registry(tool_specs, assemblies)
    try:
        context = RequestContext(tenant, principal or _user(), frozenset(scopes))
    except (TypeError, ValueError) as exc:
        raise click.UsageError(str(exc)) from exc
    registry.approval = approver_for(approve, console, interactive=sys.stdin.isatty())  # type: ignore[arg-type]
    session = session_id or f"run-{uuid.uuid4().hex[:12]}"
    settings = RunSettings.of(script, tool_specs, assemblies, context, approve, max_parallelism)
    console.print(f"session [bold]{session}[/bold] in {shown(db)}: {len(parsed.turns)} turn(s), {parsed.call_count} call(s); "
                  f"tools: {', '.join(sorted(set(names))) or 'none'}; approvals: {approve}")
    with _store(db) as store:
        if session_id is not None and read_steps(_run_async(store.events, session, backend=backend)).suspended():
            raise click.UsageError(f"session {session!r} has a step waiting for an approval decision: use tether-clr approve")
        steps = functools.partial(run_script, max_parallelism=max_parallelism, settings=settings)
        result = _run_async(steps, parsed, registry, store, session, context, console, backend=backend)
    _finish(result, db, console)


@cli.command()
@click.argument("session_id", metavar="SESSION")
@click.argument("call_id")
@click.option("--yes/--no", "approved", default=None, help="approve the parked call, or reject it (one is required).")
@click.option("--db", required=True, help=_DB_HELP)
@click.option("--approve", "approve_mode", type=click.Choice(APPROVE_MODES), default=None,
              help="who answers later approval requests (default: as the run was started).")
@click.option("--backend", type=click.Choice(["asyncio", "trio"]), default="asyncio", show_default=True)
def approve(session_id: str, call_id: str, approved: bool | None, db: str, approve_mode: str | None, backend: str) -> None:
    """Decide CALL_ID, parked by `tether-clr run` in SESSION, then continue the run's script.

    The step resumes from the session log (the parked call runs only if approved,
    and still faces the guards and re-authorization; the calls after it run as in
    an uninterrupted run), then the rest of the script runs with the settings the
    run recorded (its script, tools, assemblies and request context). Exit codes
    as for run.
    """
    if approved is None:
        raise click.UsageError("say --yes to approve the call or --no to reject it")
    console = _console()
    with _store(db) as store:
        events = _run_async(store.events, session_id, backend=backend)
        suspended = read_steps(events).suspended()
        if not suspended:
            raise click.UsageError(f"session {session_id!r} has no call waiting for a decision in {db}")
        step = suspended[0]
        parked = {step.decided[p].call_id: p for p in step.parked}
        if call_id not in parked:
            raise click.UsageError(f"call {call_id!r} is not parked in session {session_id!r} (parked: {', '.join(map(str, parked))})")
        settings, script_turn = _recorded_settings(events, step.turn, session_id)
        script = _recorded_script(settings, script_turn, step.step, step.proposed)
        with _cwd_importable(settings.cwd):
            registry, _ = _registry(settings.tools, settings.assemblies)
        mode = approve_mode or settings.approve
        registry.approval = approver_for(mode, console, interactive=sys.stdin.isatty())  # type: ignore[arg-type]
        decision = ApprovalResult.APPROVED if approved else ApprovalResult.REJECTED
        console.print(f"session [bold]{session_id}[/bold]: call {call_id} {decision.value}; "
                      f"resuming turn {step.turn}, step {step.step}; later approvals: {mode}")
        resume = functools.partial(
            continue_script, suspended_at=(step.turn, step.step, script_turn), decisions={call_id: decision},
        )
        result = _run_async(resume, script, registry, store, session_id, settings, console, backend=backend)
    _finish(result, db, console)


def _recorded_settings(events: list[SessionEvent], turn: int, session_id: str) -> tuple[RunSettings, int]:
    for event in events:
        if event.kind == TURN_START and event.turn == turn and isinstance(event.payload, dict):
            found = RunSettings.from_note(event.payload)
            if found is not None:
                return found
    raise click.UsageError(
        f"turn {turn} of session {session_id!r} was not started by tether-clr run: resume it with ToolRegistry.resume"
    )


def _recorded_script(settings: RunSettings, script_turn: int, step: int, proposal: list[dict[str, Any]]) -> Script:
    """The run's script, checked against the log: the suspended step must be the script's step, call for call."""
    try:
        script = load_script(settings.script)
    except ScriptError as exc:
        raise click.UsageError(f"the run's script cannot be read any more: {exc}") from exc
    try:
        calls = script.turns[script_turn].steps[step - 1]
    except IndexError:
        calls = ()
    recorded = [(c.get("call_id"), c.get("name"), c.get("arguments")) for c in proposal]
    if recorded != [(c.call_id, c.name, c.arguments) for c in calls]:
        raise click.UsageError(f"the script {settings.script!r} changed since the run: its step no longer matches the log")
    return script


@contextmanager
def _cwd_importable(cwd: str) -> Iterator[None]:
    """Import the run's ``--tools`` modules from the folder the run was started in."""
    added = cwd not in sys.path
    if added:
        sys.path.insert(0, cwd)
    try:
        yield
    finally:
        if added and cwd in sys.path:
            sys.path.remove(cwd)


def _user() -> str:
    try:
        return getpass.getuser() or "local-user"
    except Exception:  # no user name in this environment
        return "local-user"


@cli.group()
def log() -> None:
    """Read, check and repair the session log."""


@log.command("show")
@click.argument("session_id", metavar="SESSION")
@click.option("--db", required=True, help=_DB_HELP)
@click.option("--json", "as_json", is_flag=True, help="one JSON object per event instead of a table.")
def log_show(session_id: str, db: str, as_json: bool) -> None:
    """Render SESSION's event log readably."""
    with _store(db) as store:
        events = _run_async(store.events, session_id)
    if not events:
        raise click.UsageError(f"session {session_id!r} has no events in {db}")
    if as_json:
        for event in events:
            click.echo(event_json(event))
        return
    _console().print(events_table(session_id, events))


@log.command("verify")
@click.option("--db", required=True, help=_DB_HELP)
@click.option("--open-ok", is_flag=True,
              help="tolerate steps and turns still open: for a session a live writer is writing now (a serving "
                   "replica's). Not a clean bill for a crashed session: its open turn is what `log repair` closes.")
@click.argument("session_ids", metavar="[SESSION]...", nargs=-1)
def log_verify(db: str, open_ok: bool, session_ids: tuple[str, ...]) -> None:
    """Check the log's invariants on every session (or the SESSIONs named); exit 1 on any violation.

    Each tool/call has exactly one tool/result and no result lacks its call,
    results follow the model's order, no body runs after a refusal, steps and
    turns are closed (unless --open-ok), decisions taken from a grant name a
    live grant that precedes them (in any session).
    """
    console = _console()
    with _store(db) as store:
        sessions = list(session_ids) or _run_async(store.sessions)
        lent = _run_async(stored_grant_events, store)
        found = 0
        for session in sessions:
            events = _run_async(store.events, session)
            others = [event for event in lent if event.session_id != session]
            problems = log_violations(events, open_ok=open_ok, grant_events=others) if events else ["no events"]
            found += len(problems)
            mark = "[green]ok[/green]" if not problems else f"[red]{len(problems)} violation(s)[/red]"
            console.print(f"session {session}: {mark} ({len(events)} events)")
            for problem in problems:
                console.print(f"  - {problem}", markup=False)
    console.print(f"{len(sessions)} session(s) checked, {found} violation(s)")
    if found:
        sys.exit(EXIT_FAULT)


async def _nothing() -> None:
    """Nothing to do."""


async def _leased_as_value(function: Callable[..., Any], *args: Any) -> Any:
    """``await function(*args)``, a SessionLeasedError returned rather than raised (the caller says what it means)."""
    try:
        return await function(*args)
    except SessionLeasedError as exc:
        return exc


@log.command("repair")
@click.argument("session_id", metavar="SESSION")
@click.option("--db", required=True, help=_DB_HELP)
def log_repair(session_id: str, db: str) -> None:
    """Close what a crash left open in SESSION (idempotent; refused while a live writer holds it).

    A declared call without a result gets ABORTED (reason interrupted: its body
    may have run); a proposed call never declared gets ABORTED_BEFORE_DISPATCH;
    open steps and turns are closed.
    """
    with _store(db) as store:
        appended = _run_async(_leased_as_value, store.repair, session_id)
        if isinstance(appended, SessionLeasedError):
            exc = appended
            _fault(f"{exc}: a replica is serving it (or a crashed writer's lease has not run out yet); "
                   f"nothing was changed. Stop the replica, or wait {store.lease_seconds:g} s after a crash, and repair again")
    click.echo(f"session {session_id}: {appended} event(s) appended" + ("" if appended else " (nothing was open)"))


@cli.group()
def mcp() -> None:
    """Serve tools over the Model Context Protocol (needs tether_clr[mcp])."""


@mcp.command("serve")
@click.option("--tools", "tool_specs", multiple=True, metavar="package.module:attr",
              help="Python tools: a list of tools or callables, a tool, or a function taking the registry (repeatable).")
@click.option("--assembly", "assemblies", multiple=True, metavar="Tools.dll",
              help="a .NET assembly whose functions become tools; its folder resolves its dependencies (repeatable).")
@click.option("--transport", type=click.Choice(["stdio", "http"]), default="stdio", show_default=True,
              help="stdio (for a client that launches this process) or streamable HTTP.")
@click.option("--host", default="127.0.0.1", show_default=True, help="http: the address to listen on.")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535),
              help="http: the port to listen on (0: one the system picks; the URL is printed on stderr).")
@click.option("--path", "http_path", default="/mcp", show_default=True, help="http: the endpoint's path.")
@click.option("--tenant", default=None, envvar="TETHER_TENANT", show_envvar=True,
              help="a fixed identity: the tenant of every request (with --principal).")
@click.option("--principal", default=None, envvar="TETHER_PRINCIPAL", show_envvar=True,
              help="a fixed identity: the principal of every request (with --tenant).")
@click.option("--scope", "scopes", multiple=True, envvar="TETHER_SCOPES", show_envvar=True,
              help="a fixed identity: a scope the principal holds (repeatable; the variable: space-separated).")
@click.option("--context", "context_spec", default=None, metavar="package.module:attr",
              help="instead of a fixed identity: context_for(request) -> RequestContext | None (sync or async).")
@click.option("--db", default=None,
              help=_DB_HELP + "; records every call: each MCP session its own log session, each call a turn of it.")
@click.option("--session", "session_id", default=None,
              help="--db: stdio: the one log session every call is recorded in (default: mcp-<random>); "
                   "http: the prefix of the log sessions, <prefix>-<Mcp-Session-Id> (default: mcp).")
@click.option("--page-size", default=50, show_default=True, type=click.IntRange(min=1), help="tools per tools/list page.")
@click.option("--grace", default=10.0, show_default=True, type=click.FloatRange(min=0),
              help="on SIGTERM/SIGINT: seconds calls in flight may take to finish before they are cancelled (shutdown).")
@click.option("--session-idle-timeout", default=300.0, show_default=True, type=click.FloatRange(min=0, min_open=True),
              help="http: close an MCP session no request has been in flight on for this many seconds.")
@click.option("--max-sessions", default=1000, show_default=True, type=click.IntRange(min=1),
              help="http: MCP sessions open at once; a new one past it is refused (HTTP 503), the others keep working.")
@click.option("--control", "control_db", default=None,
              help=CONTROL_HELP + "; the registry follows it (registry.attach_control) before serving.")
@click.option("--max-staleness", default=1.0, show_default=True, type=click.FloatRange(min=0, min_open=True),
              help="--control: a call whose host view of the control plane is older ends UNAVAILABLE (control_stale).")
def mcp_serve(
    tool_specs: tuple[str, ...],
    assemblies: tuple[str, ...],
    transport: str,
    host: str,
    port: int,
    http_path: str,
    tenant: str | None,
    principal: str | None,
    scopes: tuple[str, ...],
    context_spec: str | None,
    db: str | None,
    session_id: str | None,
    page_size: int,
    grace: float,
    session_idle_timeout: float,
    max_sessions: int,
    control_db: str | None,
    max_staleness: float,
) -> None:
    """Serve the Python and .NET tools named over MCP, each request through the governed pipeline.

    Who is asking comes from the host, never from a client's arguments: a fixed
    identity (--tenant, --principal, --scope, or TETHER_TENANT, TETHER_PRINCIPAL,
    TETHER_SCOPES in the environment) for every request, or --context
    naming a context_for callable given each McpRequest. Messages go to stderr
    (stdout is the stdio transport's). Stops when the client closes stdin
    (stdio), or on SIGINT/SIGTERM: no new call starts, calls in flight get
    --grace seconds to finish, then are cancelled (reason shutdown); all are
    recorded. Exit 0 when stopped, 1 on an infrastructure fault (or a --session
    a live replica holds), 2 on bad usage.
    """
    context_for = _identity(tenant, principal, scopes, context_spec)
    if not http_path.startswith("/"):
        raise click.UsageError(f"--path must start with '/', got {http_path!r}")
    try:
        from tether_clr.mcp import create_server
    except ImportError as exc:
        _fault(f"the MCP server needs the mcp extra (pip install 'tether_clr[mcp]'): {describe_exception(exc)}")
    registry, names = _registry(tool_specs, assemblies)
    err = _console(stderr=True)
    with ExitStack() as stack:
        sessions = None
        if db is not None:
            store = stack.enter_context(_store(db))
            sessions = _log_sessions(store, db, transport, session_id, err)
            stack.callback(_run_async, sessions.stop)
        elif session_id is not None:
            raise click.UsageError("--session needs --db")
        if control_db is not None:
            _attach(stack, registry, control_db, max_staleness, err)
        server = create_server(
            registry, context_for=context_for, page_size=page_size, sink_for=None if sessions is None else sessions.sink_for
        )
        stack.callback(server.close)
        tools = ", ".join(sorted(set(names))) or "none"
        if transport == "stdio":
            err.print(f"serving MCP over stdio; tools: {tools}", markup=False)
            serve_stdio(server, grace, err, _run_async, _nothing if sessions is None else sessions.stop)
        else:
            app = functools.partial(
                server.streamable_http_app, path=http_path, session_idle_timeout=session_idle_timeout,
                max_sessions=max_sessions,
            )
            serve_http(app, server.drain, grace, host, port, http_path, tools, err, _fault)
    # Stopped, and all that is durable closed above (calls drained and recorded, leases freed, stores closed):
    # end now, not through the interpreter's teardown and the .NET runtime's shutdown, which takes seconds
    # (cli/exiting.py).
    exit_now(EXIT_OK)


def _log_sessions(store: SqlSessionStore, db: str, transport: str, session_id: str | None, err: Console) -> Any:
    """The LogSessions of ``--db``, started: what a crash left open repaired (said on stderr); exit 1 when
    the fixed session is held by a live writer."""
    from tether_clr.cli.serve import LogSessions

    def notify(message: str) -> None:
        err.print(message, markup=False)

    if transport == "stdio":
        fixed = session_id or f"mcp-{uuid.uuid4().hex[:12]}"
        sessions = LogSessions(store, fixed=fixed, notify=notify)
        where = f"session {fixed}"
    else:
        prefix = session_id or "mcp"
        sessions = LogSessions(store, prefix=prefix, notify=notify)
        where = f"a session per MCP session, {prefix}-<session id>,"
    started = _run_async(_leased_as_value, sessions.start)
    if isinstance(started, SessionLeasedError):
        _fault(f"{started}: another replica is serving it (a crashed one's lease runs out within "
               f"{store.lease_seconds:g} s)")  # fmt: skip
    err.print(f"recording every call in {where} of {shown(db)}", markup=False)
    return sessions


def _attach(stack: ExitStack, registry: ToolRegistry, control_db: str, max_staleness: float, err: Console) -> None:
    """Attach ``registry`` to the control store (detached and closed when ``stack`` closes); exit 1 if it cannot load."""
    control = stack.enter_context(opened_control(control_db))
    try:
        attachment = registry.attach_control(control, max_staleness=max_staleness)
    except Exception as exc:
        _fault(f"cannot follow the control store {shown(control_db)!r}: {describe_exception(exc)}")
    stack.callback(attachment.dispose)
    err.print(f"following the catalog control plane in {shown(control_db)} at revision {attachment.revision} "
              f"(max staleness {max_staleness:g}s)", markup=False)  # fmt: skip


def _identity(
    tenant: str | None, principal: str | None, scopes: tuple[str, ...], context_spec: str | None
) -> Callable[..., Any]:
    """The server's context_for: the fixed identity, or the callable --context names; bad usage otherwise."""
    fixed = tenant is not None or principal is not None or bool(scopes)
    if context_spec is not None:
        if fixed:
            raise click.UsageError("give either --context or a fixed identity (--tenant, --principal, --scope), not both")
        try:
            found = resolve_attribute(context_spec, "--context")
        except ToolSpecError as exc:
            raise click.UsageError(str(exc)) from exc
        if not callable(found):
            raise click.UsageError(f"--context {context_spec!r} is a {type(found).__name__}, not a callable")
        return found  # type: ignore[no-any-return]
    if tenant is None or principal is None:
        raise click.UsageError(
            "say who is asking: --tenant and --principal (a fixed identity for every request), "
            "or --context package.module:attr (a context_for callable)"
        )
    from tether_clr.cli.serve import fixed_context

    try:
        return fixed_context(RequestContext(tenant, principal, frozenset(scopes)))
    except (TypeError, ValueError) as exc:
        raise click.UsageError(str(exc)) from exc


@cli.command()
@click.argument("assembly", metavar="Tools.dll", type=click.Path(dir_okay=False))
@click.argument("calls_path", metavar="calls.json", type=click.Path(dir_okay=False))
@click.option("--meai-dir", default=None, metavar="DIR",
              help="the Microsoft.Extensions.AI assemblies to run FunctionInvokingChatClient from (default: $TETHER_MEAI_DIR).")
@click.option("--expect", "expected", multiple=True, metavar="CALL_ID",
              help="accept this call's difference (repeatable); exit 1 if it does not differ.")
@click.option("--backend", type=click.Choice(["asyncio", "trio"]), default="asyncio", show_default=True)
def parity(assembly: str, calls_path: str, meai_dir: str | None, expected: tuple[str, ...], backend: str) -> None:
    """Run calls.json through Microsoft.Extensions.AI's FunctionInvokingChatClient and through tether_clr with the
    assembly's functions; print the comparison (docs/csharp-tools.md (Parity)). Exit 1 on an unexpected difference.

    calls.json is a list of parity calls ({call_id, name, arguments, cancelled?}) or a `tether-clr run` script
    (rows with "kind"): the script's tool rows are the calls, its text rows are ignored."""
    if not Path(assembly).is_file():
        raise click.UsageError(f"no assembly at {assembly!r}")
    try:
        calls = load_parity_calls(calls_path)
    except ParityCallsError as exc:
        raise click.UsageError(str(exc)) from exc
    report = _run_async(functools.partial(run_parity, Path(assembly), calls, meai_dir=meai_dir), backend=backend).accepting(expected)
    console = _console()
    title = f"parity: {Path(assembly).name}, {len(calls)} call(s)" + (f" on {report.runtime}" if report.runtime else "")
    console.print(parity_table(report, title))
    for line in report.notes():
        console.print(line, markup=False)
    if not report.ok:
        sys.exit(EXIT_FAULT)


cli.add_command(catalog)
mcp.add_command(config_command(mcp_serve))


def main(argv: list[str] | None = None) -> None:
    """The console script ``tether-clr`` (and ``python -m tether_clr.cli``)."""
    cli.main(args=argv, prog_name="tether-clr")

"""``tether-clr catalog ...``: the shared catalog control plane from the command line.

``show`` prints what every attached host follows (statuses, pins, metadata
changes, kill switches, the control revision, and who changed each, when and
why); ``disable`` / ``enable`` / ``deprecate`` / ``pin`` / ``unpin`` / ``kill`` /
``unkill`` commit one :class:`~tether_clr.ControlChange` each, recorded with
``--actor NAME`` (default: the OS user; an actor
:func:`~tether_clr.catalog.control.check_actor` refuses is bad usage) and
``--reason``, and print what changed and
the new revision. Every attached registry applies it within its ``max_staleness``.

``--db`` (and ``mcp serve``/``run``'s ``--control``) names the store the way
the session log's ``--db`` does: a ``postgresql://`` URL or a libpq
``key=value`` string is a :class:`~tether_clr.PostgresCatalogControl`, anything
else a :class:`~tether_clr.SqliteCatalogControl` file.

Exit codes: 0 when the change committed or changed nothing (said so); 1 when
the store cannot be opened or the commit fails (an unreachable server); 2 on
bad usage, including a change the store refuses to follow from what it holds
(an unpin with no such pin, a status move the lifecycle forbids).
"""

from __future__ import annotations

import datetime
import getpass
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any, NoReturn, TypeVar

import click

from tether_clr.catalog.control import MAX_ACTOR_LENGTH, ControlChange, check_actor, recordable_actor
from tether_clr.catalog.control_state import ControlState
from tether_clr.catalog.kill_switches import KillSwitch, VersionRange
from tether_clr.catalog.lifecycle import ToolStatus
from tether_clr.control.sql import SqlCatalogControl
from tether_clr.foundations.json_values import canonical_json
from tether_clr.foundations.text import describe_exception

__all__ = ["CONTROL_HELP", "catalog", "is_postgres_dsn", "open_control"]

CONTROL_HELP = "the catalog control store: a SQLite file path, or a PostgreSQL DSN (postgresql://... or 'host=... dbname=...')"

# A libpq key=value connection string ("host=/var/run/postgresql dbname=app"), not a file name.
_CONNINFO = re.compile(r"^\s*[A-Za-z_]+\s*=")


def is_postgres_dsn(db: str) -> bool:
    """Whether ``--db`` names PostgreSQL: a ``postgresql://`` / ``postgres://`` URL or a libpq ``key=value`` string."""
    return db.startswith(("postgresql://", "postgres://")) or _CONNINFO.match(db) is not None


def open_control(db: str) -> SqlCatalogControl:
    """The control store ``db`` names (PostgreSQL for a DSN, else a SQLite file), its schema created on first use."""
    if is_postgres_dsn(db):
        from tether_clr.control.postgres import PostgresCatalogControl

        return PostgresCatalogControl(db)
    from tether_clr.control.sqlite import SqliteCatalogControl

    return SqliteCatalogControl(db)


def _fault(message: str) -> NoReturn:
    click.echo(f"error: {message}", err=True)
    sys.exit(1)


_S = TypeVar("_S", bound=AbstractContextManager[Any])


_URL_PASSWORD = re.compile(r"(://[^:/@?#\s]*:)[^@/?#\s]*@")
_KEY_PASSWORD = re.compile(r"((?:^|[\s?&])password\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&]*)", re.IGNORECASE)


def shown(db: str) -> str:
    """``db`` (a file path, a DSN or a URL) as the command may print it: any password replaced by ``***``."""
    return _KEY_PASSWORD.sub(r"\1***", _URL_PASSWORD.sub(r"\1***@", db))


@contextmanager
def opened(open_store: Callable[[str], _S], what: str, db: str) -> Iterator[_S]:
    """``open_store(db)``, closed on exit; failing to open it is an infrastructure fault (exit 1, a message naming
    ``what`` and ``db``, never a traceback). The session log's ``--db`` and the control store's share it."""
    try:
        store = open_store(db)
    except Exception as exc:
        _fault(f"cannot open the {what} {shown(db)!r}: {describe_exception(exc)}")
    with store:
        yield store


def opened_control(db: str) -> AbstractContextManager[SqlCatalogControl]:
    """The control store ``db`` names, opened (exit 1 if it cannot be), closed on exit."""
    return opened(open_control, "control store", db)


def _commit(db: str, change: ControlChange) -> None:
    """Commit ``change`` and say what changed and the new revision; a refused change is bad usage (exit 2)."""
    with opened_control(db) as control:
        try:
            committed = control.commit(change)
        except ValueError as exc:
            raise click.UsageError(f"the control store refuses this change: {exc}") from exc
        except Exception as exc:
            _fault(f"cannot commit to the control store {shown(db)!r}: {describe_exception(exc)}")
        if committed is None:
            known = control.changes()
            revision = known[-1].revision if known else 0
            click.echo(f"nothing changed: {change.describe()} already holds (revision {revision})")
            return
    click.echo(f"{committed.describe()} (by {committed.actor}{_why(committed)})")
    click.echo(f"control revision {committed.revision}")


def _why(change: ControlChange) -> str:
    return f": {change.reason}" if change.reason else ""


def _when(change: ControlChange) -> str:
    if change.at is None:
        return "-"
    return datetime.datetime.fromtimestamp(change.at, datetime.UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def _stamp(change: ControlChange) -> str:
    return f"r{change.revision} {_when(change)} by {change.actor}{_why(change)}"


_F = TypeVar("_F", bound=Callable[..., Any])

_db_option = click.option("--db", required=True, help=CONTROL_HELP)
_actor_option = click.option(
    "--actor", default=None, metavar="NAME",
    help=f"who makes the change, recorded and shown (default: the OS user); one line, at most {MAX_ACTOR_LENGTH} characters.",
)  # fmt: skip


def _reason_option(required: bool = False) -> Callable[[_F], _F]:
    return click.option("--reason", default=None if required else "", required=required, help="why (recorded and audited).")


def _actor(actor: str | None) -> str:
    """``--actor`` checked (bad usage when refused), or the OS user made a valid actor."""
    if actor is not None:
        try:
            return check_actor(actor)
        except ValueError as exc:
            raise click.UsageError(f"--actor: {exc}") from exc
    try:
        return recordable_actor(getpass.getuser())
    except Exception:  # no user name in the environment: still an honest record
        return "unknown"


@click.group("catalog")
def catalog() -> None:
    """The catalog control plane every attached host follows: show it, or change it (one audited row each)."""


@catalog.command("show")
@_db_option
def catalog_show(db: str) -> None:
    """The shared state: statuses, pins, metadata changes, kill switches and the control revision."""
    with opened_control(db) as control:
        try:
            state = ControlState.folded(control.changes())
        except Exception as exc:
            _fault(f"cannot read the control store {shown(db)!r}: {describe_exception(exc)}")
    latest = state.latest
    click.echo(f"control revision {state.revision}")
    click.echo("statuses:" if state.statuses else "statuses: none")
    for (name, version), status in sorted(state.statuses.items()):
        click.echo(f"  {name} {version}: {status.value}  [{_stamp(latest[ControlChange.status(name, version, status, actor='-').subject])}]")
    click.echo("pins:" if state.pins else "pins: none")
    for key, pin in sorted(state.pins.items(), key=lambda item: canonical_json(list(item[0]))):
        change = ControlChange.pin(pin.logical_name, pin.version, key[1], key[2], actor="-")
        who = ", ".join(f"{k}={v}" for k, v in (("tenant", key[1]), ("agent_version", key[2])) if v is not None) or "everyone"
        click.echo(f"  {pin.logical_name} -> {pin.version} for {who}  [{_stamp(latest[change.subject])}]")
    click.echo("metadata:" if state.metadata else "metadata: none")
    for (name, version), fields in sorted(state.metadata.items()):
        change = ControlChange.metadata(name, version, fields, actor="-")
        click.echo(f"  {name} {version}: {canonical_json(fields)}  [{_stamp(latest[change.subject])}]")
    click.echo("kill switches:" if state.switches else "kill switches: none")
    for switch_id, switch in sorted(state.switches.items()):
        click.echo(f"  {switch_id}: {switch.describe()}  [{_stamp(latest[ControlChange.kill(switch, actor='-').subject])}]")


def _status_command(name: str, status: ToolStatus, summary: str) -> None:
    @catalog.command(name, help=summary)
    @click.argument("logical_name")
    @click.argument("version")
    @_db_option
    @_reason_option()
    @_actor_option
    def command(logical_name: str, version: str, db: str, reason: str, actor: str | None) -> None:
        _commit(db, ControlChange.status(logical_name, version, status, actor=_actor(actor), reason=reason))


_status_command("disable", ToolStatus.DISABLED, "Disable LOGICAL_NAME VERSION on every host: its calls are refused DENIED (tool_disabled).")
_status_command("enable", ToolStatus.ACTIVE, "Make LOGICAL_NAME VERSION active again on every host.")
_status_command("deprecate", ToolStatus.DEPRECATED, "Deprecate LOGICAL_NAME VERSION on every host (it still runs; new pins avoid it).")


@catalog.command("pin")
@click.argument("logical_name")
@click.argument("version")
@click.option("--tenant", default=None, help="pin for this tenant only.")
@click.option("--agent-version", default=None, help="pin for this agent version only.")
@_db_option
@_reason_option()
@_actor_option
def catalog_pin(
    logical_name: str, version: str, tenant: str | None, agent_version: str | None, db: str, reason: str, actor: str | None
) -> None:
    """Pin LOGICAL_NAME to VERSION (for a tenant, an agent version, both, or everyone)."""
    _commit(db, ControlChange.pin(logical_name, version, tenant, agent_version, actor=_actor(actor), reason=reason))


@catalog.command("unpin")
@click.argument("logical_name")
@click.option("--tenant", default=None, help="the pin's tenant.")
@click.option("--agent-version", default=None, help="the pin's agent version.")
@_db_option
@_reason_option()
@_actor_option
def catalog_unpin(logical_name: str, tenant: str | None, agent_version: str | None, db: str, reason: str, actor: str | None) -> None:
    """Lift the pin of LOGICAL_NAME for that tenant / agent version."""
    _commit(db, ControlChange.unpin(logical_name, tenant, agent_version, actor=_actor(actor), reason=reason))


@catalog.command("kill")
@click.option("--tool", "logical_name", default=None, help="the logical name it stops (default: every tool).")
@click.option("--versions", default=None, help="the version range it stops, e.g. '>=1.0.0,<1.2.0' (default: all).")
@click.option("--tenant", default=None, help="the tenant it stops (default: every tenant).")
@click.option("--principal", default=None, help="the principal it stops (default: every principal).")
@click.option("--id", "switch_id", default=None, help="the switch's id (default: a new one, printed).")
@_db_option
@_reason_option(required=True)
@_actor_option
def catalog_kill(
    logical_name: str | None, versions: str | None, tenant: str | None, principal: str | None, switch_id: str | None,
    db: str, reason: str, actor: str | None,
) -> None:  # fmt: skip
    """Set a kill switch: matching calls are refused DENIED (kill_switch) on every host."""
    named = {} if switch_id is None else {"switch_id": switch_id}
    try:
        version_range = None if versions is None else VersionRange(versions)
        switch = KillSwitch(reason, logical_name=logical_name, versions=version_range, tenant_id=tenant, principal_id=principal, **named)
    except (TypeError, ValueError) as exc:
        raise click.UsageError(f"not a kill switch: {exc}") from exc
    _commit(db, ControlChange.kill(switch, actor=_actor(actor)))


@catalog.command("unkill")
@click.argument("switch_id")
@_db_option
@_reason_option()
@_actor_option
def catalog_unkill(switch_id: str, db: str, reason: str, actor: str | None) -> None:
    """Lift the kill switch SWITCH_ID."""
    _commit(db, ControlChange.unkill(switch_id, actor=_actor(actor), reason=reason))

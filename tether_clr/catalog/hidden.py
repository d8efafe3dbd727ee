"""Why a model name is not in a caller's assembly: a disable, a kill switch, or nothing to say.

An MCP client that calls a tool it cannot see gets the same answer whether the
name exists nowhere or is hidden from it (``-32602``, one message): telling them
apart would leak what other tenants have. The *log*, though, should say what a
disable or a kill switch stopped (docs/operations: "how to read what a disable
stopped"). :func:`hidden_reason` answers that question for the server's own
record, and only for a version the caller could otherwise see: every other
assembly filter (tenant, scopes, context, flag, deny rule) admits it, so a
refusal is never attributed to a disable the caller would not have met anyway.

Floor 3 (the catalog): pure, over the candidates the store hands it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from tether_clr.catalog.assembly import (
    AssemblyRequest,
    VERSION_FILTERS,
    apply_filters,
    kill_switch_filter,
    query_filter,
    status_filter,
)
from tether_clr.catalog.candidates import DenyRule, ToolCandidate
from tether_clr.catalog.kill_switches import KillSwitch, matching_switch
from tether_clr.catalog.lifecycle import ToolStatus
from tether_clr.records.context import RequestContext

__all__ = ["HiddenReason", "hidden_reason"]

HiddenReason = Literal["tool_disabled", "kill_switch"]
"""The DENIED reasons a call to a hidden tool is recorded with (the re-authorization reasons of the same causes)."""

# Every step but the two whose effect is asked about (and the query, which a call never has).
_OTHER_FILTERS = tuple(step for step in VERSION_FILTERS if step not in (status_filter, kill_switch_filter, query_filter))


def hidden_reason(
    candidates: Iterable[ToolCandidate],
    name: str,
    context: RequestContext,
    scopes: frozenset[str],
    deny_rules: tuple[DenyRule, ...] = (),
    kill_switches: tuple[KillSwitch, ...] = (),
) -> HiddenReason | None:
    """``"tool_disabled"`` when a DISABLED version of model name ``name`` is otherwise visible to ``context``,
    else ``"kill_switch"`` when a callable one is and a kill switch matches it, else None (unknown to this caller)."""
    named = [candidate for candidate in candidates if candidate.model_name == name]
    if not named:
        return None
    request = AssemblyRequest(context, scopes, (), deny_rules, None, kill_switches)
    admitted, _ = apply_filters(named, request, _OTHER_FILTERS)
    if any(candidate.status is ToolStatus.DISABLED for candidate in admitted):
        return "tool_disabled"
    for candidate in admitted:
        if candidate.status.is_callable and matching_switch(kill_switches, candidate.logical_name, candidate.semver, context):
            return "kill_switch"
    return None

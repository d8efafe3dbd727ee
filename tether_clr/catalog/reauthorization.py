"""Re-authorization: the check repeated right before a body runs, against the live registry.

A snapshot proves only that a call was allowed when it was assembled, so this
runs for every call of a governed view; it is a handful of attribute reads and
a subset test.
"""

from __future__ import annotations

from collections.abc import Sequence

from tether_clr.catalog.candidates import DenyRule, ToolCandidate, deny_detail
from tether_clr.catalog.kill_switches import KillSwitch, matching_switch
from tether_clr.catalog.lifecycle import ToolStatus
from tether_clr.catalog.records import ReauthorizationReason, ToolBinding
from tether_clr.records.context import RequestContext

__all__ = ["reauthorize"]


def reauthorize(
    binding: ToolBinding,
    live: ToolCandidate | None,
    context: RequestContext,
    scopes: frozenset[str],
    deny_rules: Sequence[DenyRule] = (),
    kill_switches: Sequence[KillSwitch] = (),
) -> ReauthorizationReason | None:
    """The check right before a body runs: ``None`` lets it run, a reason refuses it (DENIED).

    ``live`` is the registry's current record of the bound version (``None``
    when it is gone); ``scopes`` are the principal's scopes now. In order:
    the bound (version, schema hash) still exists (else ``stale_binding``),
    the version is ACTIVE or DEPRECATED (``tool_retired`` for RETIRED,
    ``tool_disabled`` otherwise), the tenant is allowed (``tenant_denied``),
    the scopes are held (``scope_revoked``), no deny rule objects
    (``deny_rule``; a rule that raises objects), no kill switch matches
    (``kill_switch``; none given: nothing to check). A snapshot proves only that a
    call was allowed when it was assembled, so this runs for every call; it is
    a handful of attribute reads and a subset test.
    """
    if (
        live is None
        or live.schema_hash != binding.schema_hash
        or live.metadata.version != binding.version
        or live.logical_name != binding.logical_name
    ):
        return "stale_binding"
    status = live.status
    if status is not ToolStatus.ACTIVE and status is not ToolStatus.DEPRECATED:
        return "tool_retired" if status is ToolStatus.RETIRED else "tool_disabled"
    metadata = live.metadata
    tenants = metadata.tenants
    if tenants is not None and context.tenant_id not in tenants:
        return "tenant_denied"
    if not metadata.required_scopes <= scopes:
        return "scope_revoked"
    for rule in deny_rules:
        if deny_detail(rule, binding, metadata, context) is not None:
            return "deny_rule"
    if kill_switches and matching_switch(kill_switches, live.logical_name, live.semver, context) is not None:
        return "kill_switch"
    return None

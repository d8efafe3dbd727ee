"""The trusted identity of one request, and the rule that identity never comes from the model.

Floor 2 (records).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tether_clr.foundations.checks import optional_str, require_str, str_set

__all__ = ["IDENTITY_PARAMETERS", "RequestContext", "identity_parameters", "refuse_identity_parameters"]


@dataclass(frozen=True, slots=True)
class RequestContext:
    """Who is asking, on whose behalf, where: set by the host for one request.

    Never built from model arguments. ``tenant_id`` and ``principal_id`` are
    required and non-empty (an anonymous request has no catalog); ``scopes``
    are what the principal held when the request started (any iterable of
    strings, kept as a ``frozenset``; a live authority may narrow them later).
    ``request_id`` identifies the request in audit records but is not part of
    its identity: two requests with the same identity see the same catalog.
    ``session_id`` names the conversation the request belongs to, where the host
    knows one (a stateless request carries no session of its own); it is not part
    of the identity either. ``tether-clr mcp serve --db`` records a 2026-07-28
    request's call in that log session (docs/mcp.md (Recording calls)).
    """

    tenant_id: str
    principal_id: str
    scopes: frozenset[str] = frozenset()
    environment: str | None = None
    region: str | None = None
    agent_id: str | None = None
    agent_version: str | None = None
    request_id: str | None = None
    session_id: str | None = None

    def __post_init__(self) -> None:
        require_str(self.tenant_id, "tenant_id")
        require_str(self.principal_id, "principal_id")
        object.__setattr__(self, "scopes", str_set(self.scopes, "scopes"))
        for name in ("environment", "region", "agent_id", "agent_version", "request_id", "session_id"):
            optional_str(getattr(self, name), name)

    def identity(self) -> dict[str, Any]:
        """The fields a catalog digest covers: all but ``request_id`` and ``session_id``.

        Scopes are a sorted list, so the digest never depends on set order.
        """
        return {
            "tenant_id": self.tenant_id,
            "principal_id": self.principal_id,
            "scopes": sorted(self.scopes),
            "environment": self.environment,
            "region": self.region,
            "agent_id": self.agent_id,
            "agent_version": self.agent_version,
        }


IDENTITY_PARAMETERS: frozenset[str] = frozenset({"tenant_id", "principal_id", "user_id"})


def identity_parameters(schema: Mapping[str, Any]) -> tuple[str, ...]:
    """The top-level properties of a parameters schema named like identity, sorted."""
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return ()
    return tuple(sorted(name for name in properties if name in IDENTITY_PARAMETERS))


def refuse_identity_parameters(schema: Mapping[str, Any], *, allow: bool = False) -> None:
    """Raise ``ValueError`` when a tool would take identity from the model.

    A model can be talked into any value, so tenant, principal and user come
    from :class:`RequestContext`; a tool whose schema asks the model for them
    is refused unless the host says the field is a business field (``allow``).
    """
    found = identity_parameters(schema)
    if found and not allow:
        raise ValueError(
            f"the schema declares identity parameter(s) {list(found)}: identity comes from the "
            "RequestContext, never from model arguments (allow_identity_parameters=True if it is a business field)"
        )

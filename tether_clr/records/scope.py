"""Visibility layers for tools and listeners.

A scope is the unit an agent (or sub-agent) sees the catalog through. Scopes are
compared by identity, never by value: two agents with the same session id must
still not see each other's scoped tools.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

__all__ = ["AgentPipelineScope"]


class AgentPipelineScope:
    """One node of the scope tree.

    ``session`` and ``owner`` are what approval needs: an ask from a scope with
    no session or no owner fails closed. A child inherits both; giving a child a
    different owner than its parent raises, because ownership is what decides
    who may approve a call and must not change deeper in the tree.
    """

    __slots__ = ("parent", "session_id", "session", "owner", "_depth", "__weakref__")

    parent: AgentPipelineScope | None
    session_id: str | None
    session: Any
    owner: Any

    def __init__(
        self,
        parent: AgentPipelineScope | None = None,
        *,
        session_id: str | None = None,
        session: Any = None,
        owner: Any = None,
    ) -> None:
        if parent is not None and not isinstance(parent, AgentPipelineScope):
            raise TypeError(f"parent must be an AgentPipelineScope or None, got {type(parent).__name__}")
        if parent is not None:
            if owner is not None and parent.owner is not None and owner != parent.owner:
                raise ValueError(
                    f"a child scope cannot change its owner ({parent.owner!r} -> {owner!r})"
                )
            owner = parent.owner if owner is None else owner
            session = parent.session if session is None else session
            session_id = parent.session_id if session_id is None else session_id
        self.parent = parent
        self.session_id = session_id
        self.session = session
        self.owner = owner
        self._depth: int = 0 if parent is None else parent._depth + 1

    @property
    def depth(self) -> int:
        return self._depth

    def lineage(self) -> Iterator[AgentPipelineScope]:
        """This scope, then each ancestor up to the root."""
        scope: AgentPipelineScope | None = self
        while scope is not None:
            yield scope
            scope = scope.parent

    def is_self_or_descendant_of(self, other: AgentPipelineScope) -> bool:
        return any(scope is other for scope in self.lineage())

    def child(self, **kwargs: Any) -> AgentPipelineScope:
        return AgentPipelineScope(self, **kwargs)

    def __eq__(self, other: object) -> bool:
        return self is other

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        return (
            f"AgentPipelineScope(id=0x{id(self):x}, depth={self._depth}, "
            f"session_id={self.session_id!r}, owner={self.owner!r})"
        )

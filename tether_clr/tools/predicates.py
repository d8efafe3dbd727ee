"""Per-call predicates a registration may give (concurrency safety, approval), and what a bool becomes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["ConstantPredicate", "as_approval_predicate", "as_concurrency_predicate"]


class ConstantPredicate:
    """What a bool becomes as a predicate: the same answer for any arguments (it never reads them)."""

    __slots__ = ("value",)

    def __init__(self, value: bool) -> None:
        self.value = value

    def __call__(self, _arguments: Any) -> bool:
        return self.value

    def __repr__(self) -> str:
        return f"ConstantPredicate({self.value!r})"


def _as_predicate(value: Callable[[Any], Any] | bool, what: str) -> Callable[[Any], Any]:
    """A bool means "always"/"never"; a callable is asked per call with the parsed arguments."""
    if isinstance(value, bool):
        return ConstantPredicate(value)
    if not callable(value):
        raise TypeError(f"{what} must be None, a bool or a callable taking the arguments")
    return value


def as_concurrency_predicate(value: Callable[[Any], Any] | bool) -> Callable[[Any], Any]:
    """The classifier only lets an exact ``True`` join a parallel group."""
    return _as_predicate(value, "is_concurrency_safe")


def as_approval_predicate(value: Callable[[Any], Any] | bool) -> Callable[[Any], Any]:
    """The pipeline treats any answer but an exact ``False`` (including raising) as
    "approval required", so a wrong or broken predicate fails closed."""
    return _as_predicate(value, "requires_approval")

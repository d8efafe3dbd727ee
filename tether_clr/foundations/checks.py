"""Construction-time checks shared by the immutable records (private).

A record that is wrong should fail where it is built, with a message naming
the field, not three stages later. Floor 1: imports nothing from the package.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["optional_str", "optional_str_set", "require_str", "str_set"]


def require_str(value: Any, field: str) -> str:
    """A non-empty ``str``."""
    if not isinstance(value, str):
        raise TypeError(f"{field} must be a str, got {type(value).__name__}")
    if not value:
        raise ValueError(f"{field} must not be empty")
    return value


def optional_str(value: Any, field: str) -> str | None:
    """``None`` or a non-empty ``str``."""
    return None if value is None else require_str(value, field)


def str_set(value: Any, field: str) -> frozenset[str]:
    """A ``frozenset`` of non-empty strings from any iterable of them.

    A bare ``str`` is refused: ``"orders:read"`` as a set would silently become
    its characters.
    """
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise TypeError(f"{field} must be a set of str, got {type(value).__name__}")
    items = frozenset(value)
    for item in items:
        require_str(item, f"each item of {field}")
    return items


def optional_str_set(value: Any, field: str) -> frozenset[str] | None:
    """``None`` (no restriction) or :func:`str_set`."""
    return None if value is None else str_set(value, field)

"""One public namespace per package: what users import from is what objects say they come from."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["rehome"]


def rehome(namespace: Mapping[str, Any], module: str) -> None:
    """Give every class and function named in ``namespace["__all__"]`` ``__module__ == module``
    (as anyio and httpx do), so ``repr``, docs and pickling name the public path, not the private one."""
    for name in namespace["__all__"]:
        value = namespace[name]
        if isinstance(value, type) or (callable(value) and hasattr(value, "__qualname__")):
            try:
                value.__module__ = module
            except (AttributeError, TypeError):  # pragma: no cover - a builtin would refuse
                pass

"""The client SDKs, imported only by the forms that need them, with a clear error when one is missing."""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["require_sdk"]


def require_sdk(module: str, what: str) -> ModuleType:
    """Import ``module`` for ``what``; ``ImportError`` naming the ``tether_clr[projections]`` extra when it is missing."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        package = module.split(".")[0]
        raise ImportError(
            f"{what} needs the {package!r} package: pip install 'tether_clr[projections]' "
            f"(the plain-dict forms of tether_clr.projections need no SDK)"
        ) from exc

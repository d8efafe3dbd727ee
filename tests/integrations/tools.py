"""The tools the framework adapters' tests share: ``add`` (runs freely) and ``refund`` (requires approval)."""

from __future__ import annotations

from tether_clr import PythonFunction, ToolRegistrationOptions, ToolRegistry

__all__ = ["add_and_refund"]


def add_and_refund(ran: list[str] | None = None) -> ToolRegistry:
    """A registry (no instrumentation) with ``add`` and ``refund``; each body appends what it did to ``ran``."""
    ran = [] if ran is None else ran
    registry = ToolRegistry(instrumentation=None)

    def add(a: int, b: int) -> int:
        """Add two numbers."""
        ran.append(f"add {a} {b}")
        return a + b

    def refund(order: str) -> str:
        """Refund an order."""
        ran.append(f"refund {order}")
        return f"refunded {order}"

    registry.register(PythonFunction.from_callable(add, name="add"))
    registry.register(PythonFunction.from_callable(refund, name="refund"), None,
                      ToolRegistrationOptions(requires_approval=True))
    return registry

"""Deferred tools for the tool-search tests: a registry with deferred and plain tools, two tenants.

``deferred_registry()`` registers (all globally):

* ``lookup_order`` (plain) and ``refund_order`` (deferred, hint "money back", tag ``payments``),
  ``archive_order`` (deferred, no hint), for every tenant;
* ``acme_payroll`` (deferred, tenant ``acme`` only) and ``globex_payroll`` (deferred, tenant ``globex`` only);
* the tool search, as ``tool_search``.

``bodies``, when given, collects the names of the bodies that ran.
"""

from __future__ import annotations

from typing import Any

from tether_clr import PythonFunction, RequestContext, ToolMetadata, ToolRegistrationOptions, ToolRegistry

ACME = RequestContext("acme", "alice")
GLOBEX = RequestContext("globex", "gina")


def deferred(**meta: Any) -> ToolRegistrationOptions:
    return ToolRegistrationOptions(metadata=ToolMetadata(deferred=True, **meta))


def deferred_registry(bodies: list[str] | None = None, *, search: bool = True) -> ToolRegistry:
    """The registry the module docstring describes; ``bodies`` collects the names of the bodies that ran."""
    ran = bodies if bodies is not None else []

    def lookup_order(order: str) -> str:
        """Look an order up by its number."""
        ran.append("lookup_order")
        return order

    def refund_order(order: str, amount: float) -> str:
        """Refund part or all of an order."""
        ran.append("refund_order")
        return f"refunded {amount} on {order}"

    def archive_order(order: str) -> str:
        """Move an order to the archive."""
        ran.append("archive_order")
        return order

    def acme_payroll(employee: str) -> str:
        """Pay an employee of Acme."""
        ran.append("acme_payroll")
        return employee

    def globex_payroll(employee: str) -> str:
        """Pay an employee of Globex."""
        ran.append("globex_payroll")
        return employee

    registry = ToolRegistry()
    registry.register(PythonFunction.from_callable(lookup_order))
    registry.register(PythonFunction.from_callable(refund_order), None,
                      deferred(search_hint="money back", tags={"payments"}, aliases=("refund",)))
    registry.register(PythonFunction.from_callable(archive_order), None, deferred())
    registry.register(PythonFunction.from_callable(acme_payroll), None, deferred(tenants={"acme"}, search_hint="salary"))
    registry.register(PythonFunction.from_callable(globex_payroll), None, deferred(tenants={"globex"}, search_hint="salary"))
    if search:
        registry.enable_tool_search()
    return registry


def named_tool(name: str, description: str = "", parameters: dict[str, Any] | None = None) -> Any:
    """A tool object with exactly this name and description, answering its name."""
    schema = parameters if parameters is not None else {"type": "object", "properties": {}}

    class Named:
        json_schema = schema

        async def invoke(self, arguments: Any, cancellation: Any = None) -> Any:
            return name

    tool = Named()
    tool.name = name  # type: ignore[attr-defined]
    tool.description = description  # type: ignore[attr-defined]
    return tool

"""The tools and provider replies the projection tests share.

``trip_registry`` holds Python tools whose schemas exercise strict mode
(optional, nested, enum and array properties) and one tool the test principal may
not see (the JSON a provider answers with comes from the test kit's reply builders,
:mod:`tether_clr.testing.endpoint`).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, TypeAdapter

from tether_clr import PythonFunction, RequestContext, ToolMetadata, ToolRegistrationOptions, ToolRegistry

CONTEXT = RequestContext("acme", "alice", scopes=frozenset({"trips:read"}))
"""The principal the assemblies are made for: it holds ``trips:read``, not ``payroll:read``."""


class Stop(BaseModel):
    name: str
    minutes: int | None = None


class Where(BaseModel):
    lat: float
    lon: float
    label: str = ""


PLANNED: list[dict[str, Any]] = []
"""What ``plan_trip`` was called with, in order (cleared by ``trip_registry``)."""


def plan_trip(
    city: str,
    units: Literal["metric", "imperial"] = "metric",
    stops: list[Stop] | None = None,
    where: Where | None = None,
    days: int = 1,
) -> dict[str, Any]:
    """Plan a trip: a city, optional units, stops and a place to start from."""
    call = {"city": city, "units": units, "stops": None if stops is None else [s.model_dump() for s in stops],
            "where": None if where is None else where.model_dump(), "days": days}
    PLANNED.append(call)
    return {"planned": city, "stops": len(stops or ()), "days": days}


def weather(city: str) -> str:
    """Today's weather in a city."""
    return f"sunny in {city}"


def payroll(employee: str) -> str:
    """Someone's salary."""
    return "secret"


def trip_registry() -> ToolRegistry:
    """``plan_trip`` (title "Plan a trip", idempotent), ``weather`` (read-only) and ``payroll`` (needs ``payroll:read``)."""
    PLANNED.clear()
    registry = ToolRegistry()
    registry.register(PythonFunction.from_callable(weather), None, ToolRegistrationOptions(
        metadata=ToolMetadata(read_only=True, required_scopes={"trips:read"})))
    registry.register(PythonFunction.from_callable(plan_trip), None, ToolRegistrationOptions(
        metadata=ToolMetadata(title="Plan a trip", idempotent=True)))
    registry.register(PythonFunction.from_callable(payroll), None, ToolRegistrationOptions(
        metadata=ToolMetadata(required_scopes={"payroll:read"})))
    return registry


def sdk_checked(kind: Any, value: Any) -> Any:
    """``value`` validated by the SDK's own type ``kind`` (a request TypedDict, through pydantic), as plain data.

    A TypedDict drops keys it does not know, so ``sdk_checked(T, v) == v`` says
    that ``v`` has the SDK's shape and nothing else.
    """
    adapter = TypeAdapter(kind)  # alive while _plain walks pydantic's lazy iterables (they use its definitions)
    return _plain(adapter.validate_python(value))


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, str | bytes | int | float | bool) or value is None:
        return value
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True, exclude_unset=True)
    return [_plain(v) for v in value]  # lists, tuples and pydantic's lazily validated iterables


def schema_objects(schema: Any) -> list[dict[str, Any]]:
    """Every object schema inside ``schema`` (itself included), depth first: what strict mode must close."""
    found: list[dict[str, Any]] = []
    if isinstance(schema, dict):
        if schema.get("type") == "object" or "properties" in schema:
            found.append(schema)
        for value in schema.values():
            found += schema_objects(value)
    elif isinstance(schema, list):
        for value in schema:
            found += schema_objects(value)
    return found

"""Grouping a step's calls: which may join a parallel group, decided before anything runs.

A call joins a parallel group only on an exact ``True`` from the visible tool's
concurrency predicate; arguments the pipeline would refuse, a missing tool, or
a predicate that raises mean EXCLUSIVE (a barrier). Classifying never raises.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from tether_clr.catalog.views import SealedToolCatalogView
from tether_clr.foundations.arguments import (
    InvalidArgumentsJson,
    ParsedArguments,
    read_arguments,
)
from tether_clr.records.decisions import ToolExecutionMode
from tether_clr.records.outcomes import ToolCall
from tether_clr.tools.predicates import ConstantPredicate

__all__ = ["Classifier", "classify_reading"]

logger = logging.getLogger("tether_clr")

Classifier = Callable[[ToolCall, SealedToolCatalogView], ToolExecutionMode]
"""A replacement for the built-in classification (a :class:`~tether_clr.ToolRegistry` subclass's ``classify``)."""


def classify_reading(call: ToolCall, view: SealedToolCatalogView) -> tuple[ToolExecutionMode, ParsedArguments | None]:
    """:meth:`~tether_clr.ToolRegistry.classify`, plus the arguments it read when nobody else saw them.

    The second value is the :func:`~tether_clr.foundations.arguments.read_arguments` result of
    ``call.arguments`` under the view's limits when the tool's classifier is a
    constant (a bool, which never reads the arguments), so the batch need not
    parse them again; None otherwise (a callable classifier was handed that value
    and may have changed it).
    """
    entry = view.resolve(call.name)
    concurrency = None if entry is None else entry.concurrency
    if concurrency is None:
        return ToolExecutionMode.EXCLUSIVE, None
    try:
        parsed = read_arguments(call.arguments, view.argument_limits)
    except InvalidArgumentsJson:
        return ToolExecutionMode.EXCLUSIVE, None
    if isinstance(concurrency, ConstantPredicate):
        return (ToolExecutionMode.PARALLEL if concurrency.value is True else ToolExecutionMode.EXCLUSIVE), parsed
    try:
        verdict = concurrency(parsed.value)
    except Exception:
        logger.warning("concurrency classifier of %r raised; running the call exclusively", call.name, exc_info=True)
        return ToolExecutionMode.EXCLUSIVE, None
    return (ToolExecutionMode.PARALLEL if verdict is True else ToolExecutionMode.EXCLUSIVE), None

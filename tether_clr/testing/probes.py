"""Probe tools: a tool that records every call of its body, and can hold the body until the test lets it go.

``ProbeTool(name, schema=..., body=..., safe=..., requires_approval=...)`` is a
plain :class:`~tether_clr.Tool`: register it like any other. Each time the
pipeline runs its body it appends a :class:`ProbeCall` (the arguments, the
cancellation token, when it started and ended, how it ended) to
``probe.calls``, so a test can say that a body ran, with what, or never ran
(:func:`~tether_clr.testing.assert_body_not_run`).

A gated probe (``gated=True``, or :meth:`ProbeTool.hold`) stops each body at
its start until the test releases it (:meth:`ProbeTool.release`), and
:meth:`ProbeTool.wait_started` waits until some bodies are inside: the moves of
a race test (cancel while a body runs, fail a result policy while siblings are
in flight), with anyio events, never with sleeps.
"""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio

from tether_clr.foundations.cancellation import CancellationToken

__all__ = ["ProbeCall", "ProbeTool"]

_ANY_OBJECT: dict[str, Any] = {"type": "object"}

_ORDER = itertools.count(1)
"""One clock of starts and ends shared by every probe: ``start_seq``/``end_seq`` order bodies across tools."""

Ending = Literal["running", "returned", "raised", "cancelled"]


@dataclass(slots=True, eq=False)
class ProbeCall:
    """One run of a probe's body, as it happened.

    ``arguments``: what the body was given (the validated arguments);
    ``token``: the call's :class:`~tether_clr.CancellationToken`;
    ``started``/``ended``: ``anyio.current_time()`` when the body was entered
    and left (``ended`` None while it runs); ``start_seq``/``end_seq``: the same
    moments on one counter shared by every probe, for "did these overlap"
    questions without clocks; ``ending``: ``"running"``, ``"returned"``,
    ``"raised"`` or ``"cancelled"``; ``result`` or ``error``: what it returned or raised.
    """

    index: int
    arguments: dict[str, Any]
    token: CancellationToken
    started: float
    start_seq: int
    ended: float | None = None
    end_seq: int | None = None
    ending: Ending = "running"
    result: Any = None
    error: BaseException | None = None
    _release: anyio.Event = field(default_factory=anyio.Event, repr=False)

    @property
    def cancelled(self) -> bool:
        """The body was cancelled (anyio cancellation), or its token was cancelled while it ran."""
        return self.ending == "cancelled" or self.token.is_cancelled

    def overlapped(self, other: ProbeCall) -> bool:
        """Both bodies were running at one moment (by the shared counter; a running body has no end yet)."""
        mine = self.end_seq if self.end_seq is not None else float("inf")
        theirs = other.end_seq if other.end_seq is not None else float("inf")
        return self.start_seq < theirs and other.start_seq < mine


class ProbeTool:
    """A tool whose body is ``body`` (or an echo of its arguments), recording each call in :attr:`calls`.

    * ``schema``: the parameters' JSON schema (default: any object);
    * ``body``: ``body(arguments)`` or ``body(arguments, token)``, sync or
      async; what it returns is the result, what it raises the tool's failure
      (TOOL_ERROR, or what the exception maps to); default: the arguments;
    * ``safe``: ``is_concurrency_safe`` (True: its calls may overlap; a predicate
      over the arguments decides per call; default False, exclusive);
    * ``requires_approval``: True, or a predicate over the arguments, as on a registration;
    * ``gated``: each body waits at its start until :meth:`release`.
    """

    def __init__(
        self,
        name: str,
        *,
        schema: Mapping[str, Any] | None = None,
        body: Callable[..., Any] | None = None,
        safe: bool | Callable[[dict[str, Any]], bool] = False,
        requires_approval: bool | Callable[[Any], Any] = False,
        description: str | None = None,
        gated: bool = False,
    ) -> None:
        self.name = name
        self.description = description if description is not None else f"probe {name}"
        self.json_schema: dict[str, Any] = dict(schema if schema is not None else _ANY_OBJECT)
        self._body = body
        self._wants_token = body is not None and _positional_arity(body) >= 2
        self._safe = safe
        self.requires_approval = requires_approval
        self.calls: list[ProbeCall] = []
        self._gated = gated
        self._open = anyio.Event()  # set: every held and later body goes on
        self._progress = anyio.Event()  # set (and replaced) whenever a body starts

    # -- the Tool protocol ------------------------------------------------------------

    def is_concurrency_safe(self, arguments: dict[str, Any]) -> bool:
        return self._safe(arguments) is True if callable(self._safe) else self._safe is True

    async def invoke(self, arguments: dict[str, Any], cancellation: CancellationToken) -> Any:
        record = ProbeCall(len(self.calls), dict(arguments), cancellation, anyio.current_time(), next(_ORDER))
        self.calls.append(record)
        self._progress.set()
        self._progress = anyio.Event()
        try:
            if self._gated and not self._open.is_set():
                await _first_of(self._open, record._release)
            if self._body is None:
                result: Any = dict(arguments)
            else:
                result = self._body(arguments, cancellation) if self._wants_token else self._body(arguments)
            if inspect.isawaitable(result):
                result = await result
        except anyio.get_cancelled_exc_class():
            self._end(record, "cancelled")
            raise
        except BaseException as exc:
            record.error = exc
            self._end(record, "raised")
            raise
        record.result = result
        self._end(record, "returned")
        return result

    # -- what the test reads ------------------------------------------------------------

    @property
    def ran(self) -> int:
        """How many times the body was entered."""
        return len(self.calls)

    @property
    def arguments(self) -> list[dict[str, Any]]:
        """The arguments of each call, in the order the bodies started."""
        return [call.arguments for call in self.calls]

    @property
    def running(self) -> list[ProbeCall]:
        """The calls whose bodies are inside right now (held by the gate, or still working)."""
        return [call for call in self.calls if call.ending == "running"]

    # -- the gate ------------------------------------------------------------------------

    def hold(self) -> ProbeTool:
        """From now on each body waits at its start until :meth:`release` (returns the probe)."""
        self._gated = True
        if self._open.is_set():
            self._open = anyio.Event()
        return self

    def release(self, *indices: int) -> None:
        """Let held bodies go: those with these start indices (0 = the first body entered), or, with none,
        every body held now and every later one (the gate opens)."""
        if not indices:
            self._open.set()
            return
        for index in indices:
            self.calls[index]._release.set()

    async def wait_started(self, count: int = 1) -> list[ProbeCall]:
        """Wait until at least ``count`` bodies have been entered; returns the calls so far.

        Wrap it in ``anyio.fail_after`` in a test, so a body that never starts is a failure, not a hang.
        """
        while len(self.calls) < count:
            await self._progress.wait()
        return list(self.calls)

    def _end(self, record: ProbeCall, ending: Ending) -> None:
        record.ending = ending
        record.ended = anyio.current_time()
        record.end_seq = next(_ORDER)

    def __repr__(self) -> str:
        return f"ProbeTool({self.name!r}, ran={self.ran})"


def _positional_arity(body: Callable[..., Any]) -> int:
    try:
        parameters = inspect.signature(body).parameters.values()
    except (TypeError, ValueError):
        return 1
    if any(p.kind is p.VAR_POSITIONAL for p in parameters):
        return 2
    return sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in parameters)


async def _first_of(*events: anyio.Event) -> None:
    """Return when any of ``events`` is set."""
    async with anyio.create_task_group() as group:

        async def wait(event: anyio.Event) -> None:
            await event.wait()
            group.cancel_scope.cancel()

        for event in events:
            group.start_soon(wait, event)

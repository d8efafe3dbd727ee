"""Cooperative cancellation tokens, the Python twin of .NET's CancellationToken.

Tools, listeners and the .NET bridge all need one object they can poll, await or
hook a callback on, independent of which async backend (asyncio or trio) runs the
batch. anyio cancel scopes alone cannot cross into .NET code, and a token can be
handed to a ``CancellationTokenSource`` link, so the pipeline speaks tokens and
turns them into anyio cancel scopes where Python code has to be interrupted.

Tokens are single-threaded: ``cancel()`` must be called on the event-loop thread
that runs the batch (callbacks run synchronously inside it). As with .NET's
``CancellationTokenSource.Cancel()``, every registered callback runs even when
one raises; unlike it, ``cancel()`` never raises: each failure is logged and
contained, because the caller of ``cancel()`` (a batch tearing down, a timeout)
cannot do anything useful with a tool's broken callback, and a callback skipped
would leave some body running that should have stopped.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import AbstractContextManager
from types import TracebackType
from typing import Any

import anyio

__all__ = ["CancellationSource", "CancellationToken", "OperationCancelledError", "cancel_scope_for"]

logger = logging.getLogger("tether_clr")


class OperationCancelledError(Exception):
    """Raised by ``raise_if_cancelled``; the pipeline maps it to ABORTED after dispatch."""


class _CallbackRegistration:
    """Handle returned by :meth:`CancellationToken.register`; dispose to unhook."""

    __slots__ = ("_source", "_callback")

    def __init__(self, source: CancellationSource | None, callback: Callable[[], Any]) -> None:
        self._source = source
        self._callback = callback

    def dispose(self) -> None:
        source, self._source = self._source, None
        if source is not None:
            source._unregister(self._callback)

    def __enter__(self) -> _CallbackRegistration:
        return self

    def __exit__(self, *exc: object) -> None:
        self.dispose()


class CancellationToken:
    """Read side of a :class:`CancellationSource`: observe, never trigger."""

    __slots__ = ("_source",)

    def __init__(self, source: CancellationSource | None) -> None:
        self._source = source

    @staticmethod
    def none() -> CancellationToken:
        """A token that can never be cancelled (``CancellationToken.None``)."""
        return _NONE

    @property
    def can_be_cancelled(self) -> bool:
        return self._source is not None

    @property
    def is_cancelled(self) -> bool:
        return self._source is not None and self._source.is_cancelled

    @property
    def reason(self) -> str | None:
        return None if self._source is None else self._source.reason

    def raise_if_cancelled(self) -> None:
        if self.is_cancelled:
            raise OperationCancelledError(self.reason or "operation was cancelled")

    def register(self, callback: Callable[[], Any]) -> _CallbackRegistration:
        """Run ``callback`` once on cancellation (immediately if already cancelled).

        A callback run by ``cancel()`` that raises is logged and contained; one
        run here, at once, raises into the registering code, as in .NET.
        """
        if self._source is None:
            return _CallbackRegistration(None, callback)
        return self._source._register(callback)

    async def wait(self) -> None:
        """Sleep until cancelled (forever for a token that cannot be cancelled)."""
        if self.is_cancelled:
            return
        event = anyio.Event()
        with self.register(event.set):
            await event.wait()

    def __repr__(self) -> str:
        state = "cancelled" if self.is_cancelled else ("live" if self._source else "none")
        return f"CancellationToken({state})"


class CancellationSource:
    """Owner side: creates a token and cancels it, optionally linked to parents."""

    __slots__ = ("_cancelled", "_reason", "_callbacks", "_links", "token")

    def __init__(self, *linked: CancellationToken) -> None:
        self._cancelled = False
        self._reason: str | None = None
        self._callbacks: list[Callable[[], Any]] = []
        self._links: list[_CallbackRegistration] = []
        self.token = CancellationToken(self)
        for parent in linked:
            if parent.is_cancelled:
                self.cancel(parent.reason)
                break
            self._links.append(parent.register(self._cancel_from_parent(parent)))

    def _cancel_from_parent(self, parent: CancellationToken) -> Callable[[], None]:
        return lambda: self.cancel(parent.reason)

    @property
    def is_cancelled(self) -> bool:
        return self._cancelled

    @property
    def reason(self) -> str | None:
        return self._reason

    def cancel(self, reason: str | None = None) -> None:
        """Cancel the token and run every callback, in registration order; later calls do nothing.

        Never raises: a callback that raises is logged and the rest still run.
        """
        if self._cancelled:
            return
        self._cancelled = True
        self._reason = reason
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            try:
                callback()
            except Exception:
                logger.exception("cancellation callback %s raised; the other callbacks still ran", _name_of(callback))
        self.close()

    def close(self) -> None:
        """Detach from linked parents so a finished source is not kept alive by them."""
        links, self._links = self._links, []
        for link in links:
            link.dispose()

    def _register(self, callback: Callable[[], Any]) -> _CallbackRegistration:
        if self._cancelled:
            callback()
            return _CallbackRegistration(None, callback)
        self._callbacks.append(callback)
        return _CallbackRegistration(self, callback)

    def _unregister(self, callback: Callable[[], Any]) -> None:
        try:
            self._callbacks.remove(callback)
        except ValueError:
            pass

    def __enter__(self) -> CancellationSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_NONE = CancellationToken(None)


def _name_of(callback: Callable[[], Any]) -> str:
    try:
        return str(getattr(callback, "__qualname__", None) or type(callback).__name__)
    except Exception:
        return "callback"


class _LinkedCancelScope:
    """What :func:`cancel_scope_for` returns: a plain class, not a generator, because it sits on every call's path."""

    __slots__ = ("_tokens", "_scope", "_registrations")

    def __init__(self, tokens: tuple[CancellationToken, ...]) -> None:
        self._tokens = tokens
        self._scope: anyio.CancelScope | None = None
        self._registrations: list[_CallbackRegistration] = []

    def __enter__(self) -> anyio.CancelScope:
        scope = self._scope = anyio.CancelScope()
        scope.__enter__()
        try:
            seen: list[CancellationSource] = []
            for token in self._tokens:
                source = token._source
                if source is not None and source not in seen:  # sources compare by identity
                    seen.append(source)
                    self._registrations.append(token.register(scope.cancel))
        except BaseException as exc:  # pragma: no cover - registering scope.cancel does not raise
            self._unregister()
            scope.__exit__(type(exc), exc, exc.__traceback__)
            raise
        return scope

    def _unregister(self) -> None:
        registrations, self._registrations = self._registrations, []
        for registration in registrations:
            registration.dispose()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None) -> bool:
        self._unregister()
        scope = self._scope
        assert scope is not None
        return bool(scope.__exit__(kind, exc, traceback))


def cancel_scope_for(*tokens: CancellationToken) -> AbstractContextManager[anyio.CancelScope]:
    """An anyio cancel scope that is cancelled as soon as any of ``tokens`` is.

    This is the bridge from cooperative tokens to anyio's structured
    cancellation: Python code inside is interrupted at its next checkpoint.
    A token is linked once however often it is passed (tokens of one source are one token).
    """
    return _LinkedCancelScope(tokens)

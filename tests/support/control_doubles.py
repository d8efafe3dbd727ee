"""Real control stores seen through a faulty network: cut off, notifications lost, rows late or out of order.

Each wraps a real :class:`~tether_clr.SqliteCatalogControl` or
:class:`~tether_clr.PostgresCatalogControl`; only what reaches the attached
host is changed, never what the store holds.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Sequence

from tether_clr import ControlChange, ControlFeed
from tether_clr.control.sql import SqlCatalogControl


class CutOff(OSError):
    """What a host reads while it is cut off from its store."""


class FaultyControl:
    """``inner`` as a host reaches it: ``cut`` makes every read and commit fail (as a network partition
    does); ``deaf`` makes feeds ignore notifications (a lost NOTIFY: they only poll); ``scramble`` makes
    feeds hand back rows shuffled and, every other read, without the first one (late or reordered delivery)."""

    def __init__(self, inner: SqlCatalogControl) -> None:
        self.inner = inner
        self.cut = threading.Event()
        self.deaf = False
        self.scramble = False
        self.reads = 0

    def _check(self) -> None:
        if self.cut.is_set():
            raise CutOff("the control store is unreachable")

    def commit(self, change: ControlChange) -> ControlChange | None:
        self._check()
        return self.inner.commit(change)

    def changes(self, after: int = 0) -> Sequence[ControlChange]:
        self._check()
        return self.inner.changes(after)

    def feed(self) -> ControlFeed:
        self._check()
        return _FaultyFeed(self, self.inner.feed())

    def close(self) -> None:
        self.inner.close()


class _FaultyFeed:
    def __init__(self, owner: FaultyControl, inner: ControlFeed) -> None:
        self._owner = owner
        self._inner = inner
        self._rng = random.Random(7)

    def changes(self, after: int) -> Sequence[ControlChange]:
        owner = self._owner
        owner._check()
        found = list(self._inner.changes(after))
        owner.reads += 1
        if owner.scramble and found:
            self._rng.shuffle(found)
            if owner.reads % 2:
                found = [c for c in found if c.revision != after + 1]  # the next one is late
        return found

    def wait(self, timeout: float) -> None:
        if self._owner.deaf:
            time.sleep(timeout)
        else:
            self._inner.wait(timeout)

    def close(self) -> None:
        self._inner.close()

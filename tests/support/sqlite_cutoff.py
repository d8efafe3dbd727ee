"""A real cut-off from a SQLite control store: another process holds every WAL lock of the file.

SQLite's WAL readers and writers must take one of the lock bytes of the
``-shm`` file (offsets 120 to 127: the write, checkpoint, recovery and read-mark
locks). ``SqliteCutOff(path).cut()`` starts a child process that holds all of
them exclusively (POSIX ``fcntl`` locks, so only another process conflicts),
and every connection of every other process then fails (``locking protocol``
or ``database is locked``) until ``restore()`` ends the child. Nothing in the
host under test is replaced or patched.
"""

from __future__ import annotations

import subprocess
import sys

_HOLDER = (
    "import fcntl, sys\n"
    "shm = open(sys.argv[1] + '-shm', 'r+b')\n"
    "fcntl.lockf(shm, fcntl.LOCK_EX, 8, 120)\n"
    "print('held', flush=True)\n"
    "sys.stdin.read()\n"
)


class SqliteCutOff:
    def __init__(self, path: str) -> None:
        self.path = path
        self._holder: subprocess.Popen[str] | None = None

    def cut(self) -> None:
        """Hold the locks; return once they are held."""
        holder = subprocess.Popen(
            [sys.executable, "-c", _HOLDER, self.path], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        self._holder = holder

    def restore(self) -> None:
        """Release the locks (the holder exits when its stdin closes)."""
        holder, self._holder = self._holder, None
        if holder is not None:
            assert holder.stdin is not None and holder.stdout is not None
            holder.stdin.close()
            holder.wait(timeout=30)
            holder.stdout.close()

    close = restore

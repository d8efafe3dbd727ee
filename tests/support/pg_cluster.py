"""A private PostgreSQL cluster the test can stop, start and restart: a real database outage.

``PgCluster.create()`` runs ``initdb`` into a fresh temporary folder and
``start()``\\ s the server on a free port, listening on 127.0.0.1 and on a Unix
socket in a temporary folder of its own (so it never touches the machine's
cluster). ``dsn`` (superuser ``postgres``, trust authentication, database
``postgres``) is what a store or a ``tether-clr mcp serve`` subprocess opens;
``new_database()`` gives a test a database of its own on it. ``stop()`` is
``pg_ctl stop -m fast`` (every connection is terminated, 57P01, as in a real
restart), ``start()`` waits until the server accepts connections, ``restart()``
is both; ``close()`` stops it and removes its folders.

The binaries are the newest ``/usr/lib/postgresql/*/bin``. As root (CI), the
server runs as the ``postgres`` OS user through ``runuser`` (PostgreSQL refuses
to run as root), with its folders owned by that user; otherwise as the
current user. Without the binaries (or, as root, without the ``postgres``
user), the fixture skips, saying why, unless ``TETHER_REQUIRE_POSTGRES=1``.

The fixture ``pg_cluster`` (module scope: ``initdb`` costs about a second) is
registered in ``tests/conftest.py``; a test that stops the cluster starts it
again before it ends (``with cluster.stopped(): ...`` does).
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

__all__ = ["PgCluster", "pg_cluster", "postgres_binaries"]

_TIMEOUT = 60  # seconds for initdb and for pg_ctl's own waits


def postgres_binaries() -> Path | None:
    """The newest PostgreSQL ``bin`` folder with ``initdb`` and ``pg_ctl``, or None."""
    found = [Path(p).parent for p in glob.glob("/usr/lib/postgresql/*/bin/pg_ctl") if Path(p).with_name("initdb").exists()]
    found.sort(key=lambda folder: int(folder.parent.name) if folder.parent.name.isdigit() else 0)
    return found[-1] if found else None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class PgCluster:
    """One private cluster: ``dsn``, ``port``, ``socket_dir``; ``stop()``, ``start()``, ``restart()``, ``close()``."""

    def __init__(self, binaries: Path, root: Path, run_as: str | None) -> None:
        self.binaries = binaries
        self.root = root
        self.data = root / "data"
        self.socket_dir = root / "socket"
        self.log = root / "server.log"
        self.port = _free_port()
        self._run_as = run_as
        self.running = False

    @classmethod
    def create(cls) -> PgCluster:
        """``initdb`` a new cluster and start it (raises when the binaries are missing: see :func:`pg_cluster`)."""
        binaries = postgres_binaries()
        if binaries is None:
            raise RuntimeError("no PostgreSQL binaries under /usr/lib/postgresql/*/bin")
        run_as = "postgres" if os.geteuid() == 0 else None
        if run_as is not None:
            pwd.getpwnam(run_as)  # KeyError: no such user
        root = Path(tempfile.mkdtemp(prefix="tether-pg-"))
        cluster = cls(binaries, root, run_as)
        try:
            cluster.socket_dir.mkdir()
            if run_as is not None:
                for path in (root, cluster.socket_dir):
                    shutil.chown(path, run_as, run_as)
            cluster._run("initdb", "-D", str(cluster.data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
            cluster.start()
        except BaseException:
            cluster.close()
            raise
        return cluster

    @property
    def dsn(self) -> str:
        """The ``postgres`` database as its superuser, over the Unix socket."""
        return self.dsn_for("postgres")

    def dsn_for(self, database: str) -> str:
        return f"host={self.socket_dir} port={self.port} user=postgres dbname={database}"

    def new_database(self) -> str:
        """A new, empty database on the cluster; returns its DSN."""
        import psycopg

        name = f"t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.dsn, autocommit=True, connect_timeout=10) as db:
            db.execute(f'CREATE DATABASE "{name}"')
        return self.dsn_for(name)

    def _run(self, tool: str, *args: str) -> None:
        command = [str(self.binaries / tool), *args]
        if self._run_as is not None:
            command = ["runuser", "-u", self._run_as, "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, timeout=_TIMEOUT, cwd=self.root)
        if done.returncode != 0:
            raise RuntimeError(f"{tool} failed ({done.returncode}): {done.stdout}{done.stderr}{self._log_tail()}")

    def _log_tail(self) -> str:
        try:
            return "\n" + self.log.read_text(errors="replace")[-2000:]
        except OSError:
            return ""

    def start(self) -> None:
        """Start the server; returns once it accepts connections."""
        options = f"-p {self.port} -k {self.socket_dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=100"
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-o", options, "-w", "-t", str(_TIMEOUT), "start")
        self.running = True

    def stop(self) -> None:
        """Stop the server (``-m fast``: every session is terminated, as in an operator's restart)."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "-t", str(_TIMEOUT), "stop")
        self.running = False

    def restart(self) -> None:
        self.stop()
        self.start()

    @contextmanager
    def stopped(self) -> Iterator[None]:
        """The server stopped for the block's duration, started again after it (even if it raised)."""
        self.stop()
        try:
            yield
        finally:
            self.start()

    def close(self) -> None:
        """Stop the server if it runs and remove its folders."""
        try:
            if self.running:
                self.stop()
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture(scope="module")
def pg_cluster() -> Iterator[PgCluster]:
    """A private, restartable PostgreSQL cluster for the module's tests (see the module docstring)."""
    try:
        cluster = PgCluster.create()
    except (RuntimeError, KeyError, OSError) as exc:
        if os.environ.get("TETHER_REQUIRE_POSTGRES") == "1":
            pytest.fail(f"TETHER_REQUIRE_POSTGRES=1 but no private PostgreSQL cluster could be started: {exc}")
        pytest.skip(f"no private PostgreSQL cluster here: {exc}")
    try:
        yield cluster
    finally:
        cluster.close()

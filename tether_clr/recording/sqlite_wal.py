"""The two SQLite steps every store of this package shares: preparing a WAL file and one ``BEGIN IMMEDIATE`` transaction.

``BEGIN IMMEDIATE`` takes the write lock when the transaction starts, so two
writers never both read and then fail to upgrade; a failure rolls back
everything the transaction did, so no half-applied change is ever committed.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["immediate_transaction", "prepare_wal"]

Execute = Callable[[str, tuple[Any, ...]], list[tuple[Any, ...]]]


def prepare_wal(db: sqlite3.Connection, synchronous: str, schema: Iterable[str]) -> None:
    """Switch ``db`` (autocommit mode) to WAL with ``synchronous`` and create ``schema`` in one transaction."""
    db.execute("PRAGMA journal_mode=WAL")
    db.execute(f"PRAGMA synchronous={synchronous}")
    with immediate_transaction(db) as execute:
        for statement in schema:
            execute(statement, ())


@contextmanager
def immediate_transaction(db: sqlite3.Connection) -> Iterator[Execute]:
    """One ``BEGIN IMMEDIATE`` transaction on ``db``: committed when the block ends, rolled back when it raises."""

    def execute(sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        return db.execute(sql, params).fetchall()

    db.execute("BEGIN IMMEDIATE")
    try:
        yield execute
    except BaseException:
        db.execute("ROLLBACK")
        raise
    try:
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:  # a COMMIT refused (the file busy) leaves the transaction open: end it, so a retry starts clean
            db.execute("ROLLBACK")
        raise

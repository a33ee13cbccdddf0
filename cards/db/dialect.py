"""Which database a statement is for: PostgreSQL or SQLite.

The study core runs on both. Where the two need different SQL (or different steps: one
statement on PostgreSQL, a short transaction on SQLite), the module of ``cards.db`` that
owns the rule keeps both forms side by side in a :class:`PerDialect` named after the
rule, and takes the one for the connection at hand with :meth:`PerDialect.here`, rather
than branching on ``connection.vendor``. A step that exists on one database only is a
form that is empty on the other. :func:`is_postgres` and :func:`is_sqlite` answer the
question itself, for a caller with nothing to pick.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from django.db import connection

T = TypeVar("T")

POSTGRESQL = "postgresql"
SQLITE = "sqlite"


def vendor(db: Any = None) -> str:
    """``postgresql`` or ``sqlite``: the database behind the connection ``db`` (the default
    connection unless given, as a migration's ``schema_editor.connection`` is). Any other
    raises: the study core has SQL for these two only."""
    name = str((connection if db is None else db).vendor)
    if name not in (POSTGRESQL, SQLITE):
        raise RuntimeError(f"The study core runs on PostgreSQL or SQLite, not on {name}.")
    return name


def is_postgres(db: Any = None) -> bool:
    return vendor(db) == POSTGRESQL


def is_sqlite(db: Any = None) -> bool:
    return vendor(db) == SQLITE


@dataclass(frozen=True)
class PerDialect(Generic[T]):
    """One rule's form on each database: a statement, a list of them, a column expression,
    or the function that runs the rule there."""

    postgresql: T
    sqlite: T

    def here(self, db: Any = None) -> T:
        """The form for the connection ``db`` (the default connection unless given)."""
        return self.postgresql if is_postgres(db) else self.sqlite

"""The kept review log as plain numbers for the memory figures (``cards.services.memory``).

One statement per read. Days come back as ordinals (``date.toordinal``) and review times
as seconds since the epoch, computed by the database: turning 100,000 timestamps into
aware datetimes and back took most of a ``stats/memory/`` request.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.db import connection

from .counts import kept

_COLUMNS = {
    "postgresql": (
        "(l.study_day - DATE '0001-01-01') + 1",
        "EXTRACT(EPOCH FROM l.reviewed_at)::float8",
    ),
    "sqlite": (
        "CAST(julianday(l.study_day) - 1721424.5 AS INTEGER)",
        "(julianday(l.reviewed_at) - 2440587.5) * 86400.0",
    ),
}


def kept_log_columns(
    *,
    learner_id: int | None = None,
    card_ids: Sequence[int] | None = None,
    deck_id: int | None = None,
) -> list[list[float]]:
    """Six columns of the kept reviews that match: learner, card, day ordinal, passed
    (0/1), epoch seconds and id, in no order (the caller sorts them by time and id, in
    NumPy: faster than the database's sort of 100,000 rows on a small ``work_mem``).

    PostgreSQL sends each column as one array (``array_agg``), which costs half the
    Python of 100,000 rows of six values; SQLite sends rows, turned into columns here.
    """
    postgres = connection.vendor == "postgresql"
    day, epoch = _COLUMNS["postgresql" if postgres else "sqlite"]
    where, params = [kept("l")], []
    if learner_id is not None:
        where.append("l.learner_id = %s")
        params.append(learner_id)
    if card_ids is not None:
        where.append(f"l.card_id IN ({', '.join(['%s'] * len(card_ids)) or 'NULL'})")
        params.extend(card_ids)
    if deck_id is not None:
        where.append("l.card_id IN (SELECT c.id FROM cards_card c WHERE c.deck_id = %s)")
        params.append(deck_id)
    columns = [
        "l.learner_id",
        "l.card_id",
        day,
        "CASE WHEN l.result = 'pass' THEN 1 ELSE 0 END",
        epoch,
        "l.id",
    ]
    select = ", ".join(f"array_agg({c})" for c in columns) if postgres else ", ".join(columns)
    statement = f"SELECT {select} FROM cards_reviewlog l WHERE {' AND '.join(where)}"
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        if postgres:
            row = cursor.fetchone()
            return [list(c or []) for c in row] if row else [[] for _ in columns]
        rows = cursor.fetchall()
    return [list(c) for c in zip(*rows, strict=True)] if rows else [[] for _ in columns]

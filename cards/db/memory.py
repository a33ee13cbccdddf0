"""The memory figures' SQL (``cards.services.memory``): the kept review log as plain
numbers, and the FSRS memory each review state keeps.

One statement per read. Days come back as ordinals (``date.toordinal``) and review times
as seconds since the epoch, computed by the database: turning 100,000 timestamps into
aware datetimes and back took most of a ``stats/memory/`` request.

A state's memory (``ReviewState.stability``, ``difficulty``, ``last_review_day``) is
current while its ``memory_as_of`` equals its ``last_reviewed_at``. A review stores it
with the move of its state (``MovedMemory``, in ``cards.db.reviews.move_and_log``'s
statement: no second UPDATE, and no second run of the state counts' triggers); a rebuild
(``memories_store``) sets ``memory_as_of`` from ``last_reviewed_at`` in the same row,
under the condition that ``last_reviewed_at`` is still what the memory was computed from.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.db.models import Case, DateTimeField, Exists, Value, When

from .counts import kept
from .dialect import PerDialect, is_postgres

Learners = tuple[int, int | None]  # a range (after, up_to] of learner ids; None: no end

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
    learners: Learners | None = None,
) -> list[list[float]]:
    """Six columns of the kept reviews that match: learner, card, day ordinal, passed
    (0/1), epoch seconds and id, in no order (the caller sorts them by time and id, in
    NumPy: faster than the database's sort of 100,000 rows on a small ``work_mem``).
    ``learners`` is a range of learner ids.

    PostgreSQL sends each column as one array (``array_agg``), which costs half the
    Python of 100,000 rows of six values; SQLite sends rows, turned into columns here.
    """
    postgres = is_postgres()
    day, epoch = _COLUMNS["postgresql" if postgres else "sqlite"]
    where, params = [kept("l")], []
    if learner_id is not None:
        where.append("l.learner_id = %s")
        params.append(learner_id)
    if learners is not None:
        more_where, more = _learners_where("l.learner_id", learners)
        where += more_where
        params += more
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


# --- The memory kept on review states ----------------------------------------------------

# The learner's fitted curve decay (``w[20]``), NULL for a learner without a fit: one
# uncorrelated subquery, run once per statement.
_DECAY = PerDialect(
    postgresql="(m.parameters ->> 20)::float8",
    sqlite="CAST(json_extract(m.parameters, '$[20]') AS REAL)",
)
_SAME = PerDialect(postgresql="IS NOT DISTINCT FROM", sqlite="IS")
_CARDS = PerDialect(postgresql="= ANY(%s)", sqlite="IN ({})")


def _in_cards(card_ids: Sequence[int]) -> tuple[str, list[Any]]:
    """``card_id`` among ``card_ids``: one array parameter on PostgreSQL (one statement
    text whatever the page size, so it stays prepared), a list on SQLite."""
    if is_postgres():
        return _CARDS.postgresql, [list(card_ids)]
    return _CARDS.sqlite.format(", ".join(["%s"] * len(card_ids))), list(card_ids)


def page_memory(*, learner_id: int, card_ids: Sequence[int]) -> list[tuple[Any, ...]]:
    """The kept memory of the learner's states of ``card_ids``, one statement:
    ``(card_id, stability, last_review_day, current, decay)`` per state, ``current``
    true while the memory follows the state's last review, ``decay`` the learner's
    fitted ``w[20]`` (None without a fit)."""
    cards, params = _in_cards(card_ids)
    sql = f"""
        SELECT s.card_id, s.stability, s.last_review_day,
               s.memory_as_of {_SAME.here()} s.last_reviewed_at,
               (SELECT {_DECAY.here()} FROM cards_memoryparameters m
                WHERE m.learner_id = %s AND m.fitted)
        FROM cards_reviewstate s
        WHERE s.learner_id = %s AND s.card_id {cards}
    """
    with connection.cursor() as cursor:
        cursor.execute(sql, [learner_id, learner_id, *params])
        rows = cursor.fetchall()
    return [(card, s, _date(day), bool(current), decay) for card, s, day, current, decay in rows]


def _date(value: Any) -> dt.date | None:
    return dt.date.fromisoformat(value) if isinstance(value, str) else value


def _parameters(value: Any) -> list[float]:
    # SQLite hands a JSON column over as its text.
    return [float(x) for x in (json.loads(value) if isinstance(value, str) else value)]


def learner_fit(learner_id: int) -> tuple[list[float], dt.datetime] | None:
    """The learner's fitted parameters and when they were fitted (the fit's version, as
    ``memory_store`` takes it); None without a fit."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT parameters, fitted_at FROM cards_memoryparameters "
            "WHERE learner_id = %s AND fitted",
            [learner_id],
        )
        row = cursor.fetchone()
    if row is None:
        return None
    fitted_at = row[1]
    if fitted_at is not None and fitted_at.tzinfo is None:  # SQLite's, stored in UTC
        fitted_at = fitted_at.replace(tzinfo=dt.UTC)
    return _parameters(row[0]), fitted_at


@dataclass(frozen=True)
class MovedMemory:
    """A card's FSRS memory after a review, stored by the statement that moves its state
    (``cards.db.reviews.move_and_log``), computed under the fit of ``fitted_at`` (None:
    the defaults).

    The memory is current (``memory_as_of`` set to the review's time) only if that fit is
    still the learner's when the state moves; a fit stored in between leaves it not
    current, for the next review or fit to store again.
    """

    stability: float
    difficulty: float
    day: dt.date
    fitted_at: Any

    def set_sql(self, *, learner_id: int, reviewed_at: dt.datetime) -> tuple[str, list[Any]]:
        """PostgreSQL: the assignments to add to the move's ``SET``, and their parameters."""
        ops = connection.ops
        sql = f"""
            , stability = %s, difficulty = %s, last_review_day = %s,
            memory_as_of = CASE WHEN (SELECT m.fitted_at FROM cards_memoryparameters m
                                      WHERE m.learner_id = %s AND m.fitted)
                                     {_SAME.here()} %s
                           THEN %s END"""
        return sql, [
            self.stability,
            self.difficulty,
            ops.adapt_datefield_value(self.day),
            learner_id,
            ops.adapt_datetimefield_value(self.fitted_at),
            ops.adapt_datetimefield_value(reviewed_at),
        ]

    def update_fields(self, *, learner_id: int, reviewed_at: dt.datetime) -> dict[str, Any]:
        """The same as fields of the move's ``QuerySet.update`` (SQLite)."""
        from ..models import MemoryParameters

        fits = MemoryParameters.objects.filter(learner_id=learner_id, fitted=True)
        same = (
            ~Exists(fits)
            if self.fitted_at is None
            else Exists(fits.filter(fitted_at=self.fitted_at))
        )
        return {
            "stability": self.stability,
            "difficulty": self.difficulty,
            "last_review_day": self.day,
            "memory_as_of": Case(
                When(same, then=Value(reviewed_at)), default=None, output_field=DateTimeField()
            ),
        }


def _learners_where(column: str, learners: Learners) -> tuple[list[str], list[Any]]:
    after, up_to = learners
    if up_to is None:
        return [f"{column} > %s"], [after]
    return [f"{column} > %s AND {column} <= %s"], [after, up_to]


def learner_states(
    *,
    learner_id: int | None = None,
    card_ids: Sequence[int] | None = None,
    learners: Learners | None = None,
) -> list[tuple[int, int, int, dt.datetime | None]]:
    """``(state id, learner id, card id, last_reviewed_at)`` of the states that match:
    one learner's (or those of its ``card_ids``), or those of a range of learners."""
    where: list[str] = []
    params: list[Any] = []
    if learner_id is not None:
        where.append("learner_id = %s")
        params.append(learner_id)
    if card_ids is not None:
        cards, more = _in_cards(card_ids)
        where.append(f"card_id {cards}")
        params.extend(more)
    if learners is not None:
        more_where, more = _learners_where("learner_id", learners)
        where += more_where
        params += more
    sql = "SELECT id, learner_id, card_id, last_reviewed_at FROM cards_reviewstate"
    if where:
        sql += " WHERE " + " AND ".join(where)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return list(cursor.fetchall())


def fitted_parameters(
    *, learner_id: int | None = None, learners: Learners | None = None
) -> dict[int, list[float]]:
    """Each fitted learner's parameters, by learner id (one learner, or a range)."""
    sql = "SELECT learner_id, parameters FROM cards_memoryparameters WHERE fitted"
    params: list[Any] = []
    if learner_id is not None:
        sql += " AND learner_id = %s"
        params.append(learner_id)
    if learners is not None:
        more_where, more = _learners_where("learner_id", learners)
        sql += " AND " + " AND ".join(more_where)
        params += more
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return {learner: _parameters(p) for learner, p in cursor.fetchall()}


# Rows per statement of ``memories_store`` on SQLite: its parameters stay far below
# SQLite's limit of 32,766 bound variables. PostgreSQL takes each column as one array.
MEMORIES_PER_STATEMENT = 2000

_MEMORIES_UPDATE = PerDialect(
    postgresql="""
        UPDATE cards_reviewstate s
        SET stability = v.stability, difficulty = v.difficulty,
            last_review_day = v.day, memory_as_of = s.last_reviewed_at
        FROM unnest(%s::bigint[], %s::float8[], %s::float8[], %s::date[], %s::timestamptz[])
             AS v(id, stability, difficulty, day, as_of)
        WHERE s.id = v.id AND s.last_reviewed_at IS NOT DISTINCT FROM v.as_of
    """,
    sqlite="""
        UPDATE cards_reviewstate AS s
        SET stability = v.stability, difficulty = v.difficulty,
            last_review_day = v.day, memory_as_of = s.last_reviewed_at
        FROM (SELECT column1 AS id, column2 AS stability, column3 AS difficulty,
                     column4 AS day, column5 AS as_of FROM (VALUES {rows})) AS v
        WHERE s.id = v.id AND s.last_reviewed_at IS v.as_of
    """,
)


def memories_store(
    rows: Sequence[tuple[int, float | None, float | None, dt.date | None, dt.datetime | None]],
) -> int:
    """Store many states' memories: ``(state id, stability, difficulty, last review day,
    last_reviewed_at it was computed from)``, None for no memory. A state whose
    ``last_reviewed_at`` has moved since is left as it is (its memory reads as not
    current). Returns the states stored."""
    if not rows:
        return 0
    if is_postgres():
        # One statement, a column per array: its text is the same for any number of rows.
        columns = [list(column) for column in zip(*rows, strict=True)]
        with connection.cursor() as cursor:
            cursor.execute(_MEMORIES_UPDATE.postgresql, columns)
            return max(cursor.rowcount, 0)
    ops = connection.ops
    stored = 0
    for start in range(0, len(rows), MEMORIES_PER_STATEMENT):
        part = rows[start : start + MEMORIES_PER_STATEMENT]
        params: list[Any] = []
        for state_id, s, d, day, as_of in part:
            params += [
                state_id,
                s,
                d,
                ops.adapt_datefield_value(day),
                ops.adapt_datetimefield_value(as_of),
            ]
        values = ", ".join(["(%s, %s, %s, %s, %s)"] * len(part))
        with connection.cursor() as cursor:
            cursor.execute(_MEMORIES_UPDATE.sqlite.format(rows=values), params)
            stored += max(cursor.rowcount, 0)
    return stored

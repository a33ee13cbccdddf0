"""The due queue's SQL that differs between PostgreSQL and SQLite, or that the ORM cannot say.

What is due is defined once, in :mod:`cards.due`; this module holds the few pieces of it
that raw SQL needs, each named after what it says:

* :func:`tag_names_column` / :func:`tag_names_list`: a card's tag names as one column of
  the due page (an array on PostgreSQL, a joined string on SQLite) and back to a list;
* :func:`in_pause_sql`: :func:`cards.ladder.in_pause` over a profile's columns;
* :func:`due_count_sql`: the number of ``queue_states`` rows, correlated to a learner
  and a day of an outer statement, for the reminder pass (``services/reminder_claims``).

``tests/cards/test_due_sql.py`` holds the last two equal to the rules they restate, on
both databases.
"""

from __future__ import annotations

from django.db import connection
from django.db.models.expressions import RawSQL

# Separates tag names in SQLite's group_concat; a slug never contains it.
_TAG_SEPARATOR = "\x1f"


def tag_names_column() -> RawSQL:
    """The row's card's tag names, sorted, as one column over ``cards_reviewstate``."""
    join = (
        "FROM cards_tag t JOIN cards_card_tags ct ON ct.tag_id = t.id "
        'WHERE ct.card_id = "cards_reviewstate"."card_id"'
    )
    if connection.vendor == "postgresql":
        return RawSQL(f"ARRAY(SELECT t.name {join} ORDER BY t.name)", ())
    return RawSQL(
        f"(SELECT group_concat(name, char(31)) FROM (SELECT t.name {join} ORDER BY t.name))", ()
    )


def tag_names_list(value: list[str] | str | None) -> list[str]:
    """A value of :func:`tag_names_column` as the list of names it stands for."""
    if isinstance(value, str):
        return value.split(_TAG_SEPARATOR)
    return value or []


def in_pause_sql(profile: str, day: str) -> str:
    """True when ``day`` falls in the pause of the ``cards_learnerprofile`` row ``profile``.

    :func:`cards.ladder.in_pause`: from ``pause_start`` up to, not including,
    ``pause_start + pause_days`` (a NULL start, or no days, is no pause).
    """
    if connection.vendor == "sqlite":
        end = f"date({profile}.pause_start, '+' || {profile}.pause_days || ' days')"
    else:
        end = f"({profile}.pause_start + {profile}.pause_days)"
    return f"""({profile}.pause_start IS NOT NULL
        AND {profile}.pause_start <= {day} AND {day} < {end})"""


def due_count_sql(learner: str, day: str) -> str:
    """SQL counting :func:`cards.due.queue_states` of ``learner`` on ``day``; one parameter (True).

    ``learner`` and ``day`` are column expressions of the outer statement. The rows of
    :func:`cards.due.due_filter` (scheduled, due on or before ``day``, not suspended, not
    buried that day), and none while the learner's pause covers ``day``. The queue's
    partial index serves it.
    """
    return f"""(
        SELECT COUNT(*) FROM cards_reviewstate s
        WHERE s.learner_id = {learner} AND s.scheduled = %s AND NOT s.suspended
          AND s.due_on <= {day}
          AND (s.buried_on IS NULL OR s.buried_on <> {day})
          AND NOT EXISTS (
              SELECT 1 FROM cards_learnerprofile pp
              WHERE pp.user_id = {learner} AND {in_pause_sql("pp", day)}
          )
    )"""

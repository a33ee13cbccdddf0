"""Storing new exercise variants and binding them to today's reviews, per database.

``bind_exercises`` is the write of the due page for exercise cards. The service above
(``cards.services.exercise_reviews``) calls it the same way on both databases:

- PostgreSQL: one statement (the variants' ``INSERT`` in a CTE feeding the bindings'),
  atomic without a transaction of its own;
- SQLite: ``bulk_create`` of the variants and one ``INSERT`` of the bindings, in one
  transaction.

Either way a binding already there wins over the new one unless it is spent
(``ExerciseBinding.SPENT``), and the answer says which cards the new variants bound.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.db import connection, transaction

from exercises.models import Exercise

from ..models import ExerciseBinding
from .dialect import PerDialect
from .inserts import raw_insert

# ``ExerciseBinding.SPENT`` on the existing row: a binding whose exercise was answered
# as practice (no review recorded, an attempt used) may be replaced; any other wins.
# tests/cards/test_binding_spent.py holds this equal to the model's rule.
_BINDING_CONFLICT = """
    ON CONFLICT (learner_id, card_id, study_day) DO UPDATE SET exercise_id = EXCLUDED.exercise_id
    WHERE cards_exercisebinding.review_id IS NULL AND EXISTS (
        SELECT 1 FROM exercises_exercise spent
        WHERE spent.id = cards_exercisebinding.exercise_id AND spent.attempts_used > 0
    )
    RETURNING card_id, exercise_id
"""
_BINDING_COLUMNS = "exercise_id, learner_id, card_id, study_day, review_id, created_at"
_BINDING_TABLE = ExerciseBinding._meta.db_table


def bind_exercises(
    *, learner: Any, built: list[tuple[int, Exercise]], today: dt.date
) -> dict[int, int]:
    """Store the unsaved variants of ``built`` (``(card_id, exercise)``, seeds unique within
    the batch) and bind each to its card's review on ``today``.

    Returns ``{card_id: exercise_id}`` of the cards whose new variant is bound; a card
    missing from it was bound first by a concurrent request. On SQLite the variants of
    ``built`` get their ``pk``; on PostgreSQL only the bound ones are known, by the answer.
    """
    binding = ExerciseBinding(learner=learner, card_id=0, study_day=today)
    created_at = binding._meta.get_field("created_at").pre_save(binding, True)
    ops = connection.ops
    head = [learner.pk, ops.adapt_datefield_value(today), ops.adapt_datetimefield_value(created_at)]
    return _BIND.here()(built=built, head=head)


def _bind_in_one_statement(*, built: list[tuple[int, Exercise]], head: list[Any]) -> dict[int, int]:
    """PostgreSQL: the variants' ``INSERT`` in a CTE feeding the bindings'. ``head`` is the
    bindings' learner, study day and creation time, as the database takes them."""
    variants = raw_insert(Exercise, [exercise for _, exercise in built])
    # Variants are matched to their cards by seed, unique within the batch.
    pairs = ", ".join(["(%s::bigint, %s::bigint)"] * len(built))
    sql = f"""
        WITH ex AS (
            INSERT INTO {variants.table} ({variants.columns}) VALUES {variants.rows}
            RETURNING id, seed
        ), v(card_id, seed) AS (VALUES {pairs})
        INSERT INTO {_BINDING_TABLE} ({_BINDING_COLUMNS})
        SELECT ex.id, %s, v.card_id, %s, NULL, %s FROM ex JOIN v ON v.seed = ex.seed
        {_BINDING_CONFLICT}
    """
    params = [*variants.params, *[x for card_id, e in built for x in (card_id, e.seed)], *head]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return dict(cursor.fetchall())


def _bind_in_transaction(*, built: list[tuple[int, Exercise]], head: list[Any]) -> dict[int, int]:
    """SQLite: ``bulk_create`` of the variants (which sets their ``pk``), then one ``INSERT``
    of the bindings, in one transaction."""
    with transaction.atomic():
        Exercise.objects.bulk_create([exercise for _, exercise in built])
        rows = ", ".join(["(%s, %s, %s, %s, NULL, %s)"] * len(built))
        params = [x for card_id, e in built for x in (e.pk, head[0], card_id, head[1], head[2])]
        with connection.cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {_BINDING_TABLE} ({_BINDING_COLUMNS}) VALUES {rows} "
                f"{_BINDING_CONFLICT}",
                params,
            )
            return dict(cursor.fetchall())


_BIND = PerDialect(postgresql=_bind_in_one_statement, sqlite=_bind_in_transaction)

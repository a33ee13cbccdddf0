"""Bulk loads of synthetic data (``manage.py seed_load``): the SQL that differs by database.

On PostgreSQL the synthetic review states and logs are placed by one ``INSERT ... SELECT``
each over the synthetic users and cards (``cards.synthetic.states_insert``/``logs_insert``);
on SQLite the same placement runs in Python (``cards.synthetic.placement``/``is_logged``)
and the rows go in as batched raw inserts (``cards.db.inserts.raw_insert``). Either way
rows already there are left alone, so a re-run tops up.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Iterator, Sequence
from itertools import islice

from django.db import connection
from django.db.models import Model

from ..models import Card, ReviewLog, ReviewState
from ..synthetic import (
    is_logged,
    logs_insert,
    placement,
    review_time,
    states_insert,
    synthetic_decks,
    synthetic_users,
)
from .dialect import PerDialect
from .inserts import raw_insert

CHUNK = 10_000

# PostgreSQL defers Django's foreign keys to the COMMIT; SQLite checks them per statement
# already, so it needs no statement.
_CHECK_PER_STATEMENT = PerDialect(postgresql=["SET CONSTRAINTS ALL IMMEDIATE"], sqlite=[])
# Fresh planner statistics for one table; SQLite keeps none unless asked, and none are.
_ANALYZE = PerDialect(postgresql="ANALYZE {table}", sqlite=None)


def check_constraints_per_statement() -> None:
    """Check foreign keys as each statement runs, for the rest of the transaction.

    PostgreSQL defers Django's foreign keys to the COMMIT; checked per statement, each
    phase of a load pays for its own checks. SQLite checks them per statement already.
    """
    with connection.cursor() as cursor:
        for statement in _CHECK_PER_STATEMENT.here():
            cursor.execute(statement)


def refresh_statistics(models: Iterable[type[Model]]) -> None:
    """Fresh planner statistics for the tables of ``models`` after a bulk load.

    PostgreSQL's planner would guess from the empty tables until autovacuum's next
    ANALYZE. SQLite keeps no statistics unless asked, and none are asked for.
    """
    analyze = _ANALYZE.here()
    if analyze is None:
        return
    with connection.cursor() as cursor:
        for model in models:
            cursor.execute(analyze.format(table=model._meta.db_table))


def insert_synthetic_states(
    *,
    user_ids: Sequence[int],
    seed: int,
    due: float,
    today: dt.date,
    steps: tuple[int, ...],
    now: dt.datetime,
) -> int:
    """Place every synthetic learner (``user_ids``) on every synthetic card; a state that
    exists is left alone. Returns how many states were inserted."""
    return _INSERT_STATES.here()(
        user_ids=user_ids, seed=seed, due=due, today=today, steps=steps, now=now
    )


def _states_in_one_statement(
    *,
    user_ids: Sequence[int],
    seed: int,
    due: float,
    today: dt.date,
    steps: tuple[int, ...],
    now: dt.datetime,
) -> int:
    """PostgreSQL: one ``INSERT ... SELECT`` over the synthetic users and cards."""
    with connection.cursor() as cursor:
        cursor.execute(*states_insert(seed=seed, due=due, today=today, steps=steps, now=now))
        return int(cursor.rowcount)


def _states_in_batches(
    *,
    user_ids: Sequence[int],
    seed: int,
    due: float,
    today: dt.date,
    steps: tuple[int, ...],
    now: dt.datetime,
) -> int:
    """SQLite: the placement in Python, the rows in batched raw inserts."""
    card_ids = list(
        Card.objects.filter(deck__in=synthetic_decks()).order_by("id").values_list("id", flat=True)
    )

    def states() -> Iterator[ReviewState]:
        for learner_id in user_ids:
            for card_id in card_ids:
                step, due_on = placement(learner_id, card_id, seed, due, today, steps)
                yield ReviewState(
                    learner_id=learner_id,
                    card_id=card_id,
                    step=step,
                    due_on=due_on,
                    last_reviewed_at=review_time(due_on, steps[step]) if step > 0 else None,
                    created_at=now,
                    updated_at=now,
                )

    return _insert(ReviewState, states(), skip_existing=True)


_INSERT_STATES = PerDialect(postgresql=_states_in_one_statement, sqlite=_states_in_batches)


def insert_synthetic_logs(*, seed: int, fraction: float, steps: tuple[int, ...]) -> int:
    """Log the last review (a pass from ``step - 1``) of a share (``fraction``) of the
    synthetic learners' reviewed states, where the learner has no log for that card yet.
    Returns how many entries were inserted."""
    return _INSERT_LOGS.here()(seed=seed, fraction=fraction, steps=steps)


def _logs_in_one_statement(*, seed: int, fraction: float, steps: tuple[int, ...]) -> int:
    """PostgreSQL: one ``INSERT ... SELECT`` over the synthetic states."""
    with connection.cursor() as cursor:
        cursor.execute(*logs_insert(seed=seed, fraction=fraction, steps=steps))
        return int(cursor.rowcount)


def _logs_in_batches(*, seed: int, fraction: float, steps: tuple[int, ...]) -> int:
    """SQLite: the choice in Python, the rows in batched raw inserts."""
    reviewed = (
        ReviewState.objects.filter(learner__in=synthetic_users(), step__gt=0)
        .exclude(last_reviewed_at=None)
        .values_list("learner_id", "card_id", "step", "due_on", "last_reviewed_at")
    )
    logged = set(
        ReviewLog.objects.filter(learner__in=synthetic_users()).values_list("learner_id", "card_id")
    )

    def logs() -> Iterator[ReviewLog]:
        for learner_id, card_id, step, due_on, reviewed_at in reviewed.iterator(chunk_size=CHUNK):
            if (
                reviewed_at is None
                or (learner_id, card_id) in logged
                or not is_logged(learner_id, card_id, seed, fraction)
            ):
                continue
            day = due_on - dt.timedelta(days=steps[step])
            yield ReviewLog(
                learner_id=learner_id,
                card_id=card_id,
                reviewed_at=reviewed_at,
                study_day=day,
                result=ReviewLog.Result.PASS,
                step_before=step - 1,
                step_after=step,
                interval_days=steps[step],
                due_before=day,
                due_after=due_on,
            )

    return _insert(ReviewLog, logs(), skip_existing=False)


_INSERT_LOGS = PerDialect(postgresql=_logs_in_one_statement, sqlite=_logs_in_batches)


def _insert(model: type[Model], objs: Iterable[Model], *, skip_existing: bool) -> int:
    """Insert ``objs`` in batches as large as the database takes parameters for; with
    ``skip_existing``, a row that breaks a unique constraint is skipped."""
    fields = [f for f in model._meta.concrete_fields if not f.primary_key]
    batch_size = connection.ops.bulk_batch_size(fields, [model()] * CHUNK)
    conflict = " ON CONFLICT DO NOTHING" if skip_existing else ""
    inserted = 0
    remaining = iter(objs)
    with connection.cursor() as cursor:
        while batch := list(islice(remaining, batch_size)):
            rows = raw_insert(model, batch)
            cursor.execute(
                f"INSERT INTO {rows.table} ({rows.columns}) VALUES {rows.rows}{conflict}",
                rows.params,
            )
            inserted += cursor.rowcount
    return inserted

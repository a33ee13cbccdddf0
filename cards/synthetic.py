"""Synthetic learners and decks for load tests, and where their review states sit.

Where a state sits is a deterministic function of (learner id, card id, seed): a
Kronecker (irrational-rotation) sequence, so every learner gets close to exactly the
due fraction of their cards due today or overdue, and the rest spread over the ladder
steps with due dates within the interval of their step. The same formula is written
once in SQL (``PLACEMENT_SQL``) and once in Python (``placement``), and both agree.
"""

from __future__ import annotations

import datetime as dt
import math
from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import QuerySet

from cards.models import Card, Deck, ReviewLog, ReviewState

USER_PREFIX = "load-"
EMAIL_DOMAIN = "@load.invalid"
DECK_PREFIX = "load-deck-"
CARD_TAG = "load-synthetic"
# How many days before today an overdue card may have fallen due.
OVERDUE_SPREAD_DAYS = 7

# Kronecker sequence weights: irrational and independent over the rationals, so for a
# fixed learner the sequence over card ids is equidistributed (plastic-number powers).
_A_LEARNER, _A_CARD, _A_SEED = 0.7548776662466927, 0.5698402909980532, 0.4142135623730950
_B_LEARNER, _B_CARD, _B_SEED = 0.3247179572447460, 0.8191725133961645, 0.7320508075688772
_C_LEARNER, _C_CARD, _C_SEED = 0.6180339887498949, 0.2360679774997897, 0.1415926535897932
# The weights as named parameters of the SQL: ``PLACEMENT_SQL`` takes the first two,
# the query picking which states get a logged review the third.
PLACEMENT_WEIGHTS = {
    "a_l": _A_LEARNER,
    "a_c": _A_CARD,
    "a_s": _A_SEED,
    "b_l": _B_LEARNER,
    "b_c": _B_CARD,
    "b_s": _B_SEED,
}
LOG_WEIGHTS = {"c_l": _C_LEARNER, "c_c": _C_CARD, "c_s": _C_SEED}


def synthetic_users() -> QuerySet[Any]:
    return get_user_model().objects.filter(
        username__startswith=USER_PREFIX, email__endswith=EMAIL_DOMAIN
    )


def synthetic_decks() -> QuerySet[Deck]:
    return Deck.objects.filter(slug__startswith=DECK_PREFIX)


def username_for(i: int) -> str:
    return f"{USER_PREFIX}{i:06d}"


def _frac(x: float) -> float:
    return x - math.floor(x)


def placement(
    learner_id: int,
    card_id: int,
    seed: int,
    due_fraction: float,
    today: dt.date,
    steps: tuple[int, ...],
) -> tuple[int, dt.date]:
    """(step, due_on) of one synthetic state; mirrors ``PLACEMENT_SQL``."""
    u = _frac(learner_id * _A_LEARNER + card_id * _A_CARD + seed * _A_SEED)
    v = _frac(learner_id * _B_LEARNER + card_id * _B_CARD + seed * _B_SEED)
    step = math.floor(v * len(steps))
    if u < due_fraction:
        return step, today - dt.timedelta(days=math.floor(u / due_fraction * OVERDUE_SPREAD_DAYS))
    ahead = (u - due_fraction) / (1.0 - due_fraction)
    return step, today + dt.timedelta(days=1 + math.floor(ahead * steps[step]))


def is_logged(learner_id: int, card_id: int, seed: int, log_fraction: float) -> bool:
    return _frac(learner_id * _C_LEARNER + card_id * _C_CARD + seed * _C_SEED) < log_fraction


# (learner, card, step, due_on) for every synthetic learner × synthetic card; mirrors
# ``placement``. Weights are bound as float8 so PostgreSQL rounds as Python does.
PLACEMENT_SQL = """
    SELECT p.learner_id, p.card_id, p.step,
           CASE WHEN p.u < %(due)s
                THEN %(today)s - floor(p.u / %(due)s * %(spread)s)::int
                ELSE %(today)s + 1
                     + floor((p.u - %(due)s) / (1.0 - %(due)s) * (%(steps)s)[p.step + 1])::int
           END AS due_on
    FROM (
        SELECT k.learner_id, k.card_id, k.x - floor(k.x) AS u,
               floor((k.y - floor(k.y)) * %(nsteps)s)::int AS step
        FROM (
            SELECT u.id AS learner_id, c.id AS card_id,
                   u.id * %(a_l)s + c.id * %(a_c)s + %(seed)s * %(a_s)s AS x,
                   u.id * %(b_l)s + c.id * %(b_c)s + %(seed)s * %(b_s)s AS y
            FROM {user} u
            CROSS JOIN {card} c
            JOIN {deck} d ON d.id = c.deck_id
            WHERE u.username LIKE %(user_like)s AND u.email LIKE %(email_like)s
              AND d.slug LIKE %(deck_like)s
        ) k
    ) p
"""


_SQL_TYPES = {
    "double precision": (
        "due",
        "fraction",
        *PLACEMENT_WEIGHTS,
        *LOG_WEIGHTS,
    ),
    "integer": ("seed", "spread", "nsteps"),
    "integer[]": ("steps",),
    "date": ("today",),
}


def sql_typed(sql: str) -> str:
    """Cast each named parameter, so arithmetic runs in float8 like Python's (not numeric)."""
    for sql_type, names in _SQL_TYPES.items():
        for name in names:
            sql = sql.replace(f"%({name})s", f"CAST(%({name})s AS {sql_type})")
    return sql


def review_time(due_on: dt.date, interval: int) -> dt.datetime:
    """Noon UTC on the day the state was last scheduled, ``interval`` days before ``due_on``."""
    day = due_on - dt.timedelta(days=interval)
    return dt.datetime.combine(day, dt.time(12), tzinfo=dt.UTC)


def states_insert(
    *, seed: int, due: float, today: dt.date, steps: tuple[int, ...], now: dt.datetime
) -> tuple[str, dict[str, Any]]:
    """The statement and parameters placing every synthetic learner × synthetic card
    (PostgreSQL); a state that exists is left alone."""
    select = PLACEMENT_SQL.format(
        user=get_user_model()._meta.db_table,
        card=Card._meta.db_table,
        deck=Deck._meta.db_table,
    )
    sql = f"""
        INSERT INTO {ReviewState._meta.db_table}
            (learner_id, card_id, step, due_on, last_reviewed_at, created_at, updated_at)
        SELECT s.learner_id, s.card_id, s.step, s.due_on,
               CASE WHEN s.step > 0
                    THEN ((s.due_on - (%(steps)s)[s.step + 1]) + time '12:00')
                         AT TIME ZONE 'UTC'
               END,
               %(now)s, %(now)s
        FROM ({select}) s
        ON CONFLICT DO NOTHING
    """
    params = {
        "seed": seed,
        "due": due,
        "today": today,
        "spread": OVERDUE_SPREAD_DAYS,
        "steps": list(steps),
        "nsteps": len(steps),
        "now": now,
        **PLACEMENT_WEIGHTS,
        "user_like": USER_PREFIX + "%",
        "email_like": "%" + EMAIL_DOMAIN,
        "deck_like": DECK_PREFIX + "%",
    }
    return sql_typed(sql), params


def logs_insert(
    *, seed: int, fraction: float, steps: tuple[int, ...]
) -> tuple[str, dict[str, Any]]:
    """The statement and parameters logging the last review of a share of the synthetic
    learners' reviewed states (PostgreSQL); a card they have a log for is left alone."""
    log, state = ReviewLog._meta.db_table, ReviewState._meta.db_table
    sql = f"""
        INSERT INTO {log} (learner_id, card_id, reviewed_at, study_day, result,
                           step_before, step_after, interval_days, due_before, due_after,
                           idempotency_key)
        SELECT s.learner_id, s.card_id, s.last_reviewed_at,
               s.due_on - (%(steps)s)[s.step + 1], 'pass',
               s.step - 1, s.step, (%(steps)s)[s.step + 1],
               s.due_on - (%(steps)s)[s.step + 1], s.due_on, ''
        FROM (
            SELECT st.*, st.learner_id * %(c_l)s + st.card_id * %(c_c)s
                         + %(seed)s * %(c_s)s AS z
            FROM {state} st
            JOIN {get_user_model()._meta.db_table} u ON u.id = st.learner_id
            WHERE u.username LIKE %(user_like)s AND u.email LIKE %(email_like)s
              AND st.step > 0 AND st.last_reviewed_at IS NOT NULL
        ) s
        WHERE s.z - floor(s.z) < %(fraction)s
          AND NOT EXISTS (
              SELECT 1 FROM {log} l
              WHERE l.learner_id = s.learner_id AND l.card_id = s.card_id
          )
    """
    params = {
        "steps": list(steps),
        "seed": seed,
        "fraction": fraction,
        **LOG_WEIGHTS,
        "user_like": USER_PREFIX + "%",
        "email_like": "%" + EMAIL_DOMAIN,
    }
    return sql_typed(sql), params

"""The beat benchmarks' data: synthetic learners over a few time zones, a deck of new cards
and a deck whose one card is long overdue, written by raw SQL into the benchmark's own
PostgreSQL database.

Used by ``benchmarks/bench_beat.py`` (placement, the reminder pass) and
``benchmarks/beat_fanout.py`` (the pass through Celery workers), after ``django.setup()``.
"""

from __future__ import annotations

from benchmarks.pg import sql

ZONES = ["UTC", "Europe/Berlin", "America/New_York", "Asia/Tokyo", "Pacific/Kiritimati"]


def seed(learners: int, cards: int) -> None:
    """``learners`` synthetic users with profiles over a few zones, and a deck of ``cards`` cards."""
    # The benchmark database is the benchmark's own: start from empty study tables.
    sql("TRUNCATE auth_user, cards_deck RESTART IDENTITY CASCADE")
    sql(
        """
        INSERT INTO auth_user (password, is_superuser, username, first_name, last_name, email,
                               is_staff, is_active, date_joined)
        SELECT '!', false, 'bench-' || lpad(g::text, 6, '0'), '', '',
               'bench-' || g || '@bench.invalid', false, true, now()
        FROM generate_series(1, %s) g
        """,
        [learners],
    )
    sql(
        """
        INSERT INTO cards_learnerprofile
            (user_id, timezone, day_starts_at, reminders, reminder_hour, confirmed_email)
        SELECT u.id, (%s::text[])[1 + u.id %% %s], 4, false, 4, u.email
        FROM auth_user u WHERE u.username LIKE 'bench-%%'
        ON CONFLICT (user_id) DO UPDATE SET timezone = EXCLUDED.timezone,
            day_starts_at = 4, reminders = false, reminder_hour = 4,
            confirmed_email = EXCLUDED.confirmed_email
        """,
        [ZONES, len(ZONES)],
    )
    sql(
        "INSERT INTO cards_deck (slug, title, description, created_at, updated_at) "
        "VALUES ('bench-deck', 'Bench', '', now(), now()), ('bench-due', 'Due', '', now(), now())"
    )
    sql(
        """
        INSERT INTO cards_card (deck_id, key, kind, prompt, answer, exercise, position, is_active,
                                created_at, updated_at)
        SELECT d.id, 'c' || g, 'recall', 'Prompt ' || g, '', NULL::jsonb, g, true, now(), now()
        FROM cards_deck d, generate_series(1, %s) g WHERE d.slug = 'bench-deck'
        UNION ALL
        SELECT d.id, 'due', 'recall', 'Overdue', '', NULL::jsonb, 0, true, now(), now()
        FROM cards_deck d WHERE d.slug = 'bench-due'
        """,
        [cards],
    )
    sql("VACUUM ANALYZE")


def enroll_first(learners: int, deck_slug: str) -> None:
    """The first ``learners`` learners enrolled in deck ``deck_slug``."""
    sql(
        """
        INSERT INTO cards_enrollment (learner_id, deck_id, created_at)
        SELECT u.id, d.id, now() FROM auth_user u, cards_deck d
        WHERE u.username LIKE 'bench-%%' AND u.username <= 'bench-' || lpad(%s::text, 6, '0')
          AND d.slug = %s
        ON CONFLICT DO NOTHING
        """,
        [learners, deck_slug],
    )


def enroll_overdue(learners: int) -> None:
    """The first ``learners`` learners enrolled in deck ``bench-due``, its cards long overdue."""
    enroll_first(learners, "bench-due")
    sql(
        """
        INSERT INTO cards_reviewstate (learner_id, card_id, step, due_on, created_at, updated_at)
        SELECT e.learner_id, c.id, 1, DATE '2020-01-01', now(), now()
        FROM cards_enrollment e JOIN cards_card c ON c.deck_id = e.deck_id
        JOIN cards_deck d ON d.id = e.deck_id AND d.slug = 'bench-due'
        ON CONFLICT DO NOTHING
        """
    )


def seed_due_reminders(learners: int) -> None:
    """``learners`` learners, each with one overdue card and a reminder due now."""
    seed(learners, 1)
    enroll_overdue(learners)
    # Every learner's reminder is due whatever the wall clock says.
    sql(
        "UPDATE cards_learnerprofile SET reminders = true, timezone = 'UTC', "
        "day_starts_at = 0, reminder_hour = 0"
    )
    sql("VACUUM ANALYZE")

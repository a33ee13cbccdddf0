"""Benchmark of the beat jobs on PostgreSQL: card placement and a reminder pass, at N and 10N.

    .venv/bin/python benchmarks/bench_beat.py            # N = 1,000 learners x 100 cards
    .venv/bin/python benchmarks/bench_beat.py --learners 500 --cards 50

    REDIS_URL=redis://127.0.0.1:6379/0 .venv/bin/python benchmarks/bench_beat.py --only fanout

Uses ``DATABASE_URL`` (default ``postgres://postgres@127.0.0.1:5432/bench_beat``),
creating and migrating the database if needed, and empties its users and decks
at every run (it is the benchmark's own database). Prints, for each size: wall time,
SQL statements issued, growth of the process's peak RSS (``ru_maxrss``) and the
``tracemalloc`` peak of Python allocations during the job (measured in a second,
identical run, since tracing slows Python down), and for placement the time of
one hand-written ``INSERT ... SELECT`` of the same rows. The fan-out part runs the beat
task against Redis with real workers (``--fanout`` learners, 1 then 2 processes), prints
the speedup and projects a million learners on 8 worker processes.

The data is seeded by ``benchmarks/beat_seed.py``; the fan-out part is
``benchmarks/beat_fanout.py``. ``python -m benchmarks.bench_beat`` runs it too.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import resource
import sys
import time
import tracemalloc
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# Set by ``main`` where the caller has not set them.
ENVIRONMENT = {
    "DATABASE_URL": "postgres://postgres@127.0.0.1:5432/bench_beat",
    "DJANGO_SETTINGS_MODULE": "studyapp.settings",
    "LOG_LEVEL": "WARNING",
    # With DEBUG on, Django keeps the last 9,000 statements in memory: not the job's memory.
    "DJANGO_DEBUG": "0",
    "DJANGO_SECRET_KEY": "benchmark-only",
}
AT = dt.datetime(2026, 3, 2, 12, 0, tzinfo=dt.UTC)


class Meter:
    """Wall time, statements, peak-RSS growth and (optionally) tracemalloc peak of one call."""

    def __init__(self, trace: bool):
        self.trace = trace

    def run(self, fn):
        from django.db import connection

        statements = 0

        def count(execute, sql_, params, many, context):
            nonlocal statements
            statements += 1
            return execute(sql_, params, many, context)

        rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        if self.trace:
            tracemalloc.start()
        with connection.execute_wrapper(count):
            started = time.perf_counter()
            result = fn()
            seconds = time.perf_counter() - started
        peak = 0
        if self.trace:
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
        rss_growth = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before
        return result, seconds, statements, rss_growth, peak


# The pace by hand: learners who reviewed today, their waiting cards in line order up
# to their allowance.
HAND_PLACEMENT = """
    WITH g AS (
        SELECT p.user_id, p.new_cards_per_day AS allowance,
               ((%s::timestamptz AT TIME ZONE p.timezone)
                - make_interval(hours => p.day_starts_at))::date AS day
        FROM cards_learnerprofile p
    )
    INSERT INTO cards_reviewstate
        (learner_id, card_id, step, due_on, placed_on, created_at, updated_at)
    SELECT learner_id, card_id, 0, day + 1, day, now(), now() FROM (
        SELECT e.learner_id, c.id AS card_id, g.day, g.allowance,
               ROW_NUMBER() OVER (PARTITION BY e.learner_id
                                  ORDER BY e.created_at, e.id, c.position, c.id) AS rn
        FROM g
        JOIN cards_reviewday d ON d.learner_id = g.user_id AND d.study_day = g.day
        JOIN cards_enrollment e ON e.learner_id = g.user_id
        JOIN cards_card c ON c.deck_id = e.deck_id AND c.is_active
        WHERE NOT EXISTS (SELECT 1 FROM cards_reviewstate s
                          WHERE s.learner_id = e.learner_id AND s.card_id = c.id)
    ) ranked
    WHERE rn <= allowance
    ON CONFLICT (learner_id, card_id) DO NOTHING
"""


def reviewed_today(cards: int) -> None:
    """Every learner reviewed on AT's study day, with room for the whole deck in a day."""
    from benchmarks.pg import sql

    sql("UPDATE cards_learnerprofile SET new_cards_per_day = %s", [max(cards, 1)])
    sql(
        """
        INSERT INTO cards_reviewday (learner_id, study_day, reviews, passes)
        SELECT p.user_id,
               ((%s::timestamptz AT TIME ZONE p.timezone)
                - make_interval(hours => p.day_starts_at))::date, 1, 1
        FROM cards_learnerprofile p
        ON CONFLICT (learner_id, study_day) DO NOTHING
        """,
        [AT],
    )


def bench_placement(learners: int, cards: int) -> None:
    from benchmarks.beat_seed import enroll_first
    from benchmarks.pg import sql
    from cards.services.scheduling import schedule_new_cards

    enroll_first(learners, "bench-deck")
    reviewed_today(cards)
    sql("ANALYZE")
    delete = "DELETE FROM cards_reviewstate s USING cards_card c WHERE c.id = s.card_id AND c.deck_id = (SELECT id FROM cards_deck WHERE slug = 'bench-deck')"

    def reset() -> None:
        sql(delete)

    # The same rows by one hand-written statement, due dates from the same zones.
    reset()
    # Best of two alternating runs of each, so neither profits from the other's warm cache.
    seconds = hand_seconds = float("inf")
    rss = 0
    for _ in range(2):
        reset()
        started = time.perf_counter()
        assert sql(HAND_PLACEMENT, [AT]) == learners * cards
        hand_seconds = min(hand_seconds, time.perf_counter() - started)
        reset()
        placed, run_seconds, statements, run_rss, _ = Meter(trace=False).run(
            lambda: schedule_new_cards(at=AT)
        )
        rss += run_rss
        assert placed == learners * cards, placed
        seconds = min(seconds, run_seconds)

    reset()
    _, _, _, _, peak = Meter(trace=True).run(lambda: schedule_new_cards(at=AT))
    rerun, rerun_seconds, rerun_statements, _, _ = Meter(trace=False).run(
        lambda: schedule_new_cards(at=AT)
    )
    assert rerun == 0
    print(
        f"  place {placed:>9,} states ({learners:,} learners x {cards} cards): "
        f"{seconds:6.2f} s, {statements} statements, maxrss +{rss / 1024:.1f} MiB, "
        f"tracemalloc peak {peak / 2**20:.2f} MiB; hand-written INSERT ... SELECT "
        f"{hand_seconds:6.2f} s (ratio {seconds / hand_seconds:.2f}); "
        f"idempotent rerun {rerun_seconds:.2f} s, {rerun_statements} statements"
    )


def bench_reminders(learners: int) -> None:
    from django.conf import settings

    from benchmarks.beat_seed import enroll_overdue
    from benchmarks.mail import CountingBackend
    from benchmarks.pg import sql
    from cards.services.reminders import reminder_pass_here

    settings.EMAIL_BACKEND = "benchmarks.mail.CountingBackend"
    enroll_overdue(learners)
    sql("ANALYZE")
    sql(
        """
        UPDATE cards_learnerprofile p SET reminders = (u.username <= 'bench-' || lpad(%s::text, 6, '0'))
        FROM auth_user u WHERE u.id = p.user_id AND u.username LIKE 'bench-%%'
        """,
        [learners],
    )
    reset = "DELETE FROM cards_reminder"

    sql(reset)
    CountingBackend.sent = 0
    sent, seconds, statements, rss, _ = Meter(trace=False).run(lambda: reminder_pass_here(at=AT))
    assert sent == learners == CountingBackend.sent, (sent, CountingBackend.sent)
    sql(reset)
    _, _, _, _, peak = Meter(trace=True).run(lambda: reminder_pass_here(at=AT))
    rerun, rerun_seconds, rerun_statements, _, _ = Meter(trace=False).run(
        lambda: reminder_pass_here(at=AT)
    )
    assert rerun == 0
    print(
        f"  remind {sent:>8,} learners: {seconds:6.2f} s ({sent / seconds:,.0f} e-mails/s), "
        f"{statements} statements, maxrss +{rss / 1024:.1f} MiB, tracemalloc peak "
        f"{peak / 2**20:.2f} MiB; rerun {rerun_seconds:.2f} s, {rerun_statements} statements"
    )


def warm_up_mail() -> None:
    """Build one reminder first, so one-time imports do not count as the first size's memory."""
    from django.contrib.auth import get_user_model

    from cards.services.reminder_claims import ReminderClaim
    from cards.services.reminders import reminder_message

    learner = get_user_model()(username="warm-up", email="warm-up@bench.invalid")
    claim = ReminderClaim(reminder_id=0, learner_id=0, study_day=AT.date(), due_count=1)
    reminder_message(learner=learner, claim=claim).message().as_bytes()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--learners", type=int, default=1000, help="N; the second size is 10N")
    parser.add_argument("--cards", type=int, default=100, help="new cards per learner")
    parser.add_argument(
        "--only", choices=["placement", "reminders", "fanout"], help="run one part only"
    )
    parser.add_argument(
        "--fanout",
        type=int,
        default=100_000,
        help="learners of the reminder pass through Celery workers on Redis",
    )
    args = parser.parse_args()

    if str(REPO) not in sys.path:  # run as a script, benchmarks/bench_beat.py
        sys.path.insert(0, str(REPO))
    for name, value in ENVIRONMENT.items():
        os.environ.setdefault(name, value)
    from benchmarks.pg import ensure_database

    ensure_database("bench_beat")
    import django

    django.setup()
    from django.core.management import call_command

    from benchmarks.beat_seed import seed

    call_command("migrate", verbosity=0)
    sizes = [args.learners, 10 * args.learners]
    if args.only in (None, "placement", "reminders"):
        print(f"Seeding {sizes[-1]:,} learners and {args.cards} cards ...")
        seed(sizes[-1], args.cards)
    if args.only in (None, "placement"):
        print("schedule_new_cards (one pass over every enrolment):")
        for n in sizes:
            bench_placement(n, args.cards)
    if args.only in (None, "reminders"):
        print("reminder_pass_here in one process (one pass, every learner due):")
        warm_up_mail()
        for n in sizes:
            bench_reminders(n)
    if args.only in (None, "fanout"):
        from benchmarks.beat_fanout import bench_fanout

        print("reminder_pass_here fanned out to Celery workers (Redis), every learner due:")
        bench_fanout(args.fanout)


if __name__ == "__main__":
    main()

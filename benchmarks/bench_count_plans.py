"""Benchmark: does a bulk statement slow the single writes after it in the same session?

    .venv/bin/python benchmarks/bench_count_plans.py
    .venv/bin/python benchmarks/bench_count_plans.py --bulk 100000 --singles 300 --rounds 3

PL/pgSQL keeps one plan per statement of a trigger function for the whole session, made
for the transition tables it first met. The item analysis's triggers plan bulk statements
afresh for that reason (``cards/db/counts.py``, "Plans sized for the statement"). This
checks the two older count triggers, which keep every plan: ``ReviewStateCount`` (on
``cards_reviewstate``) and ``LapseCount`` (on ``cards_reviewlog``). For each it times
``--singles`` single writes, each committed, in a fresh session and in a session whose
first write through the trigger was one statement of ``--bulk`` rows (rolled back), and
prints the medians and their ratio, ``--rounds`` times. A ratio near 1 means the plan
kept from the bulk statement serves single writes as well as one made for them.

Uses ``DATABASE_URL`` (default ``postgres://postgres@127.0.0.1:5432/bench_count_plans``),
creating and migrating the database if needed; it empties its users and decks at every
run (it is the benchmark's own database). The LearnerCardFigures triggers are disabled
during the log series, so the figures show LapseCount alone.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.pg import prepare, sql  # noqa: E402

LEARNERS = 2000
CARDS = 1000
STATE_CARDS = 50  # each learner holds a state for the first 50 cards

LOG_COLUMNS = (
    "learner_id, card_id, reviewed_at, study_day, result, step_before, step_after, "
    "interval_days, due_before, due_after, idempotency_key, answer_text"
)
SINGLE_LOG = f"""
    INSERT INTO cards_reviewlog ({LOG_COLUMNS})
    VALUES (%s, %s, now(), date '2026-03-01', 'fail', 0, 0, 1, date '2026-03-01',
            date '2026-03-02', 'single', '')
"""
BULK_LOG = f"""
    INSERT INTO cards_reviewlog ({LOG_COLUMNS})
    SELECT 1 + g %% {LEARNERS}, {STATE_CARDS} + 1 + g %% ({CARDS} - {STATE_CARDS}), now(),
           date '2026-03-01', 'fail', 0, 0, 1, date '2026-03-01', date '2026-03-02', 'bulk', ''
    FROM generate_series(1, %s) g
"""
SINGLE_STATE = """
    UPDATE cards_reviewstate SET step = (step + 1) %% 5, due_on = due_on + 1
    WHERE learner_id = %s AND card_id = %s
"""
BULK_STATE = """
    UPDATE cards_reviewstate SET step = (step + 1) %% 5, due_on = due_on + 1
    WHERE id IN (SELECT id FROM cards_reviewstate ORDER BY id LIMIT %s)
"""
LOG_FIGURES_TRIGGERS = [
    f"cards_learnercardfigures_{event}" for event in ("insert", "update", "delete")
]


def seed() -> None:
    sql("TRUNCATE auth_user, cards_deck, cards_tag RESTART IDENTITY CASCADE")
    sql(
        """
        INSERT INTO auth_user (password, is_superuser, username, first_name, last_name,
            email, is_staff, is_active, date_joined)
        SELECT '', false, 'learner' || g, '', '', '', false, true, now()
        FROM generate_series(1, %s) g
        """,
        [LEARNERS],
    )
    sql(
        "INSERT INTO cards_deck (slug, title, description, created_at, updated_at) "
        "VALUES ('plans', 'Plans', '', now(), now())"
    )
    sql(
        """
        INSERT INTO cards_card (deck_id, key, kind, prompt, answer, position, is_active,
            created_at, updated_at, lab, points)
        SELECT 1, 'card-' || g, 'recall', 'Prompt', 'Answer', g, true, now(), now(), NULL, '[]'
        FROM generate_series(1, %s) g
        """,
        [CARDS],
    )
    sql(
        """
        INSERT INTO cards_reviewstate (learner_id, card_id, step, due_on, created_at,
            updated_at, suspended, scheduled)
        SELECT l, c, 0, date '2026-03-01', now(), now(), false, true
        FROM generate_series(1, %s) l, generate_series(1, %s) c
        """,
        [LEARNERS, STATE_CARDS],
    )
    sql("ANALYZE")


def connect():
    import psycopg
    from django.db import connection

    params = connection.get_connection_params()
    return psycopg.connect(
        **{k: v for k, v in params.items() if k in {"host", "port", "user", "password", "dbname"}},
        autocommit=True,
    )


def singles(conn, statement: str, count: int) -> float:
    """Median seconds of one write, each in its own transaction."""
    times = []
    for i in range(count):
        started = time.perf_counter()
        with conn.transaction():
            conn.execute(statement, [1 + (i * 7) % LEARNERS, 1 + i % STATE_CARDS])
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def series(single: str, bulk: str, *, bulk_rows: int, count: int) -> tuple[float, float]:
    """Medians of ``count`` single writes in a fresh session, and after one bulk write."""
    medians = []
    for after_bulk in (False, True):
        conn = connect()
        try:
            if after_bulk:
                # The bulk statement fires the trigger first: its plans are made here.
                conn.execute("BEGIN")
                conn.execute(bulk, [bulk_rows])
                conn.execute("ROLLBACK")
            medians.append(singles(conn, single, count))
            conn.execute("DELETE FROM cards_reviewlog WHERE idempotency_key = 'single'")
        finally:
            conn.close()
    return medians[0], medians[1]


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bulk", type=int, default=100_000, help="Rows of the bulk statement.")
    parser.add_argument("--singles", type=int, default=300, help="Single writes per series.")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if not 0 < args.bulk <= LEARNERS * STATE_CARDS:
        parser.error(f"--bulk must be between 1 and {LEARNERS * STATE_CARDS}")

    prepare("bench_count_plans")
    seed()
    print(
        f"{LEARNERS} learners, {CARDS} cards, {LEARNERS * STATE_CARDS} review states; "
        f"bulk statements of {args.bulk} rows; median of {args.singles} single writes"
    )
    for round_ in range(1, args.rounds + 1):
        for name in LOG_FIGURES_TRIGGERS:
            sql(f"ALTER TABLE cards_reviewlog DISABLE TRIGGER {name}")
        try:
            log = series(SINGLE_LOG, BULK_LOG, bulk_rows=args.bulk, count=args.singles)
        finally:
            for name in LOG_FIGURES_TRIGGERS:
                sql(f"ALTER TABLE cards_reviewlog ENABLE TRIGGER {name}")
        state = series(SINGLE_STATE, BULK_STATE, bulk_rows=args.bulk, count=args.singles)
        for label, (fresh, after) in (
            ("log insert (LapseCount)", log),
            ("state update (ReviewStateCount)", state),
        ):
            print(
                f"round {round_}: {label:<33} fresh session {fresh * 1000:.2f} ms, "
                f"after the bulk statement {after * 1000:.2f} ms ({after / fresh:.2f}x)"
            )
        print(f"round {round_}: load average {loadavg()}")


if __name__ == "__main__":
    main()

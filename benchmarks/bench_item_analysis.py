"""Benchmark of the staff's item analysis on PostgreSQL at 1,000 learners x 1,000 cards x 30 days.

    .venv/bin/python benchmarks/bench_item_analysis.py
    .venv/bin/python benchmarks/bench_item_analysis.py --sizes 100,1000,3000
    .venv/bin/python benchmarks/bench_item_analysis.py --learners 200 --per-day 20

Uses ``DATABASE_URL`` (default ``postgres://postgres@127.0.0.1:5432/bench_item_analysis``),
creating and migrating the database if needed, and empties its users and decks at every
run (it is the benchmark's own database). The log holds ``--per-day`` reviews per learner
per day for ``--days`` days over the cards (1,000 x 40 x 30 = 1.2 million rows by default),
failure rates that differ by card, 1 % of reviews undone, 2,000 reports, and 20,000
exercise attempts with per-part verdicts and diagnoses. The log is written with the
database's triggers in place, so the item analysis's figures (``CardFigures``) are kept
as it is written. For each page of the admin it prints the median wall time of 5 runs
of ``card_analysis`` (the kept figures) and of 3 runs of the same page grouped from the
whole log at read time (``benchmarks/item_analysis_from_log.py``, how the page read
before), their ratio and the SQL statements of each, and stops if the two disagree; the
same for the exercise kinds page (``ExerciseKindFigures`` against every attempt's JSON);
then what the triggers add to one review's log insert, and the load average. It does
so at a tenth of the learners first (or at each of ``--sizes``), to show the statements
stay constant and how the time grows with the log.
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

MISTAKE_CODES = ["no_scale", "scale_by_d_model", "no_mask", "mask_after_softmax"]
KINDS = ["attention", "causal", "projection", "multi_head"]


def seed(*, learners: int, cards: int, days: int, per_day: int, decks: int) -> dict[str, int]:
    sql("TRUNCATE auth_user, cards_deck, cards_tag RESTART IDENTITY CASCADE")
    sql("TRUNCATE cards_reviewlog, exercises_exercise RESTART IDENTITY CASCADE")
    seed_learners_and_cards(learners=learners, cards=cards, decks=decks)
    rows, undos = seed_log(cards=cards, days=days, per_day=per_day)
    reports = sql(
        """
        INSERT INTO cards_report (learner_id, card_id, exercise_id, text, resolved, created_at)
        SELECT 1 + g %% %s, 1 + (g * 13) %% %s, NULL, 'Report ' || g, g %% 3 = 0, now()
        FROM generate_series(1, 2000) g
        """,
        [learners, cards],
    )
    attempts = seed_attempts(learners=learners)
    sql("ANALYZE")
    return {"log rows": rows + undos, "undos": undos, "reports": reports, "attempts": attempts}


def seed_learners_and_cards(*, learners: int, cards: int, decks: int) -> None:
    sql(
        """
        INSERT INTO auth_user (password, is_superuser, username, first_name, last_name, email,
                               is_staff, is_active, date_joined)
        SELECT '!', false, 'bench-' || lpad(g::text, 6, '0'), '', '', '', false, true, now()
        FROM generate_series(1, %s) g
        """,
        [learners],
    )
    sql(
        """
        INSERT INTO cards_deck (slug, title, description, created_at, updated_at)
        SELECT 'deck-' || g, 'Deck ' || g, '', now(), now() FROM generate_series(1, %s) g
        """,
        [decks],
    )
    sql(
        """
        INSERT INTO cards_card (deck_id, key, kind, prompt, answer, exercise, position,
                                is_active, created_at, updated_at)
        SELECT 1 + (g - 1) %% %s, 'card-' || g,
               CASE WHEN g %% 10 = 0 THEN 'interview' ELSE 'recall' END,
               'Prompt ' || g, 'Answer ' || g, NULL, g, true, now(), now()
        FROM generate_series(1, %s) g
        """,
        [decks, cards],
    )
    sql("INSERT INTO cards_tag (name) VALUES ('softmax'), ('masks')")
    sql(
        "INSERT INTO cards_card_tags (card_id, tag_id) "
        "SELECT id, 1 + id %% 2 FROM cards_card WHERE id %% 5 = 0"
    )


def seed_log(*, cards: int, days: int, per_day: int) -> tuple[int, int]:
    """The review log, 1 % of it undone; returns the reviews and the undos written."""
    # Each learner reviews per_day cards a day; card c fails with probability 5 + c %% 30 %.
    rows = sql(
        """
        INSERT INTO cards_reviewlog (learner_id, card_id, reviewed_at, study_day, result,
            step_before, step_after, interval_days, due_before, due_after, idempotency_key)
        SELECT u.id, r.card_id,
               timestamp with time zone '2026-01-01 08:00+00' + make_interval(days => d, secs => k),
               date '2026-01-01' + d,
               CASE WHEN ((u.id * 7919 + r.card_id * 104729 + d * 13) %% 100)
                         < 5 + r.card_id %% 30 THEN 'fail' ELSE 'pass' END,
               0, 0, 1, date '2026-01-01' + d, date '2026-01-02' + d, ''
        FROM auth_user u
        CROSS JOIN generate_series(0, %s - 1) d
        CROSS JOIN generate_series(0, %s - 1) k
        CROSS JOIN LATERAL (SELECT 1 + ((u.id * 37 + d * %s + k) %% %s) AS card_id) r
        """,
        [days, per_day, per_day, cards],
    )
    undos = sql(
        """
        INSERT INTO cards_reviewlog (learner_id, card_id, reviewed_at, study_day, result,
            step_before, step_after, interval_days, due_before, due_after, idempotency_key,
            undo_of_id)
        SELECT learner_id, card_id, reviewed_at + interval '5 seconds', study_day, result,
               step_after, step_before, 1, due_after, due_before, '', id
        FROM cards_reviewlog WHERE id %% 100 = 0
        """
    )
    from cards.services.review_days import review_days_rebuild

    review_days_rebuild()  # the per-day counts that stats/ reads follow the log
    return rows, undos


def seed_attempts(*, learners: int) -> int:
    """20,000 exercises with one attempt each, with per-part verdicts and diagnoses."""
    sql(
        """
        INSERT INTO exercises_exercise (owner_id, kind, prompt, params, seed, inputs, asks,
            solution, rtol, atol, max_attempts, attempts_used, solved, created_at)
        SELECT 1 + g %% %s, (%s::text[])[1 + g %% 4], '', '{}'::jsonb, g, '{}'::jsonb,
               '[]'::jsonb, '{}'::jsonb, 0.01, 0.005, 3, 1, g %% 3 = 0, now()
        FROM generate_series(1, 20000) g
        """,
        [learners, KINDS],
    )
    return sql(
        """
        INSERT INTO exercises_attempt (exercise_id, number, answers, correct, score, result,
                                       created_at)
        SELECT e.id, 1, '{}'::jsonb, e.id %% 3 = 0, 0.5,
               jsonb_build_object(
                   'correct', e.id %% 3 = 0,
                   'parts', jsonb_build_object(
                       'weights', jsonb_build_object(
                           'correct', e.id %% 3 = 0,
                           'wrong_cells', CASE WHEN e.id %% 3 = 0 THEN '[]'::jsonb ELSE
                               jsonb_build_array(jsonb_build_array(e.id %% 4, (e.id / 4) %% 4),
                                                 jsonb_build_array(0, e.id %% 4)) END),
                       'output', jsonb_build_object(
                           'correct', e.id %% 2 = 0,
                           'wrong_cells', CASE WHEN e.id %% 2 = 0 THEN '[]'::jsonb ELSE
                               jsonb_build_array(jsonb_build_array(e.id %% 3, 1)) END)),
                   'diagnosis', CASE WHEN e.id %% 3 = 0 THEN '[]'::jsonb ELSE
                       jsonb_build_array(jsonb_build_object(
                           'code', (%s::text[])[1 + e.id %% 4], 'parts',
                           jsonb_build_array('weights'))) END),
               now()
        FROM exercises_exercise e
        """,
        [MISTAKE_CODES],
    )


PAGES = [
    ("cards, sorted by lapses (first page)", {"order": "-lapses"}),
    ("cards, sorted by first-review pass rate", {"order": "first_pass_rate"}),
    ("cards, one deck", {"deck": "deck-1", "order": "-leeches"}),
    ("cards, one tag", {"tag": "softmax", "order": "-reviews"}),
    ("cards, one kind (interview)", {"kind": "interview", "order": "-lapses"}),
    ("cards, last page", {"order": "card", "offset": 950}),
]


def measure(fn, runs: int = 5) -> tuple[float, int, object]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    times = []
    statements = 0
    result = None
    for _ in range(runs):
        with CaptureQueriesContext(connection) as queries:
            started = time.perf_counter()
            result = fn()
            times.append(time.perf_counter() - started)
        # Transaction control (BEGIN, COMMIT) is logged too; count the statements proper.
        statements = sum(1 for q in queries if q["sql"].strip().upper() not in ("BEGIN", "COMMIT"))
    return statistics.median(times), statements, result


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def review_write_cost(runs: int = 200) -> tuple[float, float]:
    """Median seconds of one review's log insert, each committed, with the item analysis's
    triggers and with them disabled: what keeping the figures costs a review. The rows
    written are deleted after each series (with the triggers on: they recount the pairs
    from the log, so the figures stay exact)."""
    from django.db import connection, transaction

    insert = """
        INSERT INTO cards_reviewlog (learner_id, card_id, reviewed_at, study_day, result,
            step_before, step_after, interval_days, due_before, due_after, idempotency_key)
        VALUES (%s, %s, now(), date '2026-03-01', %s, 0, 1, 3, date '2026-03-01',
                date '2026-03-04', 'write-cost')
    """
    triggers = [f"cards_learnercardfigures_{event}" for event in ("insert", "update", "delete")]

    def series(enabled: bool) -> float:
        with connection.cursor() as cursor:
            if not enabled:
                for name in triggers:
                    cursor.execute(f"ALTER TABLE cards_reviewlog DISABLE TRIGGER {name}")
            times = []
            for i in range(runs):
                started = time.perf_counter()
                with transaction.atomic():
                    cursor.execute(
                        insert, [1 + i % 50, 1 + (i * 7) % 500, "fail" if i % 4 else "pass"]
                    )
                times.append(time.perf_counter() - started)
            for name in triggers:
                cursor.execute(f"ALTER TABLE cards_reviewlog ENABLE TRIGGER {name}")
            cursor.execute("DELETE FROM cards_reviewlog WHERE idempotency_key = 'write-cost'")
        return statistics.median(times)

    return series(True), series(False)


def run(args, learners: int) -> dict[str, tuple[float, float]]:
    from benchmarks.item_analysis_from_log import (
        card_analysis_from_log,
        exercise_kind_analysis_from_attempts,
    )
    from cards import item_analysis

    started = time.perf_counter()
    counts = seed(
        learners=learners,
        cards=args.cards,
        days=args.days,
        per_day=args.per_day,
        decks=args.decks,
    )
    print(
        f"\n{learners} learners x {args.cards} cards x {args.days} days: "
        + ", ".join(f"{v:,} {k}" for k, v in counts.items())
        + f" (seeded in {time.perf_counter() - started:.1f} s, the figures kept as the log"
        " was written)"
    )
    print(f"  load average before: {loadavg()}")
    print(f"  {'page':<44} {'kept':>9} {'from log':>10} {'ratio':>7}  statements (kept / from log)")
    figures = {}
    for label, options in PAGES:
        kept, kept_statements, kept_rows = measure(
            lambda options=options: item_analysis.card_analysis(**options)
        )
        old, old_statements, old_rows = measure(
            lambda options=options: card_analysis_from_log(**options), runs=args.baseline_runs
        )
        if kept_rows != old_rows:
            sys.exit(f"{label}: the kept figures differ from the log's")
        figures[label] = (kept, old)
        print(
            f"  {label:<44} {kept * 1000:7.1f} ms {old * 1000:8.1f} ms {old / kept:6.0f}x"
            f"  {kept_statements} / {old_statements}"
        )
    kept, kept_statements, kept_kinds = measure(item_analysis.exercise_kind_analysis)
    old, old_statements, old_kinds = measure(
        exercise_kind_analysis_from_attempts, runs=args.baseline_runs
    )
    if kept_kinds != old_kinds:
        sys.exit("exercise kinds: the kept counts differ from the attempts'")
    label = "exercise kinds (mistakes, wrong cells)"
    figures[label] = (kept, old)
    print(
        f"  {label:<44} {kept * 1000:7.1f} ms {old * 1000:8.1f} ms {old / kept:6.0f}x"
        f"  {kept_statements} / {old_statements}"
    )
    kept, bare = review_write_cost()
    print(
        f"  one review's log insert, committed: {kept * 1000:.2f} ms with the figures'"
        f" triggers, {bare * 1000:.2f} ms without (median of 200)"
    )
    print(f"  load average after: {loadavg()}")
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--learners", type=int, default=1000)
    parser.add_argument(
        "--sizes",
        type=lambda text: [int(n) for n in text.split(",")],
        help="Learner counts to seed in turn (default: a tenth of --learners, then --learners).",
    )
    parser.add_argument("--cards", type=int, default=1000)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--per-day", type=int, default=40, help="Reviews per learner per day.")
    parser.add_argument("--decks", type=int, default=10)
    parser.add_argument(
        "--baseline-runs", type=int, default=3, help="Runs of each page grouped from the log."
    )
    args = parser.parse_args()

    prepare("bench_item_analysis")
    from django.conf import settings

    settings.DEBUG = False
    sizes = args.sizes or [max(args.learners // 10, 1), args.learners]
    results = {size: run(args, size) for size in sizes}
    small, large = sizes[0], sizes[-1]
    print(
        f"\nTime ratio at {large} vs {small} learners "
        f"({large / small:g}x the log; statements per page unchanged), kept / from log:"
    )
    for label in results[large]:
        kept = results[large][label][0] / results[small][label][0]
        old = results[large][label][1] / results[small][label][1]
        print(f"  {label:<44} x{kept:.1f} / x{old:.1f}")


if __name__ == "__main__":
    main()

"""Benchmarks of the memory figures: fitting, stats/memory/, the weekly refresh, and the
full-size synthetic learner.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench_memory \\
        .venv/bin/python benchmarks/bench_memory.py
    .venv/bin/python benchmarks/bench_memory.py --only fit,stats
    .venv/bin/python benchmarks/bench_memory.py --refresh-learners 2000

Uses ``DATABASE_URL`` (default ``postgres://postgres@127.0.0.1:5432/bench_memory``),
created and migrated when missing, and empties its users and decks before each part (it
is the benchmark's own database). The parts:

* ``fit``: one learner with 5,000 reviews (250 cards, recall from a known FSRS model).
  The median of 5 runs of one fit (``cards.memory.fit``), and of 3 runs of the service's
  first fit of the learner (``fit_learner``: the log read, three fits at its cuts,
  the row written).
* ``stats``: ``GET stats/memory/`` for a learner with 100,000 reviews of 2,000 cards, as
  the defaults and with three stored fits (the calibration then replays the log once per
  fit), through Django's test client: median and slowest of 7 after one warm-up.
* ``refresh``: the weekly refresh of ``--refresh-learners`` learners (10,000 by
  default; one in ten with 500 reviews, who are fitted, the others with 40, who are not),
  through ``refresh_memory_parameters`` and its chunks run in this process (Celery
  eager, as one worker would run them), twice: the second run finds nothing new.
* ``synthetic``: the 2,000-review synthetic learner of
  ``tests/cards/test_memory_synthetic.py`` through the review path, with the figures
  behind the suite's checks.
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


def empty() -> None:
    sql("TRUNCATE auth_user, cards_deck, cards_tag RESTART IDENTITY CASCADE")
    sql("TRUNCATE cards_reviewlog, cards_memoryparameters RESTART IDENTITY CASCADE")


def seed(*, learners: int, cards: int, reviews_per_card: int, first_learner: int = 1) -> int:
    """Learners ``first_learner`` on, each with every card of one deck on their ladder and
    ``reviews_per_card`` kept reviews of each: card c every 1 + c % 9 days, passed
    about 88 % of the time. Returns the log rows written."""
    sql(
        """
        INSERT INTO auth_user (id, password, is_superuser, username, first_name, last_name,
                               email, is_staff, is_active, date_joined)
        SELECT g, '!', false, 'bench-' || g, '', '', '', false, true, now()
        FROM generate_series(%s::int, %s::int) g
        """,
        [first_learner, first_learner + learners - 1],
    )
    sql(
        """
        INSERT INTO cards_deck (slug, title, description, created_at, updated_at)
        VALUES ('memory', 'Memory', '', now(), now()) ON CONFLICT DO NOTHING
        """
    )
    sql(
        """
        INSERT INTO cards_card (deck_id, key, kind, prompt, answer, exercise, position,
                                is_active, created_at, updated_at)
        SELECT (SELECT id FROM cards_deck WHERE slug = 'memory'), 'card-' || g, 'recall',
               'P' || g, 'A' || g, NULL, g, true, now(), now()
        FROM generate_series((SELECT count(*) FROM cards_card)::int + 1, %s::int) g
        """,
        [cards],
    )
    sql(
        """
        INSERT INTO cards_reviewstate (learner_id, card_id, step, due_on, created_at,
                                       updated_at, suspended, scheduled)
        SELECT u.g, c.id, 2, current_date + (c.id %% 7)::int, now(), now(), false, true
        FROM generate_series(%s::int, %s::int) u(g)
        CROSS JOIN (SELECT id FROM cards_card WHERE id <= %s) c
        """,
        [first_learner, first_learner + learners - 1, cards],
    )
    # No count triggers while the log is written (this session only): minutes at a million.
    sql("SET session_replication_role = replica")
    rows = sql(
        """
        INSERT INTO cards_reviewlog (learner_id, card_id, reviewed_at, study_day, result,
            step_before, step_after, interval_days, due_before, due_after, idempotency_key)
        SELECT u.g, c.id,
               timestamptz '2025-01-01 12:00+00' + make_interval(days => (k * (1 + c.id %% 9))::int,
                                                                 secs => c.id::int),
               date '2025-01-01' + (k * (1 + c.id %% 9))::int,
               CASE WHEN ((u.g * 7919 + c.id * 104729 + k * 13) %% 100) < 12
                    THEN 'fail' ELSE 'pass' END,
               0, 0, 1, date '2025-01-01', date '2025-01-02', ''
        FROM generate_series(%s::int, %s::int) u(g)
        CROSS JOIN (SELECT id FROM cards_card WHERE id <= %s) c
        CROSS JOIN generate_series(0, %s::int - 1) k
        """,
        [first_learner, first_learner + learners - 1, cards, reviews_per_card],
    )
    sql("SET session_replication_role = DEFAULT")
    return rows


def median_of(fn, runs: int) -> tuple[float, float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), max(times)


def cpu_median_of(fn, runs: int) -> float:
    """This process's CPU time (the database's own time left out): steadier than the
    wall time on a machine shared with other work."""
    times = []
    for _ in range(runs):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return statistics.median(times)


def bench_fit() -> None:
    import datetime as dt

    from django.utils import timezone

    from cards import memory
    from cards.services.memory import fit_learner, learner_log

    empty()
    rows = seed(learners=1, cards=250, reviews_per_card=20)
    sql("ANALYZE")
    log = learner_log(learner_id=1)
    one, _ = median_of(lambda: memory.fit(log.cards, log.days, log.passed), 5)

    def first_fit():
        sql("DELETE FROM cards_memoryparameters")
        assert fit_learner(learner_id=1, at=timezone.now() + dt.timedelta(days=1))

    service, slowest = median_of(first_fit, 3)
    print(f"fit, one learner with {rows:,} reviews:")
    print(f"  memory.fit (one fit):           median {one * 1000:7.1f} ms")
    print(
        f"  fit_learner (read, 3 fits, write): median {service * 1000:7.1f} ms, slowest {slowest * 1000:.1f} ms"
    )


def bench_stats() -> None:
    import datetime as dt

    from django.test import Client
    from django.utils import timezone

    from cards.models import MemoryParameters
    from cards.services.memory import fit_learner

    empty()
    rows = seed(learners=1, cards=2000, reviews_per_card=50)
    sql("ANALYZE")
    from django.contrib.auth import get_user_model

    client = Client()
    client.force_login(get_user_model().objects.get(pk=1))

    def get():
        response = client.get("/api/v1/stats/memory/", secure=True)
        assert response.status_code == 200, response.content[:200]

    from django.core.cache.backends.dummy import DummyCache

    from cards.services import memory as memory_service

    kept_cache = getattr(memory_service, "cache")  # noqa: B009  (swapped below)
    print(f"stats/memory/, one learner with {rows:,} reviews of 2,000 cards:")
    for label in ("defaults", "3 fits"):
        if label == "3 fits":
            assert fit_learner(learner_id=1, at=timezone.now() + dt.timedelta(days=1))
            assert len(MemoryParameters.objects.get(learner_id=1).history) == 3
        for state in ("cold", "warm"):
            # Cold: the simulation is not in the cache (the first view of the day).
            swapped = DummyCache("none", {}) if state == "cold" else kept_cache
            setattr(memory_service, "cache", swapped)  # noqa: B010
            get()  # warm-up (and, warm, the cache filled)
            median, slowest = median_of(get, 7)
            cpu = cpu_median_of(get, 3)
            print(
                f"  {label:9s} {state}: median {median * 1000:6.1f} ms, slowest "
                f"{slowest * 1000:6.1f} ms, process CPU {cpu * 1000:6.1f} ms"
            )
    setattr(memory_service, "cache", kept_cache)  # noqa: B010


def bench_refresh(learners: int) -> None:
    from cards import tasks
    from cards.models import MemoryParameters
    from studyapp.celery import app

    empty()
    fitted = learners // 10
    rows = seed(learners=fitted, cards=50, reviews_per_card=10)
    rows += seed(learners=learners - fitted, cards=20, reviews_per_card=2, first_learner=fitted + 1)
    sql("ANALYZE")
    app.conf.task_always_eager = True
    print(
        f"weekly refresh of {learners:,} learners ({fitted:,} with 500 reviews), {rows:,} log rows:"
    )
    for run in ("first", "second"):
        start = time.perf_counter()
        chunks = tasks.refresh_memory_parameters()
        seconds = time.perf_counter() - start
        print(
            f"  {run} run: {chunks} chunks, {seconds:.1f} s, {learners / seconds:,.0f} learners/s"
        )
    assert MemoryParameters.objects.filter(fitted=True).count() == fitted


def bench_synthetic() -> None:
    import pytest  # noqa: F401  (the test module's import)
    from django.contrib.auth import get_user_model

    from tests.cards import test_memory_synthetic as synthetic

    empty()
    learner = get_user_model().objects.create_user(username="synthetic", password="x" * 12)
    start = time.perf_counter()
    truth = synthetic.run(learner=learner, deck=synthetic.make_deck(100), reviews=2000)
    seconds = time.perf_counter() - start
    got = synthetic.measure(learner, truth)
    rungs = got["before"]["rungs"]
    print(f"synthetic learner, 2,000 reviews through review_submit in {seconds:.1f} s:")
    for rung, true, inside in zip(
        rungs, got["true_recall"], synthetic.rungs_holding_the_truth(got), strict=True
    ):
        print(
            f"  {rung['interval_days']:>2} days: {rung['reviews']:>4} reviews, "
            f"[{rung['low']:.3f}, {rung['high']:.3f}] true {true:.3f} {'in' if inside else 'OUT'}"
        )
    held = got["after"]["calibration"]["by_fitted_model"]
    print(f"  held-out RMSE over bins {held['rmse_bins']} on {held['reviews']} reviews")
    fitted = [round(s["reviews"]) for s in got["after"]["simulation"]]
    true = [round(x) for x in got["true_workloads"]]
    print(f"  workloads (ladder, 0.80, 0.90, 0.95): fitted {fitted}, true {true}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", default="fit,stats,refresh,synthetic")
    parser.add_argument("--refresh-learners", type=int, default=10_000)
    args = parser.parse_args()
    prepare("bench_memory")
    parts = args.only.split(",")
    if "fit" in parts:
        bench_fit()
    if "stats" in parts:
        bench_stats()
    if "refresh" in parts:
        bench_refresh(args.refresh_learners)
    if "synthetic" in parts:
        bench_synthetic()
    import os

    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()

"""Due queue and stats latency as one learner's cards and log grow (in process).

Run against PostgreSQL::

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench_depth \\
        .venv/bin/python -m benchmarks.bench_depth --sizes 1000 100000

For each size N it builds a learner enrolled in one deck of N cards (a fifth of
them due, the rest spread over the next 60 days, steps spread over the ladder)
with N review-log rows over the past year (and their per-day counts), then times through Django's request
stack with token authentication: ``GET reviews/due/`` page 1 and the last page
(page size 20), and ``GET stats/``; then ``POST reviews/`` (a pass) for the first
``--submits`` due cards, one request each. It prints medians, p95s and each size's
ratio to the smallest size (target: at most 2x). The learners and
decks it makes are deleted afterwards (``--keep`` keeps them for a second run).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/bench_depth")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studyapp.settings")

from benchmarks.pg import ensure_database

ensure_database("bench_depth")

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402

call_command("migrate", verbosity=0)

from django.contrib.auth import get_user_model  # noqa: E402
from django.db import connection  # noqa: E402
from django.test.utils import override_settings  # noqa: E402
from django.utils import timezone  # noqa: E402
from rest_framework.authtoken.models import Token  # noqa: E402
from rest_framework.test import APIClient  # noqa: E402

from cards import selectors, services  # noqa: E402
from cards.models import Card, Deck  # noqa: E402
from cards.services.review_days import review_days_rebuild  # noqa: E402

PREFIX = "depth-"
DUE_URL = "/api/v1/reviews/due/"
STATS_URL = "/api/v1/stats/"
REVIEW_URL = "/api/v1/reviews/"
PAGE = 20
PAGE_MAX = 100
TARGET = 2.0


def build(n: int):
    """The learner and deck for size ``n``, built once and reused while kept."""
    User = get_user_model()
    name = f"{PREFIX}{n}"
    user = User.objects.filter(username=name).first()
    if user is not None:
        return user
    user = User.objects.create(username=name)
    deck = Deck.objects.create(slug=name, title=name)
    for start in range(0, n, 5000):
        Card.objects.bulk_create(
            Card(deck=deck, kind="recall", prompt=f"P{i}", answer=f"A{i}", position=i)
            for i in range(start, min(n, start + 5000))
        )
    now = timezone.now()
    services.enroll(learner=user, deck=deck, at=now)
    today = selectors.learner_today(learner=user, at=now)
    with connection.cursor() as cursor:
        # A fifth due (over the past 30 days), the rest over the next 60 days.
        cursor.execute(
            """
            UPDATE cards_reviewstate s SET
                due_on = CASE WHEN c.position %% 5 = 0
                    THEN %s::date - (c.position %% 30)
                    ELSE %s::date + 1 + (c.position %% 60) END,
                step = c.position %% 5
            FROM cards_card c WHERE c.id = s.card_id AND s.learner_id = %s
            """,
            [today, today, user.pk],
        )
        # N log rows over the past year, one in ten a fail.
        cursor.execute(
            """
            INSERT INTO cards_reviewlog (learner_id, card_id, reviewed_at, study_day, result,
                step_before, step_after, interval_days, due_before, due_after, idempotency_key)
            SELECT %s, c.id, %s::timestamptz - (c.position %% 365) * interval '1 day',
                %s::date - (c.position %% 365),
                CASE WHEN c.position %% 10 = 0 THEN 'fail' ELSE 'pass' END,
                0, 1, 1, %s::date - (c.position %% 365), %s::date - (c.position %% 365) + 1, ''
            FROM cards_card c WHERE c.deck_id = %s
            """,
            [user.pk, now, today, today, today, deck.pk],
        )
    review_days_rebuild(learners=User.objects.filter(pk=user.pk))
    with connection.cursor() as cursor:
        # As autovacuum leaves the tables after a bulk load: fresh statistics and the
        # visibility map set, so the counts of stats/ can be read from indexes alone.
        for table in ("cards_reviewstate", "cards_reviewlog", "cards_reviewday"):
            cursor.execute(f"VACUUM ANALYZE {table}")
    return user


def timed(client, url, params, repeat: int) -> tuple[float, float]:
    for _ in range(3):
        assert client.get(url, params).status_code == 200
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        response = client.get(url, params)
        samples.append((time.perf_counter() - start) * 1000)
        assert response.status_code == 200
    samples.sort()
    p95 = samples[min(len(samples) - 1, int(len(samples) * 0.95))]
    return statistics.median(samples), p95


def timed_submits(client, count: int) -> tuple[float, float]:
    """``POST reviews/`` (a pass) for the first ``count`` due cards, one request each."""
    samples: list[float] = []
    while len(samples) < count:
        size = min(PAGE_MAX, count - len(samples))
        due = client.get(DUE_URL, {"page_size": size}).json()["results"]
        if not due:
            break
        for item in due:
            start = time.perf_counter()
            response = client.post(
                REVIEW_URL, {"card": item["card"]["id"], "result": "pass"}, format="json"
            )
            samples.append((time.perf_counter() - start) * 1000)
            assert response.status_code == 201, response.content
    samples.sort()
    p95 = samples[min(len(samples) - 1, int(len(samples) * 0.95))]
    return statistics.median(samples), p95


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 100_000])
    parser.add_argument("--requests", type=int, default=40)
    parser.add_argument(
        "--submits", type=int, default=100, help="reviews submitted per size (0: none)"
    )
    parser.add_argument("--keep", action="store_true", help="Keep the data for another run.")
    args = parser.parse_args(argv)
    print(f"database: {connection.vendor} {connection.settings_dict['NAME']}")
    results = {}
    try:
        for n in args.sizes:
            started = time.perf_counter()
            user = build(n)
            print(f"size {n}: data ready in {time.perf_counter() - started:.1f} s")
            token, _ = Token.objects.get_or_create(user=user)
            client = APIClient()
            client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
            count = client.get(DUE_URL, {"page_size": PAGE}).json()["count"]
            last = max(1, -(-count // PAGE))
            with override_settings(DEBUG=False):
                results[n] = {
                    "due page 1": timed(client, DUE_URL, {"page_size": PAGE}, args.requests),
                    "due last page": timed(
                        client, DUE_URL, {"page_size": PAGE, "page": last}, args.requests
                    ),
                    "stats": timed(client, STATS_URL, {}, args.requests),
                }
                if args.submits:
                    # Last: the reviews move cards off the queue the other series read.
                    results[n]["review submit"] = timed_submits(client, args.submits)
            print(f"size {n}: {count} due, last page {last}")
    finally:
        if not args.keep:
            get_user_model().objects.filter(username__startswith=PREFIX).delete()
            Deck.objects.filter(slug__startswith=PREFIX).delete()

    base = results[args.sizes[0]]
    print(f"\n{'cards':>8} {'series':<15} {'median ms':>10} {'p95 ms':>8} {'ratio':>7}")
    ok = True
    for n, series in results.items():
        for label, (median, p95) in series.items():
            ratio = median / base[label][0]
            ok &= ratio <= TARGET
            print(f"{n:>8} {label:<15} {median:>10.1f} {p95:>8.1f} {ratio:>6.2f}x")
    print(f"\n{'PASS' if ok else 'MISS'}: every series within {TARGET:g}x of {args.sizes[0]} cards")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())

"""In-process latency and query counts of the review API on a large synthetic data set.

Run against PostgreSQL (seeds ``manage.py seed_load`` data when it is missing)::

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench_ops \\
        .venv/bin/python -m benchmarks.bench_api --learners 1000 --cards 1000

Requests go through Django's full request stack with DRF's ``APIClient`` and token
authentication, without a network. It reports, for ``GET /api/v1/reviews/due/`` (a
page of 20) and ``POST /api/v1/reviews/`` (a due card, ``pass``): median and p95
latency and SQL queries per request, and checks the query counts against these targets:

* at most 5 queries per request;
* the same count for ``page_size`` 20 and 100, and for a learner with 100 and with
  ``--cards`` cards (no N+1);
* the due-queue median within 3x of the selector's own SQL run with a cursor plus a
  bare DRF ``Response`` of the rows (same authentication, no ORM objects or serializers).

It also prints the ratio to the raw SQL alone. With ``--explain`` (and whenever the due
queue misses its target) it prints ``EXPLAIN ANALYZE`` of the selector's queries.
Each submitted review moves one due card on the ladder, so repeated runs slowly use
up due cards; ``--reseed`` rebuilds the data. Exit status 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studyapp.settings")

import django

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.db import connection  # noqa: E402
from django.test.utils import CaptureQueriesContext, override_settings  # noqa: E402
from django.utils import timezone  # noqa: E402
from rest_framework.test import APIClient  # noqa: E402

from benchmarks.due_queue import (  # noqa: E402
    RAW_SQL,
    RAW_URL,
    SMALL_DECK_CARDS,
    bench_urls,
    ensure_data,
    explain,
    make_small_learner,
    pairs_to_submit,
    run_raw,
    selector_sql,
    token_client,
)
from cards import selectors  # noqa: E402
from cards.due import due_reviews  # noqa: E402
from cards.management.commands.seed_load import synthetic_users  # noqa: E402
from cards.models import ReviewState  # noqa: E402

DUE_URL = "/api/v1/reviews/due/"
REVIEW_URL = "/api/v1/reviews/"
MAX_QUERIES = 5
MAX_RATIO_TO_BARE = 3.0


# --- measuring ----------------------------------------------------------------------


@dataclass
class Series:
    label: str
    seconds: list[float] = field(default_factory=list)
    queries: int | None = None

    @property
    def median_ms(self) -> float:
        return statistics.median(self.seconds) * 1000

    @property
    def p95_ms(self) -> float:
        ordered = sorted(self.seconds)
        return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))] * 1000


def timed(series: Series, call: Callable[[], object]) -> object:
    start = time.perf_counter()
    result = call()
    series.seconds.append(time.perf_counter() - start)
    return result


TRANSACTION_CONTROL = ("BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE SAVEPOINT")


def is_transaction_control(sql: str) -> bool:
    return sql.upper().startswith(TRANSACTION_CONTROL)


def count_queries(call: Callable[[], object]) -> tuple[int, list[str], object]:
    """SQL statements a call sends, not counting BEGIN/COMMIT/SAVEPOINT (listed all the same)."""
    with CaptureQueriesContext(connection) as ctx:
        result = call()
    sql = [q["sql"] for q in ctx.captured_queries]
    return sum(not is_transaction_control(s) for s in sql), sql, result


def check(response, expected: int, what: str):
    if response.status_code != expected:
        raise SystemExit(
            f"{what}: expected HTTP {expected}, got {response.status_code}: "
            f"{response.content[:500]!r}"
        )
    return response


def due(client: APIClient, size: int = 20) -> Callable[[], object]:
    return lambda: check(client.get(DUE_URL, {"page_size": size}), 200, "GET due")


@dataclass
class Counts:
    """Queries per request, each measured once after a warm-up request of its shape."""

    due_20: int
    due_100: int
    due_small: int
    post: int = 0
    post_small: int = 0
    big_cards: int = 0
    due_sql: list[str] = field(default_factory=list)
    post_sql: list[str] = field(default_factory=list)


def count_due(big, big_client: APIClient, small_client: APIClient) -> Counts:
    """Counts the due queue's queries and checks that the raw SQL returns the API's page,
    without which the comparison would mean nothing."""
    for call in (due(big_client), due(big_client, 100), due(small_client)):
        call()
    due_20, due_sql, first_page = count_queries(due(big_client))
    counts = Counts(
        due_20=due_20,
        due_100=count_queries(due(big_client, 100))[0],
        due_small=count_queries(due(small_client))[0],
        big_cards=ReviewState.objects.filter(learner=big).count(),
        due_sql=due_sql,
    )
    api_ids = [item["card"]["id"] for item in first_page.json()["results"]]
    raw_page = run_raw(RAW_SQL[big.pk])[1]
    card_col = raw_page[0].index("card_id")
    raw_ids = [row[card_col] for row in raw_page[1]]
    if api_ids != raw_ids:
        raise SystemExit(f"raw SQL page differs from the API page: {raw_ids} vs {api_ids}")
    return counts


class Submitter:
    """Due (learner, card) pairs for submissions: a different learner each time when possible."""

    def __init__(self, learners, clients: dict[int, APIClient], today, wanted: int) -> None:
        due_pairs = pairs_to_submit(learners, today, wanted)
        if len(due_pairs) < wanted:
            raise SystemExit(
                f"only {len(due_pairs)} due cards left among {len(learners)} learners; use --reseed"
            )
        self.pairs = iter(due_pairs)
        self.clients = clients

    def __call__(self) -> Callable[[], object]:
        learner_id, card_id = next(self.pairs)
        client = self.clients[learner_id]
        return lambda: check(
            client.post(REVIEW_URL, {"card": card_id, "result": "pass"}, format="json"),
            201,
            "POST review",
        )


def count_posts(counts: Counts, submit: Submitter, small_client: APIClient, probe, today) -> None:
    counts.post, counts.post_sql, _ = count_queries(submit())
    small_due = list(due_reviews(learner=probe, today=today).values_list("card_id", flat=True)[:1])
    counts.post_small, _, _ = count_queries(
        lambda: check(
            small_client.post(REVIEW_URL, {"card": small_due[0], "result": "pass"}, format="json"),
            201,
            "POST review (small learner)",
        )
    )


def time_interleaved(
    args, rotation: list[int], clients: dict[int, APIClient], submit: Submitter, series
) -> None:
    """Interleaves the series so drifts (caches, autovacuum) hit all of them alike."""
    get_due, post, raw, bare = series
    with override_settings(DEBUG=False):
        for i in range(args.warmup + args.requests):
            learner_id = rotation[i % len(rotation)]
            client = clients[learner_id]
            if i < args.warmup:
                client.get(DUE_URL)
                client.get(RAW_URL)
                run_raw(RAW_SQL[learner_id])
                submit()()
                continue
            timed(get_due, due(client))
            timed(bare, lambda c=client: check(c.get(RAW_URL), 200, "GET bare"))
            timed(raw, lambda lid=learner_id: run_raw(RAW_SQL[lid]))
            timed(post, submit())


# --- the benchmark ------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--learners", type=int, default=1000)
    parser.add_argument("--cards", type=int, default=1000)
    parser.add_argument("--decks", type=int, default=10, help="Decks when seeding.")
    parser.add_argument("--requests", type=int, default=300, help="Timed requests per series.")
    parser.add_argument("--warmup", type=int, default=30, help="Untimed requests first.")
    parser.add_argument(
        "--rotate", type=int, default=100, help="Learners the GET requests rotate through."
    )
    parser.add_argument("--reseed", action="store_true", help="Rebuild the synthetic data.")
    parser.add_argument("--explain", action="store_true", help="Print EXPLAIN ANALYZE.")
    args = parser.parse_args(argv)
    if args.cards < SMALL_DECK_CARDS * 2:
        parser.error(f"--cards must be at least {SMALL_DECK_CARDS * 2} to compare deck sizes")

    print(f"database: {connection.vendor} {connection.settings_dict['NAME']}")
    if connection.vendor != "postgresql":
        print("warning: figures are meant for PostgreSQL (set DATABASE_URL)")
    ensure_data(args.learners, args.cards, args.decks, args.reseed)

    now = timezone.now()
    learners = list(synthetic_users().order_by("id")[: max(1, args.rotate)])
    today = selectors.learner_today(learner=learners[0], at=now)
    clients = {u.pk: token_client(u) for u in learners}
    for u in learners:
        RAW_SQL[u.pk] = selector_sql(u, today, 20)
    probe = make_small_learner(today)
    try:
        with override_settings(ROOT_URLCONF=bench_urls):
            return measure(args, learners, clients, today, probe)
    finally:
        get_user_model().objects.filter(pk=probe.pk).delete()


def measure(args, learners, clients, today, probe) -> int:
    big = learners[0]
    big_client = clients[big.pk]
    small_client = token_client(probe)
    counts = count_due(big, big_client, small_client)
    submit = Submitter(learners, clients, today, args.requests + args.warmup + 2)
    count_posts(counts, submit, small_client, probe, today)

    get_due = Series("GET reviews/due/ (page of 20)", queries=counts.due_20)
    post = Series("POST reviews/ (due card, pass)", queries=counts.post)
    raw = Series("(a) selector SQL, cursor + fetchall", queries=len(RAW_SQL[big.pk]))
    bare = Series("(b) auth + selector SQL + bare DRF Response")
    rotation = [u.pk for u in learners]
    time_interleaved(args, rotation, clients, submit, (get_due, post, raw, bare))
    _, bare_sql, _ = count_queries(lambda: big_client.get(RAW_URL))
    bare.queries = len(bare_sql)

    print()
    print(
        f"{args.learners} learners x {args.cards} cards; {args.requests} timed requests per "
        f"series, {len(rotation)} learners in rotation; study day {today}"
    )
    print(f"{'series':<46} {'median ms':>10} {'p95 ms':>9} {'queries':>8}")
    for s in (get_due, post, raw, bare):
        print(f"{s.label:<46} {s.median_ms:>10.2f} {s.p95_ms:>9.2f} {s.queries:>8}")
    verdicts = query_verdicts(counts)
    due_ok = ratio_verdict(get_due, raw, bare)
    verdicts.append(due_ok)
    print_sql(counts)
    if args.explain or not due_ok:
        print("\nEXPLAIN ANALYZE of the selector's SQL for the first learner:")
        explain(RAW_SQL[big.pk])
    return 0 if all(verdicts) else 1


# --- the report ---------------------------------------------------------------------


def verdict(ok: bool, text: str) -> bool:
    print(f"  {'PASS' if ok else 'MISS'}  {text}")
    return ok


def query_verdicts(c: Counts) -> list[bool]:
    print("\nqueries per request (target: at most 5, independent of page and deck size)")
    return [
        verdict(c.due_20 <= MAX_QUERIES, f"GET due: {c.due_20} queries"),
        verdict(c.post <= MAX_QUERIES, f"POST review: {c.post} queries"),
        verdict(c.due_20 == c.due_100, f"GET due: page_size 20 -> {c.due_20}, 100 -> {c.due_100}"),
        verdict(
            c.due_20 == c.due_small,
            f"GET due: learner with {SMALL_DECK_CARDS} cards -> {c.due_small}, "
            f"with {c.big_cards} cards -> {c.due_20}",
        ),
        verdict(
            c.post == c.post_small,
            f"POST review: learner with {SMALL_DECK_CARDS} cards -> {c.post_small}, "
            f"with {c.big_cards} cards -> {c.post}",
        ),
    ]


def ratio_verdict(get_due: Series, raw: Series, bare: Series) -> bool:
    ratio_raw = get_due.median_ms / raw.median_ms
    ratio_bare = get_due.median_ms / bare.median_ms
    print("\ndue-queue median relative to")
    print(f"        (a) raw SQL alone: {ratio_raw:.1f}x (for information)")
    return verdict(
        ratio_bare <= MAX_RATIO_TO_BARE,
        f"(b) raw SQL + bare DRF Response: {ratio_bare:.2f}x (target <= {MAX_RATIO_TO_BARE:g}x)",
    )


def print_sql(c: Counts) -> None:
    print("\nSQL of one GET due request:")
    for sql in c.due_sql:
        print(f"  {sql[:160]}{'...' if len(sql) > 160 else ''}")
    print("SQL of one POST review request:")
    for sql in c.post_sql:
        print(f"  {sql[:160]}{'...' if len(sql) > 160 else ''}")


if __name__ == "__main__":
    sys.exit(main())

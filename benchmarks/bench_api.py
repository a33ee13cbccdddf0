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
import datetime as dt
import os
import statistics
import sys
import time
import types
from collections.abc import Callable
from dataclasses import dataclass, field

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studyapp.settings")

import django

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.core.paginator import Paginator  # noqa: E402
from django.db import connection  # noqa: E402
from django.test.utils import CaptureQueriesContext, override_settings  # noqa: E402
from django.urls import include, path  # noqa: E402
from django.utils import timezone  # noqa: E402
from rest_framework.authtoken.models import Token  # noqa: E402
from rest_framework.response import Response  # noqa: E402
from rest_framework.test import APIClient  # noqa: E402
from rest_framework.views import APIView  # noqa: E402

from cards import selectors  # noqa: E402
from cards.management.commands.seed_load import (  # noqa: E402
    EMAIL_DOMAIN,
    synthetic_decks,
    synthetic_users,
)
from cards.models import Card, Enrollment, ReviewState  # noqa: E402

DUE_URL = "/api/v1/reviews/due/"
REVIEW_URL = "/api/v1/reviews/"
RAW_URL = "/bench/raw-due/"
MAX_QUERIES = 5
MAX_RATIO_TO_BARE = 3.0
SMALL_DECK_CARDS = 100
# Not a synthetic learner (no ``load-`` prefix), so seed_load never schedules it; the
# benchmark creates it for one run and deletes it afterwards.
PROBE_USERNAME = "bench-probe-small"


# --- data ---------------------------------------------------------------------------


def ensure_data(learners: int, cards: int, decks: int, reseed: bool) -> None:
    have_learners = synthetic_users().count()
    have_cards = Card.objects.filter(deck__in=synthetic_decks()).count()
    have_states = ReviewState.objects.filter(learner__in=synthetic_users()).count()
    if not reseed and (have_learners, have_cards, have_states) == (
        learners,
        cards,
        learners * cards,
    ):
        print(f"data: {learners} learners x {cards} cards already seeded")
        return
    print(
        f"data: seeding {learners} learners x {cards} cards "
        f"(found {have_learners} learners, {have_cards} cards, {have_states} states)"
    )
    call_command(
        "seed_load",
        learners=learners,
        cards=cards,
        decks=decks,
        reset=True,
        stdout=sys.stdout,
    )


def token_client(user) -> APIClient:
    token, _ = Token.objects.get_or_create(user=user)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


def make_small_learner(today) -> object:
    """A learner enrolled in the synthetic decks with only ``SMALL_DECK_CARDS`` cards scheduled,
    half of them due."""
    User = get_user_model()
    User.objects.filter(username=PROBE_USERNAME).delete()
    probe = User.objects.create_user(username=PROBE_USERNAME, email=f"probe{EMAIL_DOMAIN}")
    Enrollment.objects.bulk_create(Enrollment(learner=probe, deck=d) for d in synthetic_decks())
    card_ids = list(
        Card.objects.filter(deck__in=synthetic_decks())
        .order_by("id")
        .values_list("id", flat=True)[:SMALL_DECK_CARDS]
    )
    half = len(card_ids) // 2
    ReviewState.objects.bulk_create(
        ReviewState(
            learner=probe,
            card_id=card_id,
            step=i % 5,
            due_on=today if i < half else today + dt.timedelta(days=3),
        )
        for i, card_id in enumerate(card_ids)
    )
    return probe


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


def selector_sql(learner, today, page_size: int) -> list[str]:
    """The SQL that the due-queue selector issues for page 1: count, page, prefetch."""

    def run():
        page = Paginator(selectors.due_reviews(learner=learner, today=today), page_size).page(1)
        return [state.card.tags.all() for state in page]

    _, sql, _ = count_queries(run)
    return sql


def run_raw(statements: list[str]) -> list[tuple[list, list]]:
    out = []
    with connection.cursor() as cursor:
        for sql in statements:
            cursor.execute(sql)
            out.append(([c[0] for c in cursor.description], cursor.fetchall()))
    return out


# Per learner id, the selector's SQL for page 1; the bare view replays it.
RAW_SQL: dict[int, list[str]] = {}


class RawDueView(APIView):
    """The due queue as raw SQL rows in a bare DRF Response: the floor for the real view."""

    def get(self, request):
        results = run_raw(RAW_SQL[request.user.pk])
        count = results[0][1][0][0]
        columns, rows = results[1]
        return Response(
            {"count": count, "results": [dict(zip(columns, r, strict=True)) for r in rows]}
        )


bench_urls = types.ModuleType("bench_urls")
bench_urls.urlpatterns = [
    path(RAW_URL.strip("/") + "/", RawDueView.as_view()),
    path("", include("studyapp.urls")),
]


def explain(statements: list[str]) -> None:
    if connection.vendor != "postgresql":
        print("(EXPLAIN ANALYZE is shown on PostgreSQL only)")
        return
    with connection.cursor() as cursor:
        for sql in statements:
            print("\n" + sql)
            cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql)
            for (line,) in cursor.fetchall():
                print("    " + line)


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
    n = args.requests
    big = learners[0]
    big_client = clients[big.pk]
    small_client = token_client(probe)

    # Query counts (one request each, after a warm-up request for each shape).
    def due(client, size=20):
        return lambda: check(client.get(DUE_URL, {"page_size": size}), 200, "GET due")

    for call in (due(big_client), due(big_client, 100), due(small_client)):
        call()
    q_due_20, due_sql, first_page = count_queries(due(big_client))
    q_due_100, _, _ = count_queries(due(big_client, 100))
    q_due_small, _, _ = count_queries(due(small_client))
    big_cards = ReviewState.objects.filter(learner=big).count()

    # The raw SQL must return the same page as the API, or the comparison is meaningless.
    api_ids = [item["card"]["id"] for item in first_page.json()["results"]]
    raw_page = run_raw(RAW_SQL[big.pk])[1]
    card_col = raw_page[0].index("card_id")
    raw_ids = [row[card_col] for row in raw_page[1]]
    if api_ids != raw_ids:
        raise SystemExit(f"raw SQL page differs from the API page: {raw_ids} vs {api_ids}")

    # Due (learner, card) pairs for submissions: a different learner each time when possible.
    due_pairs = pairs_to_submit(learners, today, n + args.warmup + 2)
    if len(due_pairs) < n + args.warmup + 2:
        raise SystemExit(
            f"only {len(due_pairs)} due cards left among {len(learners)} learners; use --reseed"
        )
    pairs = iter(due_pairs)

    def submit(client_for=None):
        learner_id, card_id = next(pairs)
        client = client_for or clients[learner_id]
        return lambda: check(
            client.post(REVIEW_URL, {"card": card_id, "result": "pass"}, format="json"),
            201,
            "POST review",
        )

    q_post, post_sql, _ = count_queries(submit())
    small_due = list(
        selectors.due_reviews(learner=probe, today=today).values_list("card_id", flat=True)[:1]
    )
    q_post_small, _, _ = count_queries(
        lambda: check(
            small_client.post(REVIEW_URL, {"card": small_due[0], "result": "pass"}, format="json"),
            201,
            "POST review (small learner)",
        )
    )

    get_due = Series("GET reviews/due/ (page of 20)", queries=q_due_20)
    post = Series("POST reviews/ (due card, pass)", queries=q_post)
    raw = Series("(a) selector SQL, cursor + fetchall", queries=len(RAW_SQL[big.pk]))
    bare = Series("(b) auth + selector SQL + bare DRF Response")
    rotation = [u.pk for u in learners]

    # Interleave the series so drifts (caches, autovacuum) hit all of them alike.
    with override_settings(DEBUG=False):
        for i in range(args.warmup + n):
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
    _, bare_sql, _ = count_queries(lambda: big_client.get(RAW_URL))
    bare.queries = len(bare_sql)

    # --- report ---------------------------------------------------------------------
    print()
    print(
        f"{args.learners} learners x {args.cards} cards; {n} timed requests per series, "
        f"{len(rotation)} learners in rotation; study day {today}"
    )
    print(f"{'series':<46} {'median ms':>10} {'p95 ms':>9} {'queries':>8}")
    for s in (get_due, post, raw, bare):
        print(f"{s.label:<46} {s.median_ms:>10.2f} {s.p95_ms:>9.2f} {s.queries:>8}")

    verdicts: list[bool] = []

    def verdict(ok: bool, text: str) -> None:
        verdicts.append(ok)
        print(f"  {'PASS' if ok else 'MISS'}  {text}")

    print("\nqueries per request (target: at most 5, independent of page and deck size)")
    verdict(q_due_20 <= MAX_QUERIES, f"GET due: {q_due_20} queries")
    verdict(q_post <= MAX_QUERIES, f"POST review: {q_post} queries")
    verdict(q_due_20 == q_due_100, f"GET due: page_size 20 -> {q_due_20}, 100 -> {q_due_100}")
    verdict(
        q_due_20 == q_due_small,
        f"GET due: learner with {SMALL_DECK_CARDS} cards -> {q_due_small}, "
        f"with {big_cards} cards -> {q_due_20}",
    )
    verdict(
        q_post == q_post_small,
        f"POST review: learner with {SMALL_DECK_CARDS} cards -> {q_post_small}, "
        f"with {big_cards} cards -> {q_post}",
    )

    ratio_raw = get_due.median_ms / raw.median_ms
    ratio_bare = get_due.median_ms / bare.median_ms
    print("\ndue-queue median relative to")
    print(f"        (a) raw SQL alone: {ratio_raw:.1f}x (for information)")
    due_ok = ratio_bare <= MAX_RATIO_TO_BARE
    verdict(
        due_ok,
        f"(b) raw SQL + bare DRF Response: {ratio_bare:.2f}x (target <= {MAX_RATIO_TO_BARE:g}x)",
    )

    print("\nSQL of one GET due request:")
    for sql in due_sql:
        print(f"  {sql[:160]}{'...' if len(sql) > 160 else ''}")
    print("SQL of one POST review request:")
    for sql in post_sql:
        print(f"  {sql[:160]}{'...' if len(sql) > 160 else ''}")
    if args.explain or not due_ok:
        print("\nEXPLAIN ANALYZE of the selector's SQL for the first learner:")
        explain(RAW_SQL[big.pk])
    return 0 if all(verdicts) else 1


def pairs_to_submit(learners, today, wanted: int) -> list[tuple[int, int]]:
    """Due (learner id, card id) pairs, round-robin over learners so each submission is valid."""
    per_learner: dict[int, list[int]] = {}
    rows = (
        ReviewState.objects.filter(learner__in=learners, due_on__lte=today)
        .order_by("learner_id", "due_on", "id")
        .values_list("learner_id", "card_id")
    )
    for learner_id, card_id in rows:
        per_learner.setdefault(learner_id, []).append(card_id)
    pairs: list[tuple[int, int]] = []
    depth = 0
    while len(pairs) < wanted and any(len(c) > depth for c in per_learner.values()):
        for learner_id, card_ids in per_learner.items():
            if len(card_ids) > depth:
                pairs.append((learner_id, card_ids[depth]))
        depth += 1
    return pairs[:wanted]


if __name__ == "__main__":
    sys.exit(main())

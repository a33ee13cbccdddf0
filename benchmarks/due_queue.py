"""The review API's due queue as bench_api sees it: the synthetic data, a small probe
learner, and the floor it is compared with (the selector's own SQL, replayed by a bare view).

Import after ``django.setup()``.
"""

from __future__ import annotations

import datetime as dt
import sys
import types

from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.paginator import Paginator
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import include, path
from rest_framework.authtoken.models import Token
from rest_framework.response import Response
from rest_framework.test import APIClient
from rest_framework.views import APIView

from cards import due
from cards.management.commands.seed_load import EMAIL_DOMAIN, synthetic_decks, synthetic_users
from cards.models import Card, Enrollment, ReviewState

RAW_URL = "/bench/raw-due/"
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


# --- the floor: the selector's SQL, replayed ------------------------------------


def selector_sql(learner, today, page_size: int) -> list[str]:
    """The SQL that the due-queue selector issues for page 1: count, page, prefetch."""

    def run():
        page = Paginator(due.due_reviews(learner=learner, today=today), page_size).page(1)
        return [state.card.tags.all() for state in page]

    with CaptureQueriesContext(connection) as ctx:
        run()
    return [q["sql"] for q in ctx.captured_queries]


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

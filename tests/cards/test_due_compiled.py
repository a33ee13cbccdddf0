"""The due queue and token authentication run SQL compiled once: same rows as the ORM.

``cards.db.compiled.CompiledQuery`` compiles ``due_count_query``, ``due_page_query`` (both
in ``cards.due``) and the token query once per connection with stand-in values; these tests hold the compiled
path to the querysets it comes from, on whichever database the suite runs.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ImproperlyConfigured
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from cards import authentication, due
from cards.authentication import token_query, token_with_profile
from cards.db.compiled import CompiledQuery
from cards.models import Card, Deck, ExerciseBinding, LearnerProfile, ReviewLog, ReviewState, Tag
from exercises.models import Exercise

pytestmark = pytest.mark.django_db

TODAY = dt.date(2026, 3, 4)
DUE = "/api/v1/reviews/due/"


def _log(learner, card, *, result="fail", undo_of=None, day=TODAY):
    return ReviewLog.objects.create(
        learner=learner,
        card=card,
        reviewed_at=dt.datetime.combine(day, dt.time(12), tzinfo=dt.UTC),
        study_day=day,
        result=result,
        step_before=0,
        step_after=0,
        interval_days=1,
        due_before=day,
        due_after=day + dt.timedelta(days=1),
        undo_of=undo_of,
    )


@pytest.fixture
def queue(make_user, settings):
    """Two learners over one deck, with every way a state can be in or out of the queue."""
    settings.STUDY_LEECH_LAPSES = 2
    alice, bob = make_user("alice"), make_user("bob")
    deck = Deck.objects.create(slug="d", title="D")
    heads, masks = Tag.objects.create(name="heads"), Tag.objects.create(name="masks")
    cards = [
        Card.objects.create(deck=deck, kind="recall", prompt=f"P{i}", answer=f"A{i}", position=i)
        for i in range(30)
    ]
    exercise_card = Card.objects.create(
        deck=deck,
        kind="exercise",
        prompt="E",
        exercise={"kind": "attention", "params": {"n": 2}},
        position=30,
    )
    cards[0].tags.set([masks, heads])
    cards[1].tags.set([heads])
    for learner in (alice, bob):
        for i, card in enumerate([*cards, exercise_card]):
            ReviewState.objects.create(
                learner=learner,
                card=card,
                step=i % 5,
                due_on=TODAY - dt.timedelta(days=i % 7) + dt.timedelta(days=i // 25),
            )
    mine = ReviewState.objects.filter(learner=alice)
    mine.filter(card=cards[2]).update(suspended=True)
    mine.filter(card=cards[3]).update(buried_on=TODAY)
    mine.filter(card=cards[4]).update(buried_on=TODAY - dt.timedelta(days=1))  # back today
    mine.filter(card=cards[5]).update(scheduled=False)
    # Two failures make a leech; a third, undone, does not count.
    for _ in range(2):
        _log(alice, cards[6])
    _log(alice, cards[7])
    _log(alice, cards[7], undo_of=_log(alice, cards[7]))
    _log(bob, cards[8])
    _log(bob, cards[8])
    exercise = Exercise.objects.create(
        owner=alice, kind="attention", params={}, seed=1, inputs={}, asks=[], solution={}
    )
    ExerciseBinding.objects.create(
        exercise=exercise, learner=alice, card=exercise_card, study_day=TODAY
    )
    return alice, bob


def orm_page(learner, today, offset, limit):
    rows = list(due.due_page_query(learner=learner, today=today)[offset : offset + limit])
    if due.is_paused(learner=learner, today=today):
        rows = []
    return due.due_page_rows(rows)


@pytest.mark.parametrize("today", [TODAY, TODAY + dt.timedelta(days=1), TODAY - dt.timedelta(10)])
def test_compiled_count_and_pages_equal_the_orm(queue, today):
    for learner in queue:
        count = due.queue_states(learner=learner, today=today).count()
        assert due.due_count(learner=learner, today=today) == count
        for offset, limit in [(0, 20), (0, 100), (5, 7), (20, 20), (count - 3, 20), (count, 5)]:
            compiled = due.due_page(
                learner=learner, today=today, offset=max(offset, 0), limit=limit, count=count
            )
            assert compiled == orm_page(learner, today, max(offset, 0), limit), (offset, limit)


def test_the_fixture_covers_what_the_queue_leaves_out_and_flags(queue):
    alice, _ = queue
    rows = due.due_page(learner=alice, today=TODAY, offset=0, limit=100)
    prompts = {row["card__prompt"] for row in rows}
    assert {"P2", "P3", "P5"}.isdisjoint(prompts)  # suspended, buried today, unscheduled
    assert "P4" in prompts  # buried yesterday
    by_prompt = {row["card__prompt"]: row for row in rows}
    assert by_prompt["P0"]["tag_names"] == ["heads", "masks"]
    assert by_prompt["P6"]["leech"] and not by_prompt["P7"]["leech"]
    assert by_prompt["E"]["binding_id"] is not None
    assert by_prompt["E"]["bound_exercise_id"] is not None
    assert isinstance(by_prompt["P0"]["due_on"], dt.date)
    assert by_prompt["P0"]["card__exercise"] is None
    assert by_prompt["E"]["card__exercise"] == {"kind": "attention", "params": {"n": 2}}


def test_a_paused_learner_has_an_empty_queue_on_both_paths(queue):
    alice, _ = queue
    LearnerProfile.objects.update_or_create(
        user=alice, defaults={"pause_start": TODAY - dt.timedelta(days=1), "pause_days": 5}
    )
    alice.refresh_from_db()
    assert due.queue_states(learner=alice, today=TODAY).count() == 0
    assert due.due_count(learner=alice, today=TODAY) == 0
    assert due.due_page(learner=alice, today=TODAY, offset=0, limit=20) == []


def test_each_query_is_one_statement_with_the_values_bound(queue):
    alice, bob = queue
    with CaptureQueriesContext(connection) as ctx:
        due.due_count(learner=alice, today=TODAY)
        due.due_page(learner=bob, today=TODAY, offset=0, limit=20)
    assert len(ctx.captured_queries) == 2
    count_sql, page_sql = (q["sql"] for q in ctx.captured_queries)
    assert str(alice.pk) in count_sql and "2026-03-04" in count_sql
    assert str(bob.pk) in page_sql and page_sql.endswith("LIMIT 20")  # page 1: no OFFSET
    with CaptureQueriesContext(connection) as ctx:
        due.due_page(learner=bob, today=TODAY, offset=1, limit=20)
    assert ctx.captured_queries[0]["sql"].endswith("LIMIT 20 OFFSET 1")


# --- CompiledQuery --------------------------------------------------------------------


def test_a_query_is_built_once_per_thread_and_bound_per_call(make_user):
    users = [make_user(f"u{i}") for i in range(3)]
    built = []

    def build():
        built.append(threading.get_ident())
        return get_user_model().objects.filter(pk=-5).values("username")

    query = CompiledQuery(build, slots={"pk": -5})
    assert [query.dicts(pk=u.pk) for u in users] == [[{"username": u.username}] for u in users]
    assert len(built) == 1
    assert query.dicts(pk=-1) == []


def test_a_slot_the_query_does_not_use_is_refused():
    query = CompiledQuery(
        lambda: get_user_model().objects.filter(pk=-5), slots={"pk": -5, "day": TODAY}
    )
    with pytest.raises(ImproperlyConfigured, match="day"):
        query.plan()


def test_paged_queries(make_user):
    for i in range(5):
        make_user(f"n{i}")
    users = get_user_model().objects
    page = CompiledQuery(
        lambda: users.filter(pk__gt=-5).order_by("username").values("username"),
        slots={"pk": -5},
        paged=True,
    )
    assert page.dicts(pk=0, limit=2, offset=1) == [{"username": "n1"}, {"username": "n2"}]


# --- Token authentication ---------------------------------------------------------------


def test_the_token_comes_with_its_user_and_profile_like_the_orm(learner, django_assert_num_queries):
    LearnerProfile.objects.update_or_create(
        user=learner, defaults={"timezone": "Europe/Paris", "day_starts_at": 6}
    )
    key = Token.objects.create(user=learner).key
    expected = token_query(key).get()
    with django_assert_num_queries(1):
        token = token_with_profile(key)
        assert token is not None
        assert token.user.profile.timezone == "Europe/Paris"
        assert token.user.profile.day_starts_at == 6
    assert token == expected and token.created == expected.created
    assert token.user == expected.user and token.user.username == learner.username
    assert token.user.profile == expected.user.profile
    assert token_with_profile(key + "x") is None


def test_a_user_without_a_profile_reads_as_the_orm_does(learner):
    LearnerProfile.objects.filter(user=learner).delete()
    key = Token.objects.create(user=learner).key
    token = token_with_profile(key)
    assert token is not None
    with pytest.raises(LearnerProfile.DoesNotExist):
        token.user.profile  # noqa: B018 (cached as missing, as select_related leaves it)


def test_the_api_answers_unknown_and_inactive_tokens_with_401(api, learner, anon_api):
    assert api.get(DUE).status_code == 200
    anon_api.credentials(HTTP_AUTHORIZATION="Token not-a-key")
    response = anon_api.get(DUE)
    assert response.status_code == 401
    assert response.json() == {"detail": "Invalid token."}
    learner.is_active = False
    learner.save()
    response = api.get(DUE)
    assert response.status_code == 401
    assert response.json() == {"detail": "User inactive or deleted."}


def test_the_due_page_of_recall_cards_takes_three_queries(api, learner, django_assert_num_queries):
    deck = Deck.objects.create(slug="r", title="R")
    for i in range(25):
        card = Card.objects.create(deck=deck, kind="recall", prompt=f"P{i}", position=i)
        ReviewState.objects.create(learner=learner, card=card, due_on=dt.date(2000, 1, 1))
    # token with user and profile, count, page, and the page's log for its retrievability
    with django_assert_num_queries(4):
        body = api.get(DUE).json()
    assert body["count"] == 25 and len(body["results"]) == 20
    assert body["next"].endswith("?page=2")


def test_with_a_changed_compiler_the_queue_and_the_token_serve_the_same_rows(
    queue, monkeypatch, caplog
):
    """The fallback wired in: each compiled query of a request has its plain queryset."""
    alice, _ = queue
    count = due.queue_states(learner=alice, today=TODAY).count()
    pages = [(0, 20), (count - 3, 20)]  # the second read from the queue's end
    expected = [
        due.due_page(learner=alice, today=TODAY, offset=o, limit=n, count=count) for o, n in pages
    ]
    api = APIClient()  # a real token: the token query runs too
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=alice).key}")
    compiled_answer = api.get("/api/v1/reviews/due/").json()
    queries = (due._DUE_COUNT, due._DUE_PAGE, due._DUE_PAGE_FROM_END, authentication._TOKEN)
    for query in queries:
        monkeypatch.setattr(query, "plan", lambda: _changed_django())
        monkeypatch.setattr(query, "_failed", False)
    with caplog.at_level(logging.ERROR, logger="cards.db.compiled"):
        assert due.due_count(learner=alice, today=TODAY) == count
        for (offset, limit), rows in zip(pages, expected, strict=True):
            assert (
                due.due_page(learner=alice, today=TODAY, offset=offset, limit=limit, count=count)
                == rows
            )
        plain_answer = api.get("/api/v1/reviews/due/").json()
    assert plain_answer == compiled_answer
    assert compiled_answer["count"] > 0 and compiled_answer["results"]
    assert {r.name for r in caplog.records} == {"cards.db.compiled"}


def _changed_django():
    raise AttributeError("a Django that changed its compiler")

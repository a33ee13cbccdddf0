"""The study API under hostile input and between learners: 4xx not 500, and 404 for others' data.

Query-count tests compare one deck with many: the reads must not grow per row.
"""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from cards import selectors
from cards.models import Card, Deck, LearnerProfile, ReviewLog, ReviewState, Tag

pytestmark = pytest.mark.django_db


def _today(user) -> dt.date:
    return selectors.learner_today(learner=user, at=timezone.now())


def _enrol_due(api, user, deck) -> None:
    assert api.post(f"/api/v1/decks/{deck.slug}/enroll/").status_code == 200
    ReviewState.objects.filter(learner=user, card__deck=deck).update(due_on=_today(user))


# --- Ids no row can have -------------------------------------------------------------------


@pytest.mark.parametrize(
    "pk", ["0", "00000", str(2**63 - 1), str(2**63), "9" * 40, "1" * 4301, "1" * 5000], ids=len
)
def test_card_ids_no_row_can_have_are_404_for_every_method(api, staff_api, deck, pk):
    assert api.get(f"/api/v1/cards/{pk}/").status_code == 404
    for method in ("put", "patch", "delete"):
        response = getattr(staff_api, method)(f"/api/v1/cards/{pk}/", {}, format="json")
        assert response.status_code == 404, (method, response.status_code)
    # A learner may not change cards at all: that is said before looking the card up.
    assert api.delete(f"/api/v1/cards/{pk}/").status_code == 403
    assert Card.objects.count() == 4


def test_a_card_id_with_leading_zeros_still_finds_the_card(api, deck):
    card = deck.cards.order_by("id").first()
    response = api.get(f"/api/v1/cards/{card.pk:05d}/")
    assert response.status_code == 200
    assert response.json()["id"] == card.pk


@pytest.mark.parametrize("card", [str(2**63), "1" * 5000, "-1", "0"], ids=len)
def test_review_history_filter_with_impossible_ids_is_empty_or_400(api, deck, card):
    response = api.get(f"/api/v1/reviews/?card={card}")
    assert response.status_code in (200, 400)
    if response.status_code == 200:
        assert response.json()["count"] == 0


# --- Another learner's data --------------------------------------------------------------


def test_another_learners_reviews_stats_profile_and_exercises_stay_theirs(
    api, other_api, learner, other_learner, deck
):
    _enrol_due(other_api, other_learner, deck)
    card = deck.cards.filter(kind="recall").order_by("id").first()
    theirs = other_api.post("/api/v1/reviews/", {"card": card.pk, "result": "pass"}, format="json")
    assert theirs.status_code == 201
    their_exercise = other_api.post(
        "/api/v1/exercises/", {"kind": "attention", "params": {"n": 2}}, format="json"
    ).json()
    other_api.patch(
        "/api/v1/me/", {"timezone": "Asia/Tokyo", "email": "bob@example.org"}, format="json"
    )

    # Nothing of theirs shows up in my reads.
    assert api.get("/api/v1/reviews/").json()["count"] == 0
    assert api.get(f"/api/v1/reviews/?card={card.pk}").json()["count"] == 0
    assert api.get("/api/v1/reviews/due/").json()["count"] == 0
    stats = api.get("/api/v1/stats/").json()
    assert (stats["reviewed_today"], stats["streak_days"], stats["retention_30d"]) == (0, 0, None)
    assert sum(stats["by_step"].values()) == 0
    me = api.get("/api/v1/me/").json()
    assert (me["username"], me["email"], me["timezone"]) == ("alice", "", "UTC")
    assert not api.get("/api/v1/decks/").json()["results"][0]["enrolled"]

    # Their exercise answers 404 to me and I cannot use up their attempts.
    assert api.get(f"/api/v1/exercises/{their_exercise['id']}/").status_code == 404
    submit = api.post(
        f"/api/v1/exercises/{their_exercise['id']}/submit/",
        {"answers": {"scores": [[0, 0], [0, 0]]}},
        format="json",
    )
    assert submit.status_code == 404
    assert (
        other_api.get(f"/api/v1/exercises/{their_exercise['id']}/").json()["attempts"]["used"] == 0
    )

    # Grading their due card from my account is a 404 and moves nothing of theirs.
    ReviewState.objects.filter(learner=other_learner).update(due_on=_today(other_learner))
    response = api.post("/api/v1/reviews/", {"card": card.pk, "result": "fail"}, format="json")
    assert response.status_code == 404
    assert ReviewState.objects.get(learner=other_learner, card=card).step == 1
    assert ReviewLog.objects.filter(learner=other_learner).count() == 1

    # A profile change of mine leaves theirs alone.
    assert api.patch("/api/v1/me/", {"day_starts_at": 7}, format="json").status_code == 200
    assert LearnerProfile.objects.get(user=other_learner).day_starts_at == 4


def test_my_idempotency_key_does_not_replay_another_learners_answer(
    api, other_api, learner, other_learner, deck
):
    _enrol_due(api, learner, deck)
    _enrol_due(other_api, other_learner, deck)
    card = deck.cards.filter(kind="recall").order_by("id").first()
    headers = {"HTTP_IDEMPOTENCY_KEY": "same-key"}
    body = {"card": card.pk, "result": "pass"}
    mine = api.post("/api/v1/reviews/", body, format="json", **headers)
    theirs = other_api.post("/api/v1/reviews/", body, format="json", **headers)
    assert mine.status_code == theirs.status_code == 201
    assert mine.json()["id"] != theirs.json()["id"]
    assert ReviewLog.objects.filter(learner=other_learner).count() == 1


# --- Contract details ----------------------------------------------------------------------


def test_enrol_answers_the_contract_and_counts_only_new_cards(api, learner, deck):
    first = api.post(f"/api/v1/decks/{deck.slug}/enroll/")
    assert first.status_code == 200
    tomorrow = _today(learner) + dt.timedelta(days=1)
    expected = {"deck": deck.slug, "waiting": 0, "first_due_on": tomorrow.isoformat()}
    assert first.json() == {**expected, "scheduled": 4}
    again = api.post(f"/api/v1/decks/{deck.slug}/enroll/")
    assert again.json() == {**expected, "scheduled": 0}


def test_first_due_on_ignores_inactive_cards(api, learner, deck):
    api.post(f"/api/v1/decks/{deck.slug}/enroll/")
    early = deck.cards.order_by("id").first()
    ReviewState.objects.filter(learner=learner, card=early).update(
        due_on=_today(learner) - dt.timedelta(days=5)
    )
    Card.objects.filter(pk=early.pk).update(is_active=False)
    again = api.post(f"/api/v1/decks/{deck.slug}/enroll/").json()
    assert again["first_due_on"] == (_today(learner) + dt.timedelta(days=1)).isoformat()


# --- Query counts ---------------------------------------------------------------------------


def _load(api, user, n: int) -> None:
    """``n`` decks of ``n`` tagged recall cards and ``n`` exercise cards, due, with history."""
    for d in range(n):
        deck = Deck.objects.create(slug=f"load-{n}-{d}", title=f"Load {d}")
        for i in range(n):
            card = Card.objects.create(
                deck=deck, key=f"r{i}", kind="recall", prompt=f"p{i}", answer="a", position=i
            )
            card.tags.add(Tag.objects.get_or_create(name=f"tag-{i}")[0])
            Card.objects.create(
                deck=deck,
                key=f"e{i}",
                kind="exercise",
                prompt="By hand.",
                exercise={"kind": "attention", "params": {"n": 2}},
                position=n + i,
            )
        assert api.post(f"/api/v1/decks/{deck.slug}/enroll/").status_code == 200
    ReviewState.objects.filter(learner=user).update(due_on=_today(user))
    for card in Card.objects.filter(deck__slug__startswith=f"load-{n}-", kind="recall")[: n + 1]:
        assert (
            api.post("/api/v1/reviews/", {"card": card.pk, "result": "pass"}, format="json")
        ).status_code == 201


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/reviews/due/",
        "/api/v1/reviews/",
        "/api/v1/stats/",
        "/api/v1/decks/",
        "/api/v1/cards/",
        "/api/v1/me/",
    ],
)
def test_api_reads_do_not_grow_with_decks_cards_and_reviews(make_user, path):
    from tests.conftest import _client_for

    counts = []
    for n in (1, 5):
        user = make_user()
        api = _client_for(user)
        _load(api, user, n)
        api.get(path)  # the first read of due/ binds the exercises of its page (writes)
        with CaptureQueriesContext(connection) as captured:
            assert api.get(path).status_code == 200
        counts.append(len(captured))
    assert counts[0] == counts[1], counts

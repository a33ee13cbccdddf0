"""Decks and cards: who may read and write, filters, and validation."""

import pytest

from cards.models import Card, ReviewState

pytestmark = pytest.mark.django_db


def test_decks_list_shows_counts_and_enrolment(api, deck, other_deck):
    api.post("/api/v1/decks/attention/enroll/")
    decks = {d["slug"]: d for d in api.get("/api/v1/decks/").json()["results"]}
    assert decks["attention"] == {
        "slug": "attention",
        "title": "Attention",
        "description": "Heads and masks",
        "card_count": 4,
        "enrolled": True,
        "waiting": 0,
    }
    assert decks["positions"]["enrolled"] is False
    assert api.get("/api/v1/decks/positions/").json()["card_count"] == 1
    assert api.get("/api/v1/decks/nope/").status_code == 404
    assert api.post("/api/v1/decks/nope/enroll/").status_code == 404


def test_enrol_is_idempotent_and_per_learner(api, other_api, deck, learner, other_learner):
    first = api.post("/api/v1/decks/attention/enroll/").json()
    second = api.post("/api/v1/decks/attention/enroll/").json()
    assert (first["scheduled"], second["scheduled"]) == (4, 0)
    assert first["first_due_on"] == second["first_due_on"]
    assert ReviewState.objects.filter(learner=learner).count() == 4
    assert ReviewState.objects.filter(learner=other_learner).count() == 0
    assert other_api.get("/api/v1/decks/attention/").json()["enrolled"] is False


def test_learners_read_cards_and_cannot_write(api, deck):
    cards = api.get("/api/v1/cards/?deck=attention").json()
    assert cards["count"] == 4
    card_id = cards["results"][0]["id"]
    assert api.get(f"/api/v1/cards/{card_id}/").status_code == 200
    assert api.patch(f"/api/v1/cards/{card_id}/", {"prompt": "x"}, format="json").status_code == 403
    assert api.delete(f"/api/v1/cards/{card_id}/").status_code == 403
    # Refused before the body is read: a body staff would get a 400 for is a 403 too.
    for body in ({"deck": "attention", "kind": "recall", "prompt": "x"}, {"kind": 7}, []):
        assert api.put(f"/api/v1/cards/{card_id}/", body, format="json").status_code == 403
        assert api.patch(f"/api/v1/cards/{card_id}/", body, format="json").status_code == 403
        assert api.post("/api/v1/cards/", body, format="json").status_code == 403
    assert (
        api.post(
            "/api/v1/cards/", {"deck": "attention", "kind": "recall", "prompt": "x"}, format="json"
        ).status_code
        == 403
    )
    assert Card.objects.count() == 4


def test_filters(api, staff_api, deck):
    staff_api.post(
        "/api/v1/cards/",
        {
            "deck": "attention",
            "kind": "recall",
            "prompt": "Why $\\sqrt{d_k}$?",
            "answer": "To keep the scores' spread at 1.",
            "tags": ["scaling"],
        },
        format="json",
    )
    assert api.get("/api/v1/cards/?kind=interview").json()["count"] == 1
    assert api.get("/api/v1/cards/?tag=scaling").json()["count"] == 1
    assert api.get("/api/v1/cards/?search=sqrt").json()["count"] == 1
    assert api.get("/api/v1/cards/?deck=none").json()["count"] == 0
    bad = api.get("/api/v1/cards/?kind=quiz")
    assert bad.status_code == 400 and "kind" in bad.json()


def test_inactive_cards_are_hidden_from_learners_not_staff(api, staff_api, deck):
    card = deck.cards.first()
    card.is_active = False
    card.save()
    assert api.get(f"/api/v1/cards/{card.id}/").status_code == 404
    assert staff_api.get(f"/api/v1/cards/{card.id}/").status_code == 200


def test_staff_create_card(api, staff_api, deck, learner):
    api.post("/api/v1/decks/attention/enroll/")
    response = staff_api.post(
        "/api/v1/cards/",
        {
            "deck": "attention",
            "kind": "recall",
            "prompt": "New",
            "answer": "A",
            "tags": ["shapes", "cost"],
        },
        format="json",
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert (
        body["tags"] == ["cost", "shapes"] and body["exercise"] is None and body["active"] is True
    )


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"deck": "missing", "kind": "recall", "prompt": "x"}, "deck"),
        ({"deck": "attention", "kind": "quiz", "prompt": "x"}, "kind"),
        ({"deck": "attention", "kind": "recall", "prompt": ""}, "prompt"),
        ({"deck": "attention", "kind": "recall", "prompt": 7}, "prompt"),
        ({"deck": "attention", "kind": "recall", "prompt": "x", "tags": "shapes"}, "tags"),
        ({"deck": "attention", "kind": "recall", "prompt": "x", "tags": ["Not A Slug"]}, "tags"),
        ({"deck": "attention", "kind": "recall", "prompt": "x", "active": "yes"}, "active"),
        ({"deck": "attention", "kind": "exercise", "prompt": "x"}, "exercise"),
        (
            {
                "deck": "attention",
                "kind": "recall",
                "prompt": "x",
                "exercise": {"kind": "attention"},
            },
            "exercise",
        ),
        ({"deck": 12, "kind": "recall", "prompt": "x"}, "deck"),
        ({"deck": "attention", "kind": "recall", "prompt": "x"}, "answer"),
        ({"deck": "attention", "kind": "interview", "prompt": "x", "answer": "  "}, "answer"),
    ],
)
def test_staff_bad_card_input_is_400_and_stores_nothing(staff_api, deck, body, field):
    before = Card.objects.count()
    response = staff_api.post("/api/v1/cards/", body, format="json")
    assert response.status_code == 400, response.content
    assert field in response.json()
    assert Card.objects.count() == before


def test_card_ids_that_are_not_numbers_are_404(api, deck):
    assert api.get("/api/v1/cards/abc/").status_code == 404
    assert api.get("/api/v1/cards/99999999999999999999999/").status_code == 404


def test_new_and_reactivated_cards_are_handed_to_the_beat_job(staff_api, deck, monkeypatch):
    from cards import services
    from cards.services import scheduling

    calls = []
    monkeypatch.setattr(scheduling, "enqueue_schedule_new_cards", calls.append)
    body = {"deck": "attention", "kind": "recall", "prompt": "New", "answer": "A"}
    card_id = staff_api.post("/api/v1/cards/", body, format="json").json()["id"]
    assert calls == [deck.id]
    staff_api.patch(f"/api/v1/cards/{card_id}/", {"prompt": "Edited"}, format="json")
    staff_api.patch(f"/api/v1/cards/{card_id}/", {"active": False}, format="json")
    assert calls == [deck.id]  # editing or retiring places nothing
    staff_api.patch(f"/api/v1/cards/{card_id}/", {"active": True}, format="json")
    assert calls == [deck.id, deck.id]
    services.cards_set_active(card_ids=[card_id], active=False)
    services.cards_set_active(card_ids=[card_id], active=True)
    assert calls == [deck.id, deck.id, deck.id]

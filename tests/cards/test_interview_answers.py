"""Interview answers: written before the model answer, kept with the review, ticked against
the card's key points; through the API, the review page's form, the card's notes, the
export, the admin and deck files."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
import time_machine
from django.urls import reverse

from cards import rules
from cards.decks import DeckFileError, deck_dump, deck_export, deck_import, deck_load
from cards.models import Card, Deck, ReviewLog, ReviewState
from cards.services import enroll

from .conftest import START

pytestmark = pytest.mark.django_db

DUE_DAY = START + dt.timedelta(days=1)
POINTS = ["Scores grow with d_k", "The softmax saturates", "Dividing restores variance 1"]
MAX = ReviewLog.MAX_ANSWER_TEXT_CHARS


@pytest.fixture
def interview(deck) -> Card:
    card = deck.cards.get(kind="interview")
    card.answer = "Scaling keeps the softmax out of saturation."
    card.points = POINTS
    card.save()
    return card


@pytest.fixture
def recall(deck) -> Card:
    return deck.cards.filter(kind="recall").order_by("position").first()


@pytest.fixture
def due(learner, deck, interview):
    """The learner enrolled; every card due on ``DUE_DAY``; the clock stopped there."""
    enroll(learner=learner, deck=deck, at=START)
    with time_machine.travel(DUE_DAY, tick=False):
        yield


def _review(api, card, result="pass", **extra):
    return api.post("/api/v1/reviews/", {"card": card.pk, "result": result, **extra}, format="json")


def _unchanged(learner, card) -> None:
    state = ReviewState.objects.get(learner=learner, card=card)
    assert (state.step, state.due_on) == (0, DUE_DAY.date())
    assert not ReviewLog.objects.filter(learner=learner, card=card).exists()


# --- POST reviews/ ---------------------------------------------------------------------


def test_written_answer_is_kept_with_the_review_and_comes_back(api, learner, interview, due):
    text = "Dot products of d_k terms have variance d_k,\nso the softmax saturates."
    response = _review(api, interview, answer_text=text)
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["answer_text"] == text
    assert ReviewLog.objects.get(pk=body["id"]).answer_text == text

    history = api.get(f"/api/v1/reviews/?card={interview.pk}").json()["results"]
    assert [(r["id"], r["answer_text"]) for r in history] == [(body["id"], text)]

    export = api.get("/api/v1/me/export/").json()
    assert [(r["id"], r["answer_text"]) for r in export["reviews"]] == [(body["id"], text)]


def test_answer_text_is_optional_and_blank_by_default(api, interview, recall, due):
    plain = _review(api, interview)
    assert plain.status_code == 201 and plain.json()["answer_text"] == ""
    # A blank written answer is no written answer, on any kind of card.
    blank = _review(api, recall, answer_text="   ")
    assert blank.status_code == 201 and blank.json()["answer_text"] == ""


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (42, "Expected a string, got int."),
        (["an", "answer"], "Expected a string, got list."),
        ({"text": "x"}, "Expected a string, got dict."),
        (None, "This field may not be null."),
        ("x" * (MAX + 1), f"no more than {MAX:,} characters".replace(",", "")),
        ("half\x00way", "Null characters are not allowed."),
    ],
)
def test_a_bad_answer_text_is_a_400_naming_it_and_changes_nothing(
    api, learner, interview, due, value, expected
):
    response = _review(api, interview, answer_text=value)
    assert response.status_code == 400, response.content
    assert list(response.json()) == ["answer_text"]
    assert expected in response.json()["answer_text"][0]
    _unchanged(learner, interview)


def test_the_longest_answer_text_is_accepted(api, interview, due):
    response = _review(api, interview, answer_text="y" * MAX)
    assert response.status_code == 201
    assert len(ReviewLog.objects.get().answer_text) == MAX


def test_a_written_answer_for_a_recall_card_is_a_400(api, learner, recall, due):
    response = _review(api, recall, answer_text="I wrote this")
    assert response.status_code == 400
    assert response.json() == {
        "answer_text": [
            "Only interview cards take a written answer; this is a recall card. "
            "Send answer_text empty or leave it out."
        ]
    }
    _unchanged(learner, recall)


def test_review_errors_keep_their_order_with_a_written_answer(api, learner, other_deck, due):
    # Not the learner's card: 404 before anything is said about the written answer.
    stranger = other_deck.cards.get()
    assert _review(api, stranger, answer_text="x").status_code == 404


def test_the_idempotency_key_covers_the_written_answer(api, learner, interview, due):
    headers = {"HTTP_IDEMPOTENCY_KEY": "interview-1"}
    body = {"card": interview.pk, "result": "pass", "answer_text": "First draft"}
    first = api.post("/api/v1/reviews/", body, format="json", **headers)
    again = api.post("/api/v1/reviews/", body, format="json", **headers)
    assert first.status_code == again.status_code == 201
    assert again.json() == first.json()
    changed = api.post(
        "/api/v1/reviews/", {**body, "answer_text": "Second draft"}, format="json", **headers
    )
    assert changed.status_code == 422
    assert list(ReviewLog.objects.values_list("answer_text", flat=True)) == ["First draft"]


def test_a_learner_never_sees_another_learners_written_answers(
    api, other_api, other_learner, deck, interview, due, client
):
    assert _review(api, interview, answer_text="Alice's private answer").status_code == 201
    enroll(learner=other_learner, deck=deck, at=START)
    assert other_api.get("/api/v1/reviews/").json()["results"] == []
    assert other_api.get("/api/v1/me/export/").json()["reviews"] == []
    client.force_login(other_learner)
    page = client.get(reverse("card-notes", args=[interview.pk]))
    assert page.status_code == 200
    assert "Alice's private answer" not in page.content.decode()


def test_deleting_the_account_deletes_the_written_answers(api, learner, interview, due):
    assert _review(api, interview, answer_text="Mine alone").status_code == 201
    assert api.delete("/api/v1/me/", {"password": "s3cret-pass!"}, format="json").status_code == 204
    log = ReviewLog.objects.get()  # kept for the card's statistics, without the text
    assert log.answer_text == ""


# --- The review page without JavaScript, and the card's notes -----------------------------


def test_the_review_form_posts_the_written_answer(client, learner, interview, due):
    client.force_login(learner)
    page = client.get(reverse("review"))
    html = page.content.decode()
    assert 'id="answer-text"' in html and 'form="grade-form"' in html
    for point in POINTS:
        assert point in html
    response = client.post(
        reverse("review"),
        {"card": interview.pk, "result": "pass", "answer_text": "Written on the page"},
    )
    assert response.status_code == 302
    assert ReviewLog.objects.get(card=interview).answer_text == "Written on the page"


def test_the_review_form_refuses_a_written_answer_for_a_recall_card(client, learner, recall, due):
    client.force_login(learner)
    response = client.post(
        reverse("review"), {"card": recall.pk, "result": "pass", "answer_text": "x"}, follow=True
    )
    assert "Only interview cards take a written answer" in response.content.decode()
    _unchanged(learner, recall)
    too_long = client.post(
        reverse("review"), {"card": recall.pk, "result": "pass", "answer_text": "x" * (MAX + 1)}
    )
    assert too_long.status_code == 400
    assert b"at most 10,000 characters" in too_long.content
    _unchanged(learner, recall)


def test_a_recall_card_offers_no_written_answer(client, learner, deck, due):
    client.force_login(learner)
    html = client.get(reverse("review")).content.decode()  # the first card is a recall card
    assert '<div class="interview-answer" id="interview-answer" hidden>' in html


def test_the_cards_notes_show_the_written_answers_newest_first_without_undone_ones(
    api, client, learner, interview, due
):
    first = _review(api, interview, "fail", answer_text="<b>Draft</b> one").json()
    with time_machine.travel(DUE_DAY + dt.timedelta(days=1), tick=False):
        second = _review(api, interview, "pass", answer_text="Better second answer").json()
        undone = api.post(f"/api/v1/reviews/{second['id']}/undo/")
        assert undone.status_code == 200
        third = _review(api, interview, "pass", answer_text="Final answer").json()
        assert third["answer_text"] == "Final answer"
        client.force_login(learner)
        html = client.get(reverse("card-notes", args=[interview.pk])).content.decode()
    section = html[html.index('id="written-answers"') :]
    assert section.index("Final answer") < section.index("Draft")
    assert "Better second answer" not in section
    assert "&lt;b&gt;Draft&lt;/b&gt; one" in section  # shown as written, never as markup
    assert "graded Again" in section and "graded Good" in section
    for point in POINTS:
        assert point in html
    assert first["answer_text"] == "<b>Draft</b> one"


# --- Key points on cards: the API, the admin, the due queue --------------------------------


def _card_body(deck, **fields):
    return {"deck": deck.slug, "kind": "interview", "prompt": "Q?", "answer": "A.", **fields}


def test_staff_write_key_points_and_learners_read_them(staff_api, api, learner, deck):
    response = staff_api.post(
        "/api/v1/cards/", _card_body(deck, points=["  First  ", "Second"]), format="json"
    )
    assert response.status_code == 201, response.content
    card = Card.objects.get(pk=response.json()["id"])
    assert card.points == ["First", "Second"]
    assert api.get(f"/api/v1/cards/{card.pk}/").json()["points"] == ["First", "Second"]
    patched = staff_api.patch(f"/api/v1/cards/{card.pk}/", {"points": []}, format="json")
    assert patched.status_code == 200 and patched.json()["points"] == []


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"kind": "recall", "points": ["x"]}, "points", "Only interview cards carry key points"),
        ({"points": "one, two"}, "points", "Expected a list of short texts, got a string."),
        ({"points": ["ok", 3]}, "points.1", "Expected a short text, got a number."),
        ({"points": ["ok", " "]}, "points.1", "got an empty string"),
        ({"points": ["x" * 201]}, "points.0", "at most 200 characters, got 201"),
        ({"points": ["same", "same "]}, "points.1", "given twice"),
        ({"points": [f"p{i}" for i in range(13)]}, "points", "at most 12 key points, got 13"),
        ({"points": ["nul\x00"]}, "points.0", "NUL"),
    ],
)
def test_bad_key_points_are_a_400_naming_the_point(staff_api, deck, fields, field, message):
    before = Card.objects.count()
    response = staff_api.post("/api/v1/cards/", _card_body(deck, **fields), format="json")
    assert response.status_code == 400, response.content
    assert message in " ".join(response.json()[field])
    assert Card.objects.count() == before


def test_the_due_queue_carries_each_cards_key_points(api, interview, due):
    results = api.get("/api/v1/reviews/due/?page_size=100").json()["results"]
    points = {item["card"]["id"]: item["card"]["points"] for item in results}
    assert points[interview.pk] == POINTS
    assert all(p == [] for card_id, p in points.items() if card_id != interview.pk)


@pytest.fixture
def admin_client(client, staff):
    staff.is_superuser = True
    staff.save()
    client.force_login(staff)
    return client


def _admin_form(card, **fields):
    return {
        "deck": card.deck_id,
        "key": card.key,
        "kind": card.kind,
        "position": card.position,
        "is_active": "on",
        "prompt": card.prompt,
        "answer": card.answer,
        "exercise": "null",
        **fields,
    }


def test_staff_edit_key_points_one_per_line_in_the_admin(admin_client, interview):
    url = reverse("admin:cards_card_change", args=[interview.pk])
    page = admin_client.get(url).content.decode()
    assert "Scores grow with d_k\nThe softmax saturates" in page
    saved = admin_client.post(url, _admin_form(interview, points="Alpha\n\n  Beta  \n"))
    assert saved.status_code == 302
    interview.refresh_from_db()
    assert interview.points == ["Alpha", "Beta"]
    refused = admin_client.post(url, _admin_form(interview, points="Same\nSame"))
    assert refused.status_code == 200
    assert refused.context["adminform"].form.errors["points"] == [
        "Line 2: The key point 'Same' is given twice; keep one."
    ]
    interview.refresh_from_db()
    assert interview.points == ["Alpha", "Beta"]


def test_the_admin_shows_written_answers_read_only(admin_client, api, interview, due):
    log_id = _review(api, interview, answer_text="Shown to staff, never edited").json()["id"]
    listing = admin_client.get(reverse("admin:cards_reviewlog_changelist")).content.decode()
    assert "Shown to staff, never edited" in listing
    change = reverse("admin:cards_reviewlog_change", args=[log_id])
    assert "Shown to staff, never edited" in admin_client.get(change).content.decode()
    assert admin_client.post(change, {"answer_text": "edited"}).status_code == 403
    assert ReviewLog.objects.get(pk=log_id).answer_text == "Shown to staff, never edited"


# --- Deck files ----------------------------------------------------------------------------


def _deck_doc(points):
    return {
        "format": 1,
        "deck": {"slug": "interviews", "title": "Interviews"},
        "cards": [
            {"key": "why-scale", "kind": "interview", "prompt": "Why scale?", "answer": "A."},
            {"key": "recall", "kind": "recall", "prompt": "P", "answer": "A"},
        ],
    } | ({} if points is None else {"cards": _with_points(points)})


def _with_points(points):
    return [
        {
            "key": "why-scale",
            "kind": "interview",
            "prompt": "Why scale?",
            "answer": "A.",
            "points": points,
        },
        {"key": "recall", "kind": "recall", "prompt": "P", "answer": "A"},
    ]


def test_deck_files_carry_key_points_and_export_them_back(db):
    deck_import(data=_deck_doc(POINTS))
    card = Card.objects.get(key="why-scale")
    assert card.points == POINTS
    exported = deck_export(deck=Deck.objects.get(slug="interviews"))
    entries = {entry["key"]: entry for entry in exported["cards"]}
    assert entries["why-scale"]["points"] == POINTS
    assert "points" not in entries["recall"]  # only cards that have some
    for fmt in ("yaml", "json"):
        text = deck_dump(exported, fmt=fmt)
        again = deck_load(text, name=f"deck.{fmt}")
        assert again == exported
        report = deck_import(data=again)
        assert (report.updated, report.unchanged) == (0, 2)
    # Editing the points in the file updates the card in place.
    report = deck_import(data=_deck_doc(["Only one now"]))
    assert report.updated == 1
    card.refresh_from_db()
    assert card.points == ["Only one now"]


@pytest.mark.parametrize(
    ("points", "line"),
    [
        ("a string", "cards[0].points: expected a list of short texts, got a string"),
        (["fine", ""], "cards[0].points.1: expected a short text, got an empty string"),
        ([["nested"]], "cards[0].points.0: expected a short text, got a list"),
    ],
)
def test_deck_files_name_a_bad_key_point(db, points, line):
    with pytest.raises(DeckFileError) as raised:
        deck_import(data=_deck_doc(points))
    assert line in raised.value.errors
    assert not Deck.objects.filter(slug="interviews").exists()


def test_deck_files_refuse_key_points_on_another_kind(db):
    doc = _deck_doc(None)
    doc["cards"][1]["points"] = ["Not here"]
    with pytest.raises(DeckFileError) as raised:
        deck_import(data=doc)
    assert raised.value.errors == [
        "cards[1].points: only interview cards carry key points; "
        "expected an empty list for a recall card"
    ]


def test_every_interview_card_of_the_starter_deck_has_key_points():
    doc = deck_load(Path(rules.__file__).parent / "content" / "attention-and-transformers.yaml")
    interviews = [entry for entry in doc["cards"] if entry.get("kind") == "interview"]
    assert interviews
    for entry in interviews:
        assert 3 <= len(entry.get("points", [])) <= rules.MAX_POINTS, entry["key"]
        problems = rules.card_problems(
            kind="interview",
            prompt=entry["prompt"],
            answer=entry["answer"],
            exercise=None,
            points=entry["points"],
        )
        assert problems == {}, entry["key"]

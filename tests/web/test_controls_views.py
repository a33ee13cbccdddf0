"""The learner's study controls on the pages: undo, suspend, bury, leech, reports, pause."""

from __future__ import annotations

import datetime as dt

import pytest
from django.test import Client
from django.utils import timezone

from cards import selectors, services
from cards.models import Card, Deck, LearnerProfile, Report, ReviewLog, ReviewState

pytestmark = pytest.mark.django_db


@pytest.fixture
def recall_deck(deck):
    Card.objects.filter(deck=deck, kind=Card.Kind.EXERCISE).update(is_active=False)
    return deck


@pytest.fixture
def studying(learner, recall_deck):
    """A client logged in as a learner whose recall card is due today."""
    services.enroll(learner=learner, deck=recall_deck, at=timezone.now())
    today = selectors.learner_today(learner=learner, at=timezone.now())
    ReviewState.objects.filter(learner=learner).update(due_on=today)
    client = Client()
    client.force_login(learner)
    return client


def card_of(deck) -> Card:
    return deck.cards.get(key="why-scale")


def test_undo_button_after_a_grade_puts_the_card_back(studying, learner, recall_deck):
    card = card_of(recall_deck)
    page = studying.get("/review/").content.decode()
    assert 'id="undo-button"' not in page  # nothing graded yet
    studying.post("/review/", {"card": card.pk, "result": "fail"})
    done = studying.get("/review/")
    assert done.templates[0].name == "cards/review_done.html"
    assert b'id="undo-button"' in done.content and b"js/controls.js" in done.content
    log = ReviewLog.objects.get(learner=learner)
    response = studying.post("/review/undo/", {"review": log.pk}, follow=True)
    assert b"Undone" in response.content
    assert b'data-card="%d"' % card.pk in response.content  # due again, shown again
    assert ReviewState.objects.get(learner=learner, card=card).step == 0
    again = studying.post("/review/undo/", {"review": log.pk}, follow=True)
    assert b"already undone" in again.content
    assert ReviewLog.objects.filter(undo_of=log).count() == 1


def test_undo_of_someone_elses_review_is_404(studying, other_learner, recall_deck):
    services.enroll(learner=other_learner, deck=recall_deck, at=timezone.now())
    today = selectors.learner_today(learner=other_learner, at=timezone.now())
    ReviewState.objects.filter(learner=other_learner).update(due_on=today)
    log = services.review_record(
        learner=other_learner, card=card_of(recall_deck), result="pass", at=timezone.now()
    )
    assert studying.post("/review/undo/", {"review": log.pk}).status_code == 404
    assert studying.post("/review/undo/", {"review": "x"}).status_code == 400


def test_suspend_bury_from_the_review_page_and_resume_from_the_dashboard(
    studying, learner, recall_deck
):
    card = card_of(recall_deck)
    page = studying.get("/review/").content.decode()
    assert 'id="suspend-button"' in page and 'id="bury-button"' in page
    response = studying.post(f"/cards/{card.pk}/suspend/", {"next": "/review/"}, follow=True)
    assert response.templates[0].name == "cards/review_done.html"
    dashboard = studying.get("/").content.decode()
    assert 'id="suspended-cards"' in dashboard and "Why divide the scores" in dashboard
    studying.post(f"/cards/{card.pk}/suspend/", {"action": "resume", "next": "/"})
    assert 'id="suspended-cards"' not in studying.get("/").content.decode()
    studying.post(f"/cards/{card.pk}/bury/", {"next": "/review/"})
    assert studying.get("/review/").templates[0].name == "cards/review_done.html"
    assert ReviewState.objects.get(learner=learner, card=card).buried_on is not None
    # An offsite "next" is ignored.
    response = studying.post(f"/cards/{card.pk}/bury/", {"next": "https://evil.example/"})
    assert response["Location"] == "/review/"


def test_controls_on_a_card_not_on_your_ladder_are_404(studying):
    other_deck = Deck.objects.create(slug="elsewhere", title="Elsewhere")
    card = Card.objects.create(deck=other_deck, prompt="Not enrolled", answer="No")
    assert studying.post(f"/cards/{card.pk}/suspend/").status_code == 404
    assert studying.post(f"/cards/{card.pk}/bury/").status_code == 404


def test_a_leech_is_announced_with_notes_and_an_offer_to_suspend(
    studying, learner, recall_deck, settings
):
    settings.STUDY_LEECH_LAPSES = 2
    card = card_of(recall_deck)
    assert 'id="leech-warning"' not in studying.get("/review/").content.decode()
    now = timezone.now()
    today = selectors.learner_today(learner=learner, at=now)
    ReviewLog.objects.bulk_create(
        [
            ReviewLog(
                learner=learner,
                card=card,
                reviewed_at=now - dt.timedelta(days=d),
                study_day=today - dt.timedelta(days=d),
                result="fail",
                step_before=0,
                step_after=0,
                interval_days=1,
                due_before=today - dt.timedelta(days=d),
                due_after=today - dt.timedelta(days=d - 1),
            )
            for d in (2, 3)
        ]
    )
    page = studying.get("/review/").content.decode()
    assert 'id="leech-warning"' in page
    assert f'href="/cards/{card.pk}/notes/"' in page
    notes = studying.get(f"/cards/{card.pk}/notes/").content.decode()
    assert "one-hot" in notes and 'id="notes-suspend"' in notes


def test_report_from_the_review_page_is_received(studying, learner, recall_deck):
    card = card_of(recall_deck)
    page = studying.get("/review/").content.decode()
    assert 'id="report-form"' in page
    response = studying.post(
        "/reports/new/",
        {"card": card.pk, "text": "Typo in the answer", "next": "/review/"},
        follow=True,
    )
    assert b"your report was received" in response.content
    report = Report.objects.get()
    assert (report.learner, report.card, report.text) == (learner, card, "Typo in the answer")
    profile = studying.get("/profile/").content.decode()
    assert "Typo in the answer" in profile and "Received" in profile
    empty = studying.post("/reports/new/", {"card": card.pk, "text": ""}, follow=True)
    assert b"was not sent" in empty.content and Report.objects.count() == 1


def test_pause_and_end_it_from_the_profile(studying, learner, recall_deck):
    today = selectors.learner_today(learner=learner, at=timezone.now())
    page = studying.get("/profile/").content.decode()
    assert 'id="pause-form"' in page and 'href="/api/v1/me/reviews.csv"' in page
    studying.post("/profile/pause/", {"start": today.isoformat(), "days": 3})
    assert studying.get("/review/").templates[0].name == "cards/review_done.html"
    assert 'id="pause-end"' in studying.get("/profile/").content.decode()
    assert ReviewState.objects.get(learner=learner).due_on == today + dt.timedelta(days=3)
    studying.post("/profile/pause/", {"action": "end"})
    assert ReviewState.objects.get(learner=learner).due_on == today
    profile = LearnerProfile.objects.get(user=learner)
    assert profile.pause_start is None and profile.pause_days == 0
    bad = studying.post(
        "/profile/pause/",
        {"start": (today - dt.timedelta(days=1)).isoformat(), "days": 3},
        follow=True,
    )
    assert b"Pause not set" in bad.content
    assert ReviewState.objects.get(learner=learner).due_on == today


def test_controls_need_a_login(recall_deck):
    client = Client()
    for path in [
        "/review/undo/",
        "/cards/1/suspend/",
        "/cards/1/bury/",
        "/reports/new/",
        "/profile/pause/",
    ]:
        assert client.post(path).status_code == 302, path


def test_the_exercise_page_of_a_review_offers_a_report(learner, deck):
    services.enroll(learner=learner, deck=deck, at=timezone.now())
    today = selectors.learner_today(learner=learner, at=timezone.now())
    ReviewState.objects.filter(learner=learner).update(due_on=today)
    card = deck.cards.get(kind=Card.Kind.EXERCISE)
    exercise = services.exercise_for_review(learner=learner, card=card, today=today)
    client = Client()
    client.force_login(learner)
    page = client.get(f"/exercises/{exercise.pk}/").content.decode()
    assert 'id="report-form"' in page
    assert f'name="exercise" value="{exercise.pk}"' in page
    response = client.post(
        "/reports/new/",
        {"card": card.pk, "exercise": exercise.pk, "text": "Grid too small", "next": "/"},
    )
    assert response.status_code == 302
    assert Report.objects.get().exercise_id == exercise.pk

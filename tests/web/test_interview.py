"""An interview card in the browser, at phone and desktop widths: the answer written first,
the key points ticked, the suggested grade marked in text, the learner's own grade
recorded with the written answer, and that answer in the card's notes and the export.
axe-core checks every new state."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from django.utils import timezone

from cards.models import Card, Deck, ReviewLog
from cards.services import enroll

from .conftest import (
    WIDTHS,
    axe_check,
    go_offline,
    go_online,
    log_in,
    open_view,
    wait_until,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

POINTS = [
    "Dot products of d_k terms have variance d_k",
    "Large scores saturate the softmax",
    "Saturation leaves tiny gradients",
    "Dividing by sqrt(d_k) restores variance 1",
]
WRITTEN = "Scores grow with d_k, so the softmax saturates\nand the gradients vanish."


@pytest.fixture
def interview_deck(db) -> Deck:
    deck = Deck.objects.create(slug="interviews", title="Interviews")
    Card.objects.create(
        deck=deck,
        key="why-scale",
        kind=Card.Kind.INTERVIEW,
        prompt=r"Why are attention scores divided by $\sqrt{d_k}$?",
        answer="Unscaled scores have variance $d_k$; the softmax saturates and learning stalls.",
        points=POINTS,
        position=1,
    )
    Card.objects.create(
        deck=deck,
        key="cross-attention",
        kind=Card.Kind.INTERVIEW,
        prompt="Self-attention versus cross-attention?",
        answer="Cross-attention reads keys and values from the encoder.",
        points=["Queries from the decoder", "Keys and values from the encoder"],
        position=2,
    )
    return deck


@pytest.fixture
def due_now(learner, interview_deck):
    enroll(learner=learner, deck=interview_deck, at=timezone.now() - dt.timedelta(days=3))
    learner.review_states.update(due_on=timezone.localdate() - dt.timedelta(days=2))
    first = interview_deck.cards.get(key="why-scale")
    learner.review_states.filter(card=first).update(
        due_on=timezone.localdate() - dt.timedelta(days=3)
    )
    return first


@pytest.fixture(params=list(WIDTHS))
def view(request, browser):
    yield from open_view(browser, request.param, WIDTHS[request.param], accept_downloads=True)


@pytest.fixture
def check(axe, screenshot):
    """Screenshot the page as it stands, run axe on it and fail on any violation."""

    def run(page, name: str) -> None:
        axe_check(axe, screenshot, page, f"interview-{name}-{page.width_name}", name)

    return run


def _suggested(page) -> list[str]:
    """The grade buttons whose text says they are suggested."""
    return [
        name
        for name, selector in (("Again", "#grade-again"), ("Good", "#grade-good"))
        if "suggested" in page.inner_text(selector)
    ]


def test_an_interview_answer_written_ticked_graded_and_exported(
    live_server, view, check, learner, due_now
):
    base = live_server.url
    log_in(view.context, live_server, learner)
    view.goto(f"{base}/review/")
    check(view, "front")
    box = view.get_by_label("Your answer, as you would give it in the interview")
    box.fill(WRITTEN)
    # Space and digits type into the box; they neither show the answer nor grade.
    box.press("End")
    box.press("Space")
    box.press("2")
    assert not view.is_visible("#answer-body")
    assert not ReviewLog.objects.exists()
    assert box.input_value() == WRITTEN + " 2"
    box.fill(WRITTEN)
    check(view, "written")

    view.get_by_text("Show answer").click()
    view.wait_for_selector("#points-checklist", state="visible")
    # Focus moves to the first key point when the answer's toggle event is handled.
    wait_until(view, "document.activeElement.name === 'point'")
    assert _suggested(view) == []  # nothing is suggested before a tick
    check(view, "points")

    view.get_by_label(POINTS[0]).check()
    view.get_by_label(POINTS[2]).check()
    assert _suggested(view) == ["Again"]  # two of four is not most
    assert "2 of 4 key points covered: Again is suggested" in view.inner_text("#points-tally")
    view.get_by_label(POINTS[3]).check()
    assert _suggested(view) == ["Good"]
    assert "3 of 4 key points covered: Good is suggested" in view.inner_text("#points-tally")
    check(view, "suggested")

    # The learner decides: Again, against the suggestion.
    view.get_by_role("button", name="Again").click()
    wait_until(view, "document.getElementById('review-card').dataset.card !== undefined")
    view.wait_for_selector("#review-flash li")
    log = ReviewLog.objects.get(learner=learner, card=due_now)
    assert (log.result, log.answer_text) == ("fail", WRITTEN)
    # The next interview card comes with an empty box and its own points, none ticked.
    assert view.input_value("#answer-text") == ""
    view.get_by_text("Show answer").click()
    assert view.locator("#points-list input").count() == 2
    assert view.locator("#points-list input:checked").count() == 0

    view.goto(f"{base}/cards/{due_now.pk}/notes/")
    history = view.inner_text("#written-answers")
    assert "graded Again" in history and "so the softmax saturates" in history
    check(view, "notes")

    token = view.context.request.get(f"{base}/api/v1/me/export/")
    assert token.status == 200
    reviews = json.loads(token.text())["reviews"]
    assert [(r["card_id"], r["answer_text"]) for r in reviews] == [(due_now.pk, WRITTEN)]


def test_the_written_answer_waits_offline_and_goes_out_with_its_grade(
    live_server, page, learner, due_now
):
    base = live_server.url
    log_in(page.context, live_server, learner)
    page.goto(f"{base}/review/")
    page.get_by_label("Your answer, as you would give it in the interview").fill("Offline draft")
    page.get_by_text("Show answer").click()
    go_offline(page.context)
    page.get_by_role("button", name="Good").click()
    page.wait_for_selector("#offline-status:not([hidden])")
    queued = page.evaluate("JSON.parse(localStorage.getItem('study.review-queue.v1'))")
    assert [(item["card"], item["answer_text"]) for item in queued] == [
        (due_now.pk, "Offline draft")
    ]
    assert not ReviewLog.objects.exists()
    go_online(page.context)
    page.evaluate("window.dispatchEvent(new Event('online'))")
    wait_until(page, "JSON.parse(localStorage.getItem('study.review-queue.v1')).length === 0")
    log = ReviewLog.objects.get(learner=learner, card=due_now)
    assert (log.result, log.answer_text) == ("pass", "Offline draft")

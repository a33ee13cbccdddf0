"""A prediction asked during a review is answered on the review page: the learner stays on
/review/, "Card N of M" stays, the question is shown once, and axe finds nothing."""

from __future__ import annotations

import datetime as dt
import re

import numpy as np
import pytest
from django.urls import reverse
from django.utils import timezone

from cards.models import Card, Deck, ReviewLog
from cards.services import enroll
from exercises.cells import cell_words
from exercises.models import Exercise, Prediction

from .conftest import WIDTHS, axe_check, log_in, open_view

QUESTION = "what does the first token (token 1) attend to?"


@pytest.fixture
def predicting_deck(db) -> Deck:
    deck = Deck.objects.create(slug="masks", title="Masks")
    Card.objects.create(
        deck=deck,
        key="causal-predict",
        kind=Card.Kind.EXERCISE,
        prompt="A decoder with the causal mask: predict first, then give the weights.",
        exercise={"kind": "causal", "params": {"n": 3, "d_k": 2, "predict": "token_0"}},
        position=1,
    )
    Card.objects.create(
        deck=deck, key="why-mask", kind=Card.Kind.RECALL, prompt="Why mask?", answer="Causality."
    )
    return deck


@pytest.fixture
def due_now(learner, predicting_deck):
    enroll(learner=learner, deck=predicting_deck, at=timezone.now() - dt.timedelta(days=3))
    card = predicting_deck.cards.get(key="causal-predict")
    learner.review_states.update(due_on=timezone.localdate() - dt.timedelta(days=2))
    # The exercise card first in the queue, the recall card after it.
    learner.review_states.filter(card=card).update(
        due_on=timezone.localdate() - dt.timedelta(days=3)
    )
    return card


def todays_exercise(learner) -> Exercise:
    """The exercise the review page shows: the one bound last (the beat may have bound
    others ahead of it)."""
    return Exercise.objects.filter(owner=learner, binding__isnull=False).latest("pk")


def _prediction_action(html: str) -> str:
    form = html[html.index('id="prediction-form"') - 200 :]
    return re.search(r'action="([^"]+)"', form).group(1).replace("&amp;", "&")


# --- The page, through Django's client ----------------------------------------------------


@pytest.mark.django_db
def test_a_prediction_made_in_the_review_returns_to_the_review(client, learner, due_now):
    client.force_login(learner)
    html = client.get(reverse("review")).content.decode()
    assert "Card 1 of 2" in html
    assert html.count(QUESTION) == 1  # in the prediction's form, not again in the prompt
    action = _prediction_action(html)
    assert action.endswith("?from=review")

    answered = client.post(
        action, {"phase": "prediction", "answer-prediction": "only itself"}, follow=False
    )
    assert answered.status_code == 302
    assert answered["Location"] == reverse("review") + "#prediction"
    exercise = todays_exercise(learner)
    assert Prediction.objects.get(exercise=exercise).answer == "only itself"
    assert exercise.attempts_used == 0 and not ReviewLog.objects.exists()

    html = client.get(reverse("review")).content.decode()
    assert "Card 1 of 2" in html
    assert 'id="prediction-made"' in html and 'id="answer-form"' in html
    assert html.count(QUESTION) == 1


@pytest.mark.django_db
def test_an_empty_prediction_in_the_review_is_named_and_changes_nothing(client, learner, due_now):
    client.force_login(learner)
    action = _prediction_action(client.get(reverse("review")).content.decode())
    for body in ({"phase": "prediction"}, {"phase": "prediction", "answer-prediction": "maybe"}):
        response = client.post(action, body, follow=True)
        assert response.redirect_chain[-1][0] == reverse("review") + "#prediction"
        html = response.content.decode()
        assert "Your prediction was not recorded" in html
        assert "Card 1 of 2" in html
    assert not Prediction.objects.exists()
    assert todays_exercise(learner).attempts_used == 0


@pytest.mark.django_db
def test_the_exercise_page_asks_the_question_once_too(client, learner, due_now):
    client.force_login(learner)
    client.get(reverse("review"))  # binds the card's exercise
    exercise = todays_exercise(learner)
    html = client.get(reverse("exercise-page", args=[exercise.pk])).content.decode()
    assert html.count(QUESTION) == 1
    # The API still carries the whole prompt, question first.
    assert QUESTION in exercise.prompt


# --- In the browser, at both widths ---------------------------------------------------------


@pytest.fixture(params=list(WIDTHS))
def view(request, browser):
    yield from open_view(browser, request.param, WIDTHS[request.param])


@pytest.fixture
def check(axe, screenshot):
    """Screenshot the page as it stands, run axe on it and fail on any violation."""

    def run(page, name: str) -> None:
        axe_check(axe, screenshot, page, f"review-prediction-{name}-{page.width_name}", name)

    return run


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_review_stays_on_review_through_a_prediction(
    live_server, view, check, learner, due_now
):
    base = live_server.url
    log_in(view.context, live_server, learner)
    view.goto(f"{base}/review/")
    check(view, "asked")
    assert view.inner_text("#review-progress") == "Card 1 of 2"
    assert view.get_by_text(QUESTION).count() == 1
    view.get_by_label("only itself").check()
    view.get_by_role("button", name="Commit to this prediction").click()
    view.wait_for_selector("#prediction-made")

    assert view.url == f"{base}/review/#prediction"
    assert "You predicted only itself" in view.inner_text("#prediction-made")
    assert view.inner_text("#review-progress") == "Card 1 of 2"
    assert view.get_by_text(QUESTION).count() == 1
    current = view.locator("nav [aria-current=page]")
    assert current.count() == 1 and current.inner_text().startswith("Review")
    check(view, "made")

    exercise = todays_exercise(learner)
    weights = np.asarray(exercise.solution["weights"], dtype=float)
    for index, value in np.ndenumerate(weights):
        view.get_by_label(cell_words("weights", index), exact=True).fill(f"{value:.4f}")
    view.get_by_role("button", name="Check answers").click()
    view.wait_for_selector("#prediction-verdict")
    assert ReviewLog.objects.get(learner=learner, card=due_now).result == "pass"

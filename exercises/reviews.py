"""The review side: the one place where exercises meet the study core that reviews them.

An exercise can be handed out for a card's review; its first submission then records
the review. That is the study core's business (``cards``), and ``exercises`` never
imports ``cards`` nor names its routes or tables. What the exercise pages need of it
comes through a ``ReviewSide`` that the study core registers here when it starts
(``CardsConfig.ready()`` in ``cards.apps``):

- ``submit_url(exercise_id)``: where the exercise pages post answers. Every exercise
  answered on the site goes there; the review side tells a review from practice (its
  service is ``cards.services.exercise_reviews.exercise_review_submit``);
- ``review_page_url()``: the review page, to go on reviewing after an answer;
- ``bound_card_id(exercise_id)``: the card whose review the exercise was handed out
  for, or None for practice (the exercise page offers a report on that card);
- ``lesson_url(exercise_id, section)``: the page of the lesson section ``section`` (a
  key of ``exercises.checking.mistakes.LESSON_SECTIONS``) that teaches a diagnosed
  mistake: in the deck of the card the exercise is bound to, else in a deck whose lesson
  has that section; None when no lesson has it.

The API's submit route is the study core's too (``cards.urls`` routes
``exercises/{id}/submit/`` to ``cards.api.reviews.ExerciseReviewSubmitView``, a
subclass of ``exercises.api.ExerciseSubmitView``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from django.core.exceptions import ImproperlyConfigured


@dataclass(frozen=True)
class ReviewSide:
    """What the study core provides to the exercise pages."""

    submit_url: Callable[[int], str]
    review_page_url: Callable[[], str]
    bound_card_id: Callable[[int], int | None]
    lesson_url: Callable[[int, str], str | None] | None = None


_side: ReviewSide | None = None


def register(side: ReviewSide) -> None:
    """Make ``side`` the review side (the study core calls this once, at start-up)."""
    global _side
    _side = side


def review_side() -> ReviewSide:
    """The registered review side; ``ImproperlyConfigured`` when none is."""
    if _side is None:
        raise ImproperlyConfigured(
            "No review side is registered: the exercise pages submit through the study "
            "core, which registers one from its AppConfig.ready() (add 'cards' to "
            "INSTALLED_APPS, or call exercises.reviews.register())."
        )
    return _side


def lesson_url(exercise_id: int, section: str | None) -> str | None:
    """Where the lesson teaches ``section`` for this exercise, or None (no section, no
    review side, or a study core that resolves no lesson)."""
    if not section or _side is None or _side.lesson_url is None:
        return None
    return _side.lesson_url(exercise_id, section)

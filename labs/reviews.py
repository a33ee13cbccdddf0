"""The review side of labs: where lab submissions meet the study core that reviews them.

A card of kind ``lab`` is reviewed by submitting its lab: the first submission of that
lab on a study day while the card is due records the card's review, ``pass`` exactly
when the submission passed. Deciding which submission counts, and recording the
review, is the study core's business (``cards``); ``labs`` never imports ``cards``.
The study core registers a ``ReviewSide`` here when it starts (``CardsConfig.ready()``
in ``cards.apps``), and the lab services call it:

- ``submitted(learner, lab_slug, submission_id, at)``: inside the transaction that
  saves a new submission (``labs.services.submission_create``); the study core binds the
  submission to the due card's review of that day, if it is the first;
- ``graded(submission_id, passed, at)``: inside the transaction that stores a judged
  submission (``done``; ``passed`` true or false) or a sandbox fault (``failed``;
  ``passed`` None): the study core records the bound review, or frees the binding so
  the next submission counts.
- ``due(learner, lab_slug, at)``: whether a card of that lab waits in the learner's
  review today with no submission bound to it yet (the lab page says the next
  submission records it);
- ``review_of(submission_id)``: the result of the review a submission recorded,
  ``"pass"`` or ``"fail"``, or None (the result says so, with the way back to the review).

Without a registered side (``labs`` alone, without the study core) nothing is recorded.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


def _nothing(*args: Any, **kwargs: Any) -> None:
    return None


def _never(*args: Any, **kwargs: Any) -> bool:
    return False


@dataclass(frozen=True)
class ReviewSide:
    """What the study core provides to the lab services."""

    submitted: Callable[..., object] = _nothing
    graded: Callable[..., object] = _nothing
    due: Callable[..., bool] = _never
    review_of: Callable[..., str | None] = _nothing


_side = ReviewSide()


def register(side: ReviewSide) -> None:
    """Make ``side`` the review side (the study core calls this once, at start-up)."""
    global _side
    _side = side


def review_side() -> ReviewSide:
    """The registered review side; one that records nothing when none is."""
    return _side


def submitted(*, learner: Any, lab_slug: str, submission_id: int, at: dt.datetime) -> None:
    _side.submitted(learner=learner, lab_slug=lab_slug, submission_id=submission_id, at=at)


def graded(*, submission_id: int, passed: bool | None, at: dt.datetime) -> None:
    _side.graded(submission_id=submission_id, passed=passed, at=at)


def due(*, learner: Any, lab_slug: str, at: dt.datetime) -> bool:
    return bool(_side.due(learner=learner, lab_slug=lab_slug, at=at))


def review_of(*, submission_id: int) -> str | None:
    return _side.review_of(submission_id=submission_id)

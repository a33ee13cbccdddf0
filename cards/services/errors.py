"""Domain errors raised by services; the API maps each to one status code."""

from __future__ import annotations

import datetime as dt


class ReviewError(Exception):
    """Base class for a review that cannot be recorded."""


class NotScheduled(ReviewError):
    """The card is not on this learner's ladder (unknown, inactive, or deck not enrolled)."""


class ExerciseCardReview(ReviewError):
    """Exercise cards are reviewed by submitting their exercise."""


class LabCardReview(ExerciseCardReview):
    """Lab cards are reviewed by submitting their lab (the first submission of a study day)."""


class WrittenAnswerRefused(ReviewError):
    """A written answer for a card that is not answered in writing (not an interview card)."""

    def __init__(self, kind: str):
        super().__init__(
            f"Only interview cards take a written answer; this is a {kind} card. "
            "Send answer_text empty or leave it out."
        )
        self.kind = kind


class NotDue(ReviewError):
    def __init__(self, due_on: dt.date):
        super().__init__(f"This card is not due until {due_on.isoformat()}.")
        self.due_on = due_on


class IdempotencyConflict(Exception):
    """The Idempotency-Key was used with a different body (422) or is still in flight (409)."""

    def __init__(self, message: str, *, in_flight: bool):
        super().__init__(message)
        self.in_flight = in_flight

"""Writes of the study core: transactions, locking and idempotency live here."""

from ..decks import DeckFileError, ImportReport, deck_export, deck_import
from .accounts import profile_update, register, timezone_names, validate_timezone
from .cards import card_create, card_update, cards_set_active
from .enrollment import EnrollResult, enroll, unenroll
from .errors import ExerciseCardReview, IdempotencyConflict, NotDue, NotScheduled, ReviewError
from .exercise_reviews import exercise_for_review, exercise_review_submit, exercises_for_review
from .reviews import (
    Replay,
    exercise_review_record,
    idempotency_abandon,
    idempotency_begin,
    idempotency_finish,
    request_fingerprint,
    review_record,
)

__all__ = [
    "DeckFileError",
    "ImportReport",
    "deck_export",
    "deck_import",
    "EnrollResult",
    "ExerciseCardReview",
    "IdempotencyConflict",
    "NotDue",
    "NotScheduled",
    "Replay",
    "ReviewError",
    "card_create",
    "card_update",
    "cards_set_active",
    "enroll",
    "exercise_for_review",
    "exercise_review_record",
    "exercise_review_submit",
    "exercises_for_review",
    "idempotency_abandon",
    "idempotency_begin",
    "idempotency_finish",
    "profile_update",
    "register",
    "request_fingerprint",
    "review_record",
    "timezone_names",
    "unenroll",
    "validate_timezone",
]

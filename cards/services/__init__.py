"""Writes of the study core: transactions, locking and idempotency live here."""

from .accounts import profile_update, register, timezone_names, validate_timezone
from .cards import card_create, card_update, cards_set_active
from .controls import card_bury, card_resume, card_suspend
from .enrollment import EnrollResult, NotEnrolled, enroll, learn_more, unenroll
from .errors import (
    ExerciseCardReview,
    IdempotencyConflict,
    LabCardReview,
    NotDue,
    NotScheduled,
    ReviewError,
    WrittenAnswerRefused,
)
from .exercise_reviews import (
    DueExercise,
    due_exercises_bind,
    exercise_for_review,
    exercise_review_submit,
    exercises_for_review,
)
from .pause import MAX_PAUSE_DAYS, PauseRefused, pause_begin, pause_finish
from .reports import MAX_REPORT_CHARS, ReportTargetMissing, report_create, report_set_resolved
from .reviews import (
    Replay,
    exercise_review_record,
    idempotency_abandon,
    idempotency_begin,
    idempotency_finish,
    request_fingerprint,
    review_record,
)
from .scheduling import sync_scheduled
from .undo import UndoRefused, latest_undoable, review_undo

__all__ = [
    "MAX_PAUSE_DAYS",
    "MAX_REPORT_CHARS",
    "DueExercise",
    "EnrollResult",
    "ExerciseCardReview",
    "IdempotencyConflict",
    "LabCardReview",
    "NotDue",
    "NotEnrolled",
    "NotScheduled",
    "PauseRefused",
    "Replay",
    "ReportTargetMissing",
    "ReviewError",
    "UndoRefused",
    "WrittenAnswerRefused",
    "card_bury",
    "card_create",
    "card_resume",
    "card_suspend",
    "card_update",
    "cards_set_active",
    "due_exercises_bind",
    "enroll",
    "exercise_for_review",
    "exercise_review_record",
    "exercise_review_submit",
    "exercises_for_review",
    "idempotency_abandon",
    "idempotency_begin",
    "idempotency_finish",
    "latest_undoable",
    "learn_more",
    "pause_begin",
    "pause_finish",
    "profile_update",
    "register",
    "report_create",
    "report_set_resolved",
    "request_fingerprint",
    "review_record",
    "review_undo",
    "sync_scheduled",
    "timezone_names",
    "unenroll",
    "validate_timezone",
]

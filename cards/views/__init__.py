"""Server-rendered learner pages: accounts, dashboard, decks and the review session.

Each view parses its input, calls one service or selector and renders; the rules
(ladder, enrolment, idempotency, what to show next) stay in ``cards.services``.
"""

from .accounts import PasswordResetConfirmView, password_change, signup
from .controls import card_bury, card_notes, card_suspend, report_create, review_undo
from .home import HISTORY_WEEKS, dashboard, deck_enroll, deck_learn_more, deck_unenroll
from .lesson import deck_lesson
from .profiles import (
    account_delete,
    account_export,
    email_confirm,
    email_confirm_send,
    pause_set,
    profile,
)
from .progress import progress
from .session import controls_context, exercise_submit, review
from .theme import theme_set

__all__ = [
    "HISTORY_WEEKS",
    "PasswordResetConfirmView",
    "account_delete",
    "account_export",
    "card_bury",
    "card_notes",
    "card_suspend",
    "controls_context",
    "dashboard",
    "deck_enroll",
    "deck_learn_more",
    "deck_lesson",
    "deck_unenroll",
    "email_confirm",
    "email_confirm_send",
    "exercise_submit",
    "password_change",
    "pause_set",
    "profile",
    "progress",
    "report_create",
    "review",
    "review_undo",
    "signup",
    "theme_set",
]

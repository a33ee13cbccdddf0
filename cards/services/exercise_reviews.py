"""Exercise cards on the ladder: each due review gets a fresh exercise, bound to it.

This is the layer that knows both apps: ``exercises`` generates and checks, and
the first submission of a bound exercise records the card's review here.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Iterable
from typing import Any

from django.db import DatabaseError, IntegrityError, transaction

from exercises.kinds import ParamError, UnknownKindError
from exercises.models import Exercise
from exercises.services import SubmitOutcome, attempt_submit, exercise_create

from .. import selectors
from ..models import Card, ExerciseBinding, ReviewState
from .errors import NotDue, NotScheduled
from .reviews import exercise_review_record

logger = logging.getLogger(__name__)


def _card_params(card) -> tuple[str, dict[str, Any]]:
    spec = card.exercise or {}
    # A seed written on the card would make every review the same exercise: drop it,
    # so the server always chooses the seed of an exercise bound to a review.
    params = {k: v for k, v in (spec.get("params") or {}).items() if k != "seed"}
    return spec.get("kind", ""), params


def exercises_for_review(
    *, learner, states: Iterable[ReviewState], today: dt.date
) -> dict[int, Exercise]:
    """The exercise bound to each exercise card's review today, created when missing."""
    states = list(states)
    bindings = {
        binding.card_id: binding
        for binding in ExerciseBinding.objects.filter(
            learner=learner, card_id__in=[s.card_id for s in states], study_day=today
        ).select_related("exercise")
    }
    bound: dict[int, Exercise] = {}
    for state in states:
        binding = bindings.get(state.card_id)
        # An exercise answered while its card was out of the queue (the deck left, the
        # card inactive) was practice; its first submission is spent, so the card,
        # due again, gets a fresh exercise whose first submission can record the review.
        if binding is not None and not (
            binding.review_id is None and binding.exercise.attempts_used > 0
        ):
            bound[state.card_id] = binding.exercise
            continue
        kind, params = _card_params(state.card)
        try:
            with transaction.atomic():
                exercise = exercise_create(owner=learner, kind=kind, params=params)
                if binding is None:
                    ExerciseBinding.objects.create(
                        exercise=exercise, learner=learner, card_id=state.card_id, study_day=today
                    )
                else:
                    ExerciseBinding.objects.filter(pk=binding.pk).update(exercise=exercise)
        except IntegrityError:
            # A concurrent request bound one first: use that one.
            exercise = (
                ExerciseBinding.objects.select_related("exercise")
                .get(learner=learner, card_id=state.card_id, study_day=today)
                .exercise
            )
        except DatabaseError:
            raise
        except Exception as exc:
            # Stored parameters a kind no longer accepts, or a generator that fails on
            # them: the card is passed over in the queue, flagged for staff, logged once.
            generation_failed(card=state.card, error=exc)
            continue
        if state.card.generation_error:
            generation_recovered(card=state.card)
        bound[state.card_id] = exercise
    return bound


def _describe(error: Exception) -> str:
    if isinstance(error, UnknownKindError):
        return error.message
    if isinstance(error, ParamError):
        return f"params.{error.field}: {error.message}"
    return f"{type(error).__name__}: {error}"


def generation_failed(*, card: Card, error: Exception) -> bool:
    """Flag an exercise card that cannot generate; True (and one log line) the first time.

    The conditional UPDATE flags the card once however many requests fail on it at
    the same moment, so the log holds one line per breakage, not one per page view.
    """
    message = _describe(error)[:2000]
    flagged = Card.objects.filter(pk=card.pk, generation_error="").update(generation_error=message)
    card.generation_error = message
    if flagged:
        logger.error(
            "Exercise card %s (deck %s) cannot generate its exercise; it is passed over in "
            "review queues until it is fixed: %s",
            card.pk,
            card.deck_id,
            message,
            exc_info=not isinstance(error, (UnknownKindError, ParamError)),
        )
    return bool(flagged)


def generation_recovered(*, card: Card) -> None:
    """Clear the flag of a card that generated again (its kind's limits were restored)."""
    if Card.objects.filter(pk=card.pk).exclude(generation_error="").update(generation_error=""):
        logger.info("Exercise card %s generates again", card.pk)
    card.generation_error = ""


def exercise_for_review(*, learner, card, today: dt.date) -> Exercise | None:
    state = selectors.scheduled_state(learner=learner, card_id=card.pk)
    if state is None:
        return None
    return exercises_for_review(learner=learner, states=[state], today=today).get(card.pk)


@transaction.atomic
def exercise_review_submit(
    *, learner, exercise_id: int, answers: Any, at: dt.datetime
) -> SubmitOutcome:
    """Submit answers; the first submission of a bound exercise also records the review.

    ``outcome.result["review"]`` is the recorded review (or null for practice).
    """
    outcome = attempt_submit(owner=learner, exercise_id=exercise_id, answers=answers, at=at)
    review = None
    if outcome.first_attempt:
        binding = ExerciseBinding.objects.filter(
            exercise_id=outcome.exercise.pk, review__isnull=True
        ).first()
        if binding is not None:
            try:
                with transaction.atomic():
                    review = exercise_review_record(
                        learner=learner,
                        card_id=binding.card_id,
                        passed=bool(outcome.result["correct"]),
                        today=selectors.learner_today(learner=learner, at=at),
                        at=at,
                    )
            except (NotDue, NotScheduled):
                review = None  # reviewed another way, or left the deck: practice only
            else:
                binding.review = review
                binding.save(update_fields=["review"])
    outcome.result["review"] = (
        None
        if review is None
        else {
            "id": review.pk,
            "card": review.card_id,
            "result": review.result,
            "step": review.step_after,
            "interval_days": review.interval_days,
            "due_on": review.due_after.isoformat(),
        }
    )
    return outcome

"""Exercise cards on the ladder: each due review gets a fresh exercise, bound to it.

This is the layer that knows both apps, and the one place that reads both apps' tables:
``exercises`` generates and checks, and the first submission of a bound exercise records
the card's review here. The exercise pages reach it through the review side the study
core registers into ``exercises.reviews`` (``cards.apps``): ``bound_card_id`` below, and
the submit page, whose view calls ``exercise_review_submit``.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db import DatabaseError, transaction

from exercises.kinds import ParamError, UnknownKindError
from exercises.models import Exercise
from exercises.services import SubmitOutcome, attempt_submit, exercise_build
from studyapp.common.db import retried_on_conflict

from .. import selectors
from ..db.bindings import bind_exercises
from ..metrics import EXERCISE_CHECKS
from ..models import Card, ExerciseBinding, ReviewState
from .errors import NotDue, NotScheduled
from .locks import learner_lock
from .reviews import exercise_review_record

logger = logging.getLogger(__name__)


def _card_params(spec: dict[str, Any] | None) -> tuple[str, dict[str, Any]]:
    spec = spec or {}
    # A seed written on the card would make every review the same exercise: drop it,
    # so the server always chooses the seed of an exercise bound to a review.
    params = {k: v for k, v in (spec.get("params") or {}).items() if k != "seed"}
    return spec.get("kind", ""), params


@dataclass(frozen=True)
class DueExercise:
    """An exercise card on a due page: what is known of its binding for today."""

    card_id: int
    spec: dict[str, Any] | None
    binding_id: int | None = None
    bound_exercise_id: int | None = None
    # The card is flagged as failing to generate (``Card.generation_error``).
    flagged: bool = False


def _exercise_build(*, owner: Any, kind: str, params: dict[str, Any]) -> Exercise:
    """An unsaved review-bound variant: server-chosen seed, kept out of its parameters."""
    return exercise_build(owner=owner, kind=kind, params=params, bound=True)


def due_exercises_bind(
    *, learner: Any, items: Iterable[DueExercise], today: dt.date
) -> dict[int, Exercise]:
    """The exercise bound to each exercise card's review today, created when missing.

    Set-based: one query loads the exercises already bound, one inserts the new
    variants and one their bindings (``cards.db.bindings.bind_exercises``), whatever
    the number of cards. An exercise
    answered while its card was out of the queue (the deck left, the card inactive)
    was practice; its first submission is spent, so the card, due again, gets a
    fresh exercise whose first submission can record the review.
    """
    items = list(items)
    ready = {item.bound_exercise_id: item.card_id for item in items if item.bound_exercise_id}
    bound: dict[int, Exercise] = {}
    if ready:
        for exercise in Exercise.objects.filter(pk__in=list(ready)):
            bound[ready[exercise.pk]] = exercise
    built = _variants_build(learner=learner, items=[i for i in items if i.card_id not in bound])
    if not built:
        return bound
    won = bind_exercises(learner=learner, built=built, today=today)
    lost = []
    for card_id, exercise in built:
        if card_id in won:
            exercise.pk = won[card_id]
            exercise._state.adding = False
            bound[card_id] = exercise
        else:
            lost.append(card_id)
    if lost:  # a concurrent request bound these first: use its exercises
        for binding in ExerciseBinding.objects.filter(
            learner=learner, card_id__in=lost, study_day=today
        ).select_related("exercise"):
            bound[binding.card_id] = binding.exercise
    return bound


def _variants_build(*, learner: Any, items: list[DueExercise]) -> list[tuple[int, Exercise]]:
    """A fresh, unsaved variant per card, each with its own seed (the batch matches
    variants to cards by seed); a card whose exercise cannot be generated is skipped."""
    built: list[tuple[int, Exercise]] = []
    seeds: set[int] = set()
    for item in items:
        kind, params = _card_params(item.spec)
        try:
            exercise = _exercise_build(owner=learner, kind=kind, params=params)
            while exercise.seed in seeds:
                exercise = _exercise_build(owner=learner, kind=kind, params=params)
        except DatabaseError:
            raise
        except Exception as exc:
            # Stored parameters a kind no longer accepts, or a generator that fails on
            # them: the card is passed over in the queue, flagged for staff, logged once.
            generation_failed(card_id=item.card_id, error=exc)
            continue
        seeds.add(exercise.seed)
        built.append((item.card_id, exercise))
        if item.flagged:
            generation_recovered(card_id=item.card_id)
    return built


def exercises_for_review(
    *, learner: Any, states: Iterable[ReviewState], today: dt.date
) -> dict[int, Exercise]:
    """The exercise bound to each exercise card's review today, created when missing."""
    states = list(states)
    bindings = {
        binding.card_id: binding
        for binding in ExerciseBinding.objects.filter(
            learner=learner, card_id__in=[s.card_id for s in states], study_day=today
        ).select_related("exercise")
    }
    items = []
    for state in states:
        binding = bindings.get(state.card_id)
        usable = binding is not None and not binding.is_spent
        items.append(
            DueExercise(
                card_id=state.card_id,
                spec=state.card.exercise,
                binding_id=binding.pk if binding else None,
                bound_exercise_id=binding.exercise_id if binding is not None and usable else None,
                flagged=bool(state.card.generation_error),
            )
        )
    return due_exercises_bind(learner=learner, items=items, today=today)


def _describe(error: Exception) -> str:
    if isinstance(error, UnknownKindError):
        return error.message
    if isinstance(error, ParamError):
        return f"params.{error.field}: {error.message}"
    return f"{type(error).__name__}: {error}"


def generation_failed(*, card_id: int, error: Exception) -> bool:
    """Flag an exercise card that cannot generate; True (and one log line) the first time.

    The conditional UPDATE flags the card once however many requests fail on it at
    the same moment, so the log holds one line per breakage, not one per page view.
    """
    message = _describe(error)[:2000]
    flagged = Card.objects.filter(pk=card_id, generation_error="").update(generation_error=message)
    if flagged:
        logger.error(
            "Exercise card %s cannot generate its exercise; it is passed over in review "
            "queues until it is fixed: %s",
            card_id,
            message,
            exc_info=not isinstance(error, (UnknownKindError, ParamError)),
        )
    return bool(flagged)


def generation_recovered(*, card_id: int) -> None:
    """Clear the flag of a card that generated again (its kind's limits were restored)."""
    if Card.objects.filter(pk=card_id).exclude(generation_error="").update(generation_error=""):
        logger.info("Exercise card %s generates again", card_id)


def exercise_for_review(*, learner: Any, card: Card, today: dt.date) -> Exercise | None:
    state = selectors.scheduled_state(learner=learner, card_id=card.pk)
    if state is None:
        return None
    return exercises_for_review(learner=learner, states=[state], today=today).get(card.pk)


def bound_card_id(exercise_id: int) -> int | None:
    """The card whose review the exercise was handed out for; None for practice."""
    return (
        ExerciseBinding.objects.filter(exercise_id=exercise_id)
        .values_list("card_id", flat=True)
        .first()
    )


@retried_on_conflict
@transaction.atomic
def exercise_review_submit(
    *, learner: Any, exercise_id: int, answers: Any, at: dt.datetime
) -> SubmitOutcome:
    """Submit answers; the first submission of a bound exercise also records the review.

    ``outcome.result["review"]`` is the recorded review (or null for practice). The
    learner's lock comes first, as on every write to a learner's reviews.
    """
    learner_lock(learner_id=learner.pk)
    outcome = attempt_submit(owner=learner, exercise_id=exercise_id, answers=answers, at=at)
    if outcome.attempt is not None:  # a prediction is no check of the numbers
        EXERCISE_CHECKS.labels("correct" if outcome.result["correct"] else "wrong").inc()
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
            # The queue moved on (a review recorded, or its exercise spent as practice):
            # what it lacks today and tomorrow is bound now, not by the page that shows it.
            from .due_exercises import queue_exercises_bind  # it imports this module

            queue_exercises_bind(
                learner=learner, today=selectors.learner_today(learner=learner, at=at)
            )
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

# One module on purpose: every write of exercises, with the worked solution and hint a submission returns.
"""Writes of exercises: create a variant, submit an attempt, record a playground prediction.

Attempts. An exercise allows ``max_attempts`` submissions (3 unless its kind says
otherwise); every well-formed submission uses one. A solved exercise is closed: it takes
no further submission (``AlreadySolved``), and neither does one whose attempts are used
(``AttemptsExhausted``); both are ``ExerciseClosed``, answered 409. Malformed answers
raise ``AnswerError`` and use no attempt. The solution is revealed once the exercise is
solved or out of attempts.

Seeds. A practice exercise stores its seed in ``params.seed``, so the learner can make
it again. An exercise bound to a review (``bound=True``) keeps its server-chosen seed
private (only ``Exercise.seed``, never in ``params``) and is drawn from a stream of its
own (``exercises.variants``), so no practice exercise reproduces it.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
from django.db import IntegrityError, transaction
from django.db.models import F

from exercises import predictions, presets
from exercises.checking import AnswerError, CheckResult, check_answers
from exercises.kinds import KINDS, VARIANT_SEED_MAX, ParamError, get_kind
from exercises.kinds.worked import answer_steps, mark_first_wrong
from exercises.models import Attempt, Exercise, Prediction
from exercises.playground import PlaygroundError, preset_playground
from exercises.reviews import lesson_url
from exercises.selectors import exercise_for_owner
from exercises.variants import draw_variant


class ExerciseClosed(Exception):
    """The exercise takes no more submissions; ``str()`` says why and what to do."""

    def __init__(self, exercise: Exercise, message: str):
        super().__init__(message)
        self.exercise = exercise


class AttemptsExhausted(ExerciseClosed):
    """Every attempt of the exercise is used."""

    def __init__(self, exercise: Exercise):
        super().__init__(
            exercise,
            f"All {exercise.max_attempts} attempts of this exercise are used; "
            "generate a new exercise to keep practising.",
        )


class AlreadySolved(ExerciseClosed):
    """The exercise is solved: its solution is shown, so further answers would prove nothing."""

    def __init__(self, exercise: Exercise):
        super().__init__(
            exercise,
            "This exercise is already solved and takes no more answers; generate a new "
            "exercise to keep practising.",
        )


def closed_error(exercise: Exercise) -> ExerciseClosed | None:
    """Why ``exercise`` takes no more submissions, or None while it is open."""
    if exercise.solved:
        return AlreadySolved(exercise)
    if exercise.attempts_used >= exercise.max_attempts:
        return AttemptsExhausted(exercise)
    return None


# Both are answer errors naming the prediction's part, so a page shows them beside it;
# the API answers them 409 (the exercise is not in the state the submission assumes).
class PredictionRequired(AnswerError):
    """The exercise asks a prediction first and none is recorded yet."""

    def __init__(self, exercise: Exercise, ask: Mapping[str, Any]):
        choices = ", ".join(repr(c) for c in ask["choices"])
        self.message = (
            f"Predict first: submit {{{ask['name']!r}: one of {choices}}} on its own; "
            "the numeric parts open after it and no attempt is used by it."
        )
        super().__init__({ask["name"]: self.message})
        self.exercise = exercise
        self.ask = ask


class PredictionAlreadyMade(AnswerError):
    """A prediction is recorded once per exercise; it cannot be changed."""

    def __init__(self, prediction: Prediction):
        self.message = (
            f"The prediction is already recorded ({prediction.answer!r}) and cannot be "
            "changed; submit the numeric parts."
        )
        super().__init__({prediction.ask: self.message})
        self.prediction = prediction


@dataclass
class SubmitOutcome:
    result: dict[str, Any]
    first_attempt: bool
    exercise: Exercise
    # None for a prediction: it uses no attempt (and records no review).
    attempt: Attempt | None


def attempts_summary(exercise: Exercise) -> dict[str, int]:
    return {
        "used": exercise.attempts_used,
        "max": exercise.max_attempts,
        "remaining": max(exercise.max_attempts - exercise.attempts_used, 0),
    }


def solution_if_revealed(
    exercise: Exercise, result: Mapping[str, Any] | None = None
) -> dict[str, Any] | None:
    """The worked solution once the exercise is solved or out of attempts, else None;
    ``result`` (an attempt's) marks the step where that attempt first went wrong."""
    if exercise.solved or exercise.attempts_used >= exercise.max_attempts:
        steps, _ = worked_steps(exercise, result)
        return {**exercise.solution, "steps": steps}
    return None


# A stored exercise from before a kind changed may not fit today's recomputation: its
# worked solution is then its expected answers, one step per part.
_STEP_ERRORS = (KeyError, ValueError, TypeError, IndexError)


def worked_steps(
    exercise: Exercise, result: Mapping[str, Any] | None
) -> tuple[list[dict[str, Any]], str | None]:
    """The worked solution's steps, the first wrong one of ``result`` marked, and its name."""
    asks = [dict(a) for a in predictions.numeric_asks(exercise.asks)]
    kind = KINDS.get(exercise.kind)
    try:
        if kind is None:
            raise KeyError(exercise.kind)
        steps = kind.worked_steps(exercise.inputs, exercise.solution, asks)
    except _STEP_ERRORS:
        steps = answer_steps(asks, exercise.solution)
    first = (result or {}).get("first_wrong")
    wrong = ((result or {}).get("parts") or {}).get(first or "", {}).get("wrong_cells", [])
    return steps, mark_first_wrong(steps, first, wrong)


def latest_result(exercise: Exercise) -> dict[str, Any] | None:
    """The result of the exercise's latest attempt, or None before any."""
    last = exercise.attempt_set.order_by("-number").first()
    return last.result if last else None


def hint_for(exercise: Exercise, checked: CheckResult) -> str | None:
    """The hint for the first wrong part (or the first part not right); None when right."""
    if checked.correct:
        return None
    part = checked.first_wrong or next(n for n, p in checked.parts.items() if not p.correct)
    kind = KINDS.get(exercise.kind)
    if kind is None:
        return None
    return kind.hint(part, exercise.inputs)


def with_lesson_links(exercise: Exercise, diagnosis: list[dict[str, Any]]) -> None:
    """Each diagnosis entry (and each of its ``either``) with ``lesson_url``: the lesson
    section that teaches it, as the study core resolves it (``exercises.reviews``)."""
    for entry in diagnosis:
        for item in [entry, *entry.get("either", [])]:
            item["lesson_url"] = lesson_url(exercise.pk, item.get("lesson_section"))


def exercise_build(
    *,
    owner: Any,
    kind: str,
    params: dict[str, Any] | None,
    seed: int | None = None,
    bound: bool = False,
) -> Exercise:
    """Generate one variant that tells right from wrong, unsaved.

    The seed is ``seed`` when given, else ``params["seed"]``, else chosen by the server;
    the stored parameters carry it, so the variant can be made again. With ``bound`` (an
    exercise handed out for a review) the server always chooses the seed, keeps it out of
    the stored parameters and draws from the bound stream. Raises ``UnknownKindError`` or
    ``ParamError``.
    """
    exercise_kind = get_kind(kind)
    normalized = exercise_kind.normalize_params(params)
    if bound:
        normalized.pop("seed", None)
        chosen = secrets.randbelow(VARIANT_SEED_MAX + 1)
    else:
        if seed is not None:
            if type(seed) is not int or not 0 <= seed <= VARIANT_SEED_MAX:
                raise ParamError(
                    "seed", f"Expected an integer from 0 to {VARIANT_SEED_MAX}, got {seed!r}."
                )
            normalized["seed"] = seed
        elif normalized.get("seed") is None:
            normalized["seed"] = secrets.randbelow(VARIANT_SEED_MAX + 1)
        chosen = normalized["seed"]
    generated = draw_variant(exercise_kind, normalized, chosen, bound=bound)
    return Exercise(
        owner=owner,
        kind=exercise_kind.name,
        params=normalized,
        seed=chosen,
        prompt=generated.prompt,
        inputs=generated.inputs,
        asks=generated.asks,
        solution=generated.solution,
        rtol=generated.rtol,
        atol=generated.atol,
        max_attempts=generated.max_attempts,
    )


def exercise_create(
    *,
    owner: Any,
    kind: str,
    params: dict[str, Any] | None,
    seed: int | None = None,
    bound: bool = False,
) -> Exercise:
    """Generate and store one variant (see ``exercise_build``)."""
    exercise = exercise_build(owner=owner, kind=kind, params=params, seed=seed, bound=bound)
    exercise.save(force_insert=True)
    return exercise


def attempt_submit(*, owner: Any, exercise_id: int, answers: Any, at: datetime) -> SubmitOutcome:
    """Check ``answers`` and record the attempt.

    Raises ``Exercise.DoesNotExist`` (not the owner's), ``AnswerError`` (malformed, no
    attempt used) or ``ExerciseClosed`` (solved, or every attempt used). Race-safe: the
    attempt is claimed with a conditional UPDATE on an open exercise, so concurrent
    submissions never exceed ``max_attempts`` nor add to a solved exercise.
    """
    exercise = exercise_for_owner(owner=owner, exercise_id=exercise_id)
    ask = predictions.first_prediction(exercise.asks)
    made = None
    if ask is not None:
        made = Prediction.objects.filter(exercise=exercise, ask=ask["name"]).first()
        if isinstance(answers, dict) and ask["name"] in answers and made is not None:
            raise PredictionAlreadyMade(made)
    closed = closed_error(exercise)
    if closed is not None:
        raise closed
    if ask is not None:
        if isinstance(answers, dict) and ask["name"] in answers:
            return _prediction_submit(
                owner=owner, exercise=exercise, ask=ask, answers=answers, at=at
            )
        if made is None:
            raise PredictionRequired(exercise, ask)
    checked = check_answers(
        asks=predictions.numeric_asks(exercise.asks),
        solution=exercise.solution,
        answers=answers,
        rtol=exercise.rtol,
        atol=exercise.atol,
        inputs=exercise.inputs,
        kind=KINDS.get(exercise.kind),
    )
    result, attempt = _attempt_record(exercise=exercise, answers=answers, checked=checked, at=at)
    result["attempt"] = attempt.number
    result["prediction"] = (
        None
        if made is None or ask is None
        else predictions.prediction_summary(ask, made.answer, made.expected, made.correct)
    )
    return SubmitOutcome(
        result=result, first_attempt=attempt.number == 1, exercise=exercise, attempt=attempt
    )


@transaction.atomic
def _attempt_record(
    *, exercise: Exercise, answers: Any, checked: CheckResult, at: datetime
) -> tuple[dict[str, Any], Attempt]:
    """Claim one attempt of the open ``exercise`` and store it with its result."""
    changes: dict[str, Any] = {"attempts_used": F("attempts_used") + 1, "last_attempt_at": at}
    if checked.correct:
        changes["solved"] = True
    claimed = Exercise.objects.filter(
        pk=exercise.pk, solved=False, attempts_used__lt=F("max_attempts")
    ).update(**changes)
    if not claimed:
        exercise.refresh_from_db(fields=["attempts_used", "solved"])
        raise closed_error(exercise) or AttemptsExhausted(exercise)
    # The UPDATE holds the row until commit, so this reads our own increment.
    exercise.refresh_from_db(fields=["attempts_used", "solved", "last_attempt_at"])
    result = checked.as_dict()
    result["hint"] = hint_for(exercise, checked)
    with_lesson_links(exercise, result["diagnosis"])
    _, result["first_wrong_step"] = worked_steps(exercise, result)
    result["attempts"] = attempts_summary(exercise)
    result["solved"] = exercise.solved
    result["solution"] = solution_if_revealed(exercise, result)
    attempt = Attempt.objects.create(
        exercise=exercise,
        number=exercise.attempts_used,
        answers=answers,
        correct=checked.correct,
        score=checked.score,
        result=result,
    )
    return result, attempt


def _prediction_submit(
    *, owner: Any, exercise: Exercise, ask: Mapping[str, Any], answers: dict[str, Any], at: datetime
) -> SubmitOutcome:
    """Record the prediction asked first: on its own, once, and without using an attempt."""
    name = ask["name"]
    extra = [part for part in answers if part != name]
    if extra:
        raise AnswerError(
            {
                str(part): (
                    f"Submit {name!r} on its own first; the numeric parts open after the "
                    "prediction."
                )
                for part in extra
            }
        )
    try:
        check = predictions.prediction_check(ask["choices"], answers[name], exercise.solution[name])
    except ValueError as exc:
        raise AnswerError({name: str(exc)}) from None
    try:
        with transaction.atomic():
            made = Prediction.objects.create(
                owner=owner,
                exercise=exercise,
                ask=name,
                answer=check.answer,
                expected=check.expected,
                correct=check.correct,
                created_at=at,
            )
    except IntegrityError:
        # A concurrent request recorded it first.
        raise PredictionAlreadyMade(Prediction.objects.get(exercise=exercise, ask=name)) from None
    result = {
        "prediction": prediction_state(ask, made),
        "attempts": attempts_summary(exercise),
        "solved": exercise.solved,
        "next": [a["name"] for a in predictions.numeric_asks(exercise.asks)],
    }
    return SubmitOutcome(result=result, first_attempt=False, exercise=exercise, attempt=None)


def prediction_state(ask: Mapping[str, Any], made: Prediction | None) -> dict[str, Any] | None:
    """What an exercise shows of its prediction before the numbers: the choice committed to."""
    if made is None:
        return None
    return {"part": ask["name"], "answer": made.answer, "created_at": made.created_at}


# --- Predictions in the playground ---------------------------------------------------------


def playground_prediction_record(
    *, owner: Any, preset: str, answer: str, at: datetime
) -> tuple[Prediction, dict[str, Any]]:
    """Record a prediction about preset ``preset`` and mark it against its weights.

    Returns the prediction and the preset's playground result (every intermediate).
    Raises ``PlaygroundError`` naming ``preset`` or ``answer``.
    """
    if preset not in presets.PRESETS:
        raise PlaygroundError(
            {"preset": [f"Expected one of {', '.join(presets.PRESETS)}; got {preset!r}."]}
        )
    result = preset_playground(preset)
    expected = presets.prediction_expected(
        preset, np.asarray(result["weights"]), np.asarray(result["mask"])
    )
    try:
        check = predictions.prediction_check(presets.prediction_choices(preset), answer, expected)
    except ValueError as exc:
        raise PlaygroundError({"answer": [str(exc)]}) from None
    made = Prediction.objects.create(
        owner=owner,
        exercise=None,
        ask=f"playground:{preset}",
        answer=check.answer,
        expected=check.expected,
        correct=check.correct,
        created_at=at,
    )
    return made, result

"""Writes of exercises: create a variant, submit an attempt, purge stale variants.

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
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
from django.db import transaction
from django.db.models import F

from exercises import engine
from exercises.checking import check_answers
from exercises.kinds import SEED_MAX, ParamError, get_kind
from exercises.models import Attempt, Exercise
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


@dataclass
class SubmitOutcome:
    result: dict[str, Any]
    first_attempt: bool
    exercise: Exercise
    attempt: Attempt


def attempts_summary(exercise: Exercise) -> dict[str, int]:
    return {
        "used": exercise.attempts_used,
        "max": exercise.max_attempts,
        "remaining": max(exercise.max_attempts - exercise.attempts_used, 0),
    }


def solution_if_revealed(exercise: Exercise) -> dict[str, Any] | None:
    if exercise.solved or exercise.attempts_used >= exercise.max_attempts:
        return exercise.solution
    return None


def exercise_build(
    *,
    owner,
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
        chosen = secrets.randbelow(SEED_MAX + 1)
    else:
        if seed is not None:
            if type(seed) is not int or not 0 <= seed <= SEED_MAX:
                raise ParamError("seed", f"Expected an integer from 0 to {SEED_MAX}, got {seed!r}.")
            normalized["seed"] = seed
        elif normalized.get("seed") is None:
            normalized["seed"] = secrets.randbelow(SEED_MAX + 1)
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
    owner,
    kind: str,
    params: dict[str, Any] | None,
    seed: int | None = None,
    bound: bool = False,
) -> Exercise:
    """Generate and store one variant (see ``exercise_build``)."""
    exercise = exercise_build(owner=owner, kind=kind, params=params, seed=seed, bound=bound)
    exercise.save(force_insert=True)
    return exercise


def attempt_submit(*, owner, exercise_id: int, answers: Any, at: datetime) -> SubmitOutcome:
    """Check ``answers`` and record the attempt.

    Raises ``Exercise.DoesNotExist`` (not the owner's), ``AnswerError`` (malformed, no
    attempt used) or ``ExerciseClosed`` (solved, or every attempt used). Race-safe: the
    attempt is claimed with a conditional UPDATE on an open exercise, so concurrent
    submissions never exceed ``max_attempts`` nor add to a solved exercise.
    """
    exercise = exercise_for_owner(owner=owner, exercise_id=exercise_id)
    closed = closed_error(exercise)
    if closed is not None:
        raise closed
    checked = check_answers(
        asks=exercise.asks,
        solution=exercise.solution,
        answers=answers,
        rtol=exercise.rtol,
        atol=exercise.atol,
        inputs=exercise.inputs,
        kind=exercise.kind,
    )
    changes: dict[str, Any] = {"attempts_used": F("attempts_used") + 1, "last_attempt_at": at}
    if checked.correct:
        changes["solved"] = True
    with transaction.atomic():
        claimed = Exercise.objects.filter(
            pk=exercise.pk, solved=False, attempts_used__lt=F("max_attempts")
        ).update(**changes)
        if not claimed:
            exercise.refresh_from_db(fields=["attempts_used", "solved"])
            raise closed_error(exercise) or AttemptsExhausted(exercise)
        # The UPDATE holds the row until commit, so this reads our own increment.
        exercise.refresh_from_db(fields=["attempts_used", "solved", "last_attempt_at"])
        result = checked.as_dict()
        result["attempts"] = attempts_summary(exercise)
        result["solved"] = exercise.solved
        result["solution"] = solution_if_revealed(exercise)
        attempt = Attempt.objects.create(
            exercise=exercise,
            number=exercise.attempts_used,
            answers=answers,
            correct=checked.correct,
            score=checked.score,
            result=result,
        )
    result["attempt"] = attempt.number
    return SubmitOutcome(
        result=result, first_attempt=attempt.number == 1, exercise=exercise, attempt=attempt
    )


def exercises_purge_stale(*, older_than: datetime) -> int:
    """Delete never-attempted exercises created before ``older_than``; returns how many."""
    _, per_model = Exercise.objects.filter(attempts_used=0, created_at__lt=older_than).delete()
    return per_model.get(Exercise._meta.label, 0)


# --- The attention playground ------------------------------------------------------
# Pure computation, no writes; it lives here so the view calls one function.

PLAYGROUND_MAX = 256


@dataclass
class PlaygroundError(Exception):
    errors: dict[str, list[str]]


# Overflow to infinity is caught by the engine's finiteness checks and answered as a
# 400; NumPy's RuntimeWarning on the way would only be log noise.
@np.errstate(over="ignore", invalid="ignore")
def attention_playground(
    *,
    Q: np.ndarray | None = None,
    K: np.ndarray | None = None,
    V: np.ndarray | None = None,
    X: np.ndarray | None = None,
    W_Q: np.ndarray | None = None,
    W_K: np.ndarray | None = None,
    W_V: np.ndarray | None = None,
    mask: str | np.ndarray = "none",
    scale: bool = True,
) -> dict[str, Any]:
    """Every intermediate of one head: ``{Q, K, V, scores, weights, output, mask, shapes}``.

    # (n_q, d_k), (n_k, d_k), (n_k, d_v) -> scores (n_q, n_k), weights (n_q, n_k), output (n_q, d_v)
    or X (n, d_model) with W_Q, W_K (d_model, d_k) and W_V (d_model, d_v). ``scores`` are
    before masking (minus infinity is not JSON); ``mask`` is echoed as a boolean matrix.
    Raises ``PlaygroundError`` with per-field messages.
    """
    projected = X is not None
    if projected:
        d_model = X.shape[1]
        errors = {
            name: [
                f"Expected {d_model} rows (one per column of X, d_model = {d_model}), "
                f"got {w.shape[0]}."
            ]
            for name, w in (("W_Q", W_Q), ("W_K", W_K), ("W_V", W_V))
            if w.shape[0] != d_model
        }
        if not errors and W_Q.shape[1] != W_K.shape[1]:
            errors["W_K"] = [
                f"Expected {W_Q.shape[1]} columns like W_Q (queries and keys share d_k), "
                f"got {W_K.shape[1]}."
            ]
        if errors:
            raise PlaygroundError(errors)
        Q, K, V = engine.project(X, W_Q, W_K, W_V)
    else:
        if K.shape[1] != Q.shape[1]:
            raise PlaygroundError(
                {"K": [f"Expected {Q.shape[1]} columns like Q (d_k), got {K.shape[1]}."]}
            )
        if V.shape[0] != K.shape[0]:
            raise PlaygroundError(
                {
                    "V": [
                        f"Expected {K.shape[0]} rows, one value per key row of K, got {V.shape[0]}."
                    ]
                }
            )
    n_q, n_k = Q.shape[0], K.shape[0]
    if isinstance(mask, str):
        blocked = (
            engine.causal_mask(n_q, n_k) if mask == "causal" else np.zeros((n_q, n_k), dtype=bool)
        )
    else:
        blocked = mask
        if blocked.shape != (n_q, n_k):
            raise PlaygroundError(
                {
                    "mask": [
                        f"Expected a {n_q}×{n_k} boolean matrix (queries × keys), got "
                        f"{blocked.shape[0]}×{blocked.shape[1]}."
                    ]
                }
            )
    try:
        trace = engine.scaled_dot_product_attention(
            Q, K, V, mask=blocked if blocked.any() else None, scale=scale, return_intermediates=True
        )
    except engine.AttentionError as exc:
        rows = ", ".join(str(r) for r in exc.rows)
        raise PlaygroundError(
            {
                "mask": [
                    f"Every key is blocked for query row(s) {rows}; each row needs at least one false entry."
                ]
            }
        ) from None
    except ValueError as exc:
        raise PlaygroundError({"non_field_errors": [str(exc)]}) from None
    out: dict[str, Any] = {}
    if projected:
        out.update(X=X.tolist(), W_Q=W_Q.tolist(), W_K=W_K.tolist(), W_V=W_V.tolist())
    out.update(
        Q=np.asarray(Q).tolist(),
        K=np.asarray(K).tolist(),
        V=np.asarray(V).tolist(),
        scores=trace.scores.tolist(),
        weights=trace.weights.tolist(),
        output=trace.output.tolist(),
        mask=blocked.tolist(),
        scale=scale,
    )
    out["shapes"] = {
        name: list(np.shape(out[name]))
        for name in ("X", "W_Q", "W_K", "W_V", "Q", "K", "V", "scores", "weights", "output", "mask")
        if name in out
    }
    return out

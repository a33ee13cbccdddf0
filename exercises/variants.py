"""The variant guarantee, and drawing a variant that keeps it, deterministically from a seed.

Pure: no Django. The guarantee: every variant offered tells right from wrong. It is not
degenerate (``kind.degenerate``); the right method with every step rounded to three
decimals is marked correct; every registered mistake of its kind (``kind.mistakes``),
done exactly or rounding that way, is marked not correct; and a part judged on its own
size is not accepted off that size because its inputs were close
(``close_input_problems``). ``variant_problems`` says which promise a variant breaks,
marking with the same ``exercises.checking`` as every submission (``accepted``).

Draw 0 of a seed uses ``np.random.default_rng(seed)``; draw ``k`` uses the child stream
``SeedSequence(seed, spawn_key=(k,))``. The first draw that ``variant_problems`` finds
nothing wrong with is the variant, so the same kind, parameters and seed always give the
same inputs.

An exercise bound to a review draws from another family of streams,
``SeedSequence(seed, spawn_key=(BOUND_STREAM, k))``: a practice exercise created with
the same seed never reproduces it.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

import numpy as np

from exercises.checking import MISTAKES, answer_cells, cells_ok, check_given, follow_on
from exercises.kinds.base import ExerciseKind, Generated, ParamError
from exercises.predictions import numeric_asks

MAX_DRAWS = 400


def _right_answers(
    kind: ExerciseKind, generated: Generated, decimals: int | None = None
) -> dict[str, np.ndarray]:
    right = kind.answers_under(generated.inputs, {}, decimals)
    if right is None:  # only the base class leaves its answers uncomputed
        raise TypeError(f"kind {kind.name!r} does not compute its right answers (answers_under)")
    return right


EDGE = 0.99  # how far into its tolerance an earlier part is moved by ``close_input_problems``
BOUND_STREAM = 0xB0D  # any constant: spawn keys of another length never meet the practice ones


def draw_rng(seed: int, draw: int, *, bound: bool = False) -> np.random.Generator:
    if bound:
        return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(BOUND_STREAM, draw)))
    if draw == 0:
        return np.random.default_rng(seed)
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(draw,)))


def draw_variant(
    kind: ExerciseKind, params: dict[str, Any], seed: int, *, bound: bool = False
) -> Generated:
    """The first draw from ``seed`` that tells right from wrong.

    Raises ``ParamError`` when no draw does: parameters that leave nothing to vary (for
    example fixed sizes at which two answers coincide).
    """
    problems: list[str] = []
    for draw in range(MAX_DRAWS):
        generated = kind.generate(params, draw_rng(seed, draw, bound=bound))
        problems = variant_problems(kind, generated)
        if not problems:
            return generated
    raise ParamError(
        "params",
        f"These parameters give no {kind.name} exercise that tells a right answer from a "
        f"wrong one ({'; '.join(problems)}). Choose other sizes, or let them vary.",
    )


# --- The guarantee: does a variant tell right from wrong? -------------------------------


def variant_problems(kind: ExerciseKind, generated: Generated, decimals: int = 3) -> list[str]:
    """Why ``generated`` may not be offered; empty when it tells right from wrong.

    It is degenerate, or the right method with every step rounded to ``decimals`` is not
    accepted, or some registered mistake of the kind, done exactly or rounding that way, is.
    """
    reason = kind.degenerate(generated)
    if reason:
        return [reason]
    problems = []
    right = _right_answers(kind, generated, decimals)
    if not accepted(kind, generated, right):
        problems.append(f"the right method rounded to {decimals} decimals is rejected")
    problems += close_input_problems(kind, generated)
    for code in kind.mistakes:
        for step_decimals in (None, decimals):
            answers = kind.answers_under(generated.inputs, MISTAKES[code].recipe, step_decimals)
            if answers is None:
                break  # the mistake cannot be made on these inputs
            if accepted(kind, generated, answers):
                problems.append(f"{code} is accepted")
                break
    return problems


def close_input_problems(kind: ExerciseKind, generated: Generated) -> list[str]:
    """A part judged on its own size (``Follow.own_size``: a difference or ratio of earlier
    parts) must not be accepted off that size because its inputs were close: with its
    earlier parts moved to the edges of their tolerance, each way, and the part computed
    from them, the answer is marked correct only where the part is still within its own
    tolerance (and the rounding the follow carries) of the expected value."""
    right = _right_answers(kind, generated)
    floats = {
        ask["name"]: np.asarray(answer_cells(ask, right[ask["name"]]), dtype=np.float64)
        for ask in generated.asks
        if ask["name"] in right
    }
    problems = []
    for name, follow in follow_on(kind, generated.inputs, floats).items():
        if not follow.own_size or not follow.uses:
            continue
        for signs in itertools.product((1.0, -1.0), repeat=len(follow.uses)):
            moved = dict(floats)
            for use, sign in zip(follow.uses, signs, strict=True):
                edge = generated.atol + generated.rtol * np.abs(floats[use])
                moved[use] = floats[use] + sign * EDGE * edge
            carried = follow_on(kind, generated.inputs, moved).get(name)
            if carried is None:
                continue
            moved[name] = np.asarray(carried.value, dtype=float)
            off = not cells_ok(
                moved[name],
                generated.solution[name],
                exact=False,
                rtol=generated.rtol,
                atol=generated.atol,
                slack=follow.slack,
            ).all()
            if off and accepted(kind, generated, {**right, **moved}):
                problems.append(f"a wrong {name} is accepted because its inputs were close")
                break
    return problems


def accepted(kind: ExerciseKind, generated: Generated, answers: Mapping[str, Any]) -> bool:
    """Would these answers (a value per asked part) be marked correct?"""
    # A prediction asked first is answered on its own and marked apart from the numbers.
    asks = numeric_asks(generated.asks)
    given = {}
    for ask in asks:
        value = answer_cells(ask, answers[ask["name"]])
        given[ask["name"]] = (
            np.asarray(value, dtype=object) if ask.get("exact") else np.asarray(value, dtype=float)
        )
        if not ask.get("exact") and not np.isfinite(given[ask["name"]]).all():
            return False
    result = check_given(
        asks=asks,
        solution=generated.solution,
        given=given,
        rtol=generated.rtol,
        atol=generated.atol,
        inputs=generated.inputs,
        kind=kind,
        diagnose=False,
    )
    return result.correct

"""Checking a learner's answers against an exercise's solution, with a diagnosis.

Pure: no Django. A cell is right when ``|given - expected| <= atol + rtol * |expected|``.

Score: the mean over parts of the share of right cells in each part (a number is one
cell), so a 3×3 matrix with one wrong entry next to two right parts scores
(8/9 + 1 + 1) / 3. ``correct`` means every cell of every part is right.

Diagnosis: when a part is wrong and the kind declares mistakes (``kind.mistakes``, codes
of ``MISTAKES``), the part is recomputed the mistaken way (``kind.answers_under``); if
the learner's answer matches that, within the same tolerance, everywhere, while the
right answer does not, the mistake is named. It runs only for wrong parts.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Mistake:
    code: str
    text: str
    # Passed to ``kind.answers_under``: how the mistaken computation differs.
    recipe: Mapping[str, Any]


MISTAKES: dict[str, Mistake] = {
    m.code: m
    for m in (
        Mistake(
            "no_scale",
            "This matches the scores without dividing by sqrt(d_k): scale Q K^T by 1/sqrt(d_k) "
            "before the softmax.",
            {"scale": "none"},
        ),
        Mistake(
            "scale_by_d_model",
            "This matches dividing by sqrt(d_model): each head divides by the square root of its "
            "own width, d_k = d_model / h.",
            {"scale": "sqrt_d_model"},
        ),
        Mistake(
            "no_mask",
            "This matches ignoring the mask: blocked scores become minus infinity before the "
            "softmax, so their weights are exactly 0.",
            {"mask": "ignored"},
        ),
        Mistake(
            "mask_after_softmax",
            "This matches zeroing the blocked weights after the softmax without renormalising: "
            "apply the mask to the scores (minus infinity) before the softmax, so each row "
            "still sums to 1.",
            {"mask": "zero_after"},
        ),
        Mistake(
            "mask_as_zero_score",
            "This matches setting blocked scores to 0 instead of minus infinity: a score of 0 "
            "still gets weight exp(0) = 1 before normalising.",
            {"mask": "zero_score"},
        ),
        Mistake(
            "softmax_over_queries",
            "This matches a softmax down each column: the softmax runs along each row, over the "
            "keys, so every row of the weights sums to 1.",
            {"softmax_axis": 0},
        ),
        Mistake(
            "scores_transposed",
            "This matches K Q^T, the product in the wrong order: score (i, j) is query i against "
            "key j, so compute Q K^T (rows are queries, columns keys).",
            {"scores": "k_q"},
        ),
        Mistake(
            "k_not_transposed",
            "This matches Q K without transposing K: the scores are Q K^T, each query dotted "
            "with each key's row.",
            {"scores": "q_k"},
        ),
        Mistake(
            "weights_transposed_in_output",
            "This matches A^T V: output row i mixes the value rows with row i of the weights, "
            "so compute A V.",
            {"mix": "a_t_v"},
        ),
        Mistake(
            "d_model_for_d_k",
            "This uses d_model where each head has d_k = d_model / h columns.",
            {"head_width": "d_model"},
        ),
        Mistake(
            "pe_concatenated",
            "This puts all sines first and all cosines after them: the original encoding "
            "interleaves them, sine on even dimensions 2i and cosine on odd ones 2i+1.",
            {"pe_layout": "concatenated"},
        ),
        Mistake(
            "pe_sin_cos_swapped",
            "This swaps sine and cosine: even dimensions take the sine, odd ones the cosine.",
            {"pe_layout": "swapped"},
        ),
        Mistake(
            "sd_for_variance",
            "This is the standard deviation, sqrt(d_k); the variance of a sum of d_k "
            "independent unit-variance products is d_k.",
            {"scaling": "sd"},
        ),
        Mistake(
            "divided_by_d_k",
            "This divides the scores by d_k; the scale is 1/sqrt(d_k).",
            {"scaling": "d_k"},
        ),
        Mistake(
            "scale_swapped",
            "The scaled and unscaled weights are swapped: dividing by sqrt(d_k) makes the row "
            "flatter, not sharper.",
            {"scaling": "swapped"},
        ),
        Mistake(
            "bytes_one_head",
            "This counts one score matrix only: multiply by the heads and the layers too.",
            {"cost": "one_head"},
        ),
        Mistake(
            "high_weight_as_reliance",
            "This takes the highest attention weight as reliance: a high weight is not "
            "evidence that the model relies on the token. Judge by the change in the output "
            "when the token is removed: large and consistent across inputs, or not.",
            {"ablation": "weight_as_reliance"},
        ),
        Mistake(
            "ablation_masked_query",
            "This matches masking the token as a query (blocking its row): the [CLS] row that "
            "is read out does not change, so nothing does. Remove the token as a key: its "
            "column becomes minus infinity in the [CLS] row and the other weights renormalise.",
            {"ablation": "query_mask"},
        ),
        Mistake(
            "share_qk_only",
            "This counts only Q K^T in the n×n part: A V costs another n² d multiply-adds.",
            {"cost": "qk_only"},
        ),
    )
}


class AnswerError(ValueError):
    """Malformed answers: ``errors`` maps a part name to what was expected and what came."""

    def __init__(self, errors: dict[str, str]):
        super().__init__("; ".join(f"{k}: {v}" for k, v in errors.items()))
        self.errors = errors


@dataclass
class PartResult:
    correct: bool
    wrong_cells: list[list[int]]
    message: str
    right_cells: int
    cells: int
    diagnosis: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"correct": self.correct, "wrong_cells": self.wrong_cells, "message": self.message}


@dataclass
class CheckResult:
    correct: bool
    score: float
    parts: dict[str, PartResult]
    diagnosis: list[dict[str, Any]]

    def as_dict(self) -> dict[str, Any]:
        return {
            "correct": self.correct,
            "score": self.score,
            "parts": {name: part.as_dict() for name, part in self.parts.items()},
            "diagnosis": self.diagnosis,
        }


def describe_shape(shape: Sequence[int]) -> str:
    if not shape:
        return "a number (shape [])"
    if len(shape) == 1:
        return f"a list of {shape[0]} numbers (shape [{shape[0]}])"
    return f"a {shape[0]}×{shape[1]} matrix: {shape[0]} rows of {shape[1]} numbers (shape [{shape[0]}, {shape[1]}])"


def _kind_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return f"a list of {len(value)}"
    if isinstance(value, dict):
        return "an object"
    return repr(value)


def _number(value: Any, where: str) -> float:
    # JSON numbers only: a boolean is not a number here, nor is a numeric string.
    if type(value) is float:
        if math.isfinite(value):
            return value
        raise ValueError(f"{where} is {value!r}; only finite numbers are accepted")
    if type(value) is int:
        try:
            return float(value)
        except OverflowError:
            raise ValueError(f"{where} is too large to be a number") from None
    raise ValueError(f"{where} is {_kind_of(value)}, not a number")


def parse_answer(value: Any, shape: Sequence[int]) -> list[float]:
    """``value`` as a flat list of floats in row-major order; ValueError says what is wrong."""
    if not shape:
        return [_number(value, "the value")]
    if not isinstance(value, list) or len(value) != shape[0]:
        raise ValueError(f"got {_kind_of(value)}")
    if len(shape) == 1:
        return [_number(v, f"entry [{i}]") for i, v in enumerate(value)]
    flat: list[float] = []
    width = shape[1]
    for r, row in enumerate(value):
        if not isinstance(row, list) or len(row) != width:
            raise ValueError(f"row {r} is {_kind_of(row)}")
        flat.extend(_number(v, f"entry [{r}, {c}]") for c, v in enumerate(row))
    return flat


def _transposed_hint(value: Any, shape: Sequence[int]) -> str:
    if (
        len(shape) == 2
        and shape[0] != shape[1]
        and isinstance(value, list)
        and len(value) == shape[1]
    ) and all(isinstance(row, list) and len(row) == shape[0] for row in value):
        return " It looks transposed."
    return ""


def validate_answers(asks: Sequence[Mapping[str, Any]], answers: Any) -> dict[str, np.ndarray]:
    """Every asked part present, nothing else, each a finite number array of its shape."""
    if not isinstance(answers, Mapping):
        raise AnswerError(
            {
                "answers": f"Expected an object mapping part names to values, got {_kind_of(answers)}."
            }
        )
    shapes = {ask["name"]: ask["shape"] for ask in asks}
    errors: dict[str, str] = {}
    for name in answers:
        if name not in shapes:
            errors[str(name)] = (
                f"Unknown part {name!r}; this exercise asks for: {', '.join(shapes)}."
            )
    parsed: dict[str, np.ndarray] = {}
    choices = {ask["name"]: ask["choices"] for ask in asks if ask.get("choices")}
    for name, shape in shapes.items():
        if name in choices:
            if name not in answers:
                errors[name] = f"Missing; expected {describe_choices(choices[name])}."
                continue
            try:
                parsed[name] = choice_index(choices[name], answers[name])
            except ValueError as exc:
                errors[name] = str(exc)
            continue
        if name not in answers:
            errors[name] = f"Missing; expected {describe_shape(shape)}."
            continue
        value = answers[name]
        try:
            flat = parse_answer(value, shape)
        except ValueError as exc:
            errors[name] = (
                f"Expected {describe_shape(shape)}: {exc}.{_transposed_hint(value, shape)}"
            )
            continue
        parsed[name] = np.array(flat, dtype=float).reshape(shape)
    if errors:
        raise AnswerError(errors)
    return parsed


def _within(given: np.ndarray, expected: np.ndarray, rtol: float, atol: float) -> np.ndarray:
    return np.abs(given - expected) <= atol + rtol * np.abs(expected)


def check_answers(
    *,
    asks: Sequence[Mapping[str, Any]],
    solution: Mapping[str, Any],
    answers: Any,
    rtol: float,
    atol: float,
    inputs: Mapping[str, Any] | None = None,
    kind: Any = None,
) -> CheckResult:
    """Check ``answers`` (part -> JSON value); raises ``AnswerError`` when malformed.

    ``kind`` (an ``ExerciseKind`` or its name) and ``inputs`` enable the diagnosis.
    """
    given = validate_answers(asks, answers)
    parts: dict[str, PartResult] = {}
    wrong: list[str] = []
    expected_by_part: dict[str, np.ndarray] = {}
    for ask in asks:
        name, shape = ask["name"], ask["shape"]
        expected = _expected(ask, solution[name])
        ok = _within(given[name], expected, rtol, atol)
        cells = ok.size
        right = int(ok.sum())
        if right == cells:
            parts[name] = PartResult(True, [], "Correct.", right, cells)
            continue
        wrong_cells = [[]] if not shape else np.argwhere(~ok).tolist()
        if ask.get("choices"):
            message = "Not the choice the numbers support."
        elif shape:
            message = f"{cells - right} of {cells} entries are outside the tolerance."
        else:
            message = "Not within the tolerance of the expected value."
        parts[name] = PartResult(False, wrong_cells, message, right, cells)
        wrong.append(name)
        expected_by_part[name] = expected
    diagnosis: list[dict[str, Any]] = []
    if wrong and kind is not None and inputs is not None:
        diagnosis = _diagnose(kind, inputs, wrong, given, expected_by_part, parts, rtol, atol, asks)
    score = sum(p.right_cells / p.cells for p in parts.values()) / len(parts) if parts else 0.0
    return CheckResult(correct=not wrong, score=round(score, 4), parts=parts, diagnosis=diagnosis)


def _diagnose(kind, inputs, wrong, given, expected_by_part, parts, rtol, atol, kind_asks=()):
    if isinstance(kind, str):
        from exercises.kinds import KINDS

        kind = KINDS.get(kind)
        if kind is None:
            return []
    found: dict[str, dict[str, Any]] = {}
    for code in kind.mistakes:
        mistake = MISTAKES[code]
        try:
            variant = kind.answers_under(inputs, mistake.recipe)
        except (ValueError, KeyError, TypeError, ZeroDivisionError):
            # Inputs the mistaken computation cannot handle: no diagnosis, never an error.
            variant = None
        if not variant:
            continue
        for name in wrong:
            if name not in variant:
                continue
            alt = variant[name]
            if isinstance(alt, str):
                ask = next(a for a in kind_asks if a["name"] == name)
                alt = choice_index(ask["choices"], alt)
            alt = np.asarray(alt, dtype=float)
            expected = expected_by_part[name]
            if alt.shape != expected.shape or not np.isfinite(alt).all():
                continue
            # Indistinguishable from the right answer: this mistake cannot explain a wrong one.
            if _within(alt, expected, rtol, atol).all():
                continue
            if _within(given[name], alt, rtol, atol).all():
                entry = found.setdefault(code, {"code": code, "parts": [], "text": mistake.text})
                entry["parts"].append(name)
                part = parts[name]
                part.diagnosis.append(code)
                part.message = f"{part.message} {mistake.text}"
    return list(found.values())


# --- Parts answered with one of a list of choices ---------------------------------------
# An ask with ``choices`` (a list of strings) takes one of them. It is checked like a
# number: its answer and the expected choice become their positions in the list, so
# the score, ``wrong_cells`` ([[]]) and the diagnosis treat it as one cell.


def describe_choices(choices: Sequence[str]) -> str:
    return "one of " + ", ".join(repr(c) for c in choices)


def choice_index(choices: Sequence[str], value: Any) -> np.ndarray:
    """The position of ``value`` among ``choices``; ValueError names what came and what fits."""
    if isinstance(value, str) and value in choices:
        return np.asarray(float(list(choices).index(value)))
    got = repr(value) if isinstance(value, str) else _kind_of(value)
    raise ValueError(f"Expected {describe_choices(choices)}; got {got}.")


def _expected(ask: Mapping[str, Any], value: Any) -> np.ndarray:
    if ask.get("choices"):
        return choice_index(ask["choices"], value)
    return np.asarray(value, dtype=float)

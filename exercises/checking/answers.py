"""Parsing a learner's answers: each asked part present, of its shape, finite numbers
(or one of its choices); a malformed answer raises ``AnswerError`` naming the part, what
was expected and what came.

Pure: no Django. An ask with ``choices`` (a list of strings) takes one of them. It is
checked like a number: its answer and the expected choice become their positions in the
list (``answer_cells``), so the score, ``wrong_cells`` ([[]]) and the diagnosis treat it
as one cell.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np


class AnswerError(ValueError):
    """Malformed answers: ``errors`` maps a part name to what was expected and what came."""

    def __init__(self, errors: dict[str, str]):
        super().__init__("; ".join(f"{k}: {v}" for k, v in errors.items()))
        self.errors = errors


def describe_shape(shape: Sequence[int]) -> str:
    """The JSON a part of ``shape`` takes, for the API's messages (pages use ``cells.shape_words``)."""
    if not shape:
        return "a number (shape [])"
    if len(shape) == 1:
        return f"a list of {shape[0]} numbers (shape [{shape[0]}])"
    return f"a {shape[0]}\N{MULTIPLICATION SIGN}{shape[1]} matrix: {shape[0]} rows of {shape[1]} numbers (shape [{shape[0]}, {shape[1]}])"


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
            raise ValueError(f"row [{r}] is {_kind_of(row)}")  # a JSON index, from 0
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


def _expected_words(ask: Mapping[str, Any]) -> str:
    if ask.get("choices"):
        return describe_choices(ask["choices"])
    return describe_shape(ask["shape"])


def _parsed_part(ask: Mapping[str, Any], value: Any) -> np.ndarray:
    """One part's answer as an array of its shape (a choice as its index); ValueError says
    what is wrong, in the words of the part's message."""
    if ask.get("choices"):
        return choice_index(ask["choices"], value)
    shape = ask["shape"]
    try:
        flat = parse_answer(value, shape)
    except ValueError as exc:
        raise ValueError(
            f"Expected {describe_shape(shape)}: {exc}.{_transposed_hint(value, shape)}"
        ) from None
    return np.array(flat, dtype=float).reshape(shape)


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
    for ask in asks:
        name = ask["name"]
        if name not in answers:
            errors[name] = f"Missing; expected {_expected_words(ask)}."
            continue
        try:
            parsed[name] = _parsed_part(ask, answers[name])
        except ValueError as exc:
            errors[name] = str(exc)
    if errors:
        raise AnswerError(errors)
    return parsed


def describe_choices(choices: Sequence[str]) -> str:
    return "one of " + ", ".join(repr(c) for c in choices)


def choice_index(choices: Sequence[str], value: Any) -> np.ndarray:
    """The position of ``value`` among ``choices``; ValueError names what came and what fits."""
    if isinstance(value, str) and value in choices:
        return np.asarray(float(list(choices).index(value)))
    got = repr(value) if isinstance(value, str) else _kind_of(value)
    raise ValueError(f"Expected {describe_choices(choices)}; got {got}.")


def answer_cells(ask: Mapping[str, Any], value: Any) -> Any:
    """``value`` as the cells it is marked by: a choice (a string) becomes its position."""
    if ask.get("choices") and isinstance(value, str):
        return choice_index(ask["choices"], value) if value in ask["choices"] else np.nan
    return value

"""Checking answers: marking, the whole answers the prompt also allows, and the diagnosis
of the first wrong step, together. The entry points of ``exercises.checking``.

Pure: no Django.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from exercises.checking.answers import validate_answers
from exercises.checking.diagnosis import diagnose_step
from exercises.checking.marked_kind import MarkedKind
from exercises.checking.marking import CheckResult, PartResult, mark


def check_given(
    *,
    asks: Sequence[Mapping[str, Any]],
    solution: Mapping[str, Any],
    given: Mapping[str, Any],
    rtol: float,
    atol: float,
    inputs: dict[str, Any] | None = None,
    kind: MarkedKind | None = None,
    diagnose: bool = True,
) -> CheckResult:
    """Mark well-formed answers, try the whole answers the prompt also allows, diagnose."""
    parts, first_wrong = mark(
        asks=asks, solution=solution, given=given, rtol=rtol, atol=atol, inputs=inputs, kind=kind
    )
    diagnosis: list[dict[str, Any]] = []
    if first_wrong is not None and kind is not None and inputs is not None:
        alternative = _alternative_marked(asks, given, rtol, atol, inputs, kind)
        if alternative is not None:
            parts, first_wrong = alternative, None
        elif diagnose:
            diagnosis = diagnose_step(
                kind, inputs, asks, solution, given, parts, first_wrong, rtol, atol
            )
            part = parts[first_wrong]
            part.message = f"{part.message} This is the first wrong step."
    correct = all(p.correct for p in parts.values())
    score = sum(p.credit for p in parts.values()) / len(parts) if parts else 0.0
    return CheckResult(
        correct=correct,
        score=round(score, 4),
        parts=parts,
        diagnosis=diagnosis,
        first_wrong=first_wrong,
    )


def _alternative_marked(
    asks: Sequence[Mapping[str, Any]],
    given: Mapping[str, Any],
    rtol: float,
    atol: float,
    inputs: dict[str, Any],
    kind: MarkedKind,
) -> dict[str, PartResult] | None:
    """The parts marked right against the first whole answer the prompt also allows that
    they all match, each saying which; None when no such answer matches."""
    for label, other in kind.accepted_alternatives(inputs):
        parts, _ = mark(
            asks=asks, solution=other, given=given, rtol=rtol, atol=atol, inputs=inputs, kind=kind
        )
        if all(p.correct for p in parts.values()):
            for part in parts.values():
                part.message = f"Correct: {label}."
            return parts
    return None


def check_answers(
    *,
    asks: Sequence[Mapping[str, Any]],
    solution: Mapping[str, Any],
    answers: Any,
    rtol: float,
    atol: float,
    inputs: dict[str, Any] | None = None,
    kind: MarkedKind | None = None,
) -> CheckResult:
    """Check ``answers`` (part -> JSON value); raises ``AnswerError`` when malformed.

    ``kind`` (an exercise kind, ``MarkedKind``) and ``inputs`` enable error carried
    forward, accepted alternatives and the diagnosis.
    """
    given: dict[str, Any] = dict(validate_answers(asks, answers))
    for ask in asks:
        if ask.get("exact"):
            # The JSON value itself: a count beyond 2**53 stays exact.
            given[ask["name"]] = np.asarray(answers[ask["name"]], dtype=object)
    return check_given(
        asks=asks, solution=solution, given=given, rtol=rtol, atol=atol, inputs=inputs, kind=kind
    )

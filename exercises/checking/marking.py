"""Marking well-formed answers: per part, right, following from the learner's own
earlier parts, or wrong; the first wrong step.

Pure: no Django. A cell is right when ``|given - expected| <= atol + rtol * |expected|``.
An ask marked ``exact`` (a count, a shape) must be that integer exactly.

Error carried forward: a part the kind computes from earlier asked parts
(``kind.follow_on``) is also checked against what follows from the learner's own
earlier parts. When those earlier parts are right, a cell that follows from them is
right too, so rounding a step to three decimals never costs a later one. When they are
wrong and the part follows from them everywhere, the part ``follows``: it earns half
credit and stays not correct.

Score: the mean over parts of each part's credit, the share of its right cells (a number
is one cell), at least one half for a part that follows. ``correct`` means every cell of
every part is right.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from exercises.checking.answers import answer_cells
from exercises.checking.marked_kind import Follow, MarkedKind

FOLLOW_CREDIT = 0.5  # the credit of a part that is right given the learner's own earlier parts


@dataclass
class PartResult:
    correct: bool
    wrong_cells: list[list[int]]
    message: str
    right_cells: int
    cells: int
    diagnosis: list[str] = field(default_factory=list)
    follows: bool = False
    follows_from: str | None = None

    @property
    def credit(self) -> float:
        share = self.right_cells / self.cells if self.cells else 0.0
        return max(share, FOLLOW_CREDIT) if self.follows else share

    def as_dict(self) -> dict[str, Any]:
        out = {
            "correct": self.correct,
            "wrong_cells": self.wrong_cells,
            "message": self.message,
            "follows": self.follows,
        }
        if self.follows:
            out["follows_from"] = self.follows_from
        return out


@dataclass
class CheckResult:
    correct: bool
    score: float
    parts: dict[str, PartResult]
    diagnosis: list[dict[str, Any]]
    first_wrong: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "correct": self.correct,
            "score": self.score,
            "parts": {name: part.as_dict() for name, part in self.parts.items()},
            "diagnosis": self.diagnosis,
            "first_wrong": self.first_wrong,
        }


def _exact_int(value: Any) -> int | None:
    if isinstance(value, bool | np.bool_):
        return None
    if isinstance(value, int | np.integer):
        return int(value)
    if (
        isinstance(value, float | np.floating)
        and math.isfinite(value)
        and float(value).is_integer()
    ):
        return int(value)
    return None


@np.errstate(invalid="ignore", over="ignore")
def cells_ok(
    given: Any, expected: Any, *, exact: bool, rtol: float, atol: float, slack: Any = 0.0
) -> np.ndarray:
    """Per cell: is ``given`` right against ``expected``? Exact asks compare whole numbers."""
    if exact:
        g = np.asarray(given, dtype=object)
        e = np.asarray(expected, dtype=object)
        if g.shape != e.shape:
            return np.zeros(e.shape, dtype=bool)
        flat = [
            _exact_int(a) is not None and _exact_int(a) == _exact_int(b)
            for a, b in zip(g.ravel().tolist(), e.ravel().tolist(), strict=True)
        ]
        return np.array(flat, dtype=bool).reshape(e.shape)
    g = np.asarray(given, dtype=float)
    e = np.asarray(expected, dtype=float)
    if g.shape != e.shape:
        return np.zeros(e.shape, dtype=bool)
    close: np.ndarray = np.abs(g - e) <= atol + rtol * np.abs(e) + slack
    return close


# A learner's numbers can be anything finite: a kind's recomputation may then fail. That
# only means nothing follows from them; it is never an error.
RECOMPUTE_ERRORS = (ValueError, KeyError, TypeError, IndexError, ZeroDivisionError, OverflowError)


def follow_on(
    kind: MarkedKind | None,
    inputs: dict[str, Any] | None,
    given: Mapping[str, np.ndarray],
    recipe: Mapping[str, Any] | None = None,
) -> dict[str, Follow]:
    if kind is None or inputs is None:
        return {}
    try:
        with np.errstate(all="ignore"):
            follows: dict[str, Follow] = kind.follow_on(inputs, given, recipe)
            return follows
    except RECOMPUTE_ERRORS:
        return {}


def _wrong_message(exact: bool, shape: Sequence[int], cells: int, right: int) -> str:
    if exact:
        if shape:
            return f"{cells - right} of {cells} entries are not the exact whole number expected."
        return "Not the exact whole number expected."
    if shape:
        return f"{cells - right} of {cells} entries are outside the tolerance."
    return "Not within the tolerance of the expected value."


def _against_own(
    ask: Mapping[str, Any],
    value: Any,
    follow: Follow,
    parts: Mapping[str, PartResult],
    floats: Mapping[str, np.ndarray],
    ok: np.ndarray,
    rtol: float,
    atol: float,
    expected: Any,
) -> tuple[np.ndarray, bool]:
    """A part checked against what follows from the learner's earlier parts (``follow``):
    the cells now accepted, and whether the whole part follows from wrong earlier parts
    (or, for a part judged on its own size, from right ones that carry it too far)."""
    exact = bool(ask.get("exact"))
    own = cells_ok(
        value,
        answer_cells(ask, follow.value),
        exact=exact,
        rtol=rtol,
        atol=atol,
        slack=follow.slack,
    )
    if all(parts[u].correct for u in follow.uses):
        if follow.own_size:
            # A difference or ratio: right earlier parts carry only their rounding into it.
            near = ok | cells_ok(
                value,
                answer_cells(ask, expected),
                exact=exact,
                rtol=rtol,
                atol=atol,
                slack=follow.slack,
            )
            return near, bool(own.all() and not near.all())
        return ok | own, False  # right from right earlier parts: their rounding is carried
    # An earlier step left at zero is no step to follow from: all-zero weights give an
    # all-zero output, which earns nothing.
    return ok, bool(own.all() and any(np.any(floats[u]) for u in follow.uses))


def mark(
    *,
    asks: Sequence[Mapping[str, Any]],
    solution: Mapping[str, Any],
    given: Mapping[str, Any],
    rtol: float,
    atol: float,
    inputs: dict[str, Any] | None = None,
    kind: MarkedKind | None = None,
) -> tuple[dict[str, PartResult], str | None]:
    """Per-part verdicts of well-formed answers, and the first wrong step (None when right).

    ``given`` maps each asked part to an array of its shape (exact parts may hold Python
    integers, which stay exact beyond a float's 2**53).
    """
    floats = {name: np.asarray(value, dtype=float) for name, value in given.items()}
    follows = follow_on(kind, inputs, floats)
    parts: dict[str, PartResult] = {}
    first_wrong: str | None = None
    for ask in asks:
        name = ask["name"]
        follow = follows.get(name)
        part = parts[name] = _mark_part(
            ask, given[name], solution[name], follow, parts, floats, rtol, atol
        )
        if first_wrong is None and not part.correct and not part.follows:
            first_wrong = name
    return parts, first_wrong


def _mark_part(
    ask: Mapping[str, Any],
    value: Any,
    expected: Any,
    follow: Follow | None,
    parts: Mapping[str, PartResult],
    floats: Mapping[str, np.ndarray],
    rtol: float,
    atol: float,
) -> PartResult:
    """One part's verdict, given the verdicts of the parts before it (``parts``)."""
    shape, exact = ask["shape"], bool(ask.get("exact"))
    ok = cells_ok(value, answer_cells(ask, expected), exact=exact, rtol=rtol, atol=atol)
    follows_part = False
    if not ok.all() and follow is not None and all(u in parts for u in follow.uses):
        ok, follows_part = _against_own(ask, value, follow, parts, floats, ok, rtol, atol, expected)
    cells = ok.size
    right = int(ok.sum())
    if right == cells:
        return PartResult(True, [], "Correct.", right, cells)
    wrong_cells = [[]] if not shape else np.argwhere(~ok).tolist()
    if follows_part and follow is not None:
        message = (
            f"Wrong against the expected answer, but it follows from {follow.words}: "
            "right given your own earlier step, half credit."
        )
        return PartResult(
            False, wrong_cells, message, right, cells, follows=True, follows_from=follow.words
        )
    message = (
        "Not the choice the numbers support."
        if ask.get("choices")
        else _wrong_message(exact, shape, cells, right)
    )
    return PartResult(False, wrong_cells, message, right, cells)

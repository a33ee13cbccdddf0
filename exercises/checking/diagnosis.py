"""Diagnosis: which registered mistake explains a learner's first wrong step.

Pure: no Django. Only the first wrong step (the first part that is neither right nor
follows) is diagnosed. A mistake of the kind (``kind.mistakes``, codes of ``MISTAKES``)
is named when the mistake changes that step at all and the learner's part matches that
step done the mistaken way, either from the learner's own earlier parts
(``kind.follow_on(..., recipe)``) or along the whole mistaken chain from the inputs
(``kind.answers_under``) whose earlier asked parts match the learner's too. So right
weights followed by A^T V are never blamed on a softmax down the columns, which would
have changed the weights.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from exercises.checking.answers import answer_cells
from exercises.checking.marking import RECOMPUTE_ERRORS, PartResult, cells_ok, follow_on
from exercises.checking.mistakes import MISTAKES

if TYPE_CHECKING:
    from exercises.kinds.base import ExerciseKind


def _answers_under(
    kind: ExerciseKind, inputs: dict[str, Any], recipe: Mapping[str, Any]
) -> dict[str, np.ndarray] | None:
    """The kind's whole mistaken chain, or None where it cannot be recomputed."""
    try:
        with np.errstate(all="ignore"):
            chain: dict[str, np.ndarray] | None = kind.answers_under(inputs, recipe)
        return chain
    except RECOMPUTE_ERRORS:
        return None


def _agree(
    ask: Mapping[str, Any], cells: Any, alt: Any, rtol: float, atol: float, slack: Any = 0.0
) -> bool:
    """Every cell of ``cells`` (already in the part's cell form) matches ``alt``."""
    ok = cells_ok(
        cells,
        answer_cells(ask, alt),
        exact=bool(ask.get("exact")),
        rtol=rtol,
        atol=atol,
        slack=slack,
    )
    return bool(ok.all())


def diagnose_step(
    kind: ExerciseKind,
    inputs: dict[str, Any],
    asks: Sequence[Mapping[str, Any]],
    solution: Mapping[str, Any],
    given: Mapping[str, Any],
    parts: dict[str, PartResult],
    step: str,
    rtol: float,
    atol: float,
) -> list[dict[str, Any]]:
    """The kind's mistakes that explain the first wrong step ``step``.

    A mistake explains it when the learner's part matches that step done the mistaken way
    (a) from the learner's own earlier parts, or (b) from the inputs along the whole
    mistaken chain whose earlier asked parts also match the learner's; and the mistake
    changes the step at all.
    """
    ask_of = {a["name"]: a for a in asks}
    names = list(ask_of)
    earlier = names[: names.index(step)]
    floats = {name: np.asarray(value, dtype=float) for name, value in given.items()}
    right_follow = follow_on(kind, inputs, floats).get(step)

    def matches(alt: Any, slack: Any = 0.0) -> bool:
        return _agree(ask_of[step], given[step], alt, rtol, atol, slack)

    def same(name: str, a: Any, b: Any) -> bool:
        return _agree(ask_of[name], answer_cells(ask_of[name], a), b, rtol, atol)

    later = names[names.index(step) + 1 :]
    found: list[tuple[dict[str, Any], bool]] = []
    for code in kind.mistakes:
        mistake = MISTAKES[code]
        explained = False
        follow = follow_on(kind, inputs, floats, mistake.recipe).get(step)
        if (
            follow is not None
            and right_follow is not None
            and all(parts.get(u) and parts[u].correct for u in follow.uses)
            and not same(step, follow.value, right_follow.value)
        ):
            explained = matches(follow.value, follow.slack)
        chain = _answers_under(kind, inputs, mistake.recipe) or {}  # None: nothing to match
        if not explained:
            explained = bool(
                chain
                and step in chain
                and not same(step, chain[step], solution[step])
                and all(same(n, given[n], chain[n]) for n in earlier if n in chain)
                and matches(chain[step])
            )
        if explained:
            # Does the mistake explain the later parts too, the way they were written?
            whole = bool(chain) and all(same(n, given[n], chain[n]) for n in later if n in chain)
            found.append(({"code": code, "parts": [step], "text": mistake.text}, whole))
    return _named(found, parts[step])


def _named(found: list[tuple[dict[str, Any], bool]], part: PartResult) -> list[dict[str, Any]]:
    """The diagnosis of ``part`` from ``(entry, explains the later parts too)`` pairs.

    Two mistakes can make the same first wrong step (the scaled weights left unscaled, or
    both rows swapped): the one that also explains the later parts is the one made.
    """
    if any(whole for _, whole in found):
        found = [(entry, whole) for entry, whole in found if whole]
    part.diagnosis.extend(entry["code"] for entry, _ in found)
    return [entry for entry, _ in found]

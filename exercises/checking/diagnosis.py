"""Diagnosis: which registered mistake explains a learner's first wrong step.

Pure: no Django. Only the first wrong step (the first part that is neither right nor
follows) is diagnosed. A mistake of the kind (``kind.mistakes``, codes of ``MISTAKES``)
is named when the mistake changes that step at all and the learner's part matches that
step done the mistaken way, either from the learner's own earlier parts
(``kind.follow_on(..., recipe)``) or along the whole mistaken chain from the inputs
(``kind.answers_under``) whose earlier asked parts match the learner's too. So right
weights followed by A^T V are never blamed on a softmax down the columns, which would
have changed the weights.

A mistake is named only when its own numbers are the learner's: at the step, and at
every later part it changes by itself (a softmax left unscaled changes every head, so a
learner whose second head is scaled did not make it). Mistakes that give the same
numbers at the step are named together in one entry ("This matches either ... or ..."),
with what each means under ``either``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from exercises.checking.answers import answer_cells
from exercises.checking.marked_kind import Follow, MarkedKind
from exercises.checking.marking import RECOMPUTE_ERRORS, PartResult, cells_ok, follow_on
from exercises.checking.mistakes import MISTAKES, either_words


def _answers_under(
    kind: MarkedKind, inputs: dict[str, Any], recipe: Mapping[str, Any]
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
    kind: MarkedKind,
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
    changes the step at all. It is named only if its own numbers agree with every later
    part it changes by itself (``_later_agree``). Mistakes that give the same numbers at
    the step are named together, in one entry that says so (``_named``).
    """
    ask_of = {a["name"]: a for a in asks}
    names = list(ask_of)
    earlier = names[: names.index(step)]
    later = names[names.index(step) + 1 :]
    floats = {name: np.asarray(value, dtype=float) for name, value in given.items()}
    right_follow = follow_on(kind, inputs, floats)

    def matches(name: str, alt: Any, slack: Any = 0.0) -> bool:
        return _agree(ask_of[name], given[name], alt, rtol, atol, slack)

    def same(name: str, a: Any, b: Any) -> bool:
        return _agree(ask_of[name], answer_cells(ask_of[name], a), b, rtol, atol)

    found: list[tuple[str, bool]] = []
    for code in kind.mistakes:
        recipe = MISTAKES[code].recipe
        follows = follow_on(kind, inputs, floats, recipe)
        chain = _answers_under(kind, inputs, recipe) or {}  # None: nothing to match
        mistaken = _Mistaken(step, follows.get(step), right_follow.get(step), chain)
        if not mistaken.explains(earlier, parts, solution, given, matches, same):
            continue
        agree = _Later(solution, chain, follows, right_follow, matches, same)
        if all(agree.part(name) for name in later):
            # Does the mistake explain the later parts too, the way they were written?
            whole = bool(chain) and all(same(n, given[n], chain[n]) for n in later if n in chain)
            found.append((code, whole))

    def text(code: str) -> str:
        return kind.mistake_text(code, inputs) or MISTAKES[code].text

    return _named(found, parts[step], step, text)


@dataclass(frozen=True)
class _Mistaken:
    """The step done a mistaken way: from the learner's own earlier parts (``follow``,
    against ``right``, the step done right from them), and along the whole mistaken
    chain from the inputs (``chain``)."""

    step: str
    follow: Follow | None
    right: Follow | None
    chain: Mapping[str, Any]

    def explains(
        self,
        earlier: Sequence[str],
        parts: Mapping[str, PartResult],
        solution: Mapping[str, Any],
        given: Mapping[str, Any],
        matches: Callable[..., bool],
        same: Callable[[str, Any, Any], bool],
    ) -> bool:
        """Whether the learner's step is this mistake's, either way (a) or (b)."""
        return self._from_own_parts(parts, matches, same) or self._along_chain(
            earlier, solution, given, matches, same
        )

    def _from_own_parts(
        self,
        parts: Mapping[str, PartResult],
        matches: Callable[..., bool],
        same: Callable[[str, Any, Any], bool],
    ) -> bool:
        # (a): the step done the mistaken way from the learner's own right earlier parts,
        # where that differs from the step done right from them.
        step, follow, right = self.step, self.follow, self.right
        if follow is None or right is None:
            return False
        return bool(
            all(parts.get(u) and parts[u].correct for u in follow.uses)
            and not same(step, follow.value, right.value)
            and matches(step, follow.value, follow.slack)
        )

    def _along_chain(
        self,
        earlier: Sequence[str],
        solution: Mapping[str, Any],
        given: Mapping[str, Any],
        matches: Callable[..., bool],
        same: Callable[[str, Any, Any], bool],
    ) -> bool:
        # (b): the step as the whole mistaken chain from the inputs has it, where that
        # differs from the solution and the learner's earlier parts match the chain's.
        step, chain = self.step, self.chain
        return bool(
            chain
            and step in chain
            and not same(step, chain[step], solution[step])
            and all(same(n, given[n], chain[n]) for n in earlier if n in chain)
            and matches(step, chain[step])
        )


class _Later:
    """Whether a mistake's own numbers agree with a later part of the learner's.

    A later part the mistake changes by itself, not only through the parts before it (its
    value under the mistake, from the learner's own earlier parts or from the inputs,
    differs from the right one; or, with nothing to follow from, the mistaken chain
    differs there from the solution), must be that changed value: the mistaken chain's,
    or what follows from the learner's own parts the mistaken way. Any other later part
    may hold another slip: it says nothing about this mistake.
    """

    def __init__(
        self,
        solution: Mapping[str, Any],
        chain: Mapping[str, Any],
        follows: Mapping[str, Follow],
        right_follow: Mapping[str, Follow],
        matches: Callable[..., bool],
        same: Callable[[str, Any, Any], bool],
    ):
        self.solution, self.chain = solution, chain
        self.follows, self.right_follow = follows, right_follow
        self.matches, self.same = matches, same

    def part(self, name: str) -> bool:
        follow, right = self.follows.get(name), self.right_follow.get(name)
        in_chain = name in self.chain
        if follow is not None and right is not None:
            changed = not self.same(name, follow.value, right.value)
        else:
            changed = in_chain and not self.same(name, self.chain[name], self.solution[name])
        if not changed:
            return True
        if in_chain and self.matches(name, self.chain[name]):
            return True
        return follow is not None and self.matches(name, follow.value, follow.slack)


def _named(
    found: list[tuple[str, bool]], part: PartResult, step: str, text: Callable[[str], str]
) -> list[dict[str, Any]]:
    """The diagnosis of ``part`` from ``(code, explains the later parts too)`` pairs.

    Two mistakes can make the same first wrong step (the scaled weights left unscaled, or
    both rows swapped): the one that also explains the later parts is the one made. Those
    still left give the same numbers: one entry names them all, "either ... or ...", and
    lists what each one means (``either``).
    """
    if any(whole for _, whole in found):
        found = [(code, whole) for code, whole in found if whole]
    codes = [code for code, _ in found]
    part.diagnosis.extend(codes)
    if len(codes) < 2:
        return [
            {"code": c, "parts": [step], "text": text(c), "lesson_section": MISTAKES[c].section}
            for c in codes
        ]
    return [
        {
            "code": codes[0],
            "parts": [step],
            "text": either_words([MISTAKES[c] for c in codes]),
            "lesson_section": MISTAKES[codes[0]].section,
            "either": [
                {"code": c, "text": text(c), "lesson_section": MISTAKES[c].section} for c in codes
            ],
        }
    ]

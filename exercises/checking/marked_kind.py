"""What marking needs of an exercise kind, and what a kind tells it.

The checker marks answers for any object with these members (``MarkedKind``); the kinds
of ``exercises.kinds`` are such objects. Checking never imports the kinds: the kinds sit
above it (they build exercises and hand themselves to the checker), so the two never
import each other.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

import numpy as np


@dataclass(frozen=True)
class Follow:
    """What an asked part is, computed from the learner's own earlier parts.

    ``value`` has the part's shape; ``uses`` names the earlier asked parts it is computed
    from, ``words`` says so to the learner ("your scores"); ``slack`` (a number or an
    array of the part's shape) widens the tolerance by what rounding the steps in between
    that are not asked (to ``STEP_DECIMALS``) can move a cell. With ``uses`` empty the
    part is computed from the inputs alone: ``slack`` then widens the expected answer's
    tolerance by what the hand steps before it carry.

    ``own_size``: the part is a difference or ratio of the parts in ``uses``, so earlier
    parts right only within their tolerance can carry it far off its own size. From right
    earlier parts it is then judged against the expected value on its own tolerance,
    widened by ``slack`` (set it to what writing the ``uses`` parts to ``STEP_DECIMALS``
    carries), not accepted merely for following; a value that follows from them but
    misses that earns the half credit of a part that follows.
    """

    value: Any
    uses: tuple[str, ...]
    words: str
    slack: Any = 0.0
    own_size: bool = False


class MarkedKind(Protocol):
    """An exercise kind as the checker uses it (``exercises.kinds.base.ExerciseKind``)."""

    mistakes: ClassVar[tuple[str, ...]]

    def answers_under(
        self, inputs: dict[str, Any], recipe: Mapping[str, Any], decimals: int | None = None
    ) -> dict[str, np.ndarray] | None: ...

    def follow_on(
        self,
        inputs: dict[str, Any],
        given: Mapping[str, np.ndarray],
        recipe: Mapping[str, Any] | None = None,
    ) -> dict[str, Follow]: ...

    def mistake_text(self, code: str, inputs: dict[str, Any]) -> str | None: ...

    def accepted_alternatives(self, inputs: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]: ...

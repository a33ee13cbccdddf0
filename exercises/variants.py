"""Drawing a variant that tells right from wrong, deterministically from a seed.

Pure: no Django. Draw 0 of a seed uses ``np.random.default_rng(seed)``; draw ``k`` uses
the child stream ``SeedSequence(seed, spawn_key=(k,))``. The first draw that
``checking.variant_problems`` finds nothing wrong with is the variant, so the same kind,
parameters and seed always give the same inputs.

An exercise bound to a review draws from another family of streams,
``SeedSequence(seed, spawn_key=(BOUND_STREAM, k))``: a practice exercise created with
the same seed never reproduces it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from exercises.checking import variant_problems
from exercises.kinds.base import ExerciseKind, Generated, ParamError

MAX_DRAWS = 400
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

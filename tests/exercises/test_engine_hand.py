"""The softmax done by hand (``exercises.kinds.hand``) against the engine's: the same
weights but for each exponential written to three decimals, so never further off than
``softmax_hand_slack``, the slack the marking allows for it."""

from __future__ import annotations

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from exercises import engine
from exercises.kinds.hand import softmax_by_hand, softmax_by_hand_fails, softmax_hand_slack


@st.composite
def score_rows(draw: st.DrawFn) -> np.ndarray:
    """(n_q, n_k) scores around 0, around 8 or beyond e^s's float range (where the lesson's
    way overflows and hand work subtracts the row's largest score), some keys blocked."""
    shape = draw(st.tuples(st.integers(1, 4), st.integers(1, 6)))
    spread = hnp.arrays(np.float64, shape, elements=st.floats(-6, 6))
    z = draw(spread) + draw(st.sampled_from([0.0, 8.0, 720.0]))
    blocked = draw(hnp.arrays(np.bool_, shape))
    blocked[:, draw(st.integers(0, shape[1] - 1))] = False  # every row reads a key
    return np.where(blocked, -np.inf, z)


@settings(max_examples=400, deadline=None)
@given(score_rows())
def test_the_hand_softmax_is_the_engines_within_its_rounding(z):
    # Variants whose exponentials may all round away are not offered (kind.degenerate).
    assume(not softmax_by_hand_fails(z))
    hand, exact = softmax_by_hand(z), engine.softmax(z)
    assert np.isfinite(hand).all()
    assert (np.abs(hand - exact) <= softmax_hand_slack(z) + 1e-12).all(), (z, hand, exact)
    assert (hand[np.isneginf(z)] == 0).all()

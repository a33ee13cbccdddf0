"""What the labs' judges compare with: the mistakes' softmax is the engine's, except where a
learner's code gives nan."""

from __future__ import annotations

import numpy as np

from exercises import engine
from labs.catalogue import references


def test_the_mistakes_softmax_is_the_engines_and_nan_where_a_row_reads_nothing():
    z = np.random.default_rng(0).normal(0.0, 3.0, (5, 4)) + np.array([[0.0], [0], [0], [990], [0]])
    z[1] = -np.inf  # every key blocked, as an inverted causal mask leaves a row
    z[2, :3] = -np.inf
    z[4, 0] = np.nan
    got = references._softmax_open(z)
    assert np.isnan(got[[1, 4]]).all()
    np.testing.assert_array_equal(got[[0, 2, 3]], engine.softmax(z[[0, 2, 3]]))

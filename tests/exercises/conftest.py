import numpy as np
import pytest

from exercises.kinds import get_kind


@pytest.fixture
def generate():
    """Generate a variant of ``kind`` with ``params`` and a fixed seed."""

    def make(kind: str, seed: int = 7, **params):
        k = get_kind(kind)
        normalized = k.normalize_params({**params, "seed": seed})
        return k, k.generate(normalized, np.random.default_rng(seed))

    return make

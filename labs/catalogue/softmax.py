"""Lab: a softmax over the last axis that survives scores near 1000."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from exercises import engine
from labs.judging import LabTest, Results, first_match, judge, mismatch, non_finite
from labs.spec import Call, Lab, RunResult, Verdict

PROMPT = r"""
Write `softmax(z)`: the softmax along the **last axis** of an array of any number of
dimensions, so a matrix of scores $(n_q, n_k)$ becomes weights whose every row is
non-negative and sums to 1:

$$\operatorname{softmax}(z)_j = \frac{e^{z_j}}{\sum_l e^{z_l}}$$

It must stay finite for large scores. $e^{1000}$ overflows to infinity in float64, and
$\infty / \infty$ is nan. Subtracting the row maximum first changes nothing in the result
(the factor $e^{-\max}$ cancels) and keeps every exponent at or below 0.

The tests call it on a small matrix, on rows of scores near $\pm 1000$, and on a 3-D
array $(2, 3, 4)$, where each of the six rows of length 4 is normalised on its own.
"""

STARTER = '''import numpy as np


def softmax(z):
    """Softmax over the last axis: (..., n) -> (..., n), each row sums to 1."""
    raise NotImplementedError
'''

REFERENCE = '''import numpy as np


def softmax(z):
    """Softmax over the last axis: (..., n) -> (..., n), each row sums to 1."""
    z = np.asarray(z, dtype=float)
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)
'''

MISTAKES = {
    "softmax_overflow": """import numpy as np


def softmax(z):
    e = np.exp(np.asarray(z, dtype=float))
    return e / e.sum(axis=-1, keepdims=True)
""",
    "softmax_over_queries": """import numpy as np


def softmax(z):
    z = np.asarray(z, dtype=float)
    e = np.exp(z - z.max(axis=0, keepdims=True))
    return e / e.sum(axis=0, keepdims=True)
""",
}

TESTS = (
    "rows sum to 1 (4 x 5 scores)",
    "stable for scores near 1000",
    "a 3-D input: over the last axis",
)


def calls(rng: np.random.Generator) -> list[Call]:
    large = rng.normal(0.0, 3.0, (3, 6)) + np.array([[1000.0], [-1000.0], [990.0]])
    return [
        Call("softmax/small", "softmax", (rng.normal(0.0, 2.0, (4, 5)),)),
        Call("softmax/large", "softmax", (large,)),
        Call("softmax/3d", "softmax", (rng.normal(0.0, 2.0, (2, 3, 4)),)),
    ]


def _right(r: Results, key: str) -> str | None:
    return mismatch(engine.softmax(r.call(key).args[0]), r.value(key))


def _stable(r: Results) -> str | None:
    got = r.value("softmax/large")
    if bad := non_finite(got):
        return f"overflow on scores near 1000: {bad}; subtract the row max before exp()"
    return _right(r, "softmax/large")


def _diagnose(r: Results) -> str:
    if non_finite(r.value("softmax/large")):
        return "softmax_overflow"
    for key in ("softmax/small", "softmax/3d"):
        z = np.asarray(r.call(key).args[0])
        code = first_match(
            r.value(key),
            {
                "softmax_over_queries": engine.softmax(z, axis=0),
                "softmax_over_everything": engine.softmax(z.reshape(-1)).reshape(z.shape),
            },
        )
        if code:
            return code
    return ""


def judge_run(made: Sequence[Call], run: RunResult) -> Verdict:
    tests = (
        LabTest(TESTS[0], lambda r: _right(r, "softmax/small")),
        LabTest(TESTS[1], _stable),
        LabTest(TESTS[2], lambda r: _right(r, "softmax/3d")),
    )
    return judge(tests, made, run, _diagnose)


LAB = Lab(
    slug="softmax",
    title="A stable softmax",
    prompt=PROMPT.strip(),
    starter_code=STARTER,
    reference=REFERENCE,
    tests=TESTS,
    calls=calls,
    judge=judge_run,
    mistakes=MISTAKES,
)

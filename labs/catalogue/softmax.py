"""Lab: a softmax over the last axis that survives scores near 1000."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from exercises import engine
from labs.judging import Failure, LabTest, Results, judge
from labs.spec import Call, Lab, RunResult, Verdict
from labs.values import TOLERANCE, first_match, non_finite, show

PROMPT = rf"""
Write `softmax(z)`: the softmax along the **last axis** of an array of any number of
dimensions, so a matrix of scores $(n_q, n_k)$ becomes weights whose every row is
non-negative and sums to 1:

$$\operatorname{{softmax}}(z)_j = \frac{{e^{{z_j}}}}{{\sum_l e^{{z_l}}}}$$

It must stay finite for large scores. $e^{{1000}}$ overflows to infinity in float64, and
$\infty / \infty$ is nan; $e^{{-1000}}$ underflows to 0, and $0/0$ is nan too.
Subtracting **each row's own** maximum first changes nothing in the result (the factor
$e^{{-\max}}$ cancels), keeps every exponent at or below 0, and leaves a 1 in every row's sum.

Return an `ndarray` of the input's shape with a floating dtype (float64 or float32:
this lab is about staying finite, not about precision). Each entry must lie
{TOLERANCE.words()}.

The tests draw fresh sizes on every run: a small matrix, rows of scores near
$+1000$, $-1000$ and $990$, and a 3-D array whose every row along the last axis is
normalised on its own.
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
    "softmax_global_max": """import numpy as np


def softmax(z):
    z = np.asarray(z, dtype=float)
    e = np.exp(z - z.max())
    return e / e.sum(axis=-1, keepdims=True)
""",
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
    "rows sum to 1 (a small matrix)",
    "stable for scores near ±1000",
    "a 3-D input: over the last axis",
)
HINT = (
    "For each row along the last axis: subtract that row's maximum (z.max(axis=-1, "
    "keepdims=True)), take exp(), then divide by the row's sum over the same axis."
)


def calls(rng: np.random.Generator) -> list[Call]:
    n_rows, n_cols = (int(v) for v in rng.integers(3, 7, size=2))
    offsets = np.array([[1000.0], [-1000.0], [990.0]])
    large = rng.normal(0.0, 3.0, (3, int(rng.integers(4, 9)))) + offsets
    shape3 = tuple(int(v) for v in rng.integers(2, 5, size=3))
    return [
        Call("softmax/small", "softmax", (rng.normal(0.0, 2.0, (n_rows, n_cols)),)),
        Call("softmax/large", "softmax", (large,)),
        Call("softmax/3d", "softmax", (rng.normal(0.0, 2.0, shape3),)),
    ]


def _right(r: Results, key: str) -> Failure | None:
    return r.compare(key, engine.softmax(r.call(key).args[0]))


def _stable(r: Results) -> Failure | str | None:
    got = r.value("softmax/large")
    failure = _right(r, "softmax/large")
    if failure is not None and (bad := non_finite(got)):
        return Failure(
            f"Scores near ±1000 give nan or inf: {bad}. Subtract each row's own maximum "
            "before exp()",
            failure.expected,
            show(got),
            failure.input,
        )
    return failure


def _global_max(z: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        e = np.exp(z - z.max())
        out: np.ndarray = e / e.sum(axis=-1, keepdims=True)
    return out


def _naive(z: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        e = np.exp(z)
        out: np.ndarray = e / e.sum(axis=-1, keepdims=True)
    return out


def _diagnose_key(r: Results, key: str) -> str:
    z = np.asarray(r.call(key).args[0])
    return first_match(
        r.get(key),
        {
            "softmax_overflow": _naive(z) if key == "softmax/large" else None,
            "softmax_global_max": _global_max(z) if key == "softmax/large" else None,
            "softmax_over_queries": engine.softmax(z, axis=0),
            "softmax_over_everything": engine.softmax(z.reshape(-1)).reshape(z.shape),
        },
    )


def judge_run(made: Sequence[Call], run: RunResult) -> Verdict:
    tests = (
        LabTest(
            TESTS[0],
            lambda r: _right(r, "softmax/small"),
            HINT,
            lambda r: _diagnose_key(r, "softmax/small"),
        ),
        LabTest(TESTS[1], _stable, HINT, lambda r: _diagnose_key(r, "softmax/large")),
        LabTest(
            TESTS[2],
            lambda r: _right(r, "softmax/3d"),
            HINT,
            lambda r: _diagnose_key(r, "softmax/3d"),
        ),
    )
    return judge(tests, made, run)


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

"""Labs: scaled dot-product attention with a mask, and the causal mask itself."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from exercises import engine
from labs.catalogue.references import attention_variants
from labs.judging import Check, Failure, LabTest, Results, judge
from labs.spec import Call, Lab, RunResult, Verdict
from labs.values import TOLERANCE, array_problem, first_match, show, show_call

ATTENTION_PROMPT = rf"""
Write `attention(Q, K, V, mask=None)`: scaled dot-product attention for one head,

$$\operatorname{{Attention}}(Q, K, V) = \operatorname{{softmax}}\!\left(\frac{{QK^\top}}{{\sqrt{{d_k}}}}\right) V$$

with $Q$ of shape $(n_q, d_k)$, $K$ of shape $(n_k, d_k)$ and $V$ of shape $(n_k, d_v)$;
the output is $(n_q, d_v)$. Score $(i, j)$ is query $i$ against key $j$, and the softmax
runs along each row, over the keys. Read $d_k$ from the shapes: the tests draw new sizes
and a new $d_k$ for every call, and $d_v$ differs from $d_k$.

`mask` is None or a boolean $(n_q, n_k)$ array in which **True means blocked**: that
score becomes $-\infty$ *before* the softmax, so its weight is exactly 0 and the row
still sums to 1 (the lesson's `np.triu(..., k=1)` convention). With `mask=None`
nothing is blocked.

Return an `ndarray` of shape $(n_q, d_v)$ with a floating dtype (float64 or float32 both
pass). Each entry must lie {TOLERANCE.words()}.

The tests call it with no mask, with a causal mask, and with a padding mask whose last
keys are padding.
"""

ATTENTION_STARTER = '''import numpy as np


def attention(Q, K, V, mask=None):
    """(n_q, d_k), (n_k, d_k), (n_k, d_v) -> (n_q, d_v); mask True = blocked."""
    raise NotImplementedError
'''

_ATTENTION = '''import numpy as np


def softmax(z):
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def attention(Q, K, V, mask=None):
    """(n_q, d_k), (n_k, d_k), (n_k, d_v) -> (n_q, d_v); mask True = blocked."""
    s = {scores}
    if mask is not None:
        {masking}
    return {mix}
'''


def _attention_source(
    scores: str = "Q @ K.T / np.sqrt(Q.shape[-1])",
    masking: str = "s = np.where(mask, -np.inf, s)",
    mix: str = "softmax(s) @ V",
) -> str:
    return _ATTENTION.format(scores=scores, masking=masking, mix=mix)


ATTENTION_REFERENCE = _attention_source()
ATTENTION_MISTAKES = {
    "no_scale": _attention_source(scores="Q @ K.T"),
    "softmax_over_queries": _attention_source(mix="softmax(s.T).T @ V"),
    "mask_after_softmax": _attention_source(
        masking="return np.where(mask, 0.0, softmax(s)) @ V",
    ),
    "mask_inverted": _attention_source(masking="s = np.where(~mask, -np.inf, s)"),
    "mask_as_zero_score": _attention_source(masking="s = np.where(mask, 0.0, s)"),
    "scale_fixed": _attention_source(scores="Q @ K.T / np.sqrt(4)"),
    "scale_by_d_v": _attention_source(scores="Q @ K.T / np.sqrt(V.shape[-1])"),
}

ATTENTION_TESTS = (
    "no mask: softmax(Q K^T / sqrt(d_k)) V",
    "causal mask: True is blocked",
    "padding mask: the last keys blocked",
)
ATTENTION_KEYS = ("attention/plain", "attention/causal", "attention/padding")
ATTENTION_HINTS = (
    "Compute the scores Q @ K.T, divide them by the square root of d_k (Q.shape[-1]), "
    "take the softmax of each row over the keys (the last axis), then multiply by V.",
    "Where the mask is True, set the score to -inf (np.where(mask, -np.inf, scores)) "
    "after scaling and before the softmax over the keys; then multiply by V.",
    "The padding mask blocks whole key columns: set those scores to -inf before the "
    "softmax over the keys (the last axis), so each row's weights on the open keys sum to 1.",
)


def attention_calls(rng: np.random.Generator) -> list[Call]:
    # Three d_k, all different, from 3 up: sqrt(d_k) then never equals a small width a
    # learner might divide by instead (d_k itself, sqrt(d_v), a hard-coded sqrt(4)).
    widths = rng.choice(np.arange(3, 10), size=3, replace=False)

    def qkv(n_q: int, n_k: int, d_k: int) -> tuple[np.ndarray, ...]:
        # sqrt(d_v) is never a width a learner might hard-code (FIXED_WIDTHS).
        d_v = int(rng.choice([w for w in (3, 5, 6, 7) if w != d_k]))
        return (
            rng.normal(0.0, 1.5, (n_q, d_k)),
            rng.normal(0.0, 1.5, (n_k, d_k)),
            rng.normal(0.0, 1.0, (n_k, d_v)),
        )

    n_plain, n_causal = (int(v) for v in rng.integers(3, 8, size=2))
    n_q, n_k = int(rng.integers(3, 7)), int(rng.integers(5, 9))
    padding = np.zeros((n_q, n_k), dtype=bool)
    padding[:, n_k - int(rng.integers(1, 3)) :] = True
    return [
        Call("attention/plain", "attention", qkv(n_plain, n_plain, int(widths[0]))),
        Call(
            "attention/causal",
            "attention",
            qkv(n_causal, n_causal, int(widths[1])),
            {"mask": engine.causal_mask(n_causal)},
        ),
        Call("attention/padding", "attention", qkv(n_q, n_k, int(widths[2])), {"mask": padding}),
    ]


def _expected(call: Call) -> np.ndarray:
    Q, K, V = call.args
    return engine.scaled_dot_product_attention(Q, K, V, mask=call.kwargs.get("mask"))


def _checking(key: str) -> Check:
    return lambda r: r.compare(key, _expected(r.call(key)))


def _diagnosing(key: str) -> Callable[[Results], str]:
    def diagnose(r: Results) -> str:
        call = r.call(key)
        Q, K, V = call.args
        return first_match(r.get(key), attention_variants(Q, K, V, call.kwargs.get("mask")))

    return diagnose


def judge_attention(made: Sequence[Call], run: RunResult) -> Verdict:
    tests = [
        LabTest(name, _checking(key), hint, _diagnosing(key))
        for name, key, hint in zip(ATTENTION_TESTS, ATTENTION_KEYS, ATTENTION_HINTS, strict=True)
    ]
    return judge(tests, made, run)


ATTENTION = Lab(
    slug="attention",
    title="Scaled dot-product attention with a mask",
    prompt=ATTENTION_PROMPT.strip(),
    starter_code=ATTENTION_STARTER,
    reference=ATTENTION_REFERENCE,
    tests=ATTENTION_TESTS,
    calls=attention_calls,
    judge=judge_attention,
    mistakes=ATTENTION_MISTAKES,
)


# --- the causal mask ----------------------------------------------------------------------

CAUSAL_PROMPT = r"""
Write `causal_mask(n)`: the decoder's mask for $n$ tokens, a boolean $(n, n)$ array in
which entry $(i, j)$ is **True when query $i$ may not read key $j$**, that is for every
key after the query's own position ($j > i$). The diagonal stays False: a token reads
itself. In NumPy this is the upper triangle above the diagonal.

With it, the first token reads only itself, and the last token reads every key.

Return an `ndarray` of dtype **bool** and shape $(n, n)$: an integer or float mask, or a
list, does not pass. Booleans are compared exactly: there is no tolerance. The tests draw
two sizes afresh on every run, and ask for one token.
"""

CAUSAL_STARTER = '''import numpy as np


def causal_mask(n):
    """-> bool (n, n), True above the diagonal: query i may not read key j > i."""
    raise NotImplementedError
'''

CAUSAL_REFERENCE = '''import numpy as np


def causal_mask(n):
    """-> bool (n, n), True above the diagonal: query i may not read key j > i."""
    return np.triu(np.ones((n, n), dtype=bool), k=1)
'''

CAUSAL_MISTAKES = {
    "causal_mask_transposed": CAUSAL_REFERENCE.replace("np.triu(", "np.tril(").replace(
        "k=1", "k=-1"
    ),
    "causal_mask_diagonal_blocked": CAUSAL_REFERENCE.replace("k=1", "k=0"),
}

CAUSAL_TESTS = (
    "a bool (n, n) array",
    "True exactly above the diagonal",
    "one token: nothing blocked",
)
CAUSAL_HINT = (
    "Start from a square (n, n) array of True values (dtype bool) and keep only the part "
    "strictly above the diagonal: np.triu(..., k=1). Entry (i, j) is True when j > i."
)


def causal_calls(rng: np.random.Generator) -> list[Call]:
    sizes = rng.choice(np.arange(3, 12), size=2, replace=False)
    return [
        Call("causal_mask/a", "causal_mask", (int(sizes[0]),)),
        Call("causal_mask/b", "causal_mask", (int(sizes[1]),)),
        Call("causal_mask/1", "causal_mask", (1,)),
    ]


def _bool_square(r: Results) -> Failure | None:
    n = r.call("causal_mask/a").args[0]
    got = r.value("causal_mask/a")
    if problem := array_problem(got, (n, n), boolean=True):
        return Failure(
            problem,
            f"an ndarray of shape ({n}, {n}), dtype bool",
            show(got),
            show_call(r.call("causal_mask/a")),
        )
    return None


def _triangle(r: Results) -> Failure | None:
    for key in ("causal_mask/a", "causal_mask/b"):
        n = r.call(key).args[0]
        if failure := r.compare(key, engine.causal_mask(n)):
            return failure
    return None


def _diagnose_causal(r: Results) -> str:
    for key in ("causal_mask/a", "causal_mask/b"):
        n = r.call(key).args[0]
        ones = np.ones((n, n), dtype=bool)
        variants = {
            "causal_mask_transposed": np.tril(ones, k=-1),
            "causal_mask_diagonal_blocked": np.triu(ones, k=0),
        }
        if code := first_match(r.get(key), variants):
            return code
    return ""


def judge_causal(made: Sequence[Call], run: RunResult) -> Verdict:
    tests = (
        LabTest(CAUSAL_TESTS[0], _bool_square, CAUSAL_HINT),
        LabTest(CAUSAL_TESTS[1], _triangle, CAUSAL_HINT, _diagnose_causal),
        LabTest(
            CAUSAL_TESTS[2],
            lambda r: r.compare("causal_mask/1", np.zeros((1, 1), dtype=bool)),
            CAUSAL_HINT,
        ),
    )
    return judge(tests, made, run, _diagnose_causal)


CAUSAL = Lab(
    slug="causal-mask",
    title="The causal mask",
    prompt=CAUSAL_PROMPT.strip(),
    starter_code=CAUSAL_STARTER,
    reference=CAUSAL_REFERENCE,
    tests=CAUSAL_TESTS,
    calls=causal_calls,
    judge=judge_causal,
    mistakes=CAUSAL_MISTAKES,
)

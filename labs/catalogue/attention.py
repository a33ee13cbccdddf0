"""Labs: scaled dot-product attention with a mask, and the causal mask itself."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from exercises import engine
from labs.catalogue.references import attention_variants
from labs.judging import Check, LabTest, Results, as_array, first_match, judge, mismatch
from labs.spec import Call, Lab, RunResult, Verdict

ATTENTION_PROMPT = r"""
Write `attention(Q, K, V, mask=None)`: scaled dot-product attention for one head,

$$\operatorname{Attention}(Q, K, V) = \operatorname{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}}\right) V$$

with $Q$ of shape $(n_q, d_k)$, $K$ of shape $(n_k, d_k)$ and $V$ of shape $(n_k, d_v)$;
the output is $(n_q, d_v)$. Score $(i, j)$ is query $i$ against key $j$, and the softmax
runs along each row, over the keys.

`mask` is None or a boolean $(n_q, n_k)$ array in which **True means blocked**: that
score becomes $-\infty$ *before* the softmax, so its weight is exactly 0 and the row
still sums to 1 (the lesson's `np.triu(..., k=1)` convention).

The tests call it with no mask, with a causal mask on five tokens, and with a padding
mask on four queries and six keys whose last two keys are padding.
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
}

ATTENTION_TESTS = (
    "no mask: softmax(Q K^T / sqrt(d_k)) V",
    "causal mask: True is blocked",
    "padding mask on 4 queries and 6 keys",
)


def attention_calls(rng: np.random.Generator) -> list[Call]:
    def qkv(n_q: int, n_k: int, d_k: int = 4, d_v: int = 3) -> tuple[np.ndarray, ...]:
        return (
            rng.normal(0.0, 1.5, (n_q, d_k)),
            rng.normal(0.0, 1.5, (n_k, d_k)),
            rng.normal(0.0, 1.0, (n_k, d_v)),
        )

    padding = np.zeros((4, 6), dtype=bool)
    padding[:, 4:] = True
    return [
        Call("attention/plain", "attention", qkv(5, 5)),
        Call("attention/causal", "attention", qkv(5, 5), {"mask": engine.causal_mask(5)}),
        Call("attention/padding", "attention", qkv(4, 6), {"mask": padding}),
    ]


def _expected(call: Call) -> np.ndarray:
    Q, K, V = call.args
    return engine.scaled_dot_product_attention(Q, K, V, mask=call.kwargs.get("mask"))


def _right(r: Results, key: str) -> str | None:
    return mismatch(_expected(r.call(key)), r.value(key))


def _checking(key: str) -> Check:
    return lambda r: _right(r, key)


def _diagnose_attention(r: Results) -> str:
    for key in ("attention/plain", "attention/causal", "attention/padding"):
        call = r.call(key)
        Q, K, V = call.args
        code = first_match(r.value(key), attention_variants(Q, K, V, call.kwargs.get("mask")))
        if code:
            return code
    return ""


def judge_attention(made: Sequence[Call], run: RunResult) -> Verdict:
    keys = ("attention/plain", "attention/causal", "attention/padding")
    tests = [LabTest(name, _checking(key)) for name, key in zip(ATTENTION_TESTS, keys, strict=True)]
    return judge(tests, made, run, _diagnose_attention)


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

With it, token 0 reads only itself, and the last token reads every key.
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


def causal_calls(rng: np.random.Generator) -> list[Call]:
    sizes = rng.choice(np.arange(4, 10), size=2, replace=False)
    return [
        Call("causal_mask/a", "causal_mask", (int(sizes[0]),)),
        Call("causal_mask/b", "causal_mask", (int(sizes[1]),)),
        Call("causal_mask/1", "causal_mask", (1,)),
    ]


def _bool_square(r: Results) -> str | None:
    n = r.call("causal_mask/a").args[0]
    got = r.value("causal_mask/a")
    arr = as_array(got, bool)
    if arr is None:
        floats = as_array(got)
        if floats is not None:
            return f"expected booleans (True = blocked), got numbers of dtype {floats.dtype}"
        return mismatch(engine.causal_mask(n), got)
    if arr.shape != (n, n):
        return f"causal_mask({n}): expected shape {(n, n)}, got {arr.shape}"
    return None


def _triangle(r: Results) -> str | None:
    for key in ("causal_mask/a", "causal_mask/b"):
        n = r.call(key).args[0]
        if problem := mismatch(engine.causal_mask(n), r.value(key)):
            return f"causal_mask({n}): {problem}"
    return None


def _diagnose_causal(r: Results) -> str:
    for key in ("causal_mask/a", "causal_mask/b"):
        n = r.call(key).args[0]
        ones = np.ones((n, n), dtype=bool)
        variants = {
            "causal_mask_transposed": np.tril(ones, k=-1),
            "causal_mask_diagonal_blocked": np.triu(ones, k=0),
        }
        if code := first_match(r.value(key), variants):
            return code
    return ""


def judge_causal(made: Sequence[Call], run: RunResult) -> Verdict:
    tests = (
        LabTest(CAUSAL_TESTS[0], _bool_square),
        LabTest(CAUSAL_TESTS[1], _triangle),
        LabTest(
            CAUSAL_TESTS[2],
            lambda r: mismatch(np.zeros((1, 1), dtype=bool), r.value("causal_mask/1")),
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

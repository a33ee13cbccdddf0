"""Lab: one transformer block and the lesson's property tests, each decided on the values
the learner's functions return: shape, normalised rows, permutation with and without
positions, causal isolation, the spread of q . k, and the score matrix's bytes."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from labs.catalogue.references import N_TOKENS, block, block_variants, head_weights
from labs.catalogue.references import sines_then_cosines as positions
from labs.judging import (
    CallProblem,
    LabTest,
    Results,
    as_array,
    as_number,
    describe,
    first_match,
    fmt,
    judge,
    mismatch,
)
from labs.spec import Call, Lab, RunResult, Verdict

PROMPT = r"""
Build the lesson's two-head block for six tokens and test its properties. Write three
functions.

**`block(X, W_Q, W_K, W_V, W_O, causal=False)`**: multi-head self-attention, then the
residual and LayerNorm, $\operatorname{LayerNorm}(X + \operatorname{MultiHead}(X))$ with
LayerNorm's $\varepsilon = 10^{-5}$ and no gain or shift. $X$ is $(6, 8)$; `W_Q`, `W_K`,
`W_V` are $(2, 8, 4)$, one matrix per head; `W_O` is $(8, 8)$. Each head computes
$\operatorname{softmax}(Q_h K_h^\top / \sqrt{d_k})\, V_h$; with `causal=True` every key
after the query's position gets $-\infty$ before the softmax. The service passes the
weights in, so it can compare your block with the engine's, and then checks:

- the output has the input's shape, $(6, 8)$, and each row has mean $\approx 0$;
- without positions, permuting the tokens only permutes the outputs: `block(X[perm])`
  equals `block(X)[perm]`;
- with sinusoidal positions added to the tokens (the service adds them), it no longer does;
- with `causal=True`, changing the last token leaves every earlier output unchanged;
  without the mask, the earlier outputs change.

**`qk_spread(d_k, n, seed)`**: draw $n$ random queries and $n$ keys with independent
unit-variance normal components (`np.random.default_rng(seed)`), take the $n$ dot
products $q \cdot k$ of matching pairs, and return `(raw_std, scaled_std)`: the standard
deviation of the dot products and of the dot products divided by $\sqrt{d_k}$. For
$d_k = 64$ expect about 8 and about 1.

**`score_bytes(n, bytes_per_entry=2)`**: the bytes one head's $n \times n$ score matrix
takes (2 bytes per entry assumes half precision). The service asks for 1,000, 8,000 and
32,000 tokens: 2 MB, 128 MB and 2,048 MB.
"""

STARTER = '''import numpy as np


def block(X, W_Q, W_K, W_V, W_O, causal=False):
    """(n, d_model) -> (n, d_model): LayerNorm(X + MultiHead(X)).

    W_Q, W_K, W_V: (heads, d_model, d_k); W_O: (heads * d_k, d_model).
    """
    raise NotImplementedError


def qk_spread(d_k, n, seed):
    """-> (raw_std, scaled_std) of n dot products of random unit-variance q and k."""
    raise NotImplementedError


def score_bytes(n, bytes_per_entry=2):
    """-> bytes of one head's n x n score matrix."""
    raise NotImplementedError
'''

BLOCK_SOURCE = '''import numpy as np


def softmax(z):
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def layer_norm(x, eps=1e-5):
    return (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + eps)


def block(X, W_Q, W_K, W_V, W_O, causal=False{residual_arg}):
    """(n, d_model) -> (n, d_model): LayerNorm(X + MultiHead(X)).

    W_Q, W_K, W_V: (heads, d_model, d_k); W_O: (heads * d_k, d_model).
    """
    n = len(X)
    outs = []
    for h in range(len(W_Q)):
        Q, K, V = X @ W_Q[h], X @ W_K[h], X @ W_V[h]
        s = Q @ K.T / {scale}
        if causal:
            s = np.where({mask}, -np.inf, s)
        outs.append(softmax(s) @ V)
    mixed = np.concatenate(outs, axis=-1) @ W_O
    return {combine}
'''


def block_source(
    scale: str = "np.sqrt(Q.shape[-1])",
    mask: str = "np.triu(np.ones((n, n), dtype=bool), k=1)",
    combine: str = "layer_norm(X + mixed)",
    residual_arg: str = "",
) -> str:
    return BLOCK_SOURCE.format(scale=scale, mask=mask, combine=combine, residual_arg=residual_arg)


PROBES = '''

def qk_spread(d_k, n, seed):
    """-> (raw_std, scaled_std) of n dot products of random unit-variance q and k."""
    rng = np.random.default_rng(seed)
    q, k = rng.normal(size=(n, d_k)), rng.normal(size=(n, d_k))
    dots = (q * k).sum(axis=1)
    return float(dots.std()), float((dots / {scale}).std())


def score_bytes(n, bytes_per_entry=2):
    """-> bytes of one head's n x n score matrix."""
    return {size} * bytes_per_entry
'''


def probes_source(scale: str = "np.sqrt(d_k)", size: str = "n * n") -> str:
    return PROBES.format(scale=scale, size=size)


REFERENCE = block_source() + probes_source()
MISTAKES = {
    "no_scale": block_source(scale="1.0") + probes_source(scale="1.0"),
    "residual_left_out": block_source(combine="layer_norm(mixed)") + probes_source(),
    "causal_mask_transposed": block_source(mask="np.tril(np.ones((n, n), dtype=bool), k=-1)")
    + probes_source(),
    "score_bytes_linear": block_source() + probes_source(size="n"),
}

TESTS = (
    "output shape (6, 8)",
    "the engine's block, LayerNorm(X + MultiHead(X))",
    "row means near 0 after LayerNorm",
    "without positions: permuting tokens permutes outputs",
    "with positions: permuting tokens no longer only permutes",
    "causal: changing the last token leaves earlier outputs unchanged",
    "not causal: changing the last token changes earlier outputs",
    "spread of q . k for d_k = 64: about 8 raw, about 1 scaled",
    "score matrix bytes at 1,000, 8,000 and 32,000 tokens",
)
SIZES = (1_000, 8_000, 32_000)
D_K = 64


def calls(rng: np.random.Generator) -> list[Call]:
    W = head_weights(rng)
    weights = (W["W_Q"], W["W_K"], W["W_V"], W["W_O"])
    X = rng.normal(0.0, 1.0, (N_TOKENS, 8))
    perm = rng.permutation(N_TOKENS)
    while (perm == np.arange(N_TOKENS)).all():
        perm = rng.permutation(N_TOKENS)
    P = positions(N_TOKENS, 8)
    X2 = X.copy()
    X2[-1] += 5.0
    return [
        Call("block/X", "block", (X, *weights)),
        Call("block/perm", "block", (X[perm], *weights), {}),
        Call("block/X+P", "block", (X + P, *weights)),
        Call("block/perm+P", "block", (X[perm] + P, *weights)),
        Call("block/causal", "block", (X, *weights), {"causal": True}),
        Call("block/causal-changed", "block", (X2, *weights), {"causal": True}),
        Call("block/changed", "block", (X2, *weights)),
        Call(
            "qk_spread",
            "qk_spread",
            (D_K, int(rng.integers(3_000, 5_000)), int(rng.integers(1, 2**31))),
        ),
        *(Call(f"score_bytes/{n}", "score_bytes", (n,)) for n in SIZES),
        Call("score_bytes/4-byte", "score_bytes", (2_048,), {"bytes_per_entry": 4}),
    ]


def permutation(call: Call, X: np.ndarray) -> np.ndarray:
    """The permutation the service applied: the row of X each row of call's input is."""
    rows = np.asarray(call.args[0])
    return np.array([int(np.argmin(np.abs(X - row).sum(axis=1))) for row in rows])


def output(r: Results, key: str) -> np.ndarray:
    """The block's output for ``key`` as a finite (6, 8) array, or CallProblem saying why not."""
    value = r.value(key)
    got = as_array(value)
    shape = np.shape(r.call(key).args[0])
    if got is None or got.shape != shape:
        found = describe(value) if got is None else f"shape {got.shape}"
        raise CallProblem(f"block() must return a {shape} array; got {found}")
    if not np.isfinite(got).all():
        raise CallProblem("block() returned nan or inf")
    return got


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(np.allclose(a, b, rtol=1e-6, atol=1e-8))


def _weights(call: Call) -> dict[str, np.ndarray]:
    return dict(zip(("W_Q", "W_K", "W_V", "W_O"), call.args[1:5], strict=True))


def _shape(r: Results) -> str | None:
    output(r, "block/X")
    return None


def _engine(r: Results) -> str | None:
    call = r.call("block/X")
    return mismatch(block(call.args[0], _weights(call)), r.value("block/X"))


def _means(r: Results) -> str | None:
    means = output(r, "block/X").mean(axis=-1)
    worst = int(np.argmax(np.abs(means)))
    if abs(means[worst]) > 1e-6:
        return f"row {worst} has mean {fmt(means[worst])}, expected about 0: LayerNorm last"
    return None


def _permutes(r: Results, plain: str, permuted: str) -> bool:
    X = np.asarray(r.call("block/X").args[0])
    perm = permutation(r.call("block/perm"), X)
    return _same(output(r, permuted), output(r, plain)[perm])


def _equivariant(r: Results) -> str | None:
    if _permutes(r, "block/X", "block/perm"):
        return None
    return "block(X[perm]) is not block(X)[perm]: without positions, attention is order-blind"


def _order_seen(r: Results) -> str | None:
    if not _permutes(r, "block/X+P", "block/perm+P"):
        return None
    return "block(X[perm] + P) equals block(X + P)[perm]: the positions P made no difference"


def _causal(r: Results) -> str | None:
    before, after = output(r, "block/causal"), output(r, "block/causal-changed")
    if _same(before[:-1], after[:-1]):
        return None
    rows = np.flatnonzero(~np.isclose(before[:-1], after[:-1], rtol=1e-6, atol=1e-8).all(axis=1))
    return f"with causal=True, output row {int(rows[0])} changed when only the last token did"


def _not_causal(r: Results) -> str | None:
    if not _same(output(r, "block/X")[:-1], output(r, "block/changed")[:-1]):
        return None
    return "with causal=False, the earlier outputs did not change: is the mask always on?"


def spread_bounds(d_k: int, n: int) -> tuple[float, float]:
    """(centre, tolerance) for the sample standard deviation of n dot products of d_k
    unit-variance pairs: sqrt(d_k), and six standard errors, sqrt(d_k) / sqrt(2 n) each
    (the sum of 64 products is close to normal)."""
    centre = math.sqrt(d_k)
    return centre, 6.0 * centre / math.sqrt(2.0 * n)


def spread_pair(r: Results) -> tuple[float, float]:
    value = r.value("qk_spread")
    pair = as_array(value)
    if pair is None or pair.shape != (2,) or not np.isfinite(pair).all():
        raise CallProblem(
            f"qk_spread() must return (raw_std, scaled_std), two finite numbers; got {describe(value)}"
        )
    return float(pair[0]), float(pair[1])


def _spread(r: Results) -> str | None:
    d_k, n, _ = r.call("qk_spread").args
    raw, scaled = spread_pair(r)
    centre, tol = spread_bounds(d_k, n)
    if abs(raw - centre) > tol:
        return f"raw_std is {fmt(raw)}, expected {fmt(centre)} ± {tol:.2f} for {n} pairs"
    if abs(scaled - 1.0) > tol / centre:
        return f"scaled_std is {fmt(scaled)}, expected 1 ± {tol / centre:.3f}: divide by sqrt(d_k)"
    return None


def _bytes(r: Results) -> str | None:
    for key in (*(f"score_bytes/{n}" for n in SIZES), "score_bytes/4-byte"):
        call = r.call(key)
        n, per = call.args[0], call.kwargs.get("bytes_per_entry", 2)
        value = r.value(key)
        got, want = as_number(value), n * n * per
        if got is None or abs(got - want) > 1e-9 * want:
            shown = describe(value) if got is None else f"{got:,.0f}"
            return f"score_bytes({n}, bytes_per_entry={per}) is {shown}, expected {want:,} bytes"
    return None


def _diagnose(r: Results) -> str:
    for key, causal in (("block/X", False), ("block/causal", True)):
        call = r.call(key)
        if code := first_match(r.get(key), block_variants(call.args[0], _weights(call), causal)):
            return code
    try:
        raw, scaled = spread_pair(r)
    except CallProblem:
        raw = scaled = math.nan
    d_k, n, _ = r.call("qk_spread").args
    centre, tol = spread_bounds(d_k, n)
    if abs(raw - centre) <= tol:
        if abs(scaled - raw) <= 1e-9 * raw:
            return "no_scale"
        if abs(scaled - raw / d_k) <= 1e-9 * raw:
            return "divided_by_d_k"
    if abs(raw - d_k) <= tol * centre:
        return "variance_for_sd"
    if as_number(r.get("score_bytes/8000")) == 8_000 * 2:
        return "score_bytes_linear"
    return ""


def judge_run(made: Sequence[Call], run: RunResult) -> Verdict:
    checks = (
        _shape,
        _engine,
        _means,
        _equivariant,
        _order_seen,
        _causal,
        _not_causal,
        _spread,
        _bytes,
    )
    tests = [LabTest(name, check) for name, check in zip(TESTS, checks, strict=True)]
    return judge(tests, made, run, _diagnose)


LAB = Lab(
    slug="block",
    title="One transformer block and its properties",
    prompt=PROMPT.strip(),
    starter_code=STARTER,
    reference=REFERENCE,
    tests=TESTS,
    calls=calls,
    judge=judge_run,
    mistakes=MISTAKES,
)

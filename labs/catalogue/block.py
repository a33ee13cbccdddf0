"""Lab: one transformer block and the lesson's property tests, each decided on the values
the learner's functions return: shape, normalised rows, permutation with and without
positions, causal isolation, the spread of q . k, and the score matrix's bytes (those two
measuring functions, ``qk_spread`` and ``score_bytes``, live in ``block_probes``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from labs.catalogue import block_probes as probes
from labs.catalogue.references import block_forms, block_variants, head_weights
from labs.catalogue.references import sines_then_cosines as positions
from labs.judging import EPS_RULE, CallProblem, Failure, LabTest, Results, judge
from labs.spec import Call, Lab, RunResult, Verdict
from labs.values import TOLERANCE, array_problem, as_array, first_match, fmt, show, show_call

PROMPT = rf"""
Build the lesson's block and test its properties. Write three functions.

**`block(X, W_Q, W_K, W_V, W_O, causal=False)`**: multi-head self-attention, then the
residual and LayerNorm, $\operatorname{{LayerNorm}}(X + \operatorname{{MultiHead}}(X))$ with
LayerNorm's $\varepsilon = 10^{{-5}}$ and no gain or shift; {EPS_RULE} $X$ is
$(n, d_{{model}})$; `W_Q`, `W_K`, `W_V` are $(h, d_{{model}}, d_k)$, one matrix per head;
`W_O` is $(h\,d_k, d_{{model}})$. Each head computes
$\operatorname{{softmax}}(Q_h K_h^\top / \sqrt{{d_k}})\, V_h$; with `causal=True` every key
after the query's position gets $-\infty$ before the softmax. The lesson's block has six
tokens, $d_{{model}} = 8$ and two heads of $d_k = 4$; the service draws new sizes on every
run (read $n$, $h$ and $d_k$ from the shapes), passes the weights in, compares your block
with the engine's, and then checks:

- the output has the input's shape, and each row has mean $\approx 0$;
- without positions, permuting the tokens only permutes the outputs: `block(X[perm])`
  equals `block(X)[perm]`;
- with sinusoidal positions added to the tokens (the service adds them), it no longer does;
- with `causal=True`, changing the last token leaves every earlier output unchanged;
  without the mask, the earlier outputs change.

Return `ndarray`s with a floating dtype (float64 or float32 both pass); each entry must
lie {TOLERANCE.words()}.

**`qk_spread(d_k, n, seed)`**: draw $n$ random queries and $n$ keys of width $d_k$ with
independent unit-variance normal components (`np.random.default_rng(seed)`), take the $n$
dot products $q \cdot k$ of matching pairs, and return `(raw_std, scaled_std)`: the
standard deviation of the dot products and of the dot products divided by $\sqrt{{d_k}}$.
For $d_k = 64$ expect about 8 and about 1; the service asks for another $d_k$, and accepts
a raw spread within six standard errors ($\sqrt{{d_k}} / \sqrt{{2n}}$ each) of $\sqrt{{d_k}}$.

**`score_bytes(n, bytes_per_entry=2)`**: the bytes one head's $n \times n$ score matrix
takes (2 bytes per entry assumes half precision). The service asks for 1,000, 8,000 and
32,000 tokens (2 MB, 128 MB and 2,048 MB), and for one more size drawn afresh.
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


REFERENCE = block_source() + probes.source()
MISTAKES = {
    "no_scale": block_source(scale="1.0") + probes.source(scale="1.0"),
    "residual_left_out": block_source(combine="layer_norm(mixed)") + probes.source(),
    "causal_mask_transposed": block_source(mask="np.tril(np.ones((n, n), dtype=bool), k=-1)")
    + probes.source(),
    "score_bytes_linear": block_source() + probes.source(size="n"),
    "scale_fixed": block_source(scale="np.sqrt(4)") + probes.source(),
    "spread_fixed_d_k": block_source() + probes.source(scale="np.sqrt(64)"),
    "norm_before_residual": block_source(combine="X + layer_norm(mixed)") + probes.source(),
    "mask_when_off": block_source().replace("        if causal:\n", "        if True:\n")
    + probes.source(),
}

TESTS = (
    "output shape: the input's",
    "the engine's block, LayerNorm(X + MultiHead(X))",
    "row means near 0 after LayerNorm",
    "without positions: permuting tokens permutes outputs",
    "with positions: permuting tokens no longer only permutes",
    "causal: changing the last token leaves earlier outputs unchanged",
    "not causal: changing the last token changes earlier outputs",
    "spread of q · k: about sqrt(d_k) raw, about 1 scaled",
    "score matrix bytes at 1,000, 8,000, 32,000 tokens and one more",
)
HINTS = (
    "Return LayerNorm(X + MultiHead(X)) as an ndarray: MultiHead's W_O brings the joined "
    "heads, (n, h*d_k), back to (n, d_model), the width of X.",
    "Per head h: Q, K, V from X with W_Q[h], W_K[h], W_V[h]; scores Q K^T over the square "
    "root of d_k (W_Q.shape[-1]); softmax each row over the keys; times V. Join the heads "
    "along the last axis, multiply by W_O, add X, then LayerNorm over the last axis.",
    "LayerNorm comes last, over each row's features (the last axis): normalise X + "
    "MultiHead(X), not MultiHead(X) alone before adding X.",
    "Attention itself never reads positions: compute each token's output from the same "
    "weights whatever its place, with no step that depends on the row's index.",
    "The service adds the position vectors to X before calling block: your block must use "
    "the X it is given (all of it) and nothing else.",
    "With causal=True, set score (i, j) to -inf for every key j > i (np.triu(..., k=1)) "
    "before the softmax over the keys, in every head.",
    "With causal=False, apply no mask at all: every query reads every key.",
    "Draw q and k of shape (n, d_k) from np.random.default_rng(seed), take the row-wise dot "
    "products (q * k).sum(axis=1), then the standard deviation of those and of those "
    "divided by the square root of the d_k passed in.",
    "One head's score matrix has n × n entries, each bytes_per_entry bytes.",
)
# Head widths the block is drawn with: the second call's differs from the first's, so no
# hard-coded scale passes both.
HEAD_WIDTHS = (2, 3, 5, 6)


def _configuration(rng: np.random.Generator, d_k: int) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
    heads = int(rng.integers(2, 4))
    d_model = int(rng.choice([w for w in (6, 8, 10) if w != d_k]))
    n = int(rng.integers(4, 9))
    W = head_weights(rng, heads=heads, d_model=d_model, d_k=d_k)
    return rng.normal(0.0, 1.0, (n, d_model)), (W["W_Q"], W["W_K"], W["W_V"], W["W_O"])


def calls(rng: np.random.Generator) -> list[Call]:
    d_k, other_d_k = (int(w) for w in rng.choice(HEAD_WIDTHS, size=2, replace=False))
    X, weights = _configuration(rng, d_k)
    X_other, weights_other = _configuration(rng, other_d_k)
    n, d_model = X.shape
    perm = rng.permutation(n)
    while (perm == np.arange(n)).all():
        perm = rng.permutation(n)
    P = positions(n, d_model)
    X2 = X.copy()
    X2[-1] += 5.0
    return [
        Call("block/X", "block", (X, *weights)),
        Call("block/other", "block", (X_other, *weights_other)),
        Call("block/perm", "block", (X[perm], *weights), {}),
        Call("block/X+P", "block", (X + P, *weights)),
        Call("block/perm+P", "block", (X[perm] + P, *weights)),
        Call("block/causal", "block", (X, *weights), {"causal": True}),
        Call("block/causal-changed", "block", (X2, *weights), {"causal": True}),
        Call("block/changed", "block", (X2, *weights)),
        *probes.calls(rng),  # after the block's: the draws keep their order
    ]


def permutation(call: Call, X: np.ndarray) -> np.ndarray:
    """The permutation the service applied: the row of X each row of call's input is."""
    rows = np.asarray(call.args[0])
    return np.array([int(np.argmin(np.abs(X - row).sum(axis=1))) for row in rows])


def output(r: Results, key: str) -> np.ndarray:
    """The block's output for ``key`` as a finite array of its input's shape, or
    CallProblem saying why not."""
    value = r.value(key)
    shape = tuple(np.shape(r.call(key).args[0]))
    if problem := array_problem(value, shape):
        raise CallProblem(f"block(): {problem}")
    got = as_array(value)
    if got is None or not np.isfinite(got).all():
        raise CallProblem("block() returned nan or inf")
    return got


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(np.allclose(a, b, rtol=TOLERANCE.rtol, atol=TOLERANCE.atol))


def _weights(call: Call) -> dict[str, np.ndarray]:
    return dict(zip(("W_Q", "W_K", "W_V", "W_O"), call.args[1:5], strict=True))


def _shape(r: Results) -> Failure | None:
    value = r.value("block/X")
    call = r.call("block/X")
    shape = tuple(np.shape(call.args[0]))
    if problem := array_problem(value, shape):
        return Failure(problem, f"an ndarray of shape {shape}", show(value), show_call(call))
    return None


def right_block(r: Results, key: str, residual: bool = True) -> Failure | None:
    """Call ``key`` against the engine's block, LayerNorm's eps in either accepted place."""
    call = r.call(key)
    causal = bool(call.kwargs.get("causal", False))
    expected, *others = block_forms(call.args[0], _weights(call), causal, residual)
    return r.compare(key, expected, accepted=others)


def _engine(r: Results) -> Failure | None:
    return right_block(r, "block/X") or right_block(r, "block/other")


def _means(r: Results) -> str | None:
    means = output(r, "block/X").mean(axis=-1)
    worst = int(np.argmax(np.abs(means)))
    if abs(means[worst]) > 1e-4:
        return f"Row {worst} has mean {fmt(means[worst])}, expected about 0: LayerNorm last"
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
    close = np.isclose(before[:-1], after[:-1], rtol=TOLERANCE.rtol, atol=TOLERANCE.atol)
    rows = np.flatnonzero(~close.all(axis=1))
    return (
        f"With causal=True, output row {int(rows[0]) + 1} (of {len(before)}) changed when "
        "only the last token did"
    )


def _not_causal(r: Results) -> str | None:
    if not _same(output(r, "block/X")[:-1], output(r, "block/changed")[:-1]):
        return None
    return "With causal=False, the earlier outputs did not change: is the mask always on?"


def _diagnosing_block(*keys: str) -> Callable[[Results], str]:
    def diagnose(r: Results) -> str:
        for key in keys:
            call = r.call(key)
            causal = bool(call.kwargs.get("causal", False))
            variants = block_variants(call.args[0], _weights(call), causal)
            if code := first_match(r.get(key), variants):
                return code
        return ""

    return diagnose


def _diagnose_causal(r: Results) -> str:
    return _diagnosing_block("block/causal", "block/causal-changed")(r)


def judge_run(made: Sequence[Call], run: RunResult) -> Verdict:
    on_x = _diagnosing_block("block/X", "block/other")
    tests = (
        LabTest(TESTS[0], _shape, HINTS[0], on_x),
        LabTest(TESTS[1], _engine, HINTS[1], on_x),
        LabTest(TESTS[2], _means, HINTS[2], on_x),
        LabTest(TESTS[3], _equivariant, HINTS[3], on_x),
        LabTest(TESTS[4], _order_seen, HINTS[4]),
        LabTest(TESTS[5], _causal, HINTS[5], _diagnose_causal),
        LabTest(TESTS[6], _not_causal, HINTS[6], lambda r: "mask_when_off"),
        LabTest(TESTS[7], probes.check_spread, HINTS[7], probes.diagnose_spread),
        LabTest(TESTS[8], probes.check_bytes, HINTS[8], probes.diagnose_bytes),
    )
    return judge(tests, made, run)


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

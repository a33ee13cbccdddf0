"""Labs: multi-head attention with per-head weights, and LayerNorm with the residual."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from exercises import engine
from labs.catalogue.references import head_weights, multi_head, multi_head_variants
from labs.judging import Check, LabTest, Results, first_match, judge, mismatch, non_finite
from labs.spec import Call, Lab, RunResult, Verdict

MULTI_HEAD_PROMPT = r"""
Write `multi_head(X, W_Q, W_K, W_V, W_O)`: multi-head self-attention with the lab's
weight shapes. $X$ is $(n, d_{model})$; `W_Q`, `W_K` and `W_V` hold one matrix per head,
shape $(h, d_{model}, d_k)$; `W_O` is $(h\,d_k, d_{model})$.

For each head $i$: $Q_i = X W_Q[i]$, $K_i = X W_K[i]$, $V_i = X W_V[i]$, each $(n, d_k)$, and
$O_i = \operatorname{softmax}(Q_i K_i^\top / \sqrt{d_k})\, V_i$. Concatenate the heads'
outputs in order along the columns, $(n, h\,d_k)$, and multiply by $W_O$: the output is
$(n, d_{model})$. Each head divides by the square root of its **own** width $d_k$.

The tests use the lab's sizes (six tokens, $d_{model} = 8$, two heads of $d_k = 4$) and
then four heads of width 2: read $h$ from the weights' shape.
"""

MULTI_HEAD_STARTER = '''import numpy as np


def multi_head(X, W_Q, W_K, W_V, W_O):
    """(n, d_model), 3 x (h, d_model, d_k), (h * d_k, d_model) -> (n, d_model)."""
    raise NotImplementedError
'''

_MULTI_HEAD = '''import numpy as np


def softmax(z):
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def multi_head(X, W_Q, W_K, W_V, W_O):
    """(n, d_model), 3 x (h, d_model, d_k), (h * d_k, d_model) -> (n, d_model)."""
    outs = []
    for h in range(len(W_Q)):
        Q, K, V = X @ W_Q[h], X @ W_K[h], X @ W_V[h]
        s = Q @ K.T / np.sqrt({width})
        outs.append(softmax(s) @ V)
    return {combine}
'''


def _multi_head_source(
    width: str = "Q.shape[-1]", combine: str = "np.concatenate(outs, axis=-1) @ W_O"
) -> str:
    return _MULTI_HEAD.format(width=width, combine=combine)


MULTI_HEAD_REFERENCE = _multi_head_source()
MULTI_HEAD_MISTAKES = {
    "scale_by_d_model": _multi_head_source(width="X.shape[-1]"),
    "heads_concatenated_in_reverse": _multi_head_source(
        combine="np.concatenate(outs[::-1], axis=-1) @ W_O"
    ),
    "w_o_left_out": _multi_head_source(combine="np.concatenate(outs, axis=-1)"),
}

MULTI_HEAD_TESTS = (
    "two heads: the engine's multi-head attention",
    "four heads of width 2",
)


def multi_head_calls(rng: np.random.Generator) -> list[Call]:
    def call(key: str, heads: int, n: int) -> Call:
        W = head_weights(rng, heads=heads)
        X = rng.normal(0.0, 1.0, (n, 8))
        return Call(key, "multi_head", (X, W["W_Q"], W["W_K"], W["W_V"], W["W_O"]))

    return [call("multi_head/2", 2, 6), call("multi_head/4", 4, 5)]


def _weights(call: Call) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    X, *Ws = call.args
    return X, dict(zip(("W_Q", "W_K", "W_V", "W_O"), Ws, strict=True))


def _multi_right(r: Results, key: str) -> str | None:
    X, W = _weights(r.call(key))
    return mismatch(multi_head(X, W), r.value(key))


def _diagnose_multi(r: Results) -> str:
    for key in ("multi_head/2", "multi_head/4"):
        X, W = _weights(r.call(key))
        if code := first_match(r.value(key), multi_head_variants(X, W)):
            return code
    return ""


def judge_multi_head(made: Sequence[Call], run: RunResult) -> Verdict:
    tests = (
        LabTest(MULTI_HEAD_TESTS[0], lambda r: _multi_right(r, "multi_head/2")),
        LabTest(MULTI_HEAD_TESTS[1], lambda r: _multi_right(r, "multi_head/4")),
    )
    return judge(tests, made, run, _diagnose_multi)


MULTI_HEAD = Lab(
    slug="multi-head",
    title="Multi-head attention",
    prompt=MULTI_HEAD_PROMPT.strip(),
    starter_code=MULTI_HEAD_STARTER,
    reference=MULTI_HEAD_REFERENCE,
    tests=MULTI_HEAD_TESTS,
    calls=multi_head_calls,
    judge=judge_multi_head,
    mistakes=MULTI_HEAD_MISTAKES,
)


# --- LayerNorm and the residual -----------------------------------------------------------

NORM_PROMPT = r"""
Write `layer_norm(x, eps=1e-5)`: each token's vector (the **last axis**) shifted to mean
0 and scaled to variance 1,

$$\operatorname{LayerNorm}(x) = \frac{x - \mu}{\sqrt{\sigma^2 + \varepsilon}}$$

with $\mu$ and $\sigma^2$ the mean and the (population) variance of that vector. The
$\varepsilon$ keeps a constant vector, whose variance is 0, finite: it comes out all zeros.

Then write `residual_norm(x, sublayer_out)`: the block's "add and normalise" step, as in
the lesson's post-LN block, $\operatorname{LayerNorm}(x + \text{sublayer\_out})$. The input
is added back **before** normalising, so each output row has mean 0.
"""

NORM_STARTER = '''import numpy as np


def layer_norm(x, eps=1e-5):
    """(..., d) -> (..., d): each vector to mean 0 and variance 1."""
    raise NotImplementedError


def residual_norm(x, sublayer_out):
    """(n, d), (n, d) -> (n, d): LayerNorm(x + sublayer_out)."""
    raise NotImplementedError
'''

_NORM = '''import numpy as np


def layer_norm(x, eps=1e-5):
    """(..., d) -> (..., d): each vector to mean 0 and variance 1."""
    return {norm}


def residual_norm(x, sublayer_out):
    """(n, d), (n, d) -> (n, d): LayerNorm(x + sublayer_out)."""
    return {residual}
'''
_CENTRED = "(x - x.mean({axis}, keepdims=True)) / np.sqrt(x.var({axis}, keepdims=True) + eps)"


def _norm_source(
    norm: str = _CENTRED.format(axis="-1"), residual: str = "layer_norm(x + sublayer_out)"
) -> str:
    return _NORM.format(norm=norm, residual=residual)


NORM_REFERENCE = _norm_source()
NORM_MISTAKES = {
    "layer_norm_over_tokens": _norm_source(norm=_CENTRED.format(axis="0")),
    "layer_norm_no_centering": _norm_source(norm="x / np.sqrt(x.var(-1, keepdims=True) + eps)"),
    "layer_norm_no_eps": _norm_source(
        norm="(x - x.mean(-1, keepdims=True)) / x.std(-1, keepdims=True)"
    ),
    "norm_before_residual": _norm_source(residual="x + layer_norm(sublayer_out)"),
}

NORM_TESTS = (
    "each row to mean 0 and variance 1",
    "a constant row stays finite (eps)",
    "a 3-D input: over the last axis",
    "residual_norm: LayerNorm(x + sublayer_out)",
)


def norm_calls(rng: np.random.Generator) -> list[Call]:
    flat = rng.normal(3.0, 2.0, (4, 8))
    flat[1] = rng.normal()  # a constant row: variance 0
    return [
        Call("layer_norm/rows", "layer_norm", (rng.normal(3.0, 2.0, (6, 8)),)),
        Call("layer_norm/constant", "layer_norm", (flat,)),
        Call("layer_norm/3d", "layer_norm", (rng.normal(-1.0, 3.0, (2, 3, 5)),)),
        Call(
            "residual_norm",
            "residual_norm",
            (rng.normal(0.0, 1.0, (6, 8)), rng.normal(2.0, 1.5, (6, 8))),
        ),
    ]


# Another small eps (1e-6, 1e-8) moves a unit-variance row by about eps / 2: accepted.
NORM_RTOL = 1e-4


def _norm_right(r: Results, key: str) -> str | None:
    call = r.call(key)
    if call.function == "residual_norm":
        x, out = call.args
        return mismatch(engine.layer_norm(x + out), r.value(key), rtol=NORM_RTOL)
    got = r.value(key)
    if key == "layer_norm/constant" and (bad := non_finite(got)):
        return f"the constant row gives {bad}: add eps inside the square root"
    return mismatch(engine.layer_norm(call.args[0]), got, rtol=NORM_RTOL)


def _norm_checking(key: str) -> Check:
    return lambda r: _norm_right(r, key)


def _diagnose_norm(r: Results) -> str:
    if non_finite(r.value("layer_norm/constant")):
        return "layer_norm_no_eps"
    x = np.asarray(r.call("layer_norm/rows").args[0])
    centred = x - x.mean(axis=0, keepdims=True)
    variants = {
        "layer_norm_over_tokens": centred / np.sqrt(x.var(axis=0, keepdims=True) + 1e-5),
        "layer_norm_no_centering": x / np.sqrt(x.var(axis=-1, keepdims=True) + 1e-5),
    }
    if code := first_match(r.value("layer_norm/rows"), variants):
        return code
    x, out = r.call("residual_norm").args
    after = {"norm_before_residual": x + engine.layer_norm(out)}
    return first_match(r.value("residual_norm"), after)


def judge_norm(made: Sequence[Call], run: RunResult) -> Verdict:
    keys = ("layer_norm/rows", "layer_norm/constant", "layer_norm/3d", "residual_norm")
    tests = [LabTest(name, _norm_checking(key)) for name, key in zip(NORM_TESTS, keys, strict=True)]
    return judge(tests, made, run, _diagnose_norm)


NORM = Lab(
    slug="layer-norm",
    title="LayerNorm and the residual",
    prompt=NORM_PROMPT.strip(),
    starter_code=NORM_STARTER,
    reference=NORM_REFERENCE,
    tests=NORM_TESTS,
    calls=norm_calls,
    judge=judge_norm,
    mistakes=NORM_MISTAKES,
)

"""Labs: multi-head attention with per-head weights, and LayerNorm with the residual."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from labs.catalogue.references import (
    ddof_one_norm,
    head_weights,
    multi_head,
    multi_head_variants,
)
from labs.judging import EPS_RULE, Check, Failure, LabTest, Results, judge, layer_norm_forms
from labs.spec import Call, Lab, RunResult, Verdict
from labs.values import TOLERANCE, first_match, non_finite, show

MULTI_HEAD_PROMPT = rf"""
Write `multi_head(X, W_Q, W_K, W_V, W_O)`: multi-head self-attention with the lab's
weight shapes. $X$ is $(n, d_{{model}})$; `W_Q`, `W_K` and `W_V` hold one matrix per head,
shape $(h, d_{{model}}, d_k)$; `W_O` is $(h\,d_k, d_{{model}})$.

For each head $i$: $Q_i = X W_Q[i]$, $K_i = X W_K[i]$, $V_i = X W_V[i]$, each $(n, d_k)$, and
$O_i = \operatorname{{softmax}}(Q_i K_i^\top / \sqrt{{d_k}})\, V_i$. Concatenate the heads'
outputs in order along the columns, $(n, h\,d_k)$, so that row $t$ holds token $t$'s heads
side by side, and multiply by $W_O$: the output is $(n, d_{{model}})$. Each head divides
by the square root of its **own** width $d_k$.

The tests draw $n$, $h$, $d_k$ and $d_{{model}}$ afresh on every run (two calls with
different numbers of heads): read them from the shapes. Return an `ndarray` of shape
$(n, d_{{model}})$ with a floating dtype (float64 or float32 both pass); each entry must
lie {TOLERANCE.words()}.
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
    "heads_reshaped_without_transpose": _multi_head_source(
        combine="np.stack(outs).reshape(len(X), -1) @ W_O"
    ),
}

MULTI_HEAD_TESTS = (
    "the engine's multi-head attention",
    "another number of heads and width",
)
MULTI_HEAD_KEYS = ("multi_head/a", "multi_head/b")
MULTI_HEAD_HINT = (
    "For each head h: project X with W_Q[h], W_K[h], W_V[h], divide Q_h K_h^T by the square "
    "root of that head's d_k (W_Q.shape[-1]), softmax each row over the keys, multiply by "
    "V_h. Join the heads along the last axis in order (np.concatenate(outs, axis=-1), "
    "shape (n, h*d_k)), then multiply by W_O."
)


def multi_head_calls(rng: np.random.Generator) -> list[Call]:
    heads = rng.choice([2, 3, 4], size=2, replace=False)
    # Two different widths, so a width written into the code (sqrt(4)) fails one call.
    widths = rng.choice([2, 3, 4, 5], size=2, replace=False)

    def call(key: str, h: int, d_k: int) -> Call:
        # d_model is never d_k nor a width a learner might hard-code (sqrt(4), sqrt(8)...),
        # so dividing by its root is told apart from both.
        d_model = int(rng.choice([w for w in (5, 6, 7, 9, 10) if w != d_k]))
        n = int(rng.integers(3, 8))
        W = head_weights(rng, heads=h, d_model=d_model, d_k=d_k)
        X = rng.normal(0.0, 1.0, (n, d_model))
        return Call(key, "multi_head", (X, W["W_Q"], W["W_K"], W["W_V"], W["W_O"]))

    return [call(MULTI_HEAD_KEYS[i], int(heads[i]), int(widths[i])) for i in range(2)]


def _weights(call: Call) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    X, *Ws = call.args
    return X, dict(zip(("W_Q", "W_K", "W_V", "W_O"), Ws, strict=True))


def _multi_checking(key: str) -> Check:
    def check(r: Results) -> Failure | None:
        X, W = _weights(r.call(key))
        return r.compare(key, multi_head(X, W))

    return check


def _multi_diagnosing(key: str) -> Callable[[Results], str]:
    def diagnose(r: Results) -> str:
        X, W = _weights(r.call(key))
        return first_match(r.get(key), multi_head_variants(X, W))

    return diagnose


def judge_multi_head(made: Sequence[Call], run: RunResult) -> Verdict:
    tests = [
        LabTest(name, _multi_checking(key), MULTI_HEAD_HINT, _multi_diagnosing(key))
        for name, key in zip(MULTI_HEAD_TESTS, MULTI_HEAD_KEYS, strict=True)
    ]
    return judge(tests, made, run)


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

NORM_PROMPT = rf"""
Write `layer_norm(x, eps=1e-5)`: each token's vector (the **last axis**) shifted to mean
0 and scaled to variance 1,

$$\operatorname{{LayerNorm}}(x) = \frac{{x - \mu}}{{\sqrt{{\sigma^2 + \varepsilon}}}}$$

with $\mu$ and $\sigma^2$ the mean and the **population** variance of that vector
(dividing by $d$, NumPy's default `ddof=0`). The $\varepsilon$ keeps a constant vector,
whose variance is 0, finite: it comes out all zeros. {EPS_RULE} (This LayerNorm has no
learned gain or bias.)

Then write `residual_norm(x, sublayer_out)`: the block's "add and normalise" step, as in
the lesson's post-LN block, $\operatorname{{LayerNorm}}(x + \text{{sublayer\_out}})$. The input
is added back **before** normalising, so each output row has mean 0.

The tests draw sizes afresh on every run. Return `ndarray`s of the input's shape with a
floating dtype (float64 or float32 both pass); each entry must lie {TOLERANCE.words()}.
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
    "variance_ddof_one": _norm_source(
        norm="(x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, ddof=1, keepdims=True) + eps)"
    ),
    "residual_left_out": _norm_source(residual="layer_norm(sublayer_out)"),
}

NORM_TESTS = (
    "each row to mean 0 and variance 1",
    "a constant row stays finite (eps)",
    "a 3-D input: over the last axis",
    "residual_norm: LayerNorm(x + sublayer_out)",
)
NORM_KEYS = ("layer_norm/rows", "layer_norm/constant", "layer_norm/3d", "residual_norm")
NORM_HINT = (
    "Over the last axis (axis=-1, keepdims=True): subtract each vector's mean, then divide "
    "by the square root of its population variance (ddof=0) plus eps."
)
RESIDUAL_HINT = (
    "Add x and sublayer_out first, then apply your layer_norm to the sum, over the last axis."
)


def norm_calls(rng: np.random.Generator) -> list[Call]:
    n, d = int(rng.integers(3, 8)), int(rng.integers(4, 11))
    flat = rng.normal(3.0, 2.0, (int(rng.integers(3, 6)), d))
    # A constant row, its value exact in binary, so that its variance is exactly 0.
    flat[int(rng.integers(0, len(flat)))] = float(rng.integers(-8, 9)) / 4
    shape3 = (int(rng.integers(2, 4)), int(rng.integers(2, 5)), int(rng.integers(3, 8)))
    return [
        Call("layer_norm/rows", "layer_norm", (rng.normal(3.0, 2.0, (n, d)),)),
        Call("layer_norm/constant", "layer_norm", (flat,)),
        Call("layer_norm/3d", "layer_norm", (rng.normal(-1.0, 3.0, shape3),)),
        Call(
            "residual_norm",
            "residual_norm",
            (rng.normal(0.0, 1.0, (n, d)), rng.normal(2.0, 1.5, (n, d))),
        ),
    ]


def normalised(r: Results, key: str, x: np.ndarray) -> Failure | None:
    """The one rule for LayerNorm (``judging.layer_norm_forms``): eps inside the square
    root or added to the standard deviation."""
    inside, *others = layer_norm_forms(x).values()
    return r.compare(key, inside, accepted=others)


def _norm_right(r: Results, key: str) -> Failure | None:
    call = r.call(key)
    if call.function == "residual_norm":
        x, out = call.args
        return normalised(r, key, x + out)
    got = r.value(key)
    failure = normalised(r, key, call.args[0])
    if failure is not None and key == "layer_norm/constant" and (bad := non_finite(got)):
        return Failure(
            f"The constant row gives {bad}: add eps, inside the square root or to the "
            "standard deviation",
            failure.expected,
            show(got),
            failure.input,
        )
    return failure


def _norm_checking(key: str) -> Check:
    return lambda r: _norm_right(r, key)


def _norm_variants(x: np.ndarray) -> dict[str, np.ndarray]:
    centred = x - x.mean(axis=0, keepdims=True)
    with np.errstate(all="ignore"):
        return {
            "variance_ddof_one": ddof_one_norm(x),
            "layer_norm_over_tokens": centred / np.sqrt(x.var(axis=0, keepdims=True) + 1e-5),
            "layer_norm_no_centering": x / np.sqrt(x.var(axis=-1, keepdims=True) + 1e-5),
        }


def _norm_diagnosing(key: str) -> Callable[[Results], str]:
    def diagnose(r: Results) -> str:
        call = r.call(key)
        got = r.get(key)
        if call.function == "layer_norm":
            x = np.asarray(call.args[0])
            if key == "layer_norm/constant" and non_finite(got):
                return "layer_norm_no_eps"
            return first_match(
                got, _norm_variants(x) if x.ndim == 2 else {"variance_ddof_one": ddof_one_norm(x)}
            )
        x, out = (np.asarray(a) for a in call.args)
        variants: dict[str, np.ndarray] = {
            "norm_before_residual": x + layer_norm_forms(out)["inside"],
            "residual_left_out": layer_norm_forms(out)["inside"],
        }
        variants.update(_norm_variants(x + out))
        return first_match(got, variants)

    return diagnose


def judge_norm(made: Sequence[Call], run: RunResult) -> Verdict:
    tests = [
        LabTest(
            name,
            _norm_checking(key),
            RESIDUAL_HINT if key == "residual_norm" else NORM_HINT,
            _norm_diagnosing(key),
        )
        for name, key in zip(NORM_TESTS, NORM_KEYS, strict=True)
    ]
    return judge(tests, made, run)


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

"""What the labs' judges compare with: the engine's answers for the labs' shapes, and the
same computations done a registered mistake's way.

The labs hold the block's weights per head, as the lesson's code does: ``W_Q``, ``W_K`` and
``W_V`` are ``(heads, d_model, d_k)`` and ``W_O`` is ``(heads * d_k, d_model)``. The engine
takes full-width matrices, ``(d_model, heads * d_k)``, head ``h`` owning columns
``h*d_k .. (h+1)*d_k - 1``: ``full_width`` turns one into the other.

Mask convention (the seeds' ``np.triu(..., k=1)``): True means blocked.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from exercises import engine
from exercises.checking.mistakes import MISTAKES
from exercises.kinds.recipes import attention_by_recipe
from labs.judging import layer_norm_forms

# The lesson's sizes: six tokens of width 8, two heads of width 4 (the labs draw their
# own around them, so that no size can be hard-coded).
N_TOKENS, D_MODEL, HEADS = 6, 8, 2
# Widths a learner may hard-code in a scale (sqrt(4), sqrt(64)...): a diagnosis tries them.
FIXED_WIDTHS = (4, 64, 8, 16, 2, 32)


def full_width(W: np.ndarray) -> np.ndarray:
    # (heads, d_model, d_k) -> (d_model, heads * d_k): the heads side by side
    heads, d_model, d_k = W.shape
    out: np.ndarray = np.moveaxis(W, 0, 1).reshape(d_model, heads * d_k)
    return out


def head_weights(
    rng: np.random.Generator,
    heads: int = HEADS,
    d_model: int = D_MODEL,
    std: float = 0.5,
    d_k: int | None = None,
) -> dict[str, np.ndarray]:
    """The lab's random weights: W_Q, W_K, W_V (heads, d_model, d_k) and W_O
    (heads * d_k, d_model); d_k is d_model / heads unless given."""
    d_k = d_model // heads if d_k is None else d_k
    W = {name: rng.normal(0.0, std, (heads, d_model, d_k)) for name in ("W_Q", "W_K", "W_V")}
    W["W_O"] = rng.normal(0.0, std, (heads * d_k, d_model))
    return W


def multi_head(
    X: np.ndarray, W: Mapping[str, np.ndarray], mask: np.ndarray | None = None
) -> np.ndarray:
    # (n, d_model), per-head weights -> (n, d_model): the engine's multi-head attention
    heads = W["W_Q"].shape[0]
    return engine.multi_head_attention(
        X,
        full_width(W["W_Q"]),
        full_width(W["W_K"]),
        full_width(W["W_V"]),
        W["W_O"],
        heads,
        mask=mask,
    )


def block(
    X: np.ndarray, W: Mapping[str, np.ndarray], causal: bool = False, residual: bool = True
) -> np.ndarray:
    # (n, d_model) -> (n, d_model): LayerNorm(X + MultiHead(X)), the lab's post-LN block
    # without its feed-forward half; residual=False leaves X out of the sum.
    mask = engine.causal_mask(len(X)) if causal else None
    mixed = multi_head(X, W, mask)
    return engine.layer_norm(X + mixed if residual else mixed)


def block_forms(
    X: np.ndarray, W: Mapping[str, np.ndarray], causal: bool = False, residual: bool = True
) -> list[np.ndarray]:
    # (n, d_model) -> [(n, d_model)]: the block under each accepted place of LayerNorm's eps
    mask = engine.causal_mask(len(X)) if causal else None
    mixed = multi_head(X, W, mask)
    return list(layer_norm_forms(X + mixed if residual else mixed).values())


def sines_then_cosines(n: int, d: int) -> np.ndarray:
    # -> (n, d): the lab's layout, all d/2 sines, then the cosines of the same angles
    pe = engine.sinusoidal_positions(n, d)
    return np.concatenate([pe[:, 0::2], pe[:, 1::2]], axis=1)


# --- the mistakes' ways -------------------------------------------------------------------

# A mistake's output, several candidates (any one matching names it), or None where the
# mistake cannot be made on these inputs.
Variants = dict[str, np.ndarray | list[np.ndarray] | None]

ATTENTION_MISTAKES = (
    "no_scale",
    "divided_by_d_k",
    "softmax_over_queries",
    "no_mask",
    "mask_after_softmax",
    "mask_as_zero_score",
    "scores_transposed",
    "weights_transposed_in_output",
)


def _softmax_open(z: np.ndarray) -> np.ndarray:
    # (n_q, n_k) -> (n_q, n_k): the engine's softmax, but a row with every key blocked (or
    # with a nan or +inf score) comes out nan instead of raising, as it does in a
    # learner's code, so a mistake made that way still matches.
    out = np.full(z.shape, np.nan)
    defined = np.isfinite(z.max(axis=-1))
    out[defined] = engine.softmax(z[defined])
    return out


def _attention_open(
    Q: np.ndarray, K: np.ndarray, V: np.ndarray, blocked: np.ndarray, divisor: float
) -> np.ndarray:
    # (n_q, d_k), (n_k, d_k), (n_k, d_v), (n_q, n_k) bool -> (n_q, d_v), any divisor
    s = Q @ K.T / divisor
    return _softmax_open(np.where(blocked, -np.inf, s)) @ V


def attention_variants(
    Q: np.ndarray, K: np.ndarray, V: np.ndarray, mask: np.ndarray | None
) -> Variants:
    """One head's output the way each registered mistake computes it (None where the
    mistake cannot be made on these inputs), then the labs' own: the mask inverted, the
    scale by sqrt(d_v), a hard-coded width, a causal mask where none was asked."""
    n_q, n_k, d_k, d_v = len(Q), len(K), Q.shape[1], V.shape[1]
    blocked = np.zeros((n_q, n_k), dtype=bool) if mask is None else mask
    out: Variants = {}
    for code in ATTENTION_MISTAKES:
        done = attention_by_recipe(Q, K, V, blocked, True, MISTAKES[code].recipe)
        out[code] = None if done is None else done["output"]
    if blocked.any():
        s = Q @ K.T / np.sqrt(d_k)
        out["mask_inverted"] = _softmax_open(np.where(blocked, s, -np.inf)) @ V
    if d_v != d_k:
        out["scale_by_d_v"] = _attention_open(Q, K, V, blocked, np.sqrt(d_v))
    out["scale_fixed"] = [
        _attention_open(Q, K, V, blocked, np.sqrt(w)) for w in FIXED_WIDTHS if w != d_k
    ]
    if mask is None and n_q == n_k:
        out["mask_when_off"] = _attention_open(Q, K, V, engine.causal_mask(n_q), np.sqrt(d_k))
    return out


def multi_head_variants(
    X: np.ndarray, W: Mapping[str, np.ndarray], mask: np.ndarray | None = None
) -> Variants:
    """Multi-head attention the way each registered mistake computes it, for any widths
    (d_k need not be d_model / h): each head by hand, then the heads joined."""
    n, d_model = X.shape
    d_k = W["W_Q"].shape[2]
    blocked = np.zeros((n, n), dtype=bool) if mask is None else mask

    def heads(**how: Any) -> np.ndarray:
        return _heads_combined(X, W, blocked, **how)

    out: Variants = {
        "no_scale": heads(divisor=1.0),
        "scale_by_d_model": heads(divisor=np.sqrt(d_model)) if d_model != d_k else None,
        "softmax_over_queries": heads(
            head=lambda q, k, v, b, d: _softmax_open(np.where(b, -np.inf, q @ k.T / d).T).T @ v
        ),
        "heads_concatenated_in_reverse": heads(reverse=True) if W["W_Q"].shape[0] > 1 else None,
        "w_o_left_out": heads(w_o=False),
        "heads_reshaped_without_transpose": heads(transpose=False),
        "scale_fixed": [heads(divisor=np.sqrt(w)) for w in FIXED_WIDTHS if w != d_k],
    }
    if mask is not None:
        out["no_mask"] = _heads_combined(X, W, np.zeros_like(blocked))
        out["mask_after_softmax"] = heads(
            head=lambda q, k, v, b, d: np.where(b, 0.0, _softmax_open(q @ k.T / d)) @ v
        )
        out["mask_as_zero_score"] = heads(
            head=lambda q, k, v, b, d: _softmax_open(np.where(b, 0.0, q @ k.T / d)) @ v
        )
        out["causal_mask_transposed"] = _heads_combined(X, W, blocked.T)
        out["mask_inverted"] = _heads_combined(X, W, ~blocked)
    else:
        out["mask_when_off"] = _heads_combined(X, W, engine.causal_mask(n))
    return out


def _heads_combined(
    X: np.ndarray,
    W: Mapping[str, np.ndarray],
    blocked: np.ndarray,
    *,
    transpose: bool = True,
    divisor: float | None = None,
    reverse: bool = False,
    w_o: bool = True,
    head: Any = None,
) -> np.ndarray:
    # (n, d_model) -> (n, d_model): each head by hand (``head(q, k, v, blocked, divisor)``,
    # the right attention by default), then the heads joined to (n, h*d_k) with the head
    # axis moved next to the features, or (transpose=False) reshaped as they lie
    Q, K, V = (np.einsum("nd,hdk->hnk", X, W[name]) for name in ("W_Q", "W_K", "W_V"))
    scale = np.sqrt(Q.shape[-1]) if divisor is None else divisor
    one = head or _attention_open
    with np.errstate(all="ignore"):
        outs = [one(q, k, v, blocked, scale) for q, k, v in zip(Q, K, V, strict=True)]
    stacked = np.stack(outs[::-1] if reverse else outs)  # (h, n, d_k)
    n = X.shape[0]
    joined = stacked.transpose(1, 0, 2).reshape(n, -1) if transpose else stacked.reshape(n, -1)
    if not w_o:
        return joined
    out: np.ndarray = joined @ W["W_O"]
    return out


def block_variants(X: np.ndarray, W: Mapping[str, np.ndarray], causal: bool = False) -> Variants:
    """The block the way each mistake computes it: the attention's mistakes under the
    residual and LayerNorm, then the residual left out or added after the norm."""
    mask = engine.causal_mask(len(X)) if causal else None
    out: Variants = {}
    for code, found in multi_head_variants(X, W, mask).items():
        candidates: list[np.ndarray | None] = [*found] if isinstance(found, list) else []
        if not isinstance(found, list):
            candidates.append(found)
        # a variant of another width (W_O left out) cannot be added to X: no block has it
        out[code] = [
            engine.layer_norm(X + each)
            for each in candidates
            if each is not None and each.shape == X.shape
        ]
    mixed = multi_head(X, W, mask)
    out["residual_left_out"] = engine.layer_norm(mixed)
    out["norm_before_residual"] = X + engine.layer_norm(mixed)
    out["variance_ddof_one"] = ddof_one_norm(X + mixed)
    return out


def ddof_one_norm(x: np.ndarray, eps: float = 1e-5) -> np.ndarray:
    # (..., d) -> (..., d): LayerNorm with the sample variance (ddof=1), a mistake
    x = np.asarray(x, dtype=np.float64)
    out: np.ndarray = (x - x.mean(-1, keepdims=True)) / np.sqrt(
        x.var(-1, ddof=1, keepdims=True) + eps
    )
    return out

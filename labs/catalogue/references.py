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
from exercises.kinds import get_kind
from exercises.kinds.recipes import attention_by_recipe

# The lab's sizes: six tokens of width 8, two heads of width 4.
N_TOKENS, D_MODEL, HEADS = 6, 8, 2


def full_width(W: np.ndarray) -> np.ndarray:
    # (heads, d_model, d_k) -> (d_model, heads * d_k): the heads side by side
    heads, d_model, d_k = W.shape
    out: np.ndarray = np.moveaxis(W, 0, 1).reshape(d_model, heads * d_k)
    return out


def head_weights(
    rng: np.random.Generator, heads: int = HEADS, d_model: int = D_MODEL, std: float = 0.5
) -> dict[str, np.ndarray]:
    """The lab's random weights: W_Q, W_K, W_V (heads, d_model, d_k) and W_O."""
    d_k = d_model // heads
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


def sines_then_cosines(n: int, d: int) -> np.ndarray:
    # -> (n, d): the lab's layout, all d/2 sines, then the cosines of the same angles
    pe = engine.sinusoidal_positions(n, d)
    return np.concatenate([pe[:, 0::2], pe[:, 1::2]], axis=1)


# --- the mistakes' ways -------------------------------------------------------------------

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
MULTI_HEAD_MISTAKES = (
    "no_scale",
    "scale_by_d_model",
    "softmax_over_queries",
    "heads_concatenated_in_reverse",
    "w_o_left_out",
)


def _softmax_open(z: np.ndarray) -> np.ndarray:
    # (n_q, n_k) -> (n_q, n_k): the stable softmax as plain code runs it, so a row with
    # every key blocked comes out nan, as it does in a learner's code.
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        e = np.exp(z - z.max(axis=-1, keepdims=True))
        out: np.ndarray = e / e.sum(axis=-1, keepdims=True)
    return out


def attention_variants(
    Q: np.ndarray, K: np.ndarray, V: np.ndarray, mask: np.ndarray | None
) -> dict[str, np.ndarray | None]:
    """One head's output the way each registered mistake computes it (None where the
    mistake cannot be made on these inputs), then the mask inverted."""
    blocked = np.zeros((len(Q), len(K)), dtype=bool) if mask is None else mask
    out: dict[str, np.ndarray | None] = {}
    for code in ATTENTION_MISTAKES:
        done = attention_by_recipe(Q, K, V, blocked, True, MISTAKES[code].recipe)
        out[code] = None if done is None else done["output"]
    if blocked.any():
        s = Q @ K.T / np.sqrt(Q.shape[1])
        out["mask_inverted"] = _softmax_open(np.where(blocked, s, -np.inf)) @ V
    return out


def multi_head_variants(
    X: np.ndarray, W: Mapping[str, np.ndarray], mask: np.ndarray | None = None
) -> dict[str, np.ndarray | None]:
    """Multi-head attention the way each registered mistake computes it."""
    heads = W["W_Q"].shape[0]
    inputs: dict[str, Any] = {
        "X": X,
        "W_Q": full_width(W["W_Q"]),
        "W_K": full_width(W["W_K"]),
        "W_V": full_width(W["W_V"]),
        "W_O": W["W_O"],
        "mask": np.zeros((len(X), len(X)), dtype=bool) if mask is None else mask,
        "heads": heads,
        "scale": True,
    }
    kind = get_kind("multi_head")
    out: dict[str, np.ndarray | None] = {}
    codes = MULTI_HEAD_MISTAKES + (
        ("no_mask", "mask_after_softmax", "causal_mask_transposed") if mask is not None else ()
    )
    for code in codes:
        done = kind.answers_under(inputs, MISTAKES[code].recipe)
        out[code] = None if done is None else done["output"]
    return out


def block_variants(
    X: np.ndarray, W: Mapping[str, np.ndarray], causal: bool = False
) -> dict[str, np.ndarray | None]:
    """The block the way each mistake computes it: the attention's mistakes under the
    residual and LayerNorm, then the residual left out or added after the norm."""
    mask = engine.causal_mask(len(X)) if causal else None
    out: dict[str, np.ndarray | None] = {
        code: None if mixed is None else engine.layer_norm(X + mixed)
        for code, mixed in multi_head_variants(X, W, mask).items()
    }
    mixed = multi_head(X, W, mask)
    out["residual_left_out"] = engine.layer_norm(mixed)
    out["norm_before_residual"] = X + engine.layer_norm(mixed)
    return out

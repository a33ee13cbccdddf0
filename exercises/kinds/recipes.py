"""The attention recipes: one head computed the right way or a mistake's way, exactly or
by hand.

A recipe (``Mistake.recipe`` in ``exercises.checking``; ``{}`` is the right way) says how
the scores, the weights and the mix go wrong; ``attention_by_recipe`` chains them, and
``decimals`` writes every step down as hand work does. Beside them: the masks the kinds
draw, how far writing the scores and each e^s by hand moves the weights (with
``exercises.kinds.hand``), and why a variant would teach nothing (``weights_degenerate``,
``output_degenerate``, ``hand_fails``). Pure: no Django.

Mask convention (the seeds' ``np.triu(..., k=1)``): ``mask[i, j]`` True means query i
may not read key j; that score becomes minus infinity before the softmax.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from exercises import engine
from exercises.kinds.base import HALF_UNIT
from exercises.kinds.hand import (
    scaled_score_error,
    softmax_by_hand,
    softmax_by_hand_fails,
    softmax_hand_slack,
)


def causal(n: int) -> np.ndarray:
    """# n -> (n, n) bool: every key after the query's own position blocked."""
    return np.triu(np.ones((n, n), dtype=bool), k=1)


def trailing_padding(n_q: int, n_k: int, n_pad: int) -> np.ndarray:
    """# n_q, n_k, n_pad -> (n_q, n_k) bool: the last ``n_pad`` keys blocked for every query."""
    mask = np.zeros((n_q, n_k), dtype=bool)
    if n_pad:
        mask[:, n_k - n_pad :] = True
    return mask


def rounded(a: np.ndarray, decimals: int | None) -> np.ndarray:
    """``a`` written to ``decimals`` decimals, as hand work does; unchanged for None."""
    return a if decimals is None else np.round(a, decimals)


def scores_by_recipe(
    Q: np.ndarray,
    K: np.ndarray,
    scale: bool,
    recipe: Mapping[str, Any],
    d_model: int | None = None,
    decimals: int | None = None,
) -> np.ndarray | None:
    """# (n_q, d_k), (n_k, d_k) -> (n_q, n_k): the scores before masking, as ``recipe`` says.

    Recipe keys: ``scores`` ("k_q": K Q^T, "q_k": Q K without transpose) and ``scale``
    ("none", "d_k": divided by d_k, "sqrt_d_model"). None when the mistake cannot be
    made with these shapes or would change nothing (no scale to forget, d_k = 1).
    ``decimals`` divides by the square root written to that many decimals, as hand work does.
    """
    how = _scale_how(scale, recipe, Q.shape[1], d_model)
    raw = None if how is None else _raw_scores(Q, K, recipe.get("scores"))
    if raw is None:
        return None
    scores: np.ndarray = raw / rounded(
        np.asarray(score_divisor(how, Q.shape[1], d_model)), decimals
    )
    return scores


def score_divisor(how: str | None, d_k: int, d_model: int | None = None) -> float:
    """What the recipe's scale divides Q K^T by."""
    if how == "sqrt_dk":
        return float(np.sqrt(d_k))
    if how == "d_k":
        return float(d_k)
    if how == "sqrt_d_model":
        return float(np.sqrt(d_model or d_k))
    return 1.0


def _scale_how(scale: bool, recipe: Mapping[str, Any], d_k: int, d_model: int | None) -> str | None:
    """How the recipe scales the scores, or None when its scale mistake cannot be made."""
    how = recipe.get("scale")
    if how is None:
        return "sqrt_dk" if scale else "none"
    if not scale:
        return None  # every scale mistake needs an exercise that scales
    if (how == "d_k" and d_k == 1) or (how == "sqrt_d_model" and (not d_model or d_model == d_k)):
        return None
    return str(how)


def _raw_scores(Q: np.ndarray, K: np.ndarray, order: object) -> np.ndarray | None:
    """# (n_q, d_k), (n_k, d_k) -> (n_q, n_k): Q K^T, or the recipe's wrong order of it."""
    n_q, d_k = Q.shape
    n_k = K.shape[0]
    raw: np.ndarray
    if order == "k_q":
        if n_q != n_k:
            return None
        raw = K @ Q.T
    elif order == "q_k":
        if n_k != d_k:
            return None
        raw = Q @ K
    else:
        raw = Q @ K.T
    return raw


def score_error(
    scores: np.ndarray,
    scale: bool,
    recipe: Mapping[str, Any],
    d_k: int,
    d_model: int | None = None,
    *,
    whole: bool = True,
) -> np.ndarray:
    """How far a score written by hand (the square root and the quotient written to three
    decimals) can be off; 0 for dot products of whole numbers left unscaled (``whole``)."""
    how = _scale_how(scale, recipe, d_k, d_model)
    if how in ("sqrt_dk", "sqrt_d_model"):
        return scaled_score_error(scores, score_divisor(how, d_k, d_model))
    return np.full(np.shape(scores), 0.0 if whole and how != "d_k" else HALF_UNIT)


def _blocked_padding(mask: np.ndarray) -> np.ndarray:
    """The positions every query blocks as keys: the padded tokens."""
    return np.asarray(mask.all(axis=0))


def _recipe_logits(
    scores: np.ndarray, mask: np.ndarray, recipe: Mapping[str, Any]
) -> tuple[np.ndarray, np.ndarray] | None:
    """What the recipe's softmax reads (minus infinity where it blocks) and which cells it
    zeroes afterwards; None when the recipe's mask mistake cannot be made here.

    Mask recipes: "ignored", "zero_after" (blocked weights zeroed after the softmax),
    "zero_score" (blocked scores set to 0), "transposed" (the mask's transpose: a causal
    mask then blocks the past) and "queries" (the padded positions blocked as queries: their
    rows zero, the real rows read every key) and "padded_rows" (the padded keys blocked
    rightly, and the padded positions' own rows zeroed as well).
    """
    mode = recipe.get("mask", "before")
    zero = np.zeros(mask.shape, dtype=bool)
    if mode != "before" and not mask.any():
        return None
    if mode == "before":
        return np.where(mask, -np.inf, scores), zero
    if mode == "zero_score":
        return np.where(mask, 0.0, scores), zero
    if mode == "zero_after":
        return scores, mask
    if mode == "transposed":
        return _transposed_logits(scores, mask)
    if mode in ("queries", "padded_rows"):
        return _padded_rows_logits(scores, mask, mode)
    return scores, zero  # "ignored"


def _transposed_logits(
    scores: np.ndarray, mask: np.ndarray
) -> tuple[np.ndarray, np.ndarray] | None:
    # The mask's transpose, where it differs from the mask and leaves every query a key.
    if mask.shape[0] != mask.shape[1] or (mask == mask.T).all() or mask.T.all(axis=1).any():
        return None
    return np.where(mask.T, -np.inf, scores), np.zeros(mask.shape, dtype=bool)


def _padded_rows_logits(
    scores: np.ndarray, mask: np.ndarray, mode: str
) -> tuple[np.ndarray, np.ndarray] | None:
    # The padded positions' rows zeroed, their keys read ("queries") or blocked rightly
    # ("padded_rows"); None without padding to see.
    padded = _blocked_padding(mask)
    if not padded.any() or mask.shape[0] != mask.shape[1]:
        return None
    rows = np.broadcast_to(padded[:, None], mask.shape)
    return (scores if mode == "queries" else np.where(mask, -np.inf, scores)), rows


@np.errstate(over="ignore", under="ignore", invalid="ignore")
def weights_by_recipe(
    scores: np.ndarray,
    mask: np.ndarray,
    recipe: Mapping[str, Any],
    decimals: int | None = None,
) -> np.ndarray | None:
    """# (n_q, n_k) scores, (n_q, n_k) bool -> (n_q, n_k) weights, as ``recipe`` says.

    Recipe keys: ``mask`` (see ``_recipe_logits``) and ``softmax_axis`` (0 = down each
    column; a column every query blocks then stays 0). None when the mistake cannot be
    made (no mask to forget). ``decimals`` does the softmax by hand (``softmax_by_hand``).
    """
    found = _recipe_logits(scores, mask, recipe)
    if found is None:
        return None
    z, zeroed = found
    down = recipe.get("softmax_axis", -1) == 0
    if down:
        z = z.T
    live = np.isfinite(z).any(axis=1)
    if not live.any():
        return None
    weights = np.zeros(z.shape)
    try:
        weights[live] = (
            engine.softmax(z[live]) if decimals is None else softmax_by_hand(z[live], decimals)
        )
    except ValueError:
        return None
    if not down and not live.all():
        return None  # a query with every key blocked: the recipe cannot be followed
    if down:
        weights = weights.T
    out: np.ndarray = np.where(zeroed, 0.0, weights)
    return out


def weights_slack(
    scores: np.ndarray,
    mask: np.ndarray,
    recipe: Mapping[str, Any],
    error: float | np.ndarray = 0.0,
) -> float | np.ndarray:
    """# (n_q, n_k) -> (n_q, n_k): how far ``weights_by_recipe`` done by hand can land from
    the exact weights (``softmax_hand_slack``); ``error`` bounds each written score's error."""
    found = _recipe_logits(scores, mask, recipe)
    if found is None:
        return 0.0
    z, zeroed = found
    sigma = np.broadcast_to(np.asarray(error, dtype=float), z.shape)
    if recipe.get("softmax_axis", -1) == 0:
        slack = softmax_hand_slack(z.T, None, sigma.T).T
    else:
        slack = softmax_hand_slack(z, None, sigma)
    return np.where(zeroed, 0.0, slack)


def hand_fails(scores: np.ndarray, mask: np.ndarray, error: float | np.ndarray = 0.0) -> str | None:
    """Why the lesson's softmax by hand cannot be done on these scores, or None."""
    if softmax_by_hand_fails(np.where(mask, -np.inf, scores), None, error):
        return "the exponentials of a row all but vanish at three decimals"
    return None


def mix_by_recipe(
    weights: np.ndarray, V: np.ndarray, recipe: Mapping[str, Any]
) -> np.ndarray | None:
    """# (n_q, n_k), (n_k, d_v) -> (n_q, d_v); ``mix`` "a_t_v" is A^T V (square A only)."""
    if recipe.get("mix") == "a_t_v":
        if weights.shape[0] != weights.shape[1]:
            return None
        mixed: np.ndarray = weights.T @ V
    else:
        mixed = weights @ V
    return mixed


def attention_by_recipe(
    Q: np.ndarray,
    K: np.ndarray,
    V: np.ndarray,
    mask: np.ndarray,
    scale: bool,
    recipe: Mapping[str, Any],
    d_model: int | None = None,
    decimals: int | None = None,
) -> dict[str, np.ndarray] | None:
    """One head computed the way ``recipe`` says; the empty recipe is the right way.

    # (n, d_k), (n, d_k), (n, d_v), (n, n) bool -> scores (n, n), weights (n, n), output (n, d_v)
    ``decimals`` does it by hand: the square root, the scores, each e^s, the weights and
    the output written to that many decimals. Returns None when the mistake cannot be
    made with these inputs.
    """
    scores = scores_by_recipe(Q, K, scale, recipe, d_model, decimals)
    if scores is None:
        return None
    scores = rounded(scores, decimals)
    weights = weights_by_recipe(scores, mask, recipe, decimals)
    if weights is None:
        return None
    weights = rounded(weights, decimals)
    output = mix_by_recipe(weights, V, recipe)
    if output is None:
        return None
    return {"scores": scores, "weights": weights, "output": rounded(output, decimals)}


def weights_degenerate(weights: np.ndarray, mask: np.ndarray) -> str | None:
    """Every row that may read two or more keys spreads its weight evenly: nothing to compute."""
    open_ = ~np.asarray(mask, dtype=bool)
    rows = open_.sum(axis=1) >= 2
    if not rows.any():
        return "no query can read more than one key"
    w, o = np.asarray(weights)[rows], open_[rows]
    even = np.where(o, 1.0 / o.sum(axis=1, keepdims=True), 0.0)
    if np.abs(w - even).max() < 1e-9:
        return "every row of the weights is uniform"
    return None


def output_degenerate(output: np.ndarray, atol: float) -> str | None:
    if np.abs(np.asarray(output, dtype=float)).max() <= atol:
        return "the output is all zeros"
    return None

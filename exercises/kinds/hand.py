"""Hand work: the numbers a learner writes down, and how far writing them moves a result.

Pure: no Django. Every step is written to ``STEP_DECIMALS`` decimals (off by at most
``HALF_UNIT``) unless the prompt names significant figures.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from exercises import engine
from exercises.kinds.base import HALF_UNIT, STEP_DECIMALS


def _rows_open(z: np.ndarray, mask: Any) -> np.ndarray:
    blocked = np.zeros(z.shape, dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    return np.asarray(~blocked & np.isfinite(z))


@np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore")
def softmax_by_hand(z: Any, decimals: int = STEP_DECIMALS) -> np.ndarray:
    """# (n_q, n_k) scores, minus infinity where blocked -> (n_q, n_k) weights, unrounded.

    The hand-rounding model, not a second softmax: the numbers a learner writes down
    (``engine.softmax`` is the softmax). The lesson's worked example: each e^s written to
    ``decimals`` decimals, no max shift, then each divided by the row's sum. A row whose exponentials all round to 0 (or
    overflow) has nothing to divide by that way; there hand work subtracts the row's
    largest score first. ValueError for a row with every key blocked, as ``engine.softmax``.
    """
    # Not engine.softmax on purpose: each exponential is rounded before the sum, as a
    # learner writes it, so the weights are the engine's only to within
    # softmax_hand_slack (tests/exercises/test_engine_hand.py holds them there).
    z = np.asarray(z, dtype=float)
    top = z.max(axis=-1, keepdims=True)
    if not np.isfinite(top).all():
        raise ValueError("a row has every key blocked")
    e = np.round(np.exp(z), decimals)
    total = e.sum(axis=-1, keepdims=True)
    shifted = np.round(engine.shifted_exp(z, top), decimals)
    redo = ~np.isfinite(total) | (total <= 0)
    e = np.where(redo, shifted, e)
    weights: np.ndarray = e / e.sum(axis=-1, keepdims=True)
    return weights


@np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore")
def _hand_bound(z: np.ndarray, open_: np.ndarray, shift: np.ndarray, sigma: np.ndarray) -> Any:
    """Per cell: the most the weights move when each open e^(s - shift) is written with
    an error of HALF_UNIT plus what an error ``sigma`` in its score makes; inf where
    the written exponentials could sum to nothing."""
    e = np.where(open_, np.exp(np.where(open_, z, 0.0) - shift), 0.0)
    eps = np.where(open_, HALF_UNIT + e * np.expm1(sigma), 0.0)
    total, slack = e.sum(axis=-1, keepdims=True), eps.sum(axis=-1, keepdims=True)
    w = e / total
    # w_j = e_j / S; with every e_k off by at most eps_k the weight moves by at most
    # (eps_j (1 - w_j) + w_j sum_{k != j} eps_k) / (S - sum_k eps_k).
    bound = (eps * (1 - w) + w * (slack - eps)) / (total - slack)
    return np.where(np.isfinite(bound) & (total > slack), bound, np.inf)


def softmax_hand_slack(z: Any, mask: Any = None, score_error: Any = 0.0) -> np.ndarray:
    """# (n_q, n_k) scores, bool mask (True = blocked) -> (n_q, n_k): how far the softmax
    done by hand (``softmax_by_hand`` and its shifted form, each e^s written to
    ``STEP_DECIMALS`` decimals) can land from the exact weights, before the weights
    themselves are rounded. ``score_error`` bounds how far each written score is off.

    A row that may read one key or none has weight 1 or nothing: no slack.
    """
    z = np.asarray(z, dtype=float)
    open_ = _rows_open(z, mask)
    sigma = np.broadcast_to(np.asarray(score_error, dtype=float), z.shape)
    top = np.where(open_, z, -np.inf).max(axis=-1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    plain = _hand_bound(z, open_, np.zeros_like(top), sigma)
    shifted = _hand_bound(z, open_, top, sigma)
    # Either way is hand work; without a shift only where it leaves something to divide by.
    slack = np.where(np.isfinite(plain), np.maximum(plain, shifted), shifted)
    several = open_.sum(axis=-1, keepdims=True) >= 2
    out: np.ndarray = np.where(open_ & several & np.isfinite(slack), slack, 0.0)
    return out


def softmax_by_hand_fails(z: Any, mask: Any = None, score_error: Any = 0.0) -> bool:
    """Does some row that reads two or more keys leave the lesson's way (each e^s to
    ``STEP_DECIMALS`` decimals, no shift) with exponentials that may round to nothing?"""
    z = np.asarray(z, dtype=float)
    open_ = _rows_open(z, mask)
    sigma = np.broadcast_to(np.asarray(score_error, dtype=float), z.shape)
    plain = _hand_bound(z, open_, np.zeros((*z.shape[:-1], 1)), sigma)
    several = open_.sum(axis=-1) >= 2
    return bool((~np.isfinite(plain).all(axis=-1) & several).any())


def scaled_score_error(scores: Any, root: float) -> np.ndarray:
    """How far a score written by hand can be off when it is a whole-number dot product
    divided by ``root`` written to ``STEP_DECIMALS`` decimals, the quotient written so too
    (0 where ``root`` is 1: the score is the dot product itself)."""
    s = np.abs(np.asarray(scores, dtype=float))
    if root == 1:
        return np.zeros_like(s)
    return np.asarray(HALF_UNIT + s * HALF_UNIT / (root - HALF_UNIT))


def round_figures(x: Any, figures: int) -> np.ndarray:
    """``x`` written to ``figures`` significant figures."""
    a = np.asarray(x, dtype=float)
    with np.errstate(divide="ignore"):
        exponent = np.floor(np.log10(np.abs(np.where(a == 0, 1.0, a))))
    scale = 10.0 ** (figures - 1 - exponent)
    out: np.ndarray = np.round(a * scale) / scale
    return out

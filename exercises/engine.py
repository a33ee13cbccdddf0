# One module on purpose: the pure engine, benchmarked and kept at 100% coverage as a unit.
"""Attention and the transformer block as pure NumPy functions.

No Django, no clock, no hidden randomness: a function that needs random numbers
takes an ``rng: np.random.Generator``. Every function writes its shapes down,
picoGPT style, as ``# inputs -> outputs``; ``...`` stands for any leading batch
or head axes, which broadcast the way ``np.matmul`` broadcasts them. Operands of any
real dtype (integers, float16, float32) are computed and returned in float64.

Mask convention, used by every function here: a mask is a boolean array that
broadcasts to the score shape ``(..., n_q, n_k)``; ``True`` means *blocked*:
that score becomes minus infinity before the softmax, so its weight is exactly 0
and the row still sums to 1. This is the seeds' ``np.triu(..., k=1)``
convention (and PyTorch ``MultiheadAttention``'s ``key_padding_mask``; it is the
opposite of PyTorch ``scaled_dot_product_attention``'s boolean ``attn_mask``).
A query row with every key blocked has no softmax; it raises ``AttentionError``
instead of returning NaN.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, overload

import numpy as np
import numpy.typing as npt

__all__ = [
    "AttentionError",
    "AttentionTrace",
    "BlockParams",
    "MultiHeadTrace",
    "attention_parameter_count",
    "causal_mask",
    "feed_forward",
    "gelu",
    "grouped_query_attention",
    "init_block_params",
    "layer_norm",
    "merge_heads",
    "multi_head_attention",
    "padding_mask",
    "project",
    "scaled_dot_product_attention",
    "shifted_exp",
    "sinusoidal_positions",
    "softmax",
    "split_heads",
    "transformer_block",
]

# Anything np.asarray accepts: nested lists, scalars, arrays of any dtype.
ArrayLike = npt.ArrayLike


class AttentionError(ValueError):
    """A query row has every key blocked, so its softmax is undefined.

    ``rows`` lists the offending rows: plain row numbers for a 2-D mask, index
    tuples ``(*batch, row)`` when the mask has leading axes.
    """

    def __init__(self, rows: list[int] | list[tuple[int, ...]]):
        self.rows = rows
        shown = ", ".join(str(r) for r in rows[:10]) + (" ..." if len(rows) > 10 else "")
        noun = "row" if len(rows) == 1 else "rows"
        super().__init__(
            f"every key is blocked for query {noun} {shown}; "
            "each query needs at least one open key (False in the mask)"
        )


# --- input checking -----------------------------------------------------------------


def _as_float_array(name: str, x: ArrayLike) -> np.ndarray:
    # The slow path of _operand: lists, integers, and everything that is not a number.
    try:
        arr = np.asarray(x)
    except ValueError as exc:  # NumPy 2 refuses ragged nested lists
        raise ValueError(f"{name} is ragged: every row needs the same number of entries") from exc
    kind = arr.dtype.kind
    if kind == "f":
        # Half precision overflows at 65504 and single at 3e38: compute in float64 always.
        return arr.astype(np.float64, copy=False)
    if kind in "iu":
        return arr.astype(np.float64)
    if kind == "b":
        raise ValueError(f"{name} holds booleans where numbers belong")
    if kind == "O":
        raise ValueError(f"{name} must hold only numbers in equal-length rows")
    raise ValueError(f"{name} must hold real numbers; got dtype {arr.dtype}")


def _operand(name: str, x: ArrayLike) -> np.ndarray:
    # (..., rows, cols) -> the same as a float64 ndarray; the common case costs two attribute reads.
    if type(x) is not np.ndarray or x.dtype != np.float64:
        x = _as_float_array(name, x)
    if x.ndim < 2:
        raise ValueError(f"{name} must be a matrix (..., rows, columns); got shape {x.shape}")
    if not x.size:
        raise ValueError(f"{name} is empty (shape {x.shape}); it needs at least one row and column")
    return x


def _weight(name: str, w: ArrayLike, rows: int, what: str) -> np.ndarray:
    # (rows, cols) weight matrix whose row count must match the width of its input.
    w = _operand(name, w)
    if w.ndim != 2:
        raise ValueError(f"{name} must be a 2-D matrix {what}; got shape {w.shape}")
    if w.shape[0] != rows:
        raise ValueError(
            f"{name} has {w.shape[0]} rows but its input has {rows} columns; {name} must be {what}"
        )
    return w


def _batch_shape(names: str, *shapes: tuple[int, ...]) -> tuple[int, ...]:
    try:
        return np.broadcast_shapes(*shapes)
    except ValueError:
        raise ValueError(
            f"the leading (batch or head) axes of {names} do not broadcast: "
            + ", ".join(str(s) for s in shapes)
        ) from None


def _blocking_mask(mask: ArrayLike, score_shape: tuple[int, ...]) -> np.ndarray:
    # mask broadcastable to (..., n_q, n_k) -> bool ndarray, unchanged shape.
    if type(mask) is not np.ndarray:
        try:
            mask = np.asarray(mask)
        except ValueError as exc:
            raise ValueError("mask is ragged: every row needs the same number of entries") from exc
    if mask.dtype != np.bool_:
        raise ValueError(
            f"mask must be boolean (True = blocked, False = open); got dtype {mask.dtype}"
        )
    if mask.shape != score_shape[-mask.ndim :] or mask.ndim > len(score_shape):
        try:
            fits = np.broadcast_shapes(mask.shape, score_shape) == score_shape
        except ValueError:
            fits = False
        if not fits:
            raise ValueError(
                f"mask has shape {mask.shape} but the scores have shape {score_shape}; "
                "the mask must broadcast to (..., n_q, n_k)"
            )
    return mask


def _scale_factor(scale: object, d_k: int) -> float | None:
    # None means "leave the scores alone".
    if scale is True:
        return 1.0 / math.sqrt(d_k)
    if scale is False or scale is None:
        return None
    if isinstance(scale, (int, float, np.floating, np.integer)) and not isinstance(
        scale, (bool, np.bool_)
    ):
        factor = float(scale)
        if math.isfinite(factor) and factor > 0:
            return factor
    raise ValueError(
        f"scale must be True (divide by sqrt(d_k)), False (no scaling) "
        f"or a positive finite multiplier; got {scale!r}"
    )


def _closed_rows(mask: np.ndarray, n_q: int, n_k: int) -> list[int] | list[tuple[int, ...]]:
    # mask broadcastable to (..., n_q, n_k) -> the query rows whose keys are all blocked,
    # as row numbers, or (*batch, row) tuples when the mask itself has batch axes.
    lead = mask.shape[:-2] if mask.ndim > 2 else ()
    closed = np.broadcast_to(mask, (*lead, n_q, n_k)).all(axis=-1)
    if closed.ndim == 1:
        return [int(i) for i in np.flatnonzero(closed)]
    return [tuple(int(i) for i in idx) for idx in np.argwhere(closed)]


def _check_rows(row_max: np.ndarray, mask: np.ndarray | None, n_k: int) -> None:
    # row_max (..., n_q, 1): called when some row maximum is not finite.
    if mask is not None:
        rows = _closed_rows(mask, row_max.shape[-2], n_k)
        if rows:
            raise AttentionError(rows)
    if not np.isfinite(row_max).all():
        raise ValueError(
            "the scores are not finite: Q or K holds NaN or infinity, or Q K^T overflows"
        )


def _check_output(out: np.ndarray) -> None:
    if not np.isfinite(out).all():
        raise ValueError("the output is not finite: V holds NaN or infinity, or A V overflows")


def _read_only(*arrays: np.ndarray) -> None:
    for a in arrays:
        a.flags.writeable = False


# --- softmax and masks --------------------------------------------------------------


def softmax(z: ArrayLike, axis: int = -1, *, top: np.ndarray | None = None) -> np.ndarray:
    # (..., n) -> (..., n), non-negative, sums to 1 along axis
    # top: the maximum along axis (keepdims), when the caller has it already and has checked
    # it is finite (attention's trace checks its rows first, to name the empty ones).
    z = np.asarray(z, dtype=np.float64)
    if top is None:
        top = z.max(axis=axis, keepdims=True)
    if not _all_finite(top) and not np.isfinite(top).all():
        raise ValueError(
            "softmax needs finite entries and at least one entry above minus infinity per row"
        )
    e = shifted_exp(z, top)
    e /= e.sum(axis=axis, keepdims=True)
    return e


def shifted_exp(z: np.ndarray, top: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    # (..., n), (..., 1) -> (..., n): exp(z - top), the softmax before its normalisation.
    # Subtracting the row maximum keeps exp() from overflowing; the softmax is unchanged.
    # out=z works in place: attention's fast path reuses its score buffer.
    e: np.ndarray = np.subtract(z, top, out=out)
    np.exp(e, out=e)
    return e


def causal_mask(n_q: int, n_k: int | None = None, offset: int = 0) -> np.ndarray:
    # -> bool (n_q, n_k), True above the diagonal: query i may not read key j > i + offset
    # offset = n_k - n_q lines the queries up with the last keys (a decoder continuing a prefix).
    n_k = n_q if n_k is None else n_k
    if n_q < 1 or n_k < 1:
        raise ValueError(f"causal_mask needs n_q >= 1 and n_k >= 1; got {n_q} and {n_k}")
    return np.triu(np.ones((n_q, n_k), dtype=bool), k=1 + offset)


def padding_mask(valid: ArrayLike, n_q: int | None = None) -> np.ndarray:
    # valid bool (..., n_k), True = a real token -> bool (..., n_q, n_k), True = padded key
    # Only keys are blocked: a padded query row still reads the real tokens, so no row is empty.
    valid = np.asarray(valid)
    if valid.dtype != np.bool_ or valid.ndim < 1:
        raise ValueError(
            f"valid must be a boolean vector (True = real token); got dtype {valid.dtype}, "
            f"shape {valid.shape}"
        )
    n_k = valid.shape[-1]
    if not valid.any(axis=-1).all():
        raise ValueError("valid marks no real token in some sequence; nothing could be attended")
    n_q = n_k if n_q is None else n_q
    blocked = ~valid[..., None, :]
    return np.broadcast_to(blocked, (*valid.shape[:-1], n_q, n_k)).copy()


# --- one head -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AttentionTrace:
    """Every intermediate of one attention call, as read-only arrays."""

    raw_scores: np.ndarray  # (..., n_q, n_k)  Q K^T
    scores: np.ndarray  # (..., n_q, n_k)  scaled, before masking
    masked_scores: np.ndarray  # (..., n_q, n_k)  blocked entries are -inf
    weights: np.ndarray  # (..., n_q, n_k)  row-wise softmax; rows sum to 1
    output: np.ndarray  # (..., n_q, d_v)  weights V


@overload
def scaled_dot_product_attention(
    Q: ArrayLike,
    K: ArrayLike,
    V: ArrayLike,
    mask: ArrayLike | None = ...,
    scale: bool | float = ...,
    return_intermediates: Literal[False] = ...,
) -> np.ndarray: ...
@overload
def scaled_dot_product_attention(
    Q: ArrayLike,
    K: ArrayLike,
    V: ArrayLike,
    mask: ArrayLike | None = ...,
    scale: bool | float = ...,
    *,
    return_intermediates: Literal[True],
) -> AttentionTrace: ...
@overload
def scaled_dot_product_attention(
    Q: ArrayLike,
    K: ArrayLike,
    V: ArrayLike,
    mask: ArrayLike | None = ...,
    scale: bool | float = ...,
    return_intermediates: bool = ...,
) -> np.ndarray | AttentionTrace: ...
def scaled_dot_product_attention(
    Q: ArrayLike,
    K: ArrayLike,
    V: ArrayLike,
    mask: ArrayLike | None = None,
    scale: bool | float = True,
    return_intermediates: bool = False,
) -> np.ndarray | AttentionTrace:
    # (..., n_q, d_k), (..., n_k, d_k), (..., n_k, d_v) -> (..., n_q, d_v)
    # mask: bool broadcastable to (..., n_q, n_k), True = blocked.
    # scale: True divides the scores by sqrt(d_k), False leaves them, a number multiplies them.
    # softmax(scores) V in the benchmarked fast path (benchmarks/bench_engine.py): one
    # (n_q, n_k) buffer holds the scores, then the exponentials, and the softmax's row
    # normalisation is applied to the (n_q, d_v) output instead of the (n_q, n_k) weights.
    Q, K, V, batch = _attention_operands(Q, K, V)
    d_k, n_k = Q.shape[-1], K.shape[-2]
    factor = 1.0 / math.sqrt(d_k) if scale is True else _scale_factor(scale, d_k)
    if mask is not None:
        mask = _blocking_mask(mask, (*batch, Q.shape[-2], n_k))
    if return_intermediates:
        return _attention_trace(Q, K, V, mask, scale, factor)
    s = _scores(Q, K, factor)
    e = _open_exp(s, mask, n_k)
    return _mix(e, V)


def _attention_operands(
    Q: ArrayLike, K: ArrayLike, V: ArrayLike
) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[int, ...]]:
    # Q, K, V as float64 ndarrays whose shapes fit, and their broadcast batch shape.
    # The common case (float64 matrices) costs a few attribute reads: at hand-sized n a
    # call costs as much as the arithmetic.
    if type(Q) is not np.ndarray or Q.dtype != np.float64 or Q.ndim < 2 or not Q.size:
        Q = _operand("Q", Q)
    if type(K) is not np.ndarray or K.dtype != np.float64 or K.ndim < 2 or not K.size:
        K = _operand("K", K)
    if type(V) is not np.ndarray or V.dtype != np.float64 or V.ndim < 2 or not V.size:
        V = _operand("V", V)
    d_k, n_k = Q.shape[-1], K.shape[-2]
    if K.shape[-1] != d_k:
        raise ValueError(f"K has {K.shape[-1]} columns but Q has {d_k}; Q and K need the same d_k")
    if V.shape[-2] != n_k:
        raise ValueError(
            f"V has {V.shape[-2]} rows but K has {n_k}; each key needs exactly one value row"
        )
    if Q.ndim > 2 or K.ndim > 2 or V.ndim > 2:
        return Q, K, V, _batch_shape("Q, K and V", Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    return Q, K, V, ()


def _scores(Q: np.ndarray, K: np.ndarray, factor: float | None) -> np.ndarray:
    # (..., n_q, d_k), (..., n_k, d_k) -> (..., n_q, n_k), a new buffer: factor Q K^T.
    if factor is not None:
        # Scaling the (n_q, d_k) queries is cheaper than scaling the (n_q, n_k) scores; the
        # two agree to rounding (exactly when sqrt(d_k) is a power of two).
        Q = Q * factor
    s: np.ndarray = np.matmul(Q, K.mT)
    return s


def _open_exp(s: np.ndarray, mask: np.ndarray | None, n_k: int) -> np.ndarray:
    # (..., n_q, n_k) scores, overwritten -> the softmax's shifted exponentials (unnormalised
    # weights): exp(score - row maximum over the open keys), exactly 0 where blocked.
    if mask is None:
        row_max = s.max(axis=-1, keepdims=True)
        if not _all_finite(row_max):
            _check_rows(row_max, None, n_k)
        return shifted_exp(s, row_max, out=s)
    np.copyto(s, -np.inf, where=mask)
    row_max = s.max(axis=-1, keepdims=True)  # over the open keys only
    if not _all_finite(row_max):
        _check_rows(row_max, mask, n_k)
    # exp() takes a slow path on -inf (about 3x at n = 2048): feed it zeros instead (the
    # row maximum less itself), then set the blocked weights to exactly 0.
    np.copyto(s, row_max, where=mask)
    shifted_exp(s, row_max, out=s)
    np.copyto(s, 0.0, where=mask)
    return s


def _mix(e: np.ndarray, V: np.ndarray) -> np.ndarray:
    # (..., n_q, n_k) unnormalised weights, (..., n_k, d_v) -> (..., n_q, d_v): the weights'
    # rows normalised to sum to 1, times V, normalising the smaller (n_q, d_v) product.
    out: np.ndarray = np.matmul(e, V)
    out /= e.sum(axis=-1, keepdims=True)
    if not _all_finite(out):
        # Unnormalised weights sum to as much as n_k, so values near the float limit can
        # overflow before the division: normalise the weights first and look again.
        e /= e.sum(axis=-1, keepdims=True)
        out = np.matmul(e, V)
        _check_output(out)
    return out


def _all_finite(a: np.ndarray) -> bool:
    # A NaN or infinity anywhere makes the sum non-finite. Below ~64 entries a Python sum
    # is several times cheaper than a NumPy reduction. An overflowing sum of finite values
    # only sends the caller to its exact check.
    return math.isfinite(sum(a.ravel().tolist()) if a.size <= 64 else a.sum())


def _attention_trace(
    Q: np.ndarray,
    K: np.ndarray,
    V: np.ndarray,
    mask: np.ndarray | None,
    scale: bool | float,
    factor: float | None,
) -> AttentionTrace:
    raw = np.matmul(Q, K.mT)
    if scale is True:
        scores = raw / math.sqrt(Q.shape[-1])  # the contract's definition, literally
    elif factor is not None:
        scores = raw * factor
    else:
        scores = raw.copy()
    masked = scores.copy() if mask is None else np.where(mask, -np.inf, scores)
    row_max = masked.max(axis=-1, keepdims=True)
    if not _all_finite(row_max):
        _check_rows(row_max, mask, K.shape[-2])
    weights = softmax(masked, top=row_max)
    output = np.matmul(weights, V)
    if not _all_finite(output):
        _check_output(output)
    _read_only(raw, scores, masked, weights, output)
    return AttentionTrace(raw, scores, masked, weights, output)


def project(
    X: ArrayLike, W_Q: ArrayLike, W_K: ArrayLike, W_V: ArrayLike
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    # (..., n, d_model), (d_model, d_k), (d_model, d_k), (d_model, d_v)
    #   -> (..., n, d_k), (..., n, d_k), (..., n, d_v)
    X = _operand("X", X)
    d_model = X.shape[-1]
    W_Q = _weight("W_Q", W_Q, d_model, "(d_model, d_k)")
    W_K = _weight("W_K", W_K, d_model, "(d_model, d_k)")
    W_V = _weight("W_V", W_V, d_model, "(d_model, d_v)")
    if W_K.shape[1] != W_Q.shape[1]:
        raise ValueError(
            f"W_K has {W_K.shape[1]} columns but W_Q has {W_Q.shape[1]}; "
            "queries and keys need the same d_k"
        )
    return X @ W_Q, X @ W_K, X @ W_V


# --- several heads ------------------------------------------------------------------


def split_heads(x: np.ndarray, n_heads: int) -> np.ndarray:
    # (..., n, h * d) -> (..., h, n, d): head j owns columns j*d .. (j+1)*d - 1
    *lead, n, width = x.shape
    return np.moveaxis(x.reshape(*lead, n, n_heads, width // n_heads), -2, -3)


def merge_heads(x: np.ndarray) -> np.ndarray:
    # (..., h, n, d) -> (..., n, h * d): the concatenation of the heads along the width
    *lead, h, n, d = x.shape
    return np.moveaxis(x, -3, -2).reshape(*lead, n, h * d)


@dataclass(frozen=True, slots=True)
class MultiHeadTrace:
    """Every intermediate of one multi-head (or grouped-query) attention call."""

    Q: np.ndarray  # (..., h, n, d_k)
    K: np.ndarray  # (..., g, n, d_k)  g = n_kv_heads (= h for multi-head)
    V: np.ndarray  # (..., g, n, d_v)
    scores: np.ndarray  # (..., h, n, n)  scaled, before masking
    weights: np.ndarray  # (..., h, n, n)
    head_outputs: np.ndarray  # (..., h, n, d_v)
    concat: np.ndarray  # (..., n, h * d_v)
    output: np.ndarray  # (..., n, d_out)  concat W_O


def _count(name: str, value: object, low: int = 1) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an integer; got {value!r}")
    if value < low:
        raise ValueError(f"{name} must be at least {low}; got {value}")
    return int(value)


def _heads_mask(mask: ArrayLike, batch: tuple[int, ...], n: int) -> np.ndarray:
    # mask broadcastable to (..., n, n) -> (..., 1, 1, n, n): the same mask for every head
    mask = _blocking_mask(mask, (*batch, n, n))
    rows = _closed_rows(mask, n, n)
    if rows:
        raise AttentionError(rows)
    if mask.ndim > 2:
        mask = mask.reshape((*mask.shape[:-2], 1, 1, *mask.shape[-2:]))
    return mask


@overload
def grouped_query_attention(
    X: ArrayLike,
    W_Q: ArrayLike,
    W_K: ArrayLike,
    W_V: ArrayLike,
    W_O: ArrayLike,
    n_heads: int,
    n_kv_heads: int,
    mask: ArrayLike | None = ...,
    scale: bool | float = ...,
    return_intermediates: Literal[False] = ...,
) -> np.ndarray: ...
@overload
def grouped_query_attention(
    X: ArrayLike,
    W_Q: ArrayLike,
    W_K: ArrayLike,
    W_V: ArrayLike,
    W_O: ArrayLike,
    n_heads: int,
    n_kv_heads: int,
    mask: ArrayLike | None = ...,
    scale: bool | float = ...,
    *,
    return_intermediates: Literal[True],
) -> MultiHeadTrace: ...
@overload
def grouped_query_attention(
    X: ArrayLike,
    W_Q: ArrayLike,
    W_K: ArrayLike,
    W_V: ArrayLike,
    W_O: ArrayLike,
    n_heads: int,
    n_kv_heads: int,
    mask: ArrayLike | None = ...,
    scale: bool | float = ...,
    return_intermediates: bool = ...,
) -> np.ndarray | MultiHeadTrace: ...
# Over 60 lines on purpose: a benchmarked fast path (benchmarks/bench_engine.py) that
# keeps the grouped heads in one batched matmul rather than a call per group.
def grouped_query_attention(
    X: ArrayLike,
    W_Q: ArrayLike,
    W_K: ArrayLike,
    W_V: ArrayLike,
    W_O: ArrayLike,
    n_heads: int,
    n_kv_heads: int,
    mask: ArrayLike | None = None,
    scale: bool | float = True,
    return_intermediates: bool = False,
) -> np.ndarray | MultiHeadTrace:
    # (..., n, d_model), (d_model, h*d_k), (d_model, g*d_k), (d_model, g*d_v), (h*d_v, d_out)
    #   -> (..., n, d_out)
    # g = n_kv_heads key/value heads; query heads j*h/g .. (j+1)*h/g - 1 share key/value head j.
    # g == h is multi-head attention, g == 1 multi-query attention.
    h = _count("n_heads", n_heads)
    g = _count("n_kv_heads", n_kv_heads)
    if h % g:
        raise ValueError(f"n_heads ({h}) must be a multiple of n_kv_heads ({g})")
    X = _operand("X", X)
    d_model = X.shape[-1]
    W_Q = _weight("W_Q", W_Q, d_model, "(d_model, n_heads * d_k)")
    if W_Q.shape[1] % h:
        raise ValueError(
            f"W_Q has {W_Q.shape[1]} columns, which do not split into {h} heads of equal width"
        )
    d_k = W_Q.shape[1] // h
    W_K = _weight("W_K", W_K, d_model, "(d_model, n_kv_heads * d_k)")
    if W_K.shape[1] != g * d_k:
        raise ValueError(
            f"W_K has {W_K.shape[1]} columns but {g} key heads of d_k = {d_k} need {g * d_k}"
        )
    W_V = _weight("W_V", W_V, d_model, "(d_model, n_kv_heads * d_v)")
    if W_V.shape[1] % g:
        raise ValueError(f"W_V has {W_V.shape[1]} columns, which do not split into {g} value heads")
    d_v = W_V.shape[1] // g
    W_O = _weight("W_O", W_O, h * d_v, "(n_heads * d_v, d_out)")

    batch, n = X.shape[:-2], X.shape[-2]
    if mask is not None:
        mask = _heads_mask(mask, batch, n)
    r = h // g
    # One full-width projection each, then the width is cut into heads: no loop over heads.
    Q = split_heads(X @ W_Q, h)  # (..., h, n, d_k)
    K = split_heads(X @ W_K, g)  # (..., g, n, d_k)
    V = split_heads(X @ W_V, g)  # (..., g, n, d_v)
    # Group axis first, then the r query heads of that group; K and V broadcast over r.
    Qg = Q.reshape(*batch, g, r, n, d_k)
    Kg = K[..., :, None, :, :]
    Vg = V[..., :, None, :, :]
    if not return_intermediates:
        attended_out = scaled_dot_product_attention(Qg, Kg, Vg, mask=mask, scale=scale)
        concat = merge_heads(attended_out.reshape(*batch, h, n, d_v))
        out: np.ndarray = concat @ W_O
        return out
    attended = scaled_dot_product_attention(
        Qg, Kg, Vg, mask=mask, scale=scale, return_intermediates=True
    )
    heads = attended.output.reshape(*batch, h, n, d_v)
    concat = merge_heads(heads)
    output = concat @ W_O
    scores = attended.scores.reshape(*batch, h, n, n)
    weights = attended.weights.reshape(*batch, h, n, n)
    _read_only(Q, K, V, concat, output)
    return MultiHeadTrace(Q, K, V, scores, weights, heads, concat, output)


@overload
def multi_head_attention(
    X: ArrayLike,
    W_Q: ArrayLike,
    W_K: ArrayLike,
    W_V: ArrayLike,
    W_O: ArrayLike,
    n_heads: int,
    mask: ArrayLike | None = ...,
    scale: bool | float = ...,
    return_intermediates: Literal[False] = ...,
) -> np.ndarray: ...
@overload
def multi_head_attention(
    X: ArrayLike,
    W_Q: ArrayLike,
    W_K: ArrayLike,
    W_V: ArrayLike,
    W_O: ArrayLike,
    n_heads: int,
    mask: ArrayLike | None = ...,
    scale: bool | float = ...,
    *,
    return_intermediates: Literal[True],
) -> MultiHeadTrace: ...
@overload
def multi_head_attention(
    X: ArrayLike,
    W_Q: ArrayLike,
    W_K: ArrayLike,
    W_V: ArrayLike,
    W_O: ArrayLike,
    n_heads: int,
    mask: ArrayLike | None = ...,
    scale: bool | float = ...,
    return_intermediates: bool = ...,
) -> np.ndarray | MultiHeadTrace: ...
def multi_head_attention(
    X: ArrayLike,
    W_Q: ArrayLike,
    W_K: ArrayLike,
    W_V: ArrayLike,
    W_O: ArrayLike,
    n_heads: int,
    mask: ArrayLike | None = None,
    scale: bool | float = True,
    return_intermediates: bool = False,
) -> np.ndarray | MultiHeadTrace:
    # (..., n, d_model), (d_model, h*d_k), (d_model, h*d_k), (d_model, h*d_v), (h*d_v, d_out)
    #   -> (..., n, d_out); usually d_k = d_v = d_model / h and d_out = d_model
    return grouped_query_attention(
        X, W_Q, W_K, W_V, W_O, n_heads, n_heads, mask, scale, return_intermediates
    )


def attention_parameter_count(d_model: int, n_heads: int, n_kv_heads: int | None = None) -> int:
    # Weights (no biases) of W_Q, W_K, W_V, W_O with d_k = d_model / n_heads:
    # 4 d_model^2 for any n_heads; grouped-query shrinks W_K and W_V to g / h of their width.
    d_model = _count("d_model", d_model)
    h = _count("n_heads", n_heads)
    g = h if n_kv_heads is None else _count("n_kv_heads", n_kv_heads)
    if d_model % h or h % g:
        raise ValueError("d_model must split into n_heads, and n_heads into n_kv_heads")
    d_k = d_model // h
    return 2 * d_model * d_model + 2 * d_model * g * d_k


# --- positions and the block --------------------------------------------------------


def sinusoidal_positions(n: int, d_model: int, base: float = 10000.0) -> np.ndarray:
    # -> (n, d_model), interleaved as in Vaswani et al. (2017):
    # PE[pos, 2i] = sin(pos / base^(2i/d_model)), PE[pos, 2i+1] = cos(pos / base^(2i/d_model))
    n = _count("n", n)
    d_model = _count("d_model", d_model)
    pos = np.arange(n, dtype=np.float64)[:, None]  # (n, 1)
    two_i = np.arange(d_model) // 2 * 2  # (d_model,): 0, 0, 2, 2, 4, 4, ...
    angle = pos / base ** (two_i / d_model)  # (n, d_model)
    pe = np.empty((n, d_model))
    pe[:, 0::2] = np.sin(angle[:, 0::2])
    pe[:, 1::2] = np.cos(angle[:, 1::2])
    return pe


def layer_norm(
    x: ArrayLike,
    gamma: ArrayLike | None = None,
    beta: ArrayLike | None = None,
    eps: float = 1e-5,
) -> np.ndarray:
    # (..., d), (d,), (d,) -> (..., d): each vector to mean 0 and variance 1, then gamma, beta
    x = np.asarray(x, dtype=np.float64)
    mean = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    y: np.ndarray = (x - mean) / np.sqrt(var + eps)
    if gamma is not None:
        y *= gamma
    if beta is not None:
        y += beta
    return y


_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_erf = np.frompyfunc(math.erf, 1, 1)


def gelu(x: ArrayLike, approximate: Literal["tanh", "erf"] = "tanh") -> np.ndarray:
    # (...) -> (...). "tanh" is the approximation GPT-2 and BERT use (within 1e-3 of exact);
    # "erf" is exact, x * Phi(x), via math.erf per element (slower; for checking).
    x = np.asarray(x, dtype=np.float64)
    if approximate == "tanh":
        return 0.5 * x * (1.0 + np.tanh(_SQRT_2_OVER_PI * (x + 0.044715 * x**3)))
    if approximate == "erf":
        return 0.5 * x * (1.0 + np.asarray(_erf(x / math.sqrt(2.0)), dtype=np.float64))
    raise ValueError(f'approximate must be "tanh" or "erf"; got {approximate!r}')


def feed_forward(
    x: np.ndarray, W1: np.ndarray, b1: np.ndarray, W2: np.ndarray, b2: np.ndarray
) -> np.ndarray:
    # (..., n, d_model), (d_model, d_ff), (d_ff,), (d_ff, d_model), (d_model,) -> (..., n, d_model)
    # The same two-layer MLP applied to every position.
    out: np.ndarray = gelu(x @ W1 + b1) @ W2 + b2
    return out


@dataclass(frozen=True, slots=True)
class BlockParams:
    """Weights of one transformer block. Heads are not a property of the weights:
    the same (d_model, d_model) matrices serve 1 head or 8."""

    W_Q: np.ndarray  # (d_model, h * d_k)
    W_K: np.ndarray  # (d_model, g * d_k)
    W_V: np.ndarray  # (d_model, g * d_v)
    W_O: np.ndarray  # (h * d_v, d_model)
    W1: np.ndarray  # (d_model, d_ff)
    b1: np.ndarray  # (d_ff,)
    W2: np.ndarray  # (d_ff, d_model)
    b2: np.ndarray  # (d_model,)
    ln1_gamma: np.ndarray  # (d_model,)
    ln1_beta: np.ndarray  # (d_model,)
    ln2_gamma: np.ndarray  # (d_model,)
    ln2_beta: np.ndarray  # (d_model,)

    @property
    def d_model(self) -> int:
        return int(self.W_Q.shape[0])

    @property
    def attention_parameter_count(self) -> int:
        return self.W_Q.size + self.W_K.size + self.W_V.size + self.W_O.size


def init_block_params(
    rng: np.random.Generator,
    d_model: int,
    d_ff: int,
    *,
    n_heads: int = 1,
    n_kv_heads: int | None = None,
    std: float | None = None,
) -> BlockParams:
    # Normal weights with standard deviation 1/sqrt(fan_in) unless std is given; zero
    # biases; LayerNorm gains 1 and shifts 0. n_heads matters only for grouped-query
    # widths: W_K and W_V get n_kv_heads * d_model / n_heads columns.
    d_model = _count("d_model", d_model)
    d_ff = _count("d_ff", d_ff)
    h = _count("n_heads", n_heads)
    g = h if n_kv_heads is None else _count("n_kv_heads", n_kv_heads)
    if d_model % h or h % g:
        raise ValueError("d_model must split into n_heads, and n_heads into n_kv_heads")
    kv_width = g * (d_model // h)

    def normal(fan_in: int, shape: tuple[int, int]) -> np.ndarray:
        return rng.normal(0.0, std if std is not None else 1.0 / math.sqrt(fan_in), shape)

    return BlockParams(
        W_Q=normal(d_model, (d_model, d_model)),
        W_K=normal(d_model, (d_model, kv_width)),
        W_V=normal(d_model, (d_model, kv_width)),
        W_O=normal(d_model, (d_model, d_model)),
        W1=normal(d_model, (d_model, d_ff)),
        b1=np.zeros(d_ff),
        W2=normal(d_ff, (d_ff, d_model)),
        b2=np.zeros(d_model),
        ln1_gamma=np.ones(d_model),
        ln1_beta=np.zeros(d_model),
        ln2_gamma=np.ones(d_model),
        ln2_beta=np.zeros(d_model),
    )


def transformer_block(
    X: ArrayLike,
    params: BlockParams,
    n_heads: int,
    mask: ArrayLike | None = None,
    norm: Literal["post", "pre"] = "post",
    n_kv_heads: int | None = None,
) -> np.ndarray:
    # (..., n, d_model) -> (..., n, d_model)
    # post-LN (Vaswani et al.): x = LN(x + Attn(x)); x = LN(x + FFN(x))
    # pre-LN (most current models): x = x + Attn(LN(x)); x = x + FFN(LN(x))
    X = _operand("X", X)
    if X.shape[-1] != params.d_model:
        raise ValueError(f"X has {X.shape[-1]} columns but the block's d_model is {params.d_model}")
    if norm not in ("post", "pre"):
        raise ValueError(f'norm must be "post" or "pre"; got {norm!r}')
    g = n_heads if n_kv_heads is None else n_kv_heads
    p = params

    def attend(x: np.ndarray) -> np.ndarray:
        return grouped_query_attention(x, p.W_Q, p.W_K, p.W_V, p.W_O, n_heads, g, mask=mask)

    def mlp(x: np.ndarray) -> np.ndarray:
        return feed_forward(x, p.W1, p.b1, p.W2, p.b2)

    if norm == "post":
        x = layer_norm(X + attend(X), p.ln1_gamma, p.ln1_beta)
        return layer_norm(x + mlp(x), p.ln2_gamma, p.ln2_beta)
    x = X + attend(layer_norm(X, p.ln1_gamma, p.ln1_beta))
    out: np.ndarray = x + mlp(layer_norm(x, p.ln2_gamma, p.ln2_beta))
    return out

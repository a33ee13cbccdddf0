"""The attention playground's computation: every intermediate of one head, shown as is.

Pure: no Django. The API and the playground page parse their input (JSON, a query
string), call ``attention_playground`` and render what it returns; a preset from
``exercises.presets`` goes through the same function (``preset_playground``).

# (n_q, d_k), (n_k, d_k), (n_k, d_v) -> scores (n_q, n_k), weights (n_q, n_k), output (n_q, d_v)
or X (n, d_model) with W_Q, W_K (d_model, d_k) and W_V (d_model, d_v) projected first.
Mask convention as in the engine: ``mask[i, j]`` True means query i may not read key j.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from exercises import engine
from exercises.presets import PRESETS

PLAYGROUND_MAX = 256  # rows and columns of any one matrix
PLAYGROUND_MAX_ABS = 1e6  # entries lie in [-PLAYGROUND_MAX_ABS, PLAYGROUND_MAX_ABS]
SHOWN = ("X", "W_Q", "W_K", "W_V", "Q", "K", "V", "scores", "weights", "output", "mask")

Matrix = np.ndarray
MaskSpec = Literal["none", "causal"] | np.ndarray


@dataclass
class PlaygroundError(Exception):
    """Inputs that do not make one head; ``errors`` are messages by field."""

    errors: dict[str, list[str]]

    def lines(self) -> list[str]:
        """The messages one per line, each led by its field (as the page lists them)."""
        return [
            msg if field == "non_field_errors" else f"{field}: {msg}"
            for field, msgs in self.errors.items()
            for msg in msgs
        ]


def _projection_errors(X: Matrix, W_Q: Matrix, W_K: Matrix, W_V: Matrix) -> dict[str, list[str]]:
    d_model = X.shape[1]
    errors = {
        name: [
            f"Expected {d_model} rows (one per column of X, d_model = {d_model}), got {w.shape[0]}."
        ]
        for name, w in (("W_Q", W_Q), ("W_K", W_K), ("W_V", W_V))
        if w.shape[0] != d_model
    }
    if not errors and W_Q.shape[1] != W_K.shape[1]:
        errors["W_K"] = [
            f"Expected {W_Q.shape[1]} columns like W_Q (queries and keys share d_k), "
            f"got {W_K.shape[1]}."
        ]
    return errors


def _direct_errors(Q: Matrix, K: Matrix, V: Matrix) -> dict[str, list[str]]:
    if K.shape[1] != Q.shape[1]:
        return {"K": [f"Expected {Q.shape[1]} columns like Q (d_k), got {K.shape[1]}."]}
    if V.shape[0] != K.shape[0]:
        return {"V": [f"Expected {K.shape[0]} rows, one value per key row of K, got {V.shape[0]}."]}
    return {}


def _blocked(mask: MaskSpec, n_q: int, n_k: int) -> np.ndarray:
    """# -> (n_q, n_k) bool: the mask named or given, checked against the scores' shape."""
    if isinstance(mask, str):
        if mask == "causal":
            return engine.causal_mask(n_q, n_k)
        return np.zeros((n_q, n_k), dtype=bool)
    if mask.shape != (n_q, n_k):
        raise PlaygroundError(
            {
                "mask": [
                    f"Expected a {n_q}\N{MULTIPLICATION SIGN}{n_k} boolean matrix "
                    f"(queries \N{MULTIPLICATION SIGN} keys), got "
                    f"{mask.shape[0]}\N{MULTIPLICATION SIGN}{mask.shape[1]}."
                ]
            }
        )
    return mask


def _head(
    Q: Matrix, K: Matrix, V: Matrix, blocked: np.ndarray, scale: bool
) -> engine.AttentionTrace:
    try:
        return engine.scaled_dot_product_attention(
            Q, K, V, mask=blocked if blocked.any() else None, scale=scale, return_intermediates=True
        )
    except engine.AttentionError as exc:
        rows = ", ".join(str(r) for r in exc.rows)
        raise PlaygroundError(
            {
                "mask": [
                    f"Every key is blocked for query row(s) {rows}; each row needs at least "
                    "one false entry."
                ]
            }
        ) from None
    except ValueError as exc:
        raise PlaygroundError({"non_field_errors": [str(exc)]}) from None


def _qkv(
    Q: Matrix | None,
    K: Matrix | None,
    V: Matrix | None,
    projection: tuple[Matrix, Matrix, Matrix, Matrix] | None,
) -> tuple[Matrix, Matrix, Matrix]:
    """Q, K and V as given, or projected from X; raises ``PlaygroundError`` on bad shapes."""
    if projection is not None:
        errors = _projection_errors(*projection)
        if errors:
            raise PlaygroundError(errors)
        return engine.project(*projection)
    if Q is None or K is None or V is None:
        raise PlaygroundError(
            {"non_field_errors": ["Give either Q, K and V, or X, W_Q, W_K and W_V."]}
        )
    errors = _direct_errors(Q, K, V)
    if errors:
        raise PlaygroundError(errors)
    return Q, K, V


# Overflow to infinity is caught by the engine's finiteness checks and answered as a
# 400; NumPy's RuntimeWarning on the way would only be log noise.
@np.errstate(over="ignore", invalid="ignore")
def attention_playground(
    *,
    Q: Matrix | None = None,
    K: Matrix | None = None,
    V: Matrix | None = None,
    X: Matrix | None = None,
    W_Q: Matrix | None = None,
    W_K: Matrix | None = None,
    W_V: Matrix | None = None,
    mask: MaskSpec = "none",
    scale: bool = True,
) -> dict[str, Any]:
    """Every intermediate of one head: ``{Q, K, V, scores, weights, output, mask, scale,
    shapes}``, with ``X`` and the ``W``'s when given; plain JSON.

    ``scores`` are before masking (minus infinity is not JSON); ``mask`` is echoed as a
    boolean matrix. Raises ``PlaygroundError`` with per-field messages.
    """
    projection = None
    if X is not None and W_Q is not None and W_K is not None and W_V is not None:
        projection = (X, W_Q, W_K, W_V)
    Q, K, V = _qkv(Q, K, V, projection)
    blocked = _blocked(mask, Q.shape[0], K.shape[0])
    trace = _head(Q, K, V, blocked, scale)
    out: dict[str, Any] = {}
    if projection is not None:
        out.update(zip(("X", "W_Q", "W_K", "W_V"), (m.tolist() for m in projection), strict=True))
    out.update(
        Q=np.asarray(Q).tolist(),
        K=np.asarray(K).tolist(),
        V=np.asarray(V).tolist(),
        scores=trace.scores.tolist(),
        weights=trace.weights.tolist(),
        output=trace.output.tolist(),
        mask=blocked.tolist(),
        scale=scale,
    )
    out["shapes"] = {name: list(np.shape(out[name])) for name in SHOWN if name in out}
    return out


def playground_cost(matrices: Mapping[str, Any], *, elements: int = 0) -> int:
    """What one request costs, in units of about a microsecond of CPU (measured on the
    largest: 0.5 s in all): ``elements`` of its body to parse (``studyapp.common.jsonscan``,
    a quarter each), every number its answer holds to write (half each: JSON writing is
    most of the cost) and the head's multiply-adds, n_q·n_k·(d_k + d_v) and the
    projection's n·d_model·(2·d_k + d_v) (a thousandth each).

    ``matrices`` are the parsed inputs (Q, K, V or X and the W's); shapes that do not
    fit together are priced as given (they are refused after, at no further cost).
    """
    shape = {name: np.shape(m) for name, m in matrices.items() if isinstance(m, np.ndarray)}

    def dim(name: str, axis: int) -> int:
        dims = shape.get(name, ())
        return int(dims[axis]) if len(dims) > axis else 0

    if "X" in shape:
        n_q = n_k = dim("X", 0)
        d_model, d_k, d_v = dim("X", 1), dim("W_Q", 1), dim("W_V", 1)
    else:
        n_q, n_k, d_model = dim("Q", 0), dim("K", 0), 0
        d_k, d_v = max(dim("Q", 1), dim("K", 1)), dim("V", 1)
    answered = n_q * d_k + n_k * d_k + n_k * d_v + 3 * n_q * n_k + n_q * d_v
    madds = n_q * n_k * (d_k + d_v)
    if d_model:
        answered += n_q * d_model + d_model * (2 * d_k + d_v)
        madds += n_q * d_model * (2 * d_k + d_v)
    return elements // 4 + answered // 2 + madds // 1000


def as_matrices(grids: Mapping[str, Sequence[Sequence[float]]]) -> dict[str, Matrix]:
    """Parsed grids of numbers as float matrices, by name."""
    return {name: np.asarray(grid, dtype=float) for name, grid in grids.items()}


def preset_playground(name: str) -> dict[str, Any]:
    """``attention_playground`` of preset ``name`` (a key of ``PRESETS``)."""
    preset = PRESETS[name]
    return attention_playground(
        **as_matrices(preset["matrices"]),
        mask="causal" if preset["causal"] else "none",
        scale=preset["scale"],
    )


def scores_caption(scale: bool) -> str:
    """The page's caption of the scores table."""
    if scale:
        return "Scores Q Kᵀ / √dₖ (before the mask)"
    return "Scores Q Kᵀ (unscaled, before the mask)"

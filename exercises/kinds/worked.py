"""Worked solutions and hints: what a learner reads after a wrong answer.

Pure: no Django. A worked solution is a list of steps in the order the work is done, each
``{name, title, shape, value, note, part}``: ``value`` is plain JSON of ``shape`` (a
blocked score, minus infinity, is ``null``), ``part`` the asked part the step is (or a row
of), or null for a step in between that is not asked. The attention steps come from the
engine's own trace (``engine.scaled_dot_product_attention(..., return_intermediates=True)``)
and its ``shifted_exp``, the step its softmax takes, so the numbers shown are the numbers
that were marked. ``mark_first_wrong`` marks the step where the learner's work first goes
wrong: the first step of the first wrong part whose row holds a wrong cell.

Every text here is plain text read as it is, with Unicode for the formulas (√dₖ, QKᵀ), as
the mistakes' texts are.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from exercises import engine
from exercises.cells import part_words

Step = dict[str, Any]

# The softmax of one row, as a hint says it: never a number of the exercise.
SOFTMAX_HOW = (
    "subtract the row's largest open score, take exp(s − max) of each entry (write each to "
    "three decimals), and divide each by the row's sum, so the row sums to 1"
)


def _plain(value: Any) -> Any:
    """Plain JSON: floats to 12 decimals, minus infinity (a blocked score) as null."""
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return value  # a choice, or a count that must stay exact
    arr = np.asarray(value)
    if arr.dtype == object:
        return arr.tolist()
    arr = np.asarray(value, dtype=float)
    rounded = np.round(arr, 12)
    if np.isfinite(rounded).all():
        return rounded.tolist()
    return [_plain(v) for v in rounded] if rounded.ndim else None  # -inf: a blocked score


def step(
    name: str,
    title: str,
    value: Any,
    note: str = "",
    *,
    part: str | None = None,
    row: int | None = None,
    **extra: Any,
) -> Step:
    """One step; ``row`` (0-based) says which row of ``part`` it is, for the marking."""
    out: Step = {
        "name": name,
        "title": title,
        "shape": list(np.shape(np.asarray(value, dtype=object))),
        "value": _plain(value),
        "note": note,
        "part": part,
        "row": row,
    }
    out.update({key: _plain(v) for key, v in extra.items()})
    return out


def num(x: float) -> str:
    """A number as a note writes it: three decimals, whole numbers as they are."""
    x = float(x)
    return str(int(x)) if x.is_integer() else f"{x:.3f}"


def nums(values: Sequence[float]) -> str:
    return "(" + ", ".join(num(v) for v in values) + ")"


def softmax_row_steps(
    masked: np.ndarray,
    weights: np.ndarray,
    *,
    part: str | None,
    prefix: str = "",
    label: str = "",
    row_title: str | None = None,
) -> list[Step]:
    """One step per row of the softmax: the row's largest open score subtracted (the
    engine's max shift), each ``shifted_exp``, their sum and the weights.

    # (n_q, n_k) masked scores (-inf = blocked), (n_q, n_k) weights -> n_q steps
    """
    steps = []
    for i in range(masked.shape[0]):
        top = masked[i].max(keepdims=True)
        exps = engine.shifted_exp(masked[i], top)
        total = float(exps.sum())
        open_ = np.isfinite(masked[i])
        note = (
            f"Largest open score {num(top[0])} subtracted; exp(s − {num(top[0])}) = "
            f"{nums(exps[open_])} over the open keys"
            + ("" if open_.all() else ", 0 for the blocked ones")
            + f"; their sum is {num(total)}; each divided by it gives the weights."
        )
        steps.append(
            step(
                f"{prefix}softmax_row_{i + 1}",
                label + (row_title or f"Softmax of row {i + 1} (query {i + 1})"),
                weights[i],
                note,
                part=part,
                row=i,
                shift=float(top[0]),
                exps=exps,
                sum=total,
            )
        )
    return steps


# Over 60 lines on purpose: one head's steps in the order they are worked, each with its words.
def attention_steps(
    trace: engine.AttentionTrace,
    mask: np.ndarray,
    scale: bool,
    d_k: int,
    *,
    parts: Mapping[str, str | None],
    prefix: str = "",
    label: str = "",
) -> list[Step]:
    """One head's steps from its trace: QKᵀ, scaled, masked, each softmax row, the weights
    and (when ``parts`` names it) the output. ``parts`` maps "scores", "weights" and
    "output" to the asked part each is, or None."""
    steps: list[Step] = []
    if scale:
        steps.append(
            step(
                f"{prefix}raw_scores",
                f"{label}Scores QKᵀ (row i: query i against every key j)",
                trace.raw_scores,
                "Each entry is the dot product of a query row with a key row.",
            )
        )
    scaled_note = (
        f"QKᵀ divided by √dₖ = √{d_k} = {num(np.sqrt(d_k))}, so the scores keep a variance "
        "near 1 whatever the width."
        if scale
        else "QKᵀ, left unscaled in this exercise: each query row dotted with each key row."
    )
    steps.append(
        step(
            f"{prefix}scores",
            f"{label}Scores S" + (" = QKᵀ/√dₖ" if scale else " = QKᵀ"),
            trace.scores,
            scaled_note,
            part=parts.get("scores"),
        )
    )
    if mask.any():
        steps.append(
            step(
                f"{prefix}masked",
                f"{label}Masked scores (blocked entries become −∞, shown empty)",
                trace.masked_scores,
                "A blocked key gets −∞ before the softmax, so its weight is exactly 0 and the "
                "row still sums to 1.",
            )
        )
    steps += softmax_row_steps(
        np.asarray(trace.masked_scores),
        np.asarray(trace.weights),
        part=parts.get("weights"),
        prefix=prefix,
        label=label,
    )
    steps.append(
        step(
            f"{prefix}weights",
            f"{label}Weights A (the rows above, one per query)",
            trace.weights,
            "Rows are queries, columns keys; every row sums to 1.",
            part=parts.get("weights"),
        )
    )
    if parts.get("output"):
        steps.append(
            step(
                f"{prefix}output",
                f"{label}Output AV",
                trace.output,
                "Row i mixes the value rows with row i of the weights.",
                part=parts["output"],
            )
        )
    return steps


def answer_steps(asks: Sequence[Mapping[str, Any]], solution: Mapping[str, Any]) -> list[Step]:
    """One step per asked part, its expected answer: the worked solution of a kind whose
    parts are the steps themselves."""
    return [
        step(a["name"], part_words(a["name"]), solution[a["name"]], part=a["name"])
        for a in asks
        if a["name"] in solution
    ]


def mark_first_wrong(
    steps: list[Step], first_wrong: str | None, wrong_cells: Sequence[Sequence[int]] = ()
) -> str | None:
    """Mark (``first_wrong: true``) the first step of part ``first_wrong`` that holds a
    wrong cell, every other step false; the marked step's name, or None."""
    rows = {cell[0] for cell in wrong_cells if len(cell)}
    marked = None
    for s in steps:
        hit = (
            marked is None
            and first_wrong is not None
            and s["part"] == first_wrong
            and (s["row"] is None or not rows or s["row"] in rows)
        )
        s["first_wrong"] = hit
        if hit:
            marked = s["name"]
    for s in steps:
        s.pop("row", None)
    return marked

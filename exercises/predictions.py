"""Predict first: questions with choices asked before the numbers, and what the numbers say.

Pure: no Django. A prediction is an ask with ``choices`` (a list of strings) and a
``question``; its answer is one of the choices. When an exercise's *first* ask has
choices, that answer is taken first, in a submission of its own that uses no attempt,
and the numeric parts open after it. The expected choice is read off the exercise's
own numbers (``what_the_numbers_say``), so a prediction is marked by the same engine
that marks the numbers.

Mask convention as everywhere: ``mask[i, j]`` True means query i may not read key j.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # the kinds import this module
    from exercises.kinds.base import Generated

PREDICTION_PART = "prediction"
# Weights closer than this count as equal: integer inputs give exact ties, and a
# learner predicting from the scores cannot tell 0.5001 from 0.4999 anyway.
TIE_TOL = 1e-9

TIE = "a tie between keys"
ONLY_ITSELF = "only itself"
EVERY_TOKEN = "every token equally"
LARGEST_SCORE = "the key with the largest score"
SHARPER = "sharper"
FLATTER = "flatter"
UNCHANGED = "unchanged"
UNIFORM = "uniform"
NOT_UNIFORM = "not uniform"


def prediction_ask(question: str, choices: Sequence[str], name: str = PREDICTION_PART) -> dict:
    """The ask ``{name, shape: [], choices, question}``."""
    return {"name": name, "shape": [], "choices": list(choices), "question": question}


def first_prediction(asks: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The exercise's prediction ask: its first ask, when that ask has choices."""
    if asks and asks[0].get("choices"):
        return asks[0]
    return None


def numeric_asks(asks: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The asks answered together after the prediction (every ask when there is none)."""
    return list(asks[1:]) if first_prediction(asks) else list(asks)


def key_labels(n: int) -> list[str]:
    return [f"key {j}" for j in range(n)]


# --- What the numbers say ---------------------------------------------------------------


def top_key(weights_row: Sequence[float], labels: Sequence[str]) -> str:
    """The label of the key with the most weight, or ``TIE`` when several share the top."""
    row = np.asarray(weights_row, dtype=float)
    top = np.flatnonzero(row >= row.max() - TIE_TOL)
    return labels[int(top[0])] if top.size == 1 else TIE


def is_uniform(weights_row: Sequence[float], open_keys: Sequence[bool]) -> str:
    """``UNIFORM`` when the row spreads its weight evenly over the keys it may read."""
    row = np.asarray(weights_row, dtype=float)[np.asarray(open_keys, dtype=bool)]
    return UNIFORM if np.ptp(row) <= TIE_TOL else NOT_UNIFORM


def first_token_reads(weights: Sequence[Sequence[float]] | np.ndarray) -> str:
    """What token 0 attends to: under the causal mask it can read only itself."""
    row = np.asarray(weights, dtype=float)[0]
    if row[0] >= 1 - TIE_TOL:
        return ONLY_ITSELF
    if np.ptp(row) <= TIE_TOL:
        return EVERY_TOKEN
    return LARGEST_SCORE


def scale_effect(scores: Sequence[float], d_k: int) -> str:
    """Removing 1/sqrt(d_k) multiplies the scores by sqrt(d_k): how does the row's softmax change?

    # (n,) raw scores -> "sharper" | "flatter" | "unchanged"
    Equal scores stay uniform, and at d_k = 1 the scale is 1; otherwise the largest
    weight grows, so the row gets sharper.
    """
    s = np.asarray(scores, dtype=float)
    if d_k == 1 or np.ptp(s) == 0:
        return UNCHANGED
    scaled = _softmax(s / np.sqrt(d_k))
    unscaled = _softmax(s)
    if unscaled.max() > scaled.max() + TIE_TOL:
        return SHARPER
    if unscaled.max() < scaled.max() - TIE_TOL:
        return FLATTER
    return UNCHANGED


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max())
    return e / e.sum()


# --- Adding a prediction to a generated variant ------------------------------------------


@dataclass(frozen=True)
class Question:
    text: str
    choices: tuple[str, ...]
    answer: str


def with_prediction(generated: Generated, question: Question) -> Generated:
    """``generated`` (a ``kinds.base.Generated``) with ``question`` asked first."""
    if question.answer not in question.choices:
        raise ValueError(f"{question.answer!r} is not among the choices {question.choices!r}")
    prompt = f"**Predict first:** {question.text}\n\n{generated.prompt}"
    return replace(
        generated,
        prompt=prompt,
        asks=[prediction_ask(question.text, question.choices), *generated.asks],
        solution={PREDICTION_PART: question.answer, **generated.solution},
    )


def top_key_question(weights, mask, rng: np.random.Generator, *, skip_first: bool) -> Question:
    """Which key gets the most weight in a row drawn by ``rng`` (row 0 skipped under a causal mask)."""
    w = np.asarray(weights, dtype=float)
    n_q, n_k = w.shape
    rows = list(range(1 if skip_first and n_q > 1 else 0, n_q))
    i = int(rng.choice(rows))
    labels = key_labels(n_k)
    return Question(
        text=(
            f"Before you compute anything: which key gets the most weight in row {i} (query {i})?"
        ),
        choices=(*labels, TIE),
        answer=top_key(w[i], labels),
    )


def uniform_question(weights, mask, rng: np.random.Generator) -> Question:
    w = np.asarray(weights, dtype=float)
    i = int(rng.integers(0, w.shape[0]))
    open_keys = ~np.asarray(mask, dtype=bool)[i]
    return Question(
        text=(
            f"Before you compute anything: are the weights of row {i} uniform, spread evenly "
            "over the keys that query may read?"
        ),
        choices=(UNIFORM, NOT_UNIFORM),
        answer=is_uniform(w[i], open_keys),
    )


def first_token_question(weights) -> Question:
    return Question(
        text="With the causal mask on, what does token 0 attend to?",
        choices=(ONLY_ITSELF, EVERY_TOKEN, LARGEST_SCORE),
        answer=first_token_reads(weights),
    )


def scale_question(scores, d_k: int) -> Question:
    return Question(
        text=(
            r"Before you compute anything: does removing the $1/\sqrt{d_k}$ scale make "
            "this row's softmax sharper or flatter?"
        ),
        choices=(SHARPER, FLATTER, UNCHANGED),
        answer=scale_effect(scores, d_k),
    )


def prediction_summary(
    ask: Mapping[str, Any], answer: str, expected: str, correct: bool
) -> dict[str, Any]:
    """The prediction beside what the numbers say, for a result."""
    if correct:
        message = f"You predicted {answer!r}, and the numbers agree."
    else:
        message = f"You predicted {answer!r}; the numbers say {expected!r}."
    return {
        "part": ask["name"],
        "question": ask.get("question", ""),
        "answer": answer,
        "expected": expected,
        "correct": correct,
        "message": message,
    }

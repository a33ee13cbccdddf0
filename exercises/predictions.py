"""Predict first: questions with choices asked before the numbers, and what the numbers say.

Pure: no Django. A prediction is an ask with ``choices`` (a list of strings) and a
``question``; its answer is one of the choices. When an exercise's *first* ask has
choices, that answer is taken first, in a submission of its own that uses no attempt,
and the numeric parts open after it. The expected choice is read off the exercise's
own numbers (the exercise's solution, or ``presets.prediction_expected`` for a
playground preset), so a prediction is marked by the same engine
that marks the numbers. ``prediction_check`` is where a prediction is checked, for an
exercise and for a playground preset alike (``exercises.services`` calls it for both).

Each question is fair in one of two ways: every choice is the right one in a fair
share of the variants offered (which key gets the most weight, is a row uniform), or it
is a concept check, said to be one, whose distractors are false on every variant (what
the first token reads under a causal mask, what removing the scale does).

Rows, keys and tokens are counted from 1 in every question and choice, as the tables
beside them label their rows; the functions take 0-based indices.

Mask convention as everywhere: ``mask[i, j]`` True means query i may not read key j.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from exercises.checking import choice_index
from exercises.engine import softmax

if TYPE_CHECKING:  # the kinds import this module
    from exercises.kinds.base import Generated

PREDICTION_PART = "prediction"
# Weights closer than this count as equal: integer inputs give exact ties, and a
# learner predicting from the scores cannot tell 0.5001 from 0.4999 anyway.
TIE_TOL = 1e-9
# A row asked "which key gets the most weight?" has one top key ahead of the next by at
# least this: visible at three decimals, so the choices hold no tie.
TOP_MARGIN = 0.05

TIE = "a tie between keys"
ONLY_ITSELF = "only itself"
EVERY_TOKEN = "every token equally"
ITSELF_AND_LATER = "itself and the tokens after it"
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
    """Keys as the tables label their columns: "key 1" to "key n"."""
    return [f"key {j + 1}" for j in range(n)]


def open_rows(mask: Any, least: int = 2) -> list[int]:
    """The rows (0-based) whose query may read at least ``least`` keys."""
    open_counts = (~np.asarray(mask, dtype=bool)).sum(axis=1)
    return [int(i) for i in np.flatnonzero(open_counts >= least)]


# --- What the numbers say ---------------------------------------------------------------


def top_key(weights_row: Sequence[float], labels: Sequence[str]) -> str:
    """The label of the key with the most weight, or ``TIE`` when several share the top."""
    row = np.asarray(weights_row, dtype=float)
    top = np.flatnonzero(row >= row.max() - TIE_TOL)
    return labels[int(top[0])] if top.size == 1 else TIE


def uniform_or_not(weights_row: Sequence[float], open_keys: Sequence[bool]) -> str:
    """The choice the row's weights support: ``UNIFORM`` when the row spreads its weight
    evenly over the keys it may read, else ``NOT_UNIFORM``."""
    row = np.asarray(weights_row, dtype=float)[np.asarray(open_keys, dtype=bool)]
    return UNIFORM if np.ptp(row) <= TIE_TOL else NOT_UNIFORM


def first_token_reads(weights: Sequence[Sequence[float]] | np.ndarray) -> str:
    """What the first token (row 0) attends to: under the causal mask, only itself."""
    row = np.asarray(weights, dtype=float)[0]
    if row[0] >= 1 - TIE_TOL:
        return ONLY_ITSELF
    if np.ptp(row) <= TIE_TOL:
        return EVERY_TOKEN
    return ITSELF_AND_LATER


def scale_effect(scores: Sequence[float], d_k: int) -> str:
    """Removing 1/sqrt(d_k) multiplies the scores by sqrt(d_k): how does the row's softmax change?

    # (n,) raw scores -> "sharper" | "flatter" | "unchanged"
    Equal scores stay uniform, and at d_k = 1 the scale is 1; otherwise the largest
    weight grows, so the row gets sharper.
    """
    s = np.asarray(scores, dtype=float)
    if d_k == 1 or np.ptp(s) == 0:
        return UNCHANGED
    scaled = softmax(s / np.sqrt(d_k))
    unscaled = softmax(s)
    if unscaled.max() > scaled.max() + TIE_TOL:
        return SHARPER
    if unscaled.max() < scaled.max() - TIE_TOL:
        return FLATTER
    return UNCHANGED


# --- Adding a prediction to a generated variant ------------------------------------------


@dataclass(frozen=True)
class Question:
    text: str
    choices: tuple[str, ...]
    answer: str


def _question_lead(question: str) -> str:
    return f"**Predict first:** {question}\n\n"


def with_prediction(generated: Generated, question: Question) -> Generated:
    """``generated`` (a ``kinds.base.Generated``) with ``question`` asked first."""
    if question.answer not in question.choices:
        raise ValueError(f"{question.answer!r} is not among the choices {question.choices!r}")
    prompt = _question_lead(question.text) + generated.prompt
    return replace(
        generated,
        prompt=prompt,
        asks=[prediction_ask(question.text, question.choices), *generated.asks],
        solution={PREDICTION_PART: question.answer, **generated.solution},
    )


def prompt_without_question(prompt: str, asks: Sequence[Mapping[str, Any]]) -> str:
    """An exercise's prompt without the prediction's question in front: for a page that
    asks the question in its own form, so that it is shown once."""
    ask = first_prediction(asks)
    if ask is None or not ask.get("question"):
        return prompt
    return prompt.removeprefix(_question_lead(ask["question"]))


def top_key_rows(weights: Any, mask: Any) -> list[int]:
    """Rows (0-based) fit for "which key gets the most weight?": two or more keys open
    and one of them ahead of every other by ``TOP_MARGIN``."""
    w = np.asarray(weights, dtype=float)
    rows = []
    for i in open_rows(mask):
        row = np.sort(w[i][~np.asarray(mask, dtype=bool)[i]])
        if row[-1] - row[-2] >= TOP_MARGIN:
            rows.append(i)
    return rows


def top_key_question(weights, mask, rng: np.random.Generator) -> Question:
    """Which key gets the most weight in a row drawn by ``rng``; the choices are the keys
    that row may read. Rows that read one key only, or have no clear top, are not asked;
    with no such row the question is a tie, which ``question_problem`` refuses."""
    w = np.asarray(weights, dtype=float)
    blocked = np.asarray(mask, dtype=bool)
    rows = top_key_rows(w, blocked) or open_rows(blocked) or [0]
    i = int(rng.choice(rows))
    labels = key_labels(w.shape[1])
    readable = [labels[j] for j in np.flatnonzero(~blocked[i])]
    answer = top_key(w[i], labels)
    return Question(
        text=(
            "Before you compute anything: which key gets the most weight in row "
            f"{i + 1} (query {i + 1})?"
        ),
        choices=tuple(readable) if answer in readable else (*readable, TIE),
        answer=answer,
    )


def uniform_row(mask: Any, rng: np.random.Generator) -> int:
    """A row (0-based) to ask "is it uniform?" about: one that may read two or more keys
    (a row reading one key is trivially uniform)."""
    rows = open_rows(mask) or [0]
    return int(rng.choice(rows))


def uniform_question(weights, mask, row: int) -> Question:
    w = np.asarray(weights, dtype=float)
    open_keys = ~np.asarray(mask, dtype=bool)[row]
    return Question(
        text=(
            f"Before you compute anything: are the weights of row {row + 1} uniform, spread "
            "evenly over the keys that query may read?"
        ),
        choices=(UNIFORM, NOT_UNIFORM),
        answer=uniform_or_not(w[row], open_keys),
    )


def first_token_question(weights) -> Question:
    return Question(
        text=(
            "Concept check: with the causal mask on, what does the first token (token 1) attend to?"
        ),
        choices=(ONLY_ITSELF, EVERY_TOKEN, ITSELF_AND_LATER),
        answer=first_token_reads(weights),
    )


def scale_question(scores, d_k: int) -> Question:
    return Question(
        text=(
            r"Concept check: does removing the $1/\sqrt{d_k}$ scale make this row's softmax "
            "sharper, flatter, or leave it unchanged?"
        ),
        choices=(SHARPER, FLATTER, UNCHANGED),
        answer=scale_effect(scores, d_k),
    )


def question_problem(generated: Generated) -> str | None:
    """Why the prediction asked first is unfit to ask, or None (also with no prediction).

    A "which key" question must have one clear top key among two or more choices.
    """
    ask = first_prediction(generated.asks)
    if ask is None:
        return None
    if generated.solution.get(PREDICTION_PART) == TIE:
        return "the predicted row has no single top key"
    if len(ask["choices"]) < 2:
        return "the prediction has a single choice"
    return None


# --- Checking a prediction ----------------------------------------------------------------


@dataclass(frozen=True)
class PredictionCheck:
    answer: str
    expected: str
    correct: bool


def prediction_check(choices: Sequence[str], answer: Any, expected: str) -> PredictionCheck:
    """``answer`` checked against ``expected``, the choice the numbers support.

    Right exactly when it is that choice. Raises ``ValueError`` naming the choices and what
    came when ``answer`` is not one of ``choices`` (a value of another type included).
    """
    choice_index(choices, answer)
    return PredictionCheck(answer=answer, expected=expected, correct=answer == expected)


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

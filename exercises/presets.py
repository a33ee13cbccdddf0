"""The attention playground's presets from the lessons, each with a prediction to commit to.

Pick a preset, predict (``prediction``: a question, its choices and the rule that reads
the answer off the preset's weights), then see the weights with the prediction marked.
Pure data and pure functions: the service computes the weights with the engine. Rows
are counted from 1 in the questions, as the playground's tables label them; ``row`` in
a preset's ``prediction`` is the 0-based index the rule reads.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from exercises import predictions

_BAG_WQ = [[1, 0], [0, 1], [1, 1]]
_BAG_WK = [[1, 0], [1, 1], [0, 1]]
_BAG_WV = [[2, 0], [0, 2], [1, 1]]
_ABC = [[1, 0], [0, 1], [1, 1]]

# The lesson's example, shared by the presets that start from it.
_BAG_TOKENS = ("bag", "delayed", "refund")
_BAG_MATRICES = {
    "X": [[1, 0, 0], [0, 1, 0], [0, 0, 1]],
    "W_Q": _BAG_WQ,
    "W_K": _BAG_WK,
    "W_V": _BAG_WV,
}

PRESETS: dict[str, dict[str, Any]] = {
    "bag": {
        "title": "bag / delayed / refund",
        "note": "One-hot tokens with hand-set projections, d_k = 2 (the lesson's example).",
        "mode": "xw",
        "tokens": list(_BAG_TOKENS),
        "matrices": dict(_BAG_MATRICES),
        "scale": True,
        "causal": False,
        "prediction": {
            "question": "Which key gets the most weight in row 1 (bag)?",
            "rule": "top_key",
            "row": 0,
        },
    },
    "abc": {
        "title": "A / B / C, identity",
        "note": "Q = K = V = X with A = [1, 0], B = [0, 1], C = [1, 1] (the article's example).",
        "mode": "qkv",
        "tokens": ["A", "B", "C"],
        "matrices": {"Q": _ABC, "K": _ABC, "V": _ABC},
        "scale": True,
        "causal": False,
        "prediction": {
            "question": "Which key gets the most weight in row 3 (C)?",
            "rule": "top_key",
            "row": 2,
        },
    },
    "large": {
        "title": "Large scores (\N{MULTIPLICATION SIGN}8)",
        "note": "The bag example's unscaled scores times 8: row 1 becomes (8, 8, 0) and its softmax (0.5, 0.5, 0.0002).",
        "mode": "qkv",
        "tokens": ["bag", "delayed", "refund"],
        "matrices": {"Q": [[8 * x for x in row] for row in _BAG_WQ], "K": _BAG_WK, "V": _BAG_WV},
        "scale": False,
        "causal": False,
        "prediction": {
            "question": "Row 1's unscaled scores are (8, 8, 0). How much weight does refund get?",
            "rule": "share",
            "row": 0,
            "key": 2,
        },
    },
    "identical": {
        "title": "Identical keys",
        "note": "Every key is the same, so every query spreads its weight evenly and the output is the mean value.",
        "mode": "qkv",
        "tokens": ["bag", "delayed", "refund"],
        "matrices": {"Q": _BAG_WQ, "K": [[1, 1], [1, 1], [1, 1]], "V": _BAG_WV},
        "scale": True,
        "causal": False,
        "prediction": {
            "question": "Every key is the same. Are the weights of row 1 uniform?",
            "rule": "uniform",
            "row": 0,
        },
    },
    "causal": {
        "title": "Causal mask",
        "note": "The bag example as a decoder: each token may read only itself and the tokens before it.",
        "mode": "xw",
        "tokens": list(_BAG_TOKENS),
        "matrices": dict(_BAG_MATRICES),
        "scale": True,
        "causal": True,
        "prediction": {
            "question": "With the causal mask on, what does the first token (bag) attend to?",
            "rule": "first_token",
            "row": 0,
        },
    },
}
DEFAULT_PRESET = "bag"

SHARE_CHOICES = ("almost none (under 5%)", "some (5% to 50%)", "most (over 50%)")


def share_bucket(weight: float) -> str:
    if weight < 0.05:
        return SHARE_CHOICES[0]
    return SHARE_CHOICES[1] if weight <= 0.5 else SHARE_CHOICES[2]


def prediction_choices(name: str) -> tuple[str, ...]:
    """The choices of preset ``name``'s question."""
    preset = PRESETS[name]
    rule = preset["prediction"]["rule"]
    if rule == "top_key":
        return (*preset["tokens"], predictions.TIE)
    if rule == "uniform":
        return (predictions.UNIFORM, predictions.NOT_UNIFORM)
    if rule == "first_token":
        return (predictions.ONLY_ITSELF, predictions.EVERY_TOKEN, predictions.ITSELF_AND_LATER)
    return SHARE_CHOICES


def prediction_expected(name: str, weights: np.ndarray, mask: np.ndarray) -> str:
    """What preset ``name``'s weights say, in the words of one of its choices.

    # (n_q, n_k) weights, (n_q, n_k) bool mask -> a choice
    """
    preset = PRESETS[name]
    spec = preset["prediction"]
    row = spec["row"]
    if spec["rule"] == "top_key":
        return predictions.top_key(weights[row], preset["tokens"])
    if spec["rule"] == "uniform":
        return predictions.uniform_or_not(weights[row], ~np.asarray(mask, dtype=bool)[row])
    if spec["rule"] == "first_token":
        return predictions.first_token_reads(weights)
    return share_bucket(float(weights[row][spec["key"]]))


def preset_question(name: str) -> dict[str, Any]:
    """``{preset, question, choices}`` for the page and the API."""
    return {
        "preset": name,
        "question": PRESETS[name]["prediction"]["question"],
        "choices": list(prediction_choices(name)),
    }

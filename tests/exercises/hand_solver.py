"""A careful learner with a calculator, written from the prompts and the contract alone.

Every number the learner writes down follows the prompt's own rounding rule, the steps
that are not asked too: a square root, a scaled score, each e^s (the lesson's worked
example: no shift by the row's largest score), a sum, a divisor 10000^(2i/d) to the
figures the prompt asks, an angle, a logit and its e^(-z). Plain loops over the inputs,
no engine and no kind code, so it checks the marking rather than repeating it.

``hand_answers(kind, inputs, prompt)`` (the solver a kind's cases name, in
tests/exercises/kinds/) returns the numeric parts as JSON values (and a
verdict reached from them by the prompt's stated rule, where one is asked); it raises
``CannotFollow`` where the rule leaves nothing to compute (every e^s of a row written as 0).
"""

from __future__ import annotations

import math
import re
from typing import Any

from tests.exercises.kind_cases import cases_of, kind_cases

DECIMALS = 3


class CannotFollow(ValueError):
    pass


def w(x: float) -> float:
    """A number written to three decimals."""
    return round(x, DECIMALS)


def figures(x: float, k: int) -> float:
    """A number written to ``k`` significant figures."""
    if x == 0:
        return 0.0
    return round(x, k - 1 - math.floor(math.log10(abs(x))))


def dot(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def matmul(a: list[list[float]], b: list[list[float]]) -> list[list[float]]:
    cols = list(zip(*b, strict=True))
    return [[dot(row, list(col)) for col in cols] for row in a]


def scores_by_hand(Q, K, scale: bool) -> list[list[float]]:
    d_k = len(Q[0])
    if not scale:
        return [[dot(q, k) for k in K] for q in Q]
    root = w(math.sqrt(d_k))
    return [[w(dot(q, k) / root) for k in K] for q in Q]


def softmax_row_by_hand(row: list[float], blocked: list[bool]) -> list[float]:
    """e^s to three decimals for the open keys, summed, each divided by the sum (a row
    that reads one key gives it all its weight: e^s / e^s)."""
    if blocked.count(False) == 1:
        return [0.0 if b else 1.0 for b in blocked]
    exps = [0.0 if b else w(math.exp(s)) for s, b in zip(row, blocked, strict=True)]
    total = sum(exps)
    if total == 0:
        raise CannotFollow(f"every e^s of the row {row} is 0.000 at three decimals")
    return [w(e / total) for e in exps]


def weights_by_hand(scores, mask) -> list[list[float]]:
    return [softmax_row_by_hand(row, blocked) for row, blocked in zip(scores, mask, strict=True)]


def mix_by_hand(weights, V) -> list[list[float]]:
    return [[w(x) for x in row] for row in matmul(weights, V)]


def attention(inputs: dict[str, Any], prompt: str) -> dict[str, Any]:
    scores = scores_by_hand(inputs["Q"], inputs["K"], inputs["scale"])
    weights = weights_by_hand(scores, inputs["mask"])
    return {"scores": scores, "weights": weights, "output": mix_by_hand(weights, inputs["V"])}


def masked_weights(inputs: dict[str, Any], prompt: str) -> dict[str, Any]:
    scores = scores_by_hand(inputs["Q"], inputs["K"], inputs["scale"])
    return {"weights": weights_by_hand(scores, inputs["mask"])}


def projection(inputs: dict[str, Any], prompt: str) -> dict[str, Any]:
    X = inputs["X"]
    Q, K, V = (matmul(X, inputs[name]) for name in ("W_Q", "W_K", "W_V"))
    weights = weights_by_hand(scores_by_hand(Q, K, inputs["scale"]), inputs["mask"])
    return {"Q": Q, "K": K, "V": V, "weights": weights, "output": mix_by_hand(weights, V)}


def multi_head(inputs: dict[str, Any], prompt: str) -> dict[str, Any]:
    X, h = inputs["X"], inputs["heads"]
    d_head = len(X[0]) // h
    Q, K, V = (matmul(X, inputs[name]) for name in ("W_Q", "W_K", "W_V"))
    out: dict[str, Any] = {}
    concat: list[list[float]] = [[] for _ in X]
    for i in range(h):

        def cols(M, i=i):
            return [row[i * d_head : (i + 1) * d_head] for row in M]

        weights = weights_by_hand(scores_by_hand(cols(Q), cols(K), inputs["scale"]), inputs["mask"])
        out[f"weights_head_{i}"] = weights
        for row, head_row in zip(concat, mix_by_hand(weights, cols(V)), strict=True):
            row.extend(head_row)
    out["output"] = [[w(x) for x in row] for row in matmul(concat, inputs["W_O"])]
    return out


def shapes(inputs: dict[str, Any], prompt: str) -> dict[str, Any]:
    n, d, h = inputs["n"], inputs["d_model"], inputs["heads"]
    d_k = d // h
    return {
        "Q_shape": [n, d_k],
        "K_shape": [n, d_k],
        "V_shape": [n, d_k],
        "scores_shape": [n, n],
        "weights_shape": [n, n],
        "head_output_shape": [n, d_k],
        "concat_shape": [n, d],
        "output_shape": [n, d],
    }


def positional_encoding(inputs: dict[str, Any], prompt: str) -> dict[str, Any]:
    """Each divisor 10000^(2i/d) to the figures the prompt names (three decimals where it
    names none), each angle pos / divisor and each sine and cosine to three decimals."""
    d = inputs["d_model"]
    named = re.search(r"to (\d+) significant figures", prompt)

    def divisor(i: int) -> float:
        exact = 10000 ** (2 * i / d)
        return figures(exact, int(named.group(1))) if named else w(exact)

    out = {}
    for pos in inputs["positions"]:
        angles = [w(pos / divisor(i)) for i in range(d // 2)]
        sines = [w(math.sin(a)) for a in angles]
        cosines = [w(math.cos(a)) for a in angles]
        if inputs["layout"] == "sines_then_cosines":
            out[f"pe_{pos}"] = sines + cosines
        else:
            out[f"pe_{pos}"] = [x for pair in zip(sines, cosines, strict=True) for x in pair]
    return out


def scaling(inputs: dict[str, Any], prompt: str) -> dict[str, Any]:
    d_k, s = inputs["d_k"], inputs["scores"]
    root = w(math.sqrt(d_k))
    open_ = [False] * len(s)
    return {
        "variance": d_k,
        "weights_scaled": softmax_row_by_hand([w(x / root) for x in s], open_),
        "weights_unscaled": softmax_row_by_hand(list(s), open_),
    }


def cost(inputs: dict[str, Any], prompt: str) -> dict[str, Any]:
    """Whole-number counts; the share to the three significant figures the prompt asks."""
    n, d, h, L, b = (inputs[k] for k in ("n", "d_model", "heads", "layers", "bytes_per_entry"))
    qk_and_av = 2 * n * n * d
    per_token = 4 * n * d * d + 8 * n * d * d
    return {
        "score_entries": n * n,
        "score_bytes": n * n * h * L * b,
        "attention_params": 4 * d * d,
        "ffn_params": 8 * d * d,
        "quadratic_share": figures(qk_and_av / (qk_and_av + per_token), 3),
    }


def sigmoid_by_hand(z: float) -> float:
    """sigma(z) = 1 / (1 + e^(-z)), with e^(-z) written to three decimals."""
    return w(1 / (1 + w(math.exp(-z))))


def readout_by_hand(weights: list[float], V, w_out: list[float], b: float) -> float:
    """o = weights . V (each coordinate written), z = w . o + b (written), p = sigma(z)."""
    o = [w(dot(weights, list(col))) for col in zip(*V, strict=True)]
    return sigmoid_by_hand(w(dot(w_out, o) + b))


def ablation(inputs: dict[str, Any], prompt: str) -> dict[str, Any]:
    """The [CLS] row by hand (scores, e^s, weights), the read-out with every key and with
    the highlighted one masked (its e^s left out of the sum), the change, and the verdict
    by the rule and the threshold the prompt states."""
    q, w_out, b, h = inputs["q"], inputs["w"], inputs["b"], inputs["highlighted"]
    threshold = float(re.search(r"\|change\| of at least ([0-9.]+)", prompt).group(1))
    out: dict[str, Any] = {"weights": [], "p_with": [], "p_without": [], "change": []}
    for m in range(1, inputs["n_inputs"] + 1):
        K, V = inputs[f"K_{m}"], inputs[f"V_{m}"]
        scores = scores_by_hand([q], K, scale=True)[0]
        weights = softmax_row_by_hand(scores, [False] * len(K))
        kept = softmax_row_by_hand(scores, [j == h for j in range(len(K))])
        p_with = readout_by_hand(weights, V, w_out, b)
        p_without = readout_by_hand(kept, V, w_out, b)
        out["weights"].append(weights)
        out["p_with"].append(p_with)
        out["p_without"].append(p_without)
        out["change"].append(w(p_without - p_with))
    large = [abs(c) >= threshold for c in out["change"]]
    if not any(large):
        out["verdict"] = "redundant"
    elif all(large) and (all(c > 0 for c in out["change"]) or all(c < 0 for c in out["change"])):
        out["verdict"] = "reliance"
    else:
        out["verdict"] = "mixed"
    return out


def hand_answers(kind: str, inputs: dict[str, Any], prompt: str) -> dict[str, Any]:
    """The kind's solver is named by its cases (tests/exercises/kinds/)."""
    return cases_of(kind).solver(inputs, prompt)


def __getattr__(name: str) -> Any:
    # ``SOLVERS``, every kind's solver by name, read when asked for: the kinds' test
    # modules, where the cases are, import this module first.
    if name == "SOLVERS":
        return {kind: cases.solver for kind, cases in kind_cases().items()}
    raise AttributeError(name)

"""Does the model rely on the token? The lesson's heat-map test as an exercise.

A small seeded classifier: one attention head from ``exercises.engine`` read out at a
final [CLS] token, ``p = sigmoid(w . o + b)`` where ``o`` is the [CLS] row of the head's
output. One token is highlighted. The learner computes, on a handful of inputs, the
probability with the token and without it (masked as a *key*: its column becomes minus
infinity in the [CLS] row and the other weights renormalise), the change per input,
and the verdict by the lesson's rule: a large and consistent change is evidence of
reliance (not of causation); otherwise the weight is decoration.

Variants are drawn so that both verdicts occur, including a highlighted token with the
highest weight in every input whose removal changes little (the others carry the same
information).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from exercises import engine
from exercises.kinds.base import (
    ROUNDING_RULE,
    ExerciseKind,
    Follow,
    Generated,
    ParamSpec,
    as_json,
    register,
    tex_matrix,
    tex_vector,
)

D = 2  # width of queries, keys and values: small enough to do by hand
# The lesson's rule, stated in the prompt: reliance when every input changes by at
# least THRESHOLD, all in the same direction; otherwise decoration.
THRESHOLD = 0.05
# Drawn variants keep every change clearly on one side of the threshold, so hand
# rounding never flips the verdict.
SMALL, LARGE = 0.02, 0.08
# At least one change this large, well outside the tolerance around 0.
VISIBLE = 0.012
RELIANCE, DECORATION = "reliance", "decoration"
READOUTS = ((1, 0), (0, 1), (1, 1), (1, -1))
MAX_TRIES = 400


def sigmoid(z: np.ndarray) -> np.ndarray:
    p: np.ndarray = 1.0 / (1.0 + np.exp(-z))
    return p


def cls_readout(
    q: np.ndarray, K: np.ndarray, V: np.ndarray, w: np.ndarray, b: float, blocked: int | None
) -> tuple[np.ndarray, float]:
    """The [CLS] row's weights and the probability, with key ``blocked`` masked (or none).

    # (d,), (n, d), (n, d), (d,), scalar -> weights (n,), p scalar
    """
    mask = None
    if blocked is not None:
        mask = np.zeros((1, K.shape[0]), dtype=bool)
        mask[0, blocked] = True
    trace = engine.scaled_dot_product_attention(
        q[None, :], K, V, mask=mask, return_intermediates=True
    )
    weights = trace.weights[0]
    return weights, float(sigmoid(w @ trace.output[0] + b))


def verdict(change: np.ndarray) -> str:
    """The lesson's rule: large and consistent (same sign everywhere) is reliance."""
    large = np.abs(change) >= THRESHOLD
    consistent = bool((change > 0).all() or (change < 0).all())
    return RELIANCE if large.all() and consistent else DECORATION


def _set_readout(v: np.ndarray, w: np.ndarray, target: int) -> None:
    """Adjust one coordinate of the value ``v`` so that ``w . v == target`` (integers)."""
    j = int(np.flatnonzero(np.abs(w) == 1)[-1])
    v[j] += (target - int(w @ v)) * int(w[j])


def evaluate(inputs: dict[str, Any]) -> dict[str, Any]:
    """Every expected part from the stored inputs."""
    q, w = np.asarray(inputs["q"], dtype=float), np.asarray(inputs["w"], dtype=float)
    b, h = float(inputs["b"]), int(inputs["highlighted"])
    weights, p_with, p_without = [], [], []
    for m in range(inputs["n_inputs"]):
        K = np.asarray(inputs[f"K_{m + 1}"], dtype=float)
        V = np.asarray(inputs[f"V_{m + 1}"], dtype=float)
        a, p = cls_readout(q, K, V, w, b, None)
        _, p_ablated = cls_readout(q, K, V, w, b, h)
        weights.append(a)
        p_with.append(p)
        p_without.append(p_ablated)
    p_with_a, p_without_a = np.array(p_with), np.array(p_without)
    change = p_without_a - p_with_a
    return {
        "weights": np.array(weights),
        "p_with": p_with_a,
        "p_without": p_without_a,
        "change": change,
        "verdict": verdict(change),
    }


def _draw(rng: np.random.Generator, case: str, n_inputs: int, n: int) -> dict[str, Any]:
    """One candidate variant for ``case``: reliance, high_weight or inconsistent.

    The model (q, w, b, the [CLS] key and value, the highlighted position) is drawn once;
    each input is then drawn until it fits the case on its own, so the cost grows with
    the number of inputs rather than exponentially.
    """
    q = rng.integers(-2, 3, size=D)
    if not q.any():
        q[int(rng.integers(0, D))] = 1
    w = np.array(READOUTS[int(rng.integers(0, len(READOUTS)))])
    b = int(rng.integers(-1, 2))
    h = int(rng.integers(0, n - 1))
    k_cls = rng.integers(-2, 3, size=D)
    v_cls = rng.integers(-2, 3, size=D)
    sign = 1 if rng.random() < 0.5 else -1
    signs = np.full(n_inputs, sign)
    if case == "inconsistent":
        signs[int(rng.integers(0, n_inputs))] = -sign
    inputs: dict[str, Any] = {"n_inputs": n_inputs, "highlighted": h}
    for m in range(n_inputs):
        for _ in range(INPUT_TRIES):
            K, V = _draw_input(rng, case, q, w, h, k_cls, v_cls, int(signs[m]), n)
            if _input_fits(case, q, K, V, w, b, h, int(signs[m])):
                break
        inputs[f"K_{m + 1}"] = K.tolist()
        inputs[f"V_{m + 1}"] = V.tolist()
    inputs.update(q=q.tolist(), w=w.tolist(), b=b)
    return inputs


INPUT_TRIES = 60


def _draw_input(
    rng: np.random.Generator,
    case: str,
    q: np.ndarray,
    w: np.ndarray,
    h: int,
    k_cls: np.ndarray,
    v_cls: np.ndarray,
    sign: int,
    n: int,
) -> tuple[np.ndarray, np.ndarray]:
    # (d,) ... -> K (n, d), V (n, d): rows are tokens, the last one [CLS].
    K = rng.integers(-2, 3, size=(n, D))
    V = rng.integers(-2, 3, size=(n, D))
    K[-1], V[-1] = k_cls, v_cls
    if case == "high_weight":
        # The highlighted key points along the query: the largest score in the row.
        K[h] = 2 * np.sign(q)
        # Every token carries the same read-out as [CLS]: the information is redundant,
        # but for one other token whose slightly different read-out gets a little more
        # weight once the highlighted token is gone: a small change, yet not none.
        others = [j for j in range(n - 1) if j != h]
        odd = others[int(rng.integers(0, len(others)))]
        for j in range(n - 1):
            shift = int(rng.choice((-2, -1, 1, 2))) if j == odd else 0
            _set_readout(V[j], w, int(w @ v_cls) + shift)
    else:
        if case == "inconsistent":
            K[h] = 2 * np.sign(q)  # the highest weight again, with changes of mixed sign
        elif q @ K[h] < 0:
            K[h] = -K[h]  # a key the query does not avoid: removing it can matter
        for j in range(n - 1):
            if j != h:
                _set_readout(V[j], w, int(rng.integers(-1, 2)))
        _set_readout(V[h], w, sign * 3)
    return K, V


def _input_fits(
    case: str,
    q: np.ndarray,
    K: np.ndarray,
    V: np.ndarray,
    w: np.ndarray,
    b: int,
    h: int,
    sign: int,
) -> bool:
    """One input on its own: clear of the threshold, in the direction the case wants."""
    weights, p_with = cls_readout(q, K.astype(float), V.astype(float), w, b, None)
    _, p_without = cls_readout(q, K.astype(float), V.astype(float), w, b, h)
    change = p_without - p_with
    if case == "high_weight":
        return abs(change) <= SMALL and int(weights.argmax()) == h and weights[h] >= 0.4
    # A token whose read-out is above the others' lowers p when removed, and vice versa.
    return abs(change) >= LARGE and np.sign(change) == -sign


def _acceptable(case: str, expected: dict[str, Any], h: int) -> bool:
    """The whole variant: its verdict fits the case, and no change is near the threshold."""
    change = np.abs(expected["change"])
    if ((change > SMALL) & (change < LARGE)).any():
        return False  # too close to the threshold to judge by hand
    if not (change >= VISIBLE).any():
        return False  # masking as a query (no change at all) would pass for right
    if case == "reliance":
        # Somewhere the token is not the top weight: "high weight = reliance" is caught.
        return expected["verdict"] == RELIANCE and not bool(
            (expected["weights"].argmax(axis=1) == h).all()
        )
    if case == "high_weight":
        weights = expected["weights"]
        return (
            expected["verdict"] == DECORATION
            and bool((weights.argmax(axis=1) == h).all())
            and bool((weights[:, h] >= 0.4).all())
        )
    return (
        expected["verdict"] == DECORATION
        and bool((change >= LARGE).any())
        and bool((expected["weights"].argmax(axis=1) == h).all())
    )


@register
class AblationKind(ExerciseKind):
    name = "ablation"
    title = "Does the model rely on the token?"
    description = (
        "The lesson's heat-map test: mask a highlighted token as a key in a small "
        "classifier, measure the change in the output probability over a few inputs and "
        "decide whether the model relies on the token or its weight is decoration."
    )
    params: ClassVar[dict[str, ParamSpec]] = {
        "n_inputs": ParamSpec("int", 3, "How many inputs the change is measured on.", 2, 5),
        "n": ParamSpec("int", 3, "Tokens per input, the final [CLS] token included.", 3, 5),
        "case": ParamSpec(
            "choice",
            "random",
            "Which verdict the variant leads to: drawn at random (both occur), or fixed.",
            choices=("random", RELIANCE, DECORATION),
        ),
    }
    mistakes = ("high_weight_as_reliance", "ablation_masked_query")
    max_attempts = 4

    def generate(self, params: dict[str, Any], rng: np.random.Generator) -> Generated:
        n_inputs, n = params["n_inputs"], params["n"]
        case = params["case"]
        if case == "random":
            case = RELIANCE if rng.random() < 0.5 else DECORATION
        if case == DECORATION:
            # Mostly the lesson's trap: the highest weight whose removal changes little.
            case = "high_weight" if rng.random() < 0.6 else "inconsistent"
        inputs = expected = None
        for _ in range(MAX_TRIES):
            candidate = _draw(rng, case, n_inputs, n)
            found = evaluate(candidate)
            if _acceptable(case, found, candidate["highlighted"]):
                inputs, expected = candidate, found
                break
        if (
            inputs is None or expected is None
        ):  # never seen in practice; a valid variant all the same
            inputs = _draw(rng, "high_weight", n_inputs, n)
            expected = evaluate(inputs)
        return self.variant(
            prompt=self._prompt(inputs),
            inputs=inputs,
            asks=[
                {"name": "weights", "shape": [n_inputs, n]},
                {"name": "p_with", "shape": [n_inputs]},
                {"name": "p_without", "shape": [n_inputs]},
                {"name": "change", "shape": [n_inputs]},
                {
                    "name": "verdict",
                    "shape": [],
                    "choices": [RELIANCE, DECORATION],
                    "question": "Does the model rely on the highlighted token?",
                },
            ],
            solution={
                "weights": as_json(expected["weights"]),
                "p_with": as_json(expected["p_with"]),
                "p_without": as_json(expected["p_without"]),
                "change": as_json(expected["change"]),
                "verdict": expected["verdict"],
            },
        )

    @staticmethod
    def _prompt(inputs: dict[str, Any]) -> str:
        m, h = inputs["n_inputs"], inputs["highlighted"]
        n = len(inputs["K_1"])
        per_input = "; ".join(
            rf"input {i + 1}: $K_{i + 1} = {tex_matrix(inputs[f'K_{i + 1}'])}$, "
            rf"$V_{i + 1} = {tex_matrix(inputs[f'V_{i + 1}'])}$"
            for i in range(m)
        )
        return "\n\n".join(
            [
                rf"A one-head classifier reads out at its final [CLS] token (token {n - 1}): "
                rf"$p = \sigma(w \cdot o + b)$ with $\sigma(z) = 1/(1 + e^{{-z}})$, where "
                r"$o = \operatorname{softmax}(q K^\top/\sqrt{d_k})\,V$ is the [CLS] row of the "
                rf"head's output, $q = {tex_vector(inputs['q'])}$ is the [CLS] query, "
                rf"$w = {tex_vector(inputs['w'])}$, $b = {inputs['b']}$ and $d_k = {D}$. "
                f"Rows of $K$ and $V$ are tokens 0 to {n - 1}.",
                per_input + ".",
                f"The heat map highlights **token {h}**. For each input give (1) `weights`: "
                "the [CLS] row's attention weights, one row per input; (2) `p_with`: the "
                f"probability; (3) `p_without`: the probability with token {h} masked as a "
                r"key (its score becomes $-\infty$ in the [CLS] row, the other weights "
                "renormalise, everything else stays); (4) `change` = `p_without` \N{MINUS SIGN} `p_with`.",
                f"(5) The verdict, by the lesson's rule: **reliance** when every input's "
                f"|change| is at least {THRESHOLD} and all changes have the same sign (large "
                "and consistent: evidence of reliance, not of causation); otherwise "
                "**decoration**: the weight must not be presented as the reason.",
                ROUNDING_RULE,
            ]
        )

    def answers_under(
        self, inputs: dict[str, Any], recipe: Mapping[str, Any], decimals: int | None = None
    ) -> dict[str, np.ndarray] | None:
        how = recipe.get("ablation")
        if set(recipe) - {"ablation"} or how not in (None, "weight_as_reliance", "query_mask"):
            return None
        expected = evaluate(inputs)
        out = {name: expected[name] for name in ("weights", "p_with", "p_without")}
        if how == "query_mask":
            # Blocking the token's query row leaves the [CLS] row untouched: no change.
            out["p_without"] = out["p_with"]
        if decimals is not None:
            out = {name: np.round(value, decimals) for name, value in out.items()}
        out["change"] = out["p_without"] - out["p_with"]
        if decimals is not None:
            out["change"] = np.round(out["change"], decimals)
        out["verdict"] = verdict(out["change"])
        if how == "weight_as_reliance":
            out["verdict"] = _weight_verdict(out["weights"], int(inputs["highlighted"]))
        return out

    def follow_on(
        self,
        inputs: dict[str, Any],
        given: Mapping[str, np.ndarray],
        recipe: Mapping[str, Any] | None = None,
    ) -> dict[str, Follow]:
        recipe = recipe or {}
        how = recipe.get("ablation")
        if how == "weight_as_reliance":
            verdict_of = _weight_verdict(given["weights"], int(inputs["highlighted"]))
            return {"verdict": Follow(verdict_of, ("weights",), "your weights")}
        if recipe:
            return {}
        w, b = np.asarray(inputs["w"], dtype=float), float(inputs["b"])
        p_with = []
        for m in range(inputs["n_inputs"]):
            V = np.asarray(inputs[f"V_{m + 1}"], dtype=float)
            p_with.append(float(sigmoid(w @ (np.asarray(given["weights"][m]) @ V) + b)))
        change = np.asarray(given["p_without"]) - np.asarray(given["p_with"])
        return {
            # Rounding the output row (not asked) to three decimals moves p by at most this.
            "p_with": Follow(np.array(p_with), ("weights",), "your weights", slack=OUTPUT_SLACK),
            "change": Follow(change, ("p_with", "p_without"), "your probabilities"),
            "verdict": Follow(verdict(change), ("change",), "your changes"),
        }


# sigmoid' <= 1/4, |w| entries <= 1 over D = 2 coordinates rounded by 0.0005 each.
OUTPUT_SLACK = 0.25 * D * 0.0005


def _weight_verdict(weights: np.ndarray, h: int) -> str:
    """The mistaken rule: reliance wherever the token has the highest weight in every input."""
    top = np.asarray(weights, dtype=float).argmax(axis=1)
    return RELIANCE if (top == h).all() else DECORATION

# One module on purpose: the classifier, its draws and its marking are one lesson's test.
"""Does the model rely on the token? The lesson's heat-map test as an exercise.

A small seeded classifier: one attention head from ``exercises.engine`` read out at a
final [CLS] token, ``p = sigmoid(w . o + b)`` where ``o`` is the [CLS] row of the head's
output. One token is highlighted. The learner computes, on a handful of inputs, the
probability with the token and without it (masked as a *key*: its column becomes minus
infinity in the [CLS] row and the other weights renormalise; in this one-head, one-layer
model that is removing the token), the change per input, and the verdict by the lesson's
rule: a large and consistent change is evidence of reliance (not of causation). A careful
analyst tells three outcomes apart: the model relies on the token consistently (large
changes, one direction), relies on it but not as one consistent reason (large changes in
mixed directions), or the token is redundant for this output (small changes everywhere).

Redundant is all a small change shows: the output does not need the token *given the
others*. It does not show that the model ignores the token: the redundant variants give
every other token the same read-out, so removing the highlighted one changes little,
yet shifting its value still moves the output (``value_shift_change``). That is the
ablation test's limit: removing one token at a time misses tokens that carry the same
information as another. The redundant variants also give the highlighted token the
highest weight in every input, by a visible margin.

Tokens and inputs are counted from 1 in every word a learner reads, as the tables label
their rows; ``inputs["highlighted"]`` stays an index into the rows of ``K_m``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

import numpy as np

from exercises import engine
from exercises.kinds.base import (
    HALF_UNIT,
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
from exercises.kinds.hand import scaled_score_error, softmax_by_hand_fails, softmax_hand_slack
from exercises.kinds.worked import SOFTMAX_HOW, Step, num, softmax_row_steps, step

D = 2  # width of queries, keys and values: small enough to do by hand
# The lesson's rule is "large and consistent"; what counts as large is this service's
# choice, stated as such in the prompt: a |change| of at least THRESHOLD.
THRESHOLD = 0.05
# Drawn variants keep every change clearly on one side of the threshold, so hand
# rounding never flips the verdict.
SMALL, LARGE = 0.02, 0.08
# At least one change this large, well outside the tolerance around 0.
VISIBLE = 0.012
# Where the highlighted token is sold as the highest weight, it leads every other token
# by at least this much in every input: visible at three decimals, never a tie.
MARGIN = 0.05
RELIANCE, MIXED, REDUNDANT = "reliance", "mixed", "redundant"
VERDICTS = (RELIANCE, MIXED, REDUNDANT)
# Exercises made before the verdict was named for what the test shows called it this.
LEGACY_CASES = {"decoration": REDUNDANT}
READOUTS = ((1, 0), (0, 1), (1, 1), (1, -1))
MAX_TRIES = 400


def sigmoid(z: np.ndarray) -> np.ndarray:
    p: np.ndarray = 1.0 / (1.0 + np.exp(-z))
    return p


def cls_readout(
    q: np.ndarray,
    K: np.ndarray,
    V: np.ndarray,
    w: np.ndarray,
    b: float,
    blocked: int | None,
    *,
    scale: bool = True,
    renormalise: bool = True,
) -> tuple[np.ndarray, float]:
    """The [CLS] row's weights and the probability, with key ``blocked`` masked (or none).

    # (d,), (n, d), (n, d), (d,), scalar -> weights (n,), p scalar
    ``scale`` False leaves out 1/sqrt(d_k); ``renormalise`` False zeroes the blocked weight
    after the softmax and keeps the others as they were (both are mistakes a learner makes).
    """
    if blocked is not None and not renormalise:
        weights, _ = cls_readout(q, K, V, w, b, None, scale=scale)
        weights = weights.copy()
        weights[blocked] = 0.0
        return weights, float(sigmoid(w @ (weights @ V) + b))
    mask = None
    if blocked is not None:
        mask = np.zeros((1, K.shape[0]), dtype=bool)
        mask[0, blocked] = True
    trace = engine.scaled_dot_product_attention(
        q[None, :], K, V, mask=mask, scale=scale, return_intermediates=True
    )
    weights = trace.weights[0]
    return weights, float(sigmoid(w @ trace.output[0] + b))


def verdict(change: np.ndarray) -> str:
    """The lesson's rule with the outcomes a careful analyst tells apart.

    Large (|change| >= THRESHOLD) in every input and one sign: reliance. Small in every
    input: redundant (the output does not need the token given the others). Large somewhere but not large in one direction everywhere: mixed,
    the model uses the token but not as one consistent reason.
    """
    change = np.asarray(change, dtype=float)
    large = np.abs(change) >= THRESHOLD
    if not large.any():
        return REDUNDANT
    if large.all() and bool((change > 0).all() or (change < 0).all()):
        return RELIANCE
    return MIXED


def top_margin(weights: np.ndarray, h: int) -> np.ndarray:
    """# (m, n), h -> (m,): the highlighted weight minus the largest other weight, per input."""
    w = np.asarray(weights, dtype=float)
    margin: np.ndarray = w[:, h] - np.delete(w, h, axis=1).max(axis=1)
    return margin


def _top_everywhere(weights: np.ndarray, h: int) -> bool:
    """The highlighted token strictly has the highest weight in every input."""
    return bool((top_margin(weights, h) > 0).all())


def _set_readout(v: np.ndarray, w: np.ndarray, target: int) -> None:
    """Adjust one coordinate of the value ``v`` so that ``w . v == target`` (integers)."""
    j = int(np.flatnonzero(np.abs(w) == 1)[-1])
    v[j] += (target - int(w @ v)) * int(w[j])


def readouts(
    inputs: Mapping[str, Any], *, scale: bool = True, renormalise: bool = True
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """# inputs -> weights (n_inputs, n), p_with (n_inputs,), p_without (n_inputs,)."""
    q, w = np.asarray(inputs["q"], dtype=float), np.asarray(inputs["w"], dtype=float)
    b, h = float(inputs["b"]), int(inputs["highlighted"])
    weights, p_with, p_without = [], [], []
    for m in range(inputs["n_inputs"]):
        K = np.asarray(inputs[f"K_{m + 1}"], dtype=float)
        V = np.asarray(inputs[f"V_{m + 1}"], dtype=float)
        a, p = cls_readout(q, K, V, w, b, None, scale=scale)
        _, p_ablated = cls_readout(q, K, V, w, b, h, scale=scale, renormalise=renormalise)
        weights.append(a)
        p_with.append(p)
        p_without.append(p_ablated)
    return np.array(weights), np.array(p_with), np.array(p_without)


def evaluate(inputs: Mapping[str, Any]) -> dict[str, Any]:
    """Every expected part from the stored inputs."""
    weights, p_with, p_without = readouts(inputs)
    change = p_without - p_with
    return {
        "weights": weights,
        "p_with": p_with,
        "p_without": p_without,
        "change": change,
        "verdict": verdict(change),
    }


def value_shift_change(inputs: Mapping[str, Any], m: int, shift: float) -> float:
    """How far p moves in input ``m`` (from 0) when the highlighted token's value moves by
    ``shift`` along the read-out ``w``, the token kept: what removing it cannot show.

    # inputs, m, shift -> p(shifted value) - p
    """
    q, w = np.asarray(inputs["q"], dtype=float), np.asarray(inputs["w"], dtype=float)
    b, h = float(inputs["b"]), int(inputs["highlighted"])
    K = np.asarray(inputs[f"K_{m + 1}"], dtype=float)
    V = np.asarray(inputs[f"V_{m + 1}"], dtype=float)
    shifted = V.copy()
    shifted[h] += shift * w
    _, p = cls_readout(q, K, V, w, b, None)
    _, p_shifted = cls_readout(q, K, shifted, w, b, None)
    return p_shifted - p


def _draw(
    rng: np.random.Generator, case: str, n_inputs: int, n: int, *, strict: bool = True
) -> dict[str, Any] | None:
    """One candidate variant for ``case``: reliance, mixed or redundant.

    The model (q, w, b, the [CLS] key and value, the highlighted position) is drawn once;
    each input is then drawn until it fits the case on its own, so the cost grows with
    the number of inputs rather than exponentially. None when an input does not fit
    (``strict`` False keeps its last try instead).
    """
    q = rng.integers(-2, 3, size=D)
    if not q.any():
        q[int(rng.integers(0, D))] = 1
    w = np.array(READOUTS[int(rng.integers(0, len(READOUTS)))])
    b = int(rng.integers(-1, 2))
    h = int(rng.integers(0, n - 1))
    k_cls = rng.integers(-2, 3, size=D)
    if case != RELIANCE and q @ k_cls >= 2 * np.abs(q).sum():
        k_cls = -k_cls  # [CLS] never ties the highlighted key, which is sold as the highest
    v_cls = rng.integers(-2, 3, size=D)
    sign = 1 if rng.random() < 0.5 else -1
    signs = np.full(n_inputs, sign)
    if case == MIXED:
        signs[int(rng.integers(0, n_inputs))] = -sign
    inputs: dict[str, Any] = {"n_inputs": n_inputs, "highlighted": h}
    for m in range(n_inputs):
        for _ in range(INPUT_TRIES):
            K, V = _draw_input(rng, case, q, w, h, k_cls, v_cls, int(signs[m]), n)
            if _input_fits(case, q, K, V, w, b, h, int(signs[m])):
                break
        else:
            if strict:
                return None  # this model rarely fits the case: draw another, not more inputs
        inputs[f"K_{m + 1}"] = K.tolist()
        inputs[f"V_{m + 1}"] = V.tolist()
    inputs.update(q=q.tolist(), w=w.tolist(), b=b)
    return inputs


INPUT_TRIES = 20


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
    if case != RELIANCE:
        _highest_key(K, q, h)
    if case == REDUNDANT:
        _redundant_readouts(rng, V, w, v_cls, h)
        return K, V
    if case == RELIANCE and q @ K[h] < 0:
        K[h] = -K[h]  # a key the query does not avoid: removing it can matter
    for j in range(n - 1):
        if j != h:
            _set_readout(V[j], w, int(rng.integers(-1, 2)))
    _set_readout(V[h], w, sign * 3)
    return K, V


def _highest_key(K: np.ndarray, q: np.ndarray, h: int) -> None:
    # The highlighted key points along the query: the largest score in the row, and no
    # other key (the [CLS] key, last, aside) may tie it.
    K[h] = 2 * np.sign(q)
    for j in range(len(K) - 1):
        if j != h and q @ K[j] >= q @ K[h]:
            K[j] = -K[j]


def _redundant_readouts(
    rng: np.random.Generator, V: np.ndarray, w: np.ndarray, v_cls: np.ndarray, h: int
) -> None:
    # Every token carries the same read-out as [CLS]: the information is redundant, but
    # for one other token whose slightly different read-out gets a little more weight once
    # the highlighted token is gone: a small change, yet not none.
    tokens = len(V) - 1
    others = [j for j in range(tokens) if j != h]
    odd = others[int(rng.integers(0, len(others)))]
    for j in range(tokens):
        shift = int(rng.choice((-2, -1, 1, 2))) if j == odd else 0
        _set_readout(V[j], w, int(w @ v_cls) + shift)


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
    """One input on its own: clear of the threshold, in the direction the case wants.

    A filter run many times per variant, so it works the [CLS] row out with the engine's
    softmax alone rather than a whole traced head; the variant's parts come from
    ``evaluate``, which the whole variant must pass too.
    """
    scores = (K @ q) / np.sqrt(D)
    weights = engine.softmax(scores)
    kept = engine.softmax(np.delete(scores, h))  # the token masked: the others renormalise
    p_with = sigmoid(w @ (weights @ V) + b)
    p_without = sigmoid(w @ (kept @ np.delete(V, h, axis=0)) + b)
    change = p_without - p_with
    margin = weights[h] - np.delete(weights, h).max()
    if case == REDUNDANT:
        return bool(abs(change) <= SMALL and margin >= MARGIN and weights[h] >= 0.4)
    # A token whose read-out is above the others' lowers p when removed, and vice versa.
    fits = abs(change) >= LARGE and np.sign(change) == -sign
    return bool(fits) and (case != MIXED or bool(margin >= MARGIN))


def _acceptable(case: str, expected: dict[str, Any], h: int) -> bool:
    """The whole variant: its verdict fits the case, and no change is near the threshold."""
    change = np.abs(expected["change"])
    if ((change > SMALL) & (change < LARGE)).any():
        return False  # too close to the threshold to judge by hand
    if not (change >= VISIBLE).any():
        return False  # masking as a query (no change at all) would pass for right
    if expected["verdict"] != case:
        return False
    margin = top_margin(expected["weights"], h)
    if case == RELIANCE:
        # Somewhere another token visibly has more weight: "high weight = reliance" is caught.
        return bool((margin <= -MARGIN).any())
    # Sold as the highest weight: strictly highest, by a visible margin, in every input.
    if not (margin >= MARGIN).all():
        return False
    if case == MIXED:
        return bool((change >= LARGE).all())
    return bool((expected["weights"][:, h] >= 0.4).all())


# The ways of getting the verdict wrong that a diagnosis can name (recipe "ablation").
VERDICT_RECIPES = (
    "weight_as_reliance",
    "low_weight_as_decoration",
    "mixed_as_decoration",
    "query_mask",
)


@register
class AblationKind(ExerciseKind):
    name = "ablation"
    title = "Does the model rely on the token?"
    description = (
        "The lesson's heat-map test: remove a highlighted token (mask it as a key, which in "
        "this one-head, one-layer classifier removes it) from a few inputs, measure the "
        "change in the output probability and decide whether the model relies on the token "
        "consistently, relies on it in mixed directions, or the token is redundant for this "
        "output (removing it alone barely moves the prediction)."
    )
    params: ClassVar[dict[str, ParamSpec]] = {
        "n_inputs": ParamSpec("int", 3, "How many inputs the change is measured on.", 2, 5),
        "n": ParamSpec("int", 3, "Tokens per input, the final [CLS] token included.", 3, 5),
        "case": ParamSpec(
            "choice",
            "random",
            "Which verdict the variant leads to: drawn at random (all three occur), or fixed.",
            choices=("random", *VERDICTS),
        ),
    }
    mistakes = (
        "no_scale",
        "mask_after_softmax",
        "ablation_masked_query",
        "high_weight_as_reliance",
        "low_weight_as_decoration",
        "mixed_as_decoration",
    )
    max_attempts = 4

    def normalize_params(self, raw: Mapping[str, Any] | None) -> dict[str, Any]:
        """As every kind's, with the verdict's old name still taken as ``case``."""
        if isinstance(raw, Mapping):
            case = raw.get("case")
            if isinstance(case, str) and case in LEGACY_CASES:
                raw = {**raw, "case": LEGACY_CASES[case]}
        return super().normalize_params(raw)

    def generate(self, params: dict[str, Any], rng: np.random.Generator) -> Generated:
        n_inputs, n = params["n_inputs"], params["n"]
        case = params["case"]
        if case == "random":
            case = VERDICTS[int(rng.integers(0, len(VERDICTS)))]
        inputs = expected = None
        for _ in range(MAX_TRIES):
            candidate = _draw(rng, case, n_inputs, n)
            if candidate is None:
                continue
            found = evaluate(candidate)
            if _acceptable(case, found, candidate["highlighted"]):
                inputs, expected = candidate, found
                break
        if (
            inputs is None or expected is None
        ):  # never seen in practice; the variant check refuses it and the next draw is tried
            inputs = _draw(rng, case, n_inputs, n, strict=False)
            assert inputs is not None  # not strict: every input keeps its last try
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
                    "choices": list(VERDICTS),
                    "question": (
                        "Is the change large and consistent? Both (reliance), large but not "
                        "consistent (mixed), or not large (redundant)?"
                    ),
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
        m, token = inputs["n_inputs"], inputs["highlighted"] + 1
        n = len(inputs["K_1"])
        per_input = "; ".join(
            rf"input {i + 1}: $K_{i + 1} = {tex_matrix(inputs[f'K_{i + 1}'])}$, "
            rf"$V_{i + 1} = {tex_matrix(inputs[f'V_{i + 1}'])}$"
            for i in range(m)
        )
        return "\n\n".join(
            [
                rf"A one-head classifier reads out at its final [CLS] token (token {n}): "
                rf"$p = \sigma(w \cdot o + b)$ with $\sigma(z) = 1/(1 + e^{{-z}})$, where "
                r"$o = \operatorname{softmax}(q K^\top/\sqrt{d_k})\,V$ is the [CLS] row of the "
                rf"head's output, $q = {tex_vector(inputs['q'])}$ is the [CLS] query, "
                rf"$w = {tex_vector(inputs['w'])}$, $b = {inputs['b']}$ and $d_k = {D}$. "
                f"Rows 1 to {n} of $K$ and $V$ are tokens 1 to {n}.",
                per_input + ".",
                f"The heat map highlights **token {token}**. For each input give (1) `weights`: "
                f"the [CLS] row's attention weights over tokens 1 to {n}, one row per input; "
                f"(2) `p_with`: the probability; (3) `p_without`: the probability with token "
                rf"{token} removed, which in this one-head, one-layer model is masking it as a "
                r"key (its score becomes $-\infty$ in the [CLS] row, the other weights "
                "renormalise, everything else stays; with more layers the token would also have "
                "shaped the other tokens' vectors, and masking one key would not remove it); "
                "(4) `change` = `p_without` \N{MINUS SIGN} `p_with`. A change is small beside "
                "the probabilities, so it is checked on its own size: within 0.005 + 1% of the "
                "true change, widened by what your probabilities written to three decimals "
                "carry, not by the tolerance of the probabilities it comes from.",
                "(5) The verdict. The lesson's rule: a heat map is a hypothesis; remove the "
                "token and see whether the prediction moves. Is the change **large and "
                "consistent**? Yes: evidence of reliance. No: do not present the weight as "
                "why. The lesson's *no* has two halves that can fail, and this exercise names "
                "which one did. What counts as large, "
                f"|change| of at least {THRESHOLD}, is this exercise's choice, not the lesson's "
                f"(every change here is below {SMALL} or above {LARGE}). **reliance**: both "
                "halves hold, every change is large and all have the same sign (evidence of "
                "reliance, not of causation); **mixed**: some change is large, so on those "
                "inputs the prediction depends on the token, but the changes are not all large "
                "in one direction, so the token is not one consistent reason (do not present it "
                "as *the* reason); **redundant**: no change is large, so the prediction does not "
                "need the token *given the other tokens*. That is all it shows: the model may "
                "still use the token's value when another token carries the same information, "
                "and removing one token at a time cannot see that.",
                ROUNDING_RULE,
            ]
        )

    def answers_under(
        self, inputs: dict[str, Any], recipe: Mapping[str, Any], decimals: int | None = None
    ) -> dict[str, np.ndarray] | None:
        how = recipe.get("ablation")
        if recipe == {"scale": "none"}:
            weights, p_with, p_without = readouts(inputs, scale=False)
        elif recipe == {"mask": "zero_after"}:
            weights, p_with, p_without = readouts(inputs, renormalise=False)
        elif set(recipe) <= {"ablation"} and how in (None, *VERDICT_RECIPES):
            weights, p_with, p_without = readouts(inputs)
        else:
            return None
        if how == "query_mask":
            # Blocking the token's query row leaves the [CLS] row untouched: no change.
            p_without = p_with
        out: dict[str, Any] = {"weights": weights, "p_with": p_with, "p_without": p_without}
        if decimals is not None:
            out = {name: np.round(value, decimals) for name, value in out.items()}
        out["change"] = out["p_without"] - out["p_with"]
        if decimals is not None:
            out["change"] = np.round(out["change"], decimals)
        out["verdict"] = verdict(out["change"])
        mistaken = _mistaken_verdict(how, out["weights"], out["change"], inputs["highlighted"])
        if how in VERDICT_RECIPES[:3]:
            if mistaken is None:
                return None  # the mistake cannot be made on these numbers
            out["verdict"] = mistaken
        return out

    def follow_on(
        self,
        inputs: dict[str, Any],
        given: Mapping[str, np.ndarray],
        recipe: Mapping[str, Any] | None = None,
    ) -> dict[str, Follow]:
        recipe = recipe or {}
        how = recipe.get("ablation")
        if how in VERDICT_RECIPES[:3]:
            mistaken = _mistaken_verdict(
                how, given["weights"], given["change"], inputs["highlighted"]
            )
            if mistaken is None:
                return {}
            uses = ("change",) if how == "mixed_as_decoration" else ("weights",)
            words = "your changes" if how == "mixed_as_decoration" else "your weights"
            return {"verdict": Follow(mistaken, uses, words)}
        if recipe:
            return {}
        w, b = np.asarray(inputs["w"], dtype=float), float(inputs["b"])
        p_with = []
        for m in range(inputs["n_inputs"]):
            V = np.asarray(inputs[f"V_{m + 1}"], dtype=float)
            p_with.append(float(sigmoid(w @ (np.asarray(given["weights"][m]) @ V) + b)))
        change = np.asarray(given["p_without"]) - np.asarray(given["p_with"])
        expected, carried = evaluate(inputs), hand_slack(inputs)
        return {
            # The softmax by hand: each e^s (and the scaled score before it) written.
            "weights": Follow(expected["weights"], (), "the inputs", carried["weights"]),
            "p_with": Follow(np.array(p_with), ("weights",), "your weights", READOUT_SLACK),
            "p_without": Follow(
                expected["p_without"], (), "the inputs", carried["p_without"] - HALF_UNIT
            ),
            # A difference of two probabilities: inside their tolerance they may still be
            # far off a small change, so it is judged on its own size, widened by what the
            # probabilities written by hand carry.
            "change": Follow(
                change,
                ("p_with", "p_without"),
                "your probabilities",
                carried["p_with"] + carried["p_without"],
                own_size=True,
            ),
            "verdict": Follow(verdict(change), ("change",), "your changes"),
        }

    hints: ClassVar[dict[str, str]] = {
        "weights": "For each input, score the [CLS] query q against every key row of that "
        "input's K, divide by √dₖ, and take the softmax over the tokens (along the row): "
        f"{SOFTMAX_HOW}.",
        "p_with": "For each input, mix the value rows with your weights, o = a · V, then read "
        "out p = sigmoid(w · o + b), where sigmoid(z) = 1 / (1 + exp(−z)).",
        "p_without": "For each input, remove the highlighted token: its score becomes −∞ in "
        "the [CLS] row, the softmax of the other scores is taken again (they renormalise), "
        "then mix the values and read p out as before.",
        "change": "For each input, subtract: p_without − p_with, keeping the sign.",
        "verdict": "Decide from your changes, not from the weights: is every change at least "
        f"{THRESHOLD} in size, and do they all have the same sign?",
    }

    # Over 60 lines on purpose: each input's steps, with and without the token, read in the order they are worked.
    def worked_steps(
        self, inputs: dict[str, Any], solution: Mapping[str, Any], asks: list[dict[str, Any]]
    ) -> list[Step]:
        q, w = np.asarray(inputs["q"], dtype=float), np.asarray(inputs["w"], dtype=float)
        b, h = float(inputs["b"]), int(inputs["highlighted"])
        steps: list[Step] = []
        changes = []
        for m in range(inputs["n_inputs"]):
            K = np.asarray(inputs[f"K_{m + 1}"], dtype=float)
            V = np.asarray(inputs[f"V_{m + 1}"], dtype=float)
            blocked = np.zeros((1, K.shape[0]), dtype=bool)
            blocked[0, h] = True
            with_p = without_p = 0.0
            for mask, which in ((None, "with"), (blocked, "without")):
                # The [CLS] row through the engine, as cls_readout computes it.
                trace = engine.scaled_dot_product_attention(
                    q[None, :], K, V, mask=mask, scale=True, return_intermediates=True
                )
                tag, words = f"input_{m + 1}_{which}_", f"Input {m + 1}, token {h + 1} {which}: "
                if which == "without":
                    steps.append(
                        step(
                            f"{tag}masked",
                            f"{words}scores, token {h + 1} blocked",
                            trace.masked_scores[0],
                            "Its score becomes −∞; the others stay.",
                        )
                    )
                else:
                    steps.append(
                        step(
                            f"{tag}scores",
                            f"{words}scores q Kᵀ / √dₖ",
                            trace.scores[0],
                            f"The [CLS] query against each token's key, divided by √{D}.",
                        )
                    )
                steps += softmax_row_steps(
                    np.asarray(trace.masked_scores),
                    np.asarray(trace.weights),
                    part="weights" if mask is None else None,
                    prefix=tag,
                    label=words,
                    row_title="softmax of the [CLS] row",
                )
                steps[-1]["row"] = m if mask is None else None
                logit = float(w @ trace.output[0] + b)
                p = float(sigmoid(np.array(logit)))
                steps.append(
                    step(
                        f"{tag}p",
                        f"{words}p = sigmoid(w · o + b)",
                        p,
                        f"o = a · V = {nums_of(trace.output[0])}; w · o + b = {num(logit)}.",
                        part="p_with" if mask is None else "p_without",
                        row=m,
                    )
                )
                if mask is None:
                    with_p = p
                else:
                    without_p = p
            changes.append(without_p - with_p)
            steps.append(
                step(
                    f"input_{m + 1}_change",
                    f"Input {m + 1}: change",
                    without_p - with_p,
                    "p_without − p_with.",
                    part="change",
                    row=m,
                )
            )
        found = verdict(np.array(changes))
        steps.append(step("verdict", "Verdict", found, lesson_test_words(changes), part="verdict"))
        return steps

    def mistake_text(self, code: str, inputs: dict[str, Any]) -> str | None:
        """A verdict mistake in the lesson's words: its lead, then the lesson's test on
        this variant's changes and which half of it fails."""
        lead = VERDICT_LEADS.get(code)
        if lead is None:
            return None
        return f"{lead} {lesson_test_words(evaluate(inputs)['change'])}"

    def degenerate(self, generated: Generated) -> str | None:
        for z, sigma, blocked, _ in _cls_rows(generated.inputs):
            if softmax_by_hand_fails(z, None, sigma) or softmax_by_hand_fails(z, blocked, sigma):
                return "the exponentials of a row all but vanish at three decimals"
        return None


# From written weights: each coordinate of o written (|w| entries <= 1 over D of them),
# the logit w . o + b written, e^(-z) written (p = 1/(1 + E) moves by p^2 |dE| at most);
# sigmoid' <= 1/4.
READOUT_SLACK = 0.25 * (D + 1) * HALF_UNIT + HALF_UNIT


def _readout_slack(error: np.ndarray, V: np.ndarray, w: np.ndarray, logit: float) -> float:
    """How far p done by hand lands from the exact p (written to three decimals itself)
    when each weight is off by at most ``error``: each coordinate of o, the logit and
    e^(-z) written on the way.

    # (n,), (n, d), (d,), scalar -> scalar
    """
    dz = float(error @ (np.abs(V) @ np.abs(w))) + (np.abs(w).sum() + 1) * HALF_UNIT
    # The sigmoid's steepest slope over the logits the hand work may reach.
    nearest = np.array(max(abs(logit) - dz, 0.0))
    slope = float(sigmoid(nearest) * (1 - sigmoid(nearest)))
    return float(slope * dz + 2 * HALF_UNIT)


def _cls_rows(
    inputs: Mapping[str, Any],
) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """Per input: the [CLS] row's scores, how far each written score can be off, the
    highlighted key blocked, and V.

    # -> (1, n), (1, n), (1, n) bool (True = blocked), (n, d)
    """
    q, h = np.asarray(inputs["q"], dtype=float), int(inputs["highlighted"])
    root = float(np.sqrt(D))
    for m in range(inputs["n_inputs"]):
        K = np.asarray(inputs[f"K_{m + 1}"], dtype=float)
        z = (K @ q)[None] / root
        blocked = np.zeros(z.shape, dtype=bool)
        blocked[0, h] = True
        yield z, scaled_score_error(z, root), blocked, np.asarray(inputs[f"V_{m + 1}"], float)


def hand_slack(inputs: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """Per part: how far hand work (every step to three decimals, each e^s too, with or
    without the row's largest score subtracted) can land from the exact value.

    ``weights`` before they are written; ``p_with`` and ``p_without`` after, from weights
    written to three decimals (the masked ones renormalised from the same e^s). Every
    input's [CLS] row at once: each step works along a row.
    """
    w, b = np.asarray(inputs["w"], dtype=float), float(inputs["b"])
    z, sigma, blocked, V = (np.stack(part) for part in zip(*_cls_rows(inputs), strict=True))
    z, sigma, blocked = z[:, 0], sigma[:, 0], blocked[:, 0]  # (m, n): one row per input
    out = {}
    for part, mask in (("p_with", None), ("p_without", blocked)):
        a = engine.softmax(z if mask is None else np.where(mask, -np.inf, z))
        error = softmax_hand_slack(z, mask, sigma)
        written = np.where(a > 0, error + HALF_UNIT, 0.0)  # a masked weight is 0 exactly
        out[part] = np.array(
            [
                _readout_slack(written[m], V[m], w, float(w @ (a[m] @ V[m]) + b))
                for m in range(len(V))
            ]
        )
        if mask is None:
            out["weights"] = error
    return out


def nums_of(values: Any) -> str:
    return "(" + ", ".join(num(v) for v in np.asarray(values, dtype=float)) + ")"


def lesson_test_words(change: Any) -> str:
    """The lesson's test, large and consistent, applied to ``change``: which half fails."""
    found = verdict(change)
    large = f"|change| of at least {THRESHOLD}"
    if found == RELIANCE:
        return (
            "The lesson's test is large and consistent, and here both halves hold: every "
            f"change is large ({large}) and all point the same way. That is evidence of "
            "reliance (not of causation): reliance."
        )
    if found == MIXED:
        return (
            "The lesson's test is large and consistent, and here the consistent half fails: "
            f"some change is large ({large}), so on those inputs the prediction depends on the "
            "token, but not every change is large in one direction, so the token is not one "
            "consistent reason for the prediction: mixed."
        )
    return (
        "The lesson's test is large and consistent, and here the large half fails: no change "
        f"is large ({large}), so removing the token alone barely moves the prediction. That "
        "shows the prediction does not need this token given the others, not that the model "
        "ignores it (another token may carry the same information): redundant."
    )


# The verdict mistakes' leads: what the learner did, before the lesson's test on these changes.
VERDICT_LEADS = {
    "high_weight_as_reliance": "This takes the highest attention weight as reliance; a high "
    "weight is no evidence, the change when the token is removed is.",
    "low_weight_as_decoration": "This calls the token redundant because another token has more "
    "weight in some input; a lower weight is no evidence, the change when the token is "
    "removed is.",
    "mixed_as_decoration": "This calls large changes that are not consistent redundant.",
}


def _mistaken_verdict(how: str | None, weights: Any, change: Any, h: int) -> str | None:
    """The verdict a learner reaches by the mistaken rule ``how``, or None where that rule
    says nothing different from the lesson's.

    - weight_as_reliance: the token has the highest weight in every input, so "reliance";
    - low_weight_as_decoration: another token has more weight somewhere, so "redundant";
    - mixed_as_decoration: large changes in mixed directions called "redundant", the
      stricter rule that anything short of reliance is redundant.
    """
    if how == "weight_as_reliance":
        return RELIANCE if _top_everywhere(weights, int(h)) else None
    if how == "low_weight_as_decoration":
        return None if _top_everywhere(weights, int(h)) else REDUNDANT
    if how == "mixed_as_decoration":
        return REDUNDANT if verdict(change) == MIXED else None
    return None

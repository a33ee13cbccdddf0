# One module on purpose: the attention family and what every attention kind shares read together.
"""The attention family: one head on given Q, K and V (``AttentionFamily``) and the
``attention`` kind; with what every attention kind shares: the sizes, the scale parameter
and its rule, the mask's words and the prompt.

The numbers come from ``exercises.kinds.recipes`` (which states the mask convention);
``projection``, ``masked`` and ``multi_head`` build on this module.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from exercises import engine, predictions
from exercises.kinds.base import (
    ROUNDING_RULE,
    ExerciseKind,
    Follow,
    Generated,
    ParamError,
    ParamSpec,
    as_json,
    register,
    tex_matrix,
)
from exercises.kinds.recipes import (
    attention_by_recipe,
    causal,
    hand_fails,
    mix_by_recipe,
    output_degenerate,
    score_error,
    scores_by_recipe,
    trailing_padding,
    weights_by_recipe,
    weights_degenerate,
    weights_slack,
)
from exercises.kinds.worked import SOFTMAX_HOW, Step, attention_steps

SIZE_HELP = "Number of tokens (rows of Q, K and V)."
MAX_TOKENS = 8
MAX_WIDTH = 8

ATTENTION_MISTAKES: tuple[str, ...] = (
    "no_scale",
    "no_mask",
    "mask_after_softmax",
    "mask_as_zero_score",
    "softmax_over_queries",
    "scores_transposed",
    "k_not_transposed",
    "weights_transposed_in_output",
    "divided_by_d_k",
    "causal_mask_transposed",
    "padding_on_queries",
    "padded_rows_zeroed",
)

SCALE_SPEC = ParamSpec(
    "bool", True, "Divide the scores by √dₖ (needs dₖ of at least 2 to be tested)."
)
STEPS_SCALED = r"the scores $S = QK^\top/\sqrt{d_k}$"
STEPS_UNSCALED = r"the scores $S = QK^\top$ (no scaling in this exercise)"


def scale_width_rule(field: str, **unless: list[str]) -> dict[str, Any]:
    """The schema of ``scale_needs_width``: scale off, or ``field`` at least 2 (or a
    parameter in ``unless`` taking one of its values, absent meaning its default)."""
    branches: list[dict[str, Any]] = [
        {"required": ["scale"], "properties": {"scale": {"enum": [False]}}},
        {"properties": {field: {"minimum": 2}}},
    ]
    branches += [{"properties": {name: {"enum": values}}} for name, values in unless.items()]
    return {"anyOf": branches}


def scale_needs_width(params: dict[str, Any], field: str) -> None:
    """Dividing by sqrt(1) changes nothing, so a scaled exercise needs d_k >= 2 to test it."""
    if params.get("scale") and params[field] < 2:
        raise ParamError(
            field,
            f"Expected at least 2 when scale is on, got {params[field]}: with a width of 1 "
            "dividing by sqrt(d_k) changes nothing, so the exercise could not tell a missing "
            "scale from the right answer. Turn scale off or widen the heads.",
        )


def input_arrays(inputs: Mapping[str, Any], *names: str) -> list[np.ndarray]:
    """The named inputs (stored JSON) as float arrays."""
    return [np.asarray(inputs[name], dtype=float) for name in names]


def mask_words(mask_kind: str) -> str:
    """The prompt's sentence on the mask ("causal" or "padding"; none for any other)."""
    if mask_kind == "causal":
        return " A causal mask blocks every key after the query's own position."
    if mask_kind == "padding":
        return " A padding mask blocks the padded keys for every query."
    return ""


def attention_prompt(
    lead: str,
    Q: np.ndarray,
    K: np.ndarray,
    V: np.ndarray | None,
    mask: np.ndarray,
    scale: bool,
    asks: str,
) -> str:
    """``V`` None: the exercise asks for the weights only, so no values are shown."""
    d_k = Q.shape[1]
    blocked = bool(mask.any())
    values = "" if V is None else rf", $V = {tex_matrix(V)}$"
    parts = [
        lead,
        rf"$Q = {tex_matrix(Q)}$, $K = {tex_matrix(K)}${values}, with $d_k = {d_k}$.",
    ]
    if blocked:
        parts.append(
            rf"The mask (T = blocked, the score becomes $-\infty$ before the softmax) is "
            rf"${tex_matrix(mask)}$."
        )
    parts.append(asks)
    parts.append(ROUNDING_RULE)
    return "\n\n".join(parts)


def scores_hint(scale: bool) -> str:
    """The hint for the scores: QKᵀ, entry by entry, and the scale."""
    return (
        "Score every query against every key: entry (i, j) is the dot product of row i of Q "
        "with row j of K, so the scores are QKᵀ, one row per query and one column per key"
        + (", each entry then divided by √dₖ" if scale else " (left unscaled here)")
    )


def weights_hint(from_scores: bool, scale: bool) -> str:
    """The hint for the weights: the softmax of each row, over the keys."""
    lead = "From your scores" if from_scores else scores_hint(scale) + ". Then"
    return (
        f"{lead}, set each blocked entry to −∞ and take the softmax of each row, over the "
        f"keys (along the row, never down a column): {SOFTMAX_HOW}."
    )


OUTPUT_HINT = (
    "Multiply your weights by V: output row i is the sum over the keys j of weight (i, j) "
    "times value row j (AV, one row per query, as wide as V)."
)


def predict_first(generated: Generated, how: str, rng: np.random.Generator) -> Generated:
    """``generated`` with the prediction ``how`` asked first (unchanged for "none")."""
    if how == "none":
        return generated
    weights, mask = generated.solution["weights"], generated.inputs["mask"]
    if how == "token_0":
        question = predictions.first_token_question(weights)
    else:
        question = predictions.top_key_question(weights, mask, rng)
    return predictions.with_prediction(generated, question)


class AttentionFamily(ExerciseKind):
    """One head on given Q, K, V; ``asked`` lists the parts of the chain the kind asks for."""

    mistakes = ATTENTION_MISTAKES
    asked: tuple[str, ...] = ("scores", "weights", "output")

    def finish_params(self, params: dict[str, Any]) -> dict[str, Any]:
        scale_needs_width(params, "d_k")
        return params

    def params_rules(self) -> list[dict[str, Any]]:
        return [scale_width_rule("d_k")]

    def answers_under(
        self, inputs: dict[str, Any], recipe: Mapping[str, Any], decimals: int | None = None
    ) -> dict[str, np.ndarray] | None:
        Q, K, V = input_arrays(inputs, "Q", "K", "V")
        mask = np.asarray(inputs["mask"], dtype=bool)
        out = attention_by_recipe(
            Q, K, V, mask, bool(inputs.get("scale", True)), recipe, decimals=decimals
        )
        return None if out is None else {name: out[name] for name in self.asked}

    def follow_on(
        self,
        inputs: dict[str, Any],
        given: Mapping[str, np.ndarray],
        recipe: Mapping[str, Any] | None = None,
    ) -> dict[str, Follow]:
        recipe = recipe or {}
        out: dict[str, Follow] = {}
        mask = np.asarray(inputs["mask"], dtype=bool)
        if "scores" in self.asked:
            weights = weights_by_recipe(given["scores"], mask, recipe)
            if weights is not None:
                slack = weights_slack(given["scores"], mask, recipe)
                out["weights"] = Follow(weights, ("scores",), "your scores", slack)
        else:
            found = self._scores(inputs, recipe)
            weights = None if found is None else weights_by_recipe(found[0], mask, recipe)
            if found is not None and weights is not None:
                # The scores are not asked: the weights follow from the inputs, with what
                # writing the scores and each e^s by hand carries.
                slack = weights_slack(found[0], mask, recipe, found[1])
                out["weights"] = Follow(weights, (), "the inputs", slack)
        if "output" in self.asked:
            (V,) = input_arrays(inputs, "V")
            output = mix_by_recipe(given["weights"], V, recipe)
            if output is not None:
                out["output"] = Follow(output, ("weights",), "your weights")
        return out

    @staticmethod
    def _scores(
        inputs: Mapping[str, Any], recipe: Mapping[str, Any]
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """The exact scores the recipe computes, and how far writing them by hand moves them."""
        Q, K = input_arrays(inputs, "Q", "K")
        scale = bool(inputs.get("scale", True))
        scores = scores_by_recipe(Q, K, scale, recipe)
        if scores is None:
            return None
        return scores, score_error(scores, scale, recipe, Q.shape[1])

    def hint(self, part: str, inputs: dict[str, Any]) -> str:
        scale = bool(inputs.get("scale", True))
        if part == "scores":
            return scores_hint(scale) + ". The mask comes later: these are the scores before it."
        if part == "weights":
            return weights_hint("scores" in self.asked, scale)
        if part == "output":
            return OUTPUT_HINT
        return super().hint(part, inputs)

    def worked_steps(
        self, inputs: dict[str, Any], solution: Mapping[str, Any], asks: list[dict[str, Any]]
    ) -> list[Step]:
        Q, K = input_arrays(inputs, "Q", "K")
        # The weights-only kinds give no values: any stand-in mixes nothing that is shown.
        V = np.asarray(inputs["V"], dtype=float) if "V" in inputs else np.zeros((len(Q), 1))
        mask = np.asarray(inputs["mask"], dtype=bool)
        scale = bool(inputs.get("scale", True))
        trace = engine.scaled_dot_product_attention(
            Q, K, V, mask=mask if mask.any() else None, scale=scale, return_intermediates=True
        )
        parts = {p: (p if p in self.asked else None) for p in ("scores", "weights", "output")}
        return attention_steps(trace, mask, scale, Q.shape[1], parts=parts)

    def degenerate(self, generated: Generated) -> str | None:
        mask = np.asarray(generated.inputs["mask"], dtype=bool)
        reason = weights_degenerate(np.asarray(generated.solution["weights"]), mask)
        if reason is None and "output" in generated.solution:
            reason = output_degenerate(generated.solution["output"], generated.atol)
        found = self._scores(generated.inputs, {})
        if reason is None and found is not None:
            reason = hand_fails(found[0], mask, found[1])
        return reason or predictions.question_problem(generated)


@register
class AttentionKind(AttentionFamily):
    name = "attention"
    title = "Scaled dot-product attention by hand"
    description = (
        "Given Q, K and V for a few tokens, compute the scores, the row-wise softmax "
        "weights and the output of one attention head."
    )
    params: ClassVar[dict[str, ParamSpec]] = {
        "n": ParamSpec("int", 3, SIZE_HELP, 2, MAX_TOKENS),
        "d_k": ParamSpec(
            "int", 2, "Width of queries and keys (at least 2 with scale on).", 1, MAX_WIDTH
        ),
        "d_v": ParamSpec("int", 2, "Width of the values.", 1, MAX_WIDTH),
        "mask": ParamSpec(
            "choice", "none", "Which keys are blocked.", choices=("none", "causal", "padding")
        ),
        "scale": SCALE_SPEC,
        "max_abs": ParamSpec("int", 2, "Entries are integers from -max_abs to max_abs.", 1, 5),
        "predict": ParamSpec(
            "choice",
            "none",
            "Ask a prediction first: 'top_key' (which key gets the most weight in a row), "
            "'uniform' (is a row that reads two keys or more uniform? in half the variants "
            "its scores are equal).",
            choices=("none", "top_key", "uniform"),
        ),
    }

    def finish_params(self, params: dict[str, Any]) -> dict[str, Any]:
        if params["mask"] == "padding" and params["n"] < 3:
            raise ParamError(
                "n",
                f"Expected at least 3 tokens with a padding mask, got {params['n']}: two real "
                "tokens and at least one padded one.",
            )
        return super().finish_params(params)

    def params_rules(self) -> list[dict[str, Any]]:
        padding_needs_three = {
            "anyOf": [
                {"properties": {"mask": {"enum": ["none", "causal"]}}},
                {"properties": {"n": {"minimum": 3}}},
            ]
        }
        return [*super().params_rules(), padding_needs_three]

    def generate(self, params: dict[str, Any], rng: np.random.Generator) -> Generated:
        generated, row = self._generate(params, rng)
        if row is not None:
            question = predictions.uniform_question(
                generated.solution["weights"], generated.inputs["mask"], row
            )
            return predictions.with_prediction(generated, question)
        return predict_first(generated, params["predict"], rng)

    def _generate(
        self, params: dict[str, Any], rng: np.random.Generator
    ) -> tuple[Generated, int | None]:
        """The variant, and the row a "uniform" prediction asks about (else None)."""
        n, d_k, d_v, hi = params["n"], params["d_k"], params["d_v"], params["max_abs"]
        ints = rng.integers(-hi, hi + 1, size=n * (2 * d_k + d_v))
        Qi = ints[: n * d_k].reshape(n, d_k)
        Ki = ints[n * d_k : 2 * n * d_k].reshape(n, d_k)
        Vi = ints[2 * n * d_k :].reshape(n, d_v)
        mask = _drawn_mask(params["mask"], n, rng)
        row = _uniform_row(params["predict"], mask, Qi, Ki, rng)
        scale = params["scale"]
        trace = engine.scaled_dot_product_attention(
            Qi.astype(float),
            Ki.astype(float),
            Vi.astype(float),
            mask=mask if mask.any() else None,
            scale=scale,
            return_intermediates=True,
        )
        asks = (
            f"Compute (1) {STEPS_SCALED if scale else STEPS_UNSCALED} before masking, "
            r"(2) the weights $A$: the softmax of each row of $S$ after masking, and "
            r"(3) the output $AV$."
        )
        prompt = attention_prompt(
            f"{n} tokens have queries $Q$, keys $K$ and values $V$, one row per token."
            + mask_words(params["mask"]),
            Qi,
            Ki,
            Vi,
            mask,
            scale,
            asks,
        )
        generated = self.variant(
            prompt=prompt,
            inputs={
                "Q": Qi.tolist(),
                "K": Ki.tolist(),
                "V": Vi.tolist(),
                "mask": mask.tolist(),
                "scale": scale,
            },
            asks=[
                {"name": "scores", "shape": [n, n]},
                {"name": "weights", "shape": [n, n]},
                {"name": "output", "shape": [n, d_v]},
            ],
            solution={
                "scores": as_json(trace.scores),
                "weights": as_json(trace.weights),
                "output": as_json(trace.output),
            },
        )
        return generated, row


def _drawn_mask(kind: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """# kind, n -> (n, n) bool: the mask an ``attention`` variant asks for."""
    if kind == "causal":
        return causal(n)
    if kind == "padding":
        # At least two real tokens, so the weights depend on the scores.
        return trailing_padding(n, n, int(rng.integers(1, n - 1)))
    return np.zeros((n, n), dtype=bool)


def _uniform_row(
    predict: str, mask: np.ndarray, Q: np.ndarray, K: np.ndarray, rng: np.random.Generator
) -> int | None:
    """For ``predict: uniform``, the row asked about; in half the variants its scores are
    made equal, so that row alone spreads its weight evenly. None for other predictions."""
    if predict != "uniform":
        return None
    row = predictions.uniform_row(mask, rng)
    if rng.random() < 0.5:
        _equal_scores(Q, K, row)
    return row


def _equal_scores(Q: np.ndarray, K: np.ndarray, row: int) -> None:
    """Make every score of query ``row`` equal, in place: the query reads one column in
    which every key agrees (or, one column wide, the query is 0).

    # (n, d_k), (n, d_k), row -> None
    """
    if Q.shape[1] == 1:
        Q[row] = 0
        return
    Q[row, 1:] = 0
    if Q[row, 0] == 0:
        Q[row, 0] = 1
    K[:, 0] = K[0, 0]

# One module on purpose: the attention kinds share the recipes (scores, weights, mix) above them.
"""Kinds computed through one or several attention heads.

Mask convention (the seeds' ``np.triu(..., k=1)``): ``mask[i, j]`` True means query i
may not read key j; that score becomes minus infinity before the softmax.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from exercises import engine, predictions
from exercises.kinds.base import (
    HALF_UNIT,
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
from exercises.kinds.hand import (
    scaled_score_error,
    softmax_by_hand,
    softmax_by_hand_fails,
    softmax_hand_slack,
)

SIZE_HELP = "Number of tokens (rows of Q, K and V)."
MAX_TOKENS = 8
MAX_WIDTH = 8

# The lesson's application: "bag delayed refund" as one-hot rows, hand-set projections.
LESSON_X = np.eye(3)
LESSON_W_Q = np.array([[1, 0], [0, 1], [1, 1]])
LESSON_W_K = np.array([[1, 0], [1, 1], [0, 1]])
LESSON_W_V = np.array([[2, 0], [0, 2], [1, 1]])
LESSON_TOKENS = ("bag", "delayed", "refund")

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
)


def causal(n: int) -> np.ndarray:
    return np.triu(np.ones((n, n), dtype=bool), k=1)


def trailing_padding(n_q: int, n_k: int, n_pad: int) -> np.ndarray:
    mask = np.zeros((n_q, n_k), dtype=bool)
    if n_pad:
        mask[:, n_k - n_pad :] = True
    return mask


def _r(a: np.ndarray, decimals: int | None) -> np.ndarray:
    return a if decimals is None else np.round(a, decimals)


def scores_by_recipe(
    Q: np.ndarray,
    K: np.ndarray,
    scale: bool,
    recipe: Mapping[str, Any],
    d_model: int | None = None,
    decimals: int | None = None,
) -> np.ndarray | None:
    """# (n_q, d_k), (n_k, d_k) -> (n_q, n_k): the scores before masking, as ``recipe`` says.

    Recipe keys: ``scores`` ("k_q": K Q^T, "q_k": Q K without transpose) and ``scale``
    ("none", "d_k": divided by d_k, "sqrt_d_model"). None when the mistake cannot be
    made with these shapes or would change nothing (no scale to forget, d_k = 1).
    ``decimals`` divides by the square root written to that many decimals, as hand work does.
    """
    how = _scale_how(scale, recipe, Q.shape[1], d_model)
    raw = None if how is None else _raw_scores(Q, K, recipe.get("scores"))
    if raw is None:
        return None
    scores: np.ndarray = raw / _r(np.asarray(score_divisor(how, Q.shape[1], d_model)), decimals)
    return scores


def score_divisor(how: str | None, d_k: int, d_model: int | None = None) -> float:
    """What the recipe's scale divides Q K^T by."""
    if how == "sqrt_dk":
        return float(np.sqrt(d_k))
    if how == "d_k":
        return float(d_k)
    if how == "sqrt_d_model":
        return float(np.sqrt(d_model or d_k))
    return 1.0


def _scale_how(scale: bool, recipe: Mapping[str, Any], d_k: int, d_model: int | None) -> str | None:
    """How the recipe scales the scores, or None when its scale mistake cannot be made."""
    how = recipe.get("scale")
    if how is None:
        return "sqrt_dk" if scale else "none"
    if not scale:
        return None  # every scale mistake needs an exercise that scales
    if (how == "d_k" and d_k == 1) or (how == "sqrt_d_model" and (not d_model or d_model == d_k)):
        return None
    return str(how)


def _raw_scores(Q: np.ndarray, K: np.ndarray, order: object) -> np.ndarray | None:
    """# (n_q, d_k), (n_k, d_k) -> (n_q, n_k): Q K^T, or the recipe's wrong order of it."""
    n_q, d_k = Q.shape
    n_k = K.shape[0]
    raw: np.ndarray
    if order == "k_q":
        if n_q != n_k:
            return None
        raw = K @ Q.T
    elif order == "q_k":
        if n_k != d_k:
            return None
        raw = Q @ K
    else:
        raw = Q @ K.T
    return raw


def score_error(
    scores: np.ndarray,
    scale: bool,
    recipe: Mapping[str, Any],
    d_k: int,
    d_model: int | None = None,
    *,
    whole: bool = True,
) -> np.ndarray:
    """How far a score written by hand (the square root and the quotient written to three
    decimals) can be off; 0 for dot products of whole numbers left unscaled (``whole``)."""
    how = _scale_how(scale, recipe, d_k, d_model)
    if how in ("sqrt_dk", "sqrt_d_model"):
        return scaled_score_error(scores, score_divisor(how, d_k, d_model))
    return np.full(np.shape(scores), 0.0 if whole and how != "d_k" else HALF_UNIT)


def _blocked_padding(mask: np.ndarray) -> np.ndarray:
    """The positions every query blocks as keys: the padded tokens."""
    return np.asarray(mask.all(axis=0))


def _recipe_logits(
    scores: np.ndarray, mask: np.ndarray, recipe: Mapping[str, Any]
) -> tuple[np.ndarray, np.ndarray] | None:
    """What the recipe's softmax reads (minus infinity where it blocks) and which cells it
    zeroes afterwards; None when the recipe's mask mistake cannot be made here.

    Mask recipes: "ignored", "zero_after" (blocked weights zeroed after the softmax),
    "zero_score" (blocked scores set to 0), "transposed" (the mask's transpose: a causal
    mask then blocks the past) and "queries" (the padded positions blocked as queries: their
    rows zero, the real rows read every key).
    """
    mode = recipe.get("mask", "before")
    zero = np.zeros(mask.shape, dtype=bool)
    if mode != "before" and not mask.any():
        return None
    if mode == "before":
        return np.where(mask, -np.inf, scores), zero
    if mode == "zero_score":
        return np.where(mask, 0.0, scores), zero
    if mode == "zero_after":
        return scores, mask
    if mode == "transposed":
        if mask.shape[0] != mask.shape[1] or (mask == mask.T).all() or mask.T.all(axis=1).any():
            return None
        return np.where(mask.T, -np.inf, scores), zero
    if mode == "queries":
        padded = _blocked_padding(mask)
        if not padded.any() or mask.shape[0] != mask.shape[1]:
            return None
        return scores, np.broadcast_to(padded[:, None], mask.shape)
    return scores, zero  # "ignored"


@np.errstate(over="ignore", under="ignore", invalid="ignore")
def weights_by_recipe(
    scores: np.ndarray,
    mask: np.ndarray,
    recipe: Mapping[str, Any],
    decimals: int | None = None,
) -> np.ndarray | None:
    """# (n_q, n_k) scores, (n_q, n_k) bool -> (n_q, n_k) weights, as ``recipe`` says.

    Recipe keys: ``mask`` (see ``_recipe_logits``) and ``softmax_axis`` (0 = down each
    column; a column every query blocks then stays 0). None when the mistake cannot be
    made (no mask to forget). ``decimals`` does the softmax by hand (``softmax_by_hand``).
    """
    found = _recipe_logits(scores, mask, recipe)
    if found is None:
        return None
    z, zeroed = found
    down = recipe.get("softmax_axis", -1) == 0
    if down:
        z = z.T
    live = np.isfinite(z).any(axis=1)
    if not live.any():
        return None
    weights = np.zeros(z.shape)
    try:
        weights[live] = (
            engine.softmax(z[live]) if decimals is None else softmax_by_hand(z[live], decimals)
        )
    except ValueError:
        return None
    if not down and not live.all():
        return None  # a query with every key blocked: the recipe cannot be followed
    if down:
        weights = weights.T
    out: np.ndarray = np.where(zeroed, 0.0, weights)
    return out


def weights_slack(
    scores: np.ndarray,
    mask: np.ndarray,
    recipe: Mapping[str, Any],
    error: Any = 0.0,
) -> Any:
    """# (n_q, n_k) -> (n_q, n_k): how far ``weights_by_recipe`` done by hand can land from
    the exact weights (``softmax_hand_slack``); ``error`` bounds each written score's error."""
    found = _recipe_logits(scores, mask, recipe)
    if found is None:
        return 0.0
    z, zeroed = found
    sigma = np.broadcast_to(np.asarray(error, dtype=float), z.shape)
    if recipe.get("softmax_axis", -1) == 0:
        slack = softmax_hand_slack(z.T, None, sigma.T).T
    else:
        slack = softmax_hand_slack(z, None, sigma)
    return np.where(zeroed, 0.0, slack)


def hand_fails(scores: np.ndarray, mask: np.ndarray, error: Any = 0.0) -> str | None:
    """Why the lesson's softmax by hand cannot be done on these scores, or None."""
    if softmax_by_hand_fails(np.where(mask, -np.inf, scores), None, error):
        return "the exponentials of a row all but vanish at three decimals"
    return None


def mix_by_recipe(
    weights: np.ndarray, V: np.ndarray, recipe: Mapping[str, Any]
) -> np.ndarray | None:
    """# (n_q, n_k), (n_k, d_v) -> (n_q, d_v); ``mix`` "a_t_v" is A^T V (square A only)."""
    if recipe.get("mix") == "a_t_v":
        if weights.shape[0] != weights.shape[1]:
            return None
        mixed: np.ndarray = weights.T @ V
    else:
        mixed = weights @ V
    return mixed


def attention_by_recipe(
    Q: np.ndarray,
    K: np.ndarray,
    V: np.ndarray,
    mask: np.ndarray,
    scale: bool,
    recipe: Mapping[str, Any],
    d_model: int | None = None,
    decimals: int | None = None,
) -> dict[str, np.ndarray] | None:
    """One head computed the way ``recipe`` says; the empty recipe is the right way.

    # (n, d_k), (n, d_k), (n, d_v), (n, n) bool -> scores (n, n), weights (n, n), output (n, d_v)
    ``decimals`` does it by hand: the square root, the scores, each e^s, the weights and
    the output written to that many decimals. Returns None when the mistake cannot be
    made with these inputs.
    """
    scores = scores_by_recipe(Q, K, scale, recipe, d_model, decimals)
    if scores is None:
        return None
    scores = _r(scores, decimals)
    weights = weights_by_recipe(scores, mask, recipe, decimals)
    if weights is None:
        return None
    weights = _r(weights, decimals)
    output = mix_by_recipe(weights, V, recipe)
    if output is None:
        return None
    return {"scores": scores, "weights": weights, "output": _r(output, decimals)}


def weights_degenerate(weights: np.ndarray, mask: np.ndarray) -> str | None:
    """Every row that may read two or more keys spreads its weight evenly: nothing to compute."""
    open_ = ~np.asarray(mask, dtype=bool)
    rows = open_.sum(axis=1) >= 2
    if not rows.any():
        return "no query can read more than one key"
    w, o = np.asarray(weights)[rows], open_[rows]
    even = np.where(o, 1.0 / o.sum(axis=1, keepdims=True), 0.0)
    if np.abs(w - even).max() < 1e-9:
        return "every row of the weights is uniform"
    return None


def output_degenerate(output: np.ndarray, atol: float) -> str | None:
    if np.abs(np.asarray(output, dtype=float)).max() <= atol:
        return "the output is all zeros"
    return None


def scale_width_rule(field: str, **unless: list[Any]) -> dict[str, Any]:
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


def _arrays(inputs: Mapping[str, Any], *names: str) -> list[np.ndarray]:
    return [np.asarray(inputs[name], dtype=float) for name in names]


def _mask_words(mask_kind: str) -> str:
    if mask_kind == "causal":
        return " A causal mask blocks every key after the query's own position."
    if mask_kind == "padding":
        return " A padding mask blocks the padded keys for every query."
    return ""


SCALE_SPEC = ParamSpec(
    "bool", True, "Divide the scores by sqrt(d_k) (needs d_k of at least 2 to be tested)."
)
STEPS_SCALED = r"the scores $S = QK^\top/\sqrt{d_k}$"
STEPS_UNSCALED = r"the scores $S = QK^\top$ (no scaling in this exercise)"


def _attention_prompt(
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


class _AttentionFamily(ExerciseKind):
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
        Q, K, V = _arrays(inputs, "Q", "K", "V")
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
            (V,) = _arrays(inputs, "V")
            output = mix_by_recipe(given["weights"], V, recipe)
            if output is not None:
                out["output"] = Follow(output, ("weights",), "your weights")
        return out

    @staticmethod
    def _scores(
        inputs: Mapping[str, Any], recipe: Mapping[str, Any]
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """The exact scores the recipe computes, and how far writing them by hand moves them."""
        Q, K = _arrays(inputs, "Q", "K")
        scale = bool(inputs.get("scale", True))
        scores = scores_by_recipe(Q, K, scale, recipe)
        if scores is None:
            return None
        return scores, score_error(scores, scale, recipe, Q.shape[1])

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
class AttentionKind(_AttentionFamily):
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
        return _predict_first(generated, params["predict"], rng)

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
        prompt = _attention_prompt(
            f"{n} tokens have queries $Q$, keys $K$ and values $V$, one row per token."
            + _mask_words(params["mask"]),
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


@register
class ProjectionKind(ExerciseKind):
    name = "projection"
    title = "From tokens to queries, keys and values"
    description = (
        "Project the token matrix X with W_Q, W_K and W_V, then compute the weights and "
        "output of the head. The default uses the lesson's 'bag delayed refund' tokens."
    )
    params: ClassVar[dict[str, ParamSpec]] = {
        "preset": ParamSpec(
            "choice",
            "lesson",
            "'lesson' uses the lesson's one-hot tokens and hand-set projections (sizes 3, 3, 2); "
            "'random' draws X and the projections.",
            choices=("lesson", "random"),
        ),
        "vary": ParamSpec(
            "bool",
            True,
            "With preset 'lesson': true draws a sequence of the lesson's tokens for each "
            "variant (another order, a token repeated); false gives the lesson's worked "
            "example exactly (bag, delayed, refund).",
        ),
        "n": ParamSpec("int", 3, SIZE_HELP + " Only with preset 'random'.", 2, MAX_TOKENS),
        "d_model": ParamSpec(
            "int",
            3,
            "Width of the token vectors. Only with preset 'random'. At least 2: one column "
            "wide, every score matrix is symmetric (Q K^T and K Q^T agree) and one-hot tokens "
            "are all alike, so no variant could tell right from wrong.",
            2,
            MAX_WIDTH,
        ),
        "d_k": ParamSpec(
            "int",
            2,
            "Width of queries, keys and values (at least 2 with scale on). Only with preset "
            "'random'.",
            1,
            MAX_WIDTH,
        ),
        "x": ParamSpec(
            "choice",
            "one_hot",
            "Token rows: one-hot vectors or small integers. Only with preset 'random'.",
            choices=("one_hot", "integers"),
        ),
        "mask": ParamSpec("choice", "none", "Which keys are blocked.", choices=("none", "causal")),
        "scale": SCALE_SPEC,
    }
    mistakes = (*ATTENTION_MISTAKES, "w_q_w_k_swapped", "sqrt_d_model_in_projection")

    def finish_params(self, params: dict[str, Any]) -> dict[str, Any]:
        if params["preset"] == "lesson":
            # The lesson's sizes are fixed; store them so the saved parameters tell the truth.
            params.update(n=3, d_model=3, d_k=2, x="one_hot")
        scale_needs_width(params, "d_k")
        return params

    def params_rules(self) -> list[dict[str, Any]]:
        return [scale_width_rule("d_k", preset=["lesson"])]

    @staticmethod
    def _draw(
        params: dict[str, Any], rng: np.random.Generator
    ) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray], list[str] | None, str]:
        """``(X, (W_Q, W_K, W_V), tokens, lead)``: the lesson's tokens, or drawn ones."""
        n, d_model, d_k = params["n"], params["d_model"], params["d_k"]
        if params["preset"] == "lesson":
            order = [0, 1, 2]
            if params["vary"]:
                # Another sequence of the lesson's tokens for every variant, never one token thrice.
                order = rng.integers(0, 3, size=3).tolist()
                while len(set(order)) < 2:
                    order = rng.integers(0, 3, size=3).tolist()
            tokens = [LESSON_TOKENS[i] for i in order]
            lead = (
                "The lesson's tokens *bag*, *delayed* and *refund* are the one-hot vectors "
                "(1, 0, 0), (0, 1, 0) and (0, 0, 1), with hand-set (not learned) projections. "
                f"The sequence *{' '.join(tokens)}* is $X$, one row per token, so each "
                "token's query is its row of $W_Q$."
            )
            return LESSON_X.astype(int)[order], (LESSON_W_Q, LESSON_W_K, LESSON_W_V), tokens, lead
        if params["x"] == "one_hot":
            Xi = np.eye(d_model, dtype=int)[rng.integers(0, d_model, size=n)]
        else:
            Xi = rng.integers(0, 3, size=(n, d_model))
        W = rng.integers(-1, 3, size=(3, d_model, d_k))
        lead = f"{n} tokens are the rows of $X$ ($d_{{model}} = {d_model}$)."
        return Xi, (W[0], W[1], W[2]), None, lead

    def generate(self, params: dict[str, Any], rng: np.random.Generator) -> Generated:
        n, d_k = params["n"], params["d_k"]
        Xi, (Wq, Wk, Wv), tokens, lead = self._draw(params, rng)
        mask = causal(n) if params["mask"] == "causal" else np.zeros((n, n), dtype=bool)
        Q, K, V = engine.project(
            Xi.astype(float), Wq.astype(float), Wk.astype(float), Wv.astype(float)
        )
        trace = engine.scaled_dot_product_attention(
            Q,
            K,
            V,
            mask=mask if mask.any() else None,
            scale=params["scale"],
            return_intermediates=True,
        )
        scale_words = (
            r"$\operatorname{softmax}(QK^\top/\sqrt{d_k})$"
            if params["scale"]
            else (r"$\operatorname{softmax}(QK^\top)$ (no scaling in this exercise)")
        )
        prompt = "\n\n".join(
            [
                lead + _mask_words(params["mask"]),
                rf"$X = {tex_matrix(Xi)}$, $W_Q = {tex_matrix(Wq)}$, $W_K = {tex_matrix(Wk)}$, "
                rf"$W_V = {tex_matrix(Wv)}$.",
                rf"Compute $Q = XW_Q$, $K = XW_K$, $V = XW_V$ (each of width $d_k = {d_k}$), "
                rf"the weights $A$ = {scale_words} row by row (masked keys get $-\infty$ "
                r"first) and the output $AV$.",
                ROUNDING_RULE,
            ]
        )
        inputs = {
            "X": Xi.tolist(),
            "W_Q": Wq.tolist(),
            "W_K": Wk.tolist(),
            "W_V": Wv.tolist(),
            "mask": mask.tolist(),
            "scale": params["scale"],
        }
        if tokens is not None:
            inputs["tokens"] = tokens
        return self.variant(
            prompt=prompt,
            inputs=inputs,
            asks=[
                {"name": "Q", "shape": [n, d_k]},
                {"name": "K", "shape": [n, d_k]},
                {"name": "V", "shape": [n, d_k]},
                {"name": "weights", "shape": [n, n]},
                {"name": "output", "shape": [n, d_k]},
            ],
            solution={
                "Q": as_json(Q),
                "K": as_json(K),
                "V": as_json(V),
                "weights": as_json(trace.weights),
                "output": as_json(trace.output),
            },
        )

    def answers_under(
        self, inputs: dict[str, Any], recipe: Mapping[str, Any], decimals: int | None = None
    ) -> dict[str, np.ndarray] | None:
        X, Wq, Wk, Wv = _arrays(inputs, "X", "W_Q", "W_K", "W_V")
        mask = np.asarray(inputs["mask"], dtype=bool)
        if recipe.get("projection") == "w_q_w_k_swapped":
            if np.array_equal(Wq, Wk):
                return None
            Wq, Wk = Wk, Wq
        Q, K, V = (_r(X @ W, decimals) for W in (Wq, Wk, Wv))
        out = attention_by_recipe(
            Q, K, V, mask, bool(inputs["scale"]), recipe, X.shape[1], decimals=decimals
        )
        if out is None:
            return None
        return {"Q": Q, "K": K, "V": V, "weights": out["weights"], "output": out["output"]}

    def follow_on(
        self,
        inputs: dict[str, Any],
        given: Mapping[str, np.ndarray],
        recipe: Mapping[str, Any] | None = None,
    ) -> dict[str, Follow]:
        recipe = recipe or {}
        mask = np.asarray(inputs["mask"], dtype=bool)
        scale, d_model = bool(inputs["scale"]), len(inputs["X"][0])
        out: dict[str, Follow] = {}
        scores = scores_by_recipe(given["Q"], given["K"], scale, recipe, d_model)
        weights = None if scores is None else weights_by_recipe(scores, mask, recipe)
        if scores is not None and weights is not None:
            whole = bool(np.all(np.mod(given["Q"], 1) == 0) and np.all(np.mod(given["K"], 1) == 0))
            error = score_error(scores, scale, recipe, given["Q"].shape[1], d_model, whole=whole)
            slack = weights_slack(scores, mask, recipe, error)
            out["weights"] = Follow(weights, ("Q", "K"), "your Q and K", slack)
        output = mix_by_recipe(given["weights"], given["V"], recipe)
        if output is not None:
            out["output"] = Follow(output, ("weights", "V"), "your weights and V")
        return out

    def degenerate(self, generated: Generated) -> str | None:
        mask = np.asarray(generated.inputs["mask"], dtype=bool)
        X, Wq, Wk = _arrays(generated.inputs, "X", "W_Q", "W_K")
        scale = bool(generated.inputs["scale"])
        scores = scores_by_recipe(X @ Wq, X @ Wk, scale, {})
        assert scores is not None  # the right recipe always applies
        return (
            weights_degenerate(np.asarray(generated.solution["weights"]), mask)
            or output_degenerate(generated.solution["output"], generated.atol)
            or hand_fails(scores, mask, score_error(scores, scale, {}, Wq.shape[1]))
        )


class _MaskedWeightsKind(_AttentionFamily):
    mistakes = (
        "no_mask",
        "mask_after_softmax",
        "mask_as_zero_score",
        "no_scale",
        "divided_by_d_k",
        "softmax_over_queries",
        "scores_transposed",
        "k_not_transposed",
        "causal_mask_transposed",
        "padding_on_queries",
    )
    asked = ("weights",)

    def answers_under(
        self, inputs: dict[str, Any], recipe: Mapping[str, Any], decimals: int | None = None
    ) -> dict[str, np.ndarray] | None:
        # Only the weights are asked, so no values are given: any stand-in mixes nothing asked.
        # Exercises stored with values keep them.
        stand_in = {"V": np.zeros((len(inputs["Q"]), 1))}
        return super().answers_under({**stand_in, **inputs}, recipe, decimals)

    def _generated(
        self,
        params: dict[str, Any],
        rng: np.random.Generator,
        n: int,
        mask: np.ndarray,
        lead: str,
    ) -> Generated:
        d_k, scale = params["d_k"], params["scale"]
        ints = rng.integers(-2, 3, size=n * 3 * d_k)
        Qi = ints[: n * d_k].reshape(n, d_k)
        Ki = ints[n * d_k : 2 * n * d_k].reshape(n, d_k)
        # Values are drawn (a seed keeps its Q and K) but neither shown nor asked.
        Vi = ints[2 * n * d_k :].reshape(n, d_k)
        trace = engine.scaled_dot_product_attention(
            Qi.astype(float),
            Ki.astype(float),
            Vi.astype(float),
            mask=mask,
            scale=scale,
            return_intermediates=True,
        )
        asks = (
            f"Compute the weights $A$: {STEPS_SCALED if scale else STEPS_UNSCALED}, "
            r"blocked entries set to $-\infty$, then the softmax of each row."
        )
        prompt = _attention_prompt(lead, Qi, Ki, None, mask, scale, asks)
        return self.variant(
            prompt=prompt,
            inputs={"Q": Qi.tolist(), "K": Ki.tolist(), "mask": mask.tolist(), "scale": scale},
            asks=[{"name": "weights", "shape": [n, n]}],
            solution={"weights": as_json(trace.weights)},
        )


@register
class CausalKind(_MaskedWeightsKind):
    name = "causal"
    title = "Causal mask"
    description = (
        "A decoder may not read future tokens: compute the attention weights with the "
        "causal mask applied before the softmax."
    )
    params: ClassVar[dict[str, ParamSpec]] = {
        "n": ParamSpec("int", 3, SIZE_HELP, 2, MAX_TOKENS),
        "d_k": ParamSpec(
            "int",
            2,
            "Width of queries, keys and values (at least 2 with scale on).",
            1,
            MAX_WIDTH,
        ),
        "scale": SCALE_SPEC,
        "predict": ParamSpec(
            "choice",
            "none",
            "Ask a prediction first: 'token_0' (what does the first token attend to?) or 'top_key' "
            "(which key gets the most weight in a row).",
            choices=("none", "token_0", "top_key"),
        ),
    }

    def generate(self, params: dict[str, Any], rng: np.random.Generator) -> Generated:
        n = params["n"]
        lead = (
            f"{n} tokens of a decoder have queries $Q$ and keys $K$, one row per token."
            + _mask_words("causal")
        )
        generated = self._generated(params, rng, n, causal(n), lead)
        return _predict_first(generated, params["predict"], rng)


@register
class PaddingKind(_MaskedWeightsKind):
    name = "padding"
    title = "Padding mask"
    description = (
        "A short sentence padded to the batch length: compute the attention weights with "
        "the padded keys blocked before the softmax."
    )
    params: ClassVar[dict[str, ParamSpec]] = {
        # With one real token every query reads one key: the weights would not depend on the scores.
        "n_real": ParamSpec("int", 2, "Real tokens.", 2, 6),
        "n_pad": ParamSpec("int", 1, "Padding tokens after them.", 1, 2),
        "d_k": ParamSpec(
            "int",
            2,
            "Width of queries, keys and values (at least 2 with scale on).",
            1,
            MAX_WIDTH,
        ),
        "scale": SCALE_SPEC,
    }

    def generate(self, params: dict[str, Any], rng: np.random.Generator) -> Generated:
        n_real, n_pad = params["n_real"], params["n_pad"]
        n = n_real + n_pad
        padded = f"tokens {n_real + 1} to {n} are" if n_pad > 1 else f"token {n} is"
        lead = (
            f"A sentence of {n_real} real tokens is padded to length {n}: {padded} padding."
            + _mask_words("padding")
        )
        g = self._generated(params, rng, n, trailing_padding(n, n, n_pad), lead)
        g.inputs["padded"] = [i >= n_real for i in range(n)]
        return g


@register
class MultiHeadKind(ExerciseKind):
    name = "multi_head"
    title = "Multi-head attention"
    description = (
        "Split the projections into heads, compute each head's weights, concatenate the "
        "head outputs and mix them with W_O."
    )
    params: ClassVar[dict[str, ParamSpec]] = {
        "n": ParamSpec("int", 3, SIZE_HELP, 2, MAX_TOKENS),
        "heads": ParamSpec("int", 2, "Number of heads h.", 1, 4),
        "d_head": ParamSpec(
            "int",
            2,
            "Width of each head, d_k = d_model / h (at least 2 with scale on).",
            1,
            4,
        ),
        "mask": ParamSpec("choice", "none", "Which keys are blocked.", choices=("none", "causal")),
        "scale": SCALE_SPEC,
    }
    mistakes = (
        "no_scale",
        "scale_by_d_model",
        "divided_by_d_k",
        "no_mask",
        "mask_after_softmax",
        "mask_as_zero_score",
        "softmax_over_queries",
        "scores_transposed",
        "weights_transposed_in_output",
        "causal_mask_transposed",
        "heads_concatenated_in_reverse",
        "w_o_left_out",
    )
    max_attempts = 4

    def finish_params(self, params: dict[str, Any]) -> dict[str, Any]:
        scale_needs_width(params, "d_head")
        return params

    def params_rules(self) -> list[dict[str, Any]]:
        return [scale_width_rule("d_head")]

    def generate(self, params: dict[str, Any], rng: np.random.Generator) -> Generated:
        n, h, d_head = params["n"], params["heads"], params["d_head"]
        d_model = h * d_head
        Xi = rng.integers(-1, 2, size=(n, d_model))
        W = rng.integers(-1, 2, size=(4, d_model, d_model))
        mask = causal(n) if params["mask"] == "causal" else np.zeros((n, n), dtype=bool)
        trace = engine.multi_head_attention(
            Xi.astype(float),
            W[0].astype(float),
            W[1].astype(float),
            W[2].astype(float),
            W[3].astype(float),
            n_heads=h,
            mask=mask if mask.any() else None,
            scale=params["scale"],
            return_intermediates=True,
        )
        scale_words = (
            r"$\sqrt{d_k}$" if params["scale"] else "nothing (no scaling in this exercise)"
        )
        prompt = "\n\n".join(
            [
                rf"{n} tokens are the rows of $X$ ($d_{{model}} = {d_model}$) and there are "
                rf"$h = {h}$ heads of width $d_k = {d_head}$: {head_columns(h, d_head)} of "
                r"$W_Q$, $W_K$ and $W_V$, so head $i$ has its own $Q_i = X W_Q^{(i)}$, "
                r"$K_i$ and $V_i$." + _mask_words(params["mask"]),
                rf"$X = {tex_matrix(Xi)}$, $W_Q = {tex_matrix(W[0])}$, $W_K = {tex_matrix(W[1])}$, "
                rf"$W_V = {tex_matrix(W[2])}$, $W_O = {tex_matrix(W[3])}$.",
                f"Compute each head's weights ({head_parts(h)}): the scores "
                rf"$Q_i K_i^\top$ divided by {scale_words}, masked keys set to $-\infty$, "
                r"softmax per row; and the block's output: the heads' outputs $A_i V_i$ "
                r"concatenated in order, times $W_O$.",
                ROUNDING_RULE,
            ]
        )
        weights = np.asarray(trace.weights)
        solution = {f"weights_head_{i}": as_json(weights[i]) for i in range(h)}
        solution["output"] = as_json(trace.output)
        asks = [{"name": f"weights_head_{i}", "shape": [n, n]} for i in range(h)]
        asks.append({"name": "output", "shape": [n, d_model]})
        return self.variant(
            prompt=prompt,
            inputs={
                "X": Xi.tolist(),
                "W_Q": W[0].tolist(),
                "W_K": W[1].tolist(),
                "W_V": W[2].tolist(),
                "W_O": W[3].tolist(),
                "heads": h,
                "mask": mask.tolist(),
                "scale": params["scale"],
            },
            asks=asks,
            solution=solution,
        )

    @staticmethod
    def _heads(inputs: Mapping[str, Any]) -> tuple[int, list[slice]]:
        h = int(inputs["heads"])
        d_head = len(inputs["X"][0]) // h
        return h, [slice(i * d_head, (i + 1) * d_head) for i in range(h)]

    def answers_under(
        self, inputs: dict[str, Any], recipe: Mapping[str, Any], decimals: int | None = None
    ) -> dict[str, np.ndarray] | None:
        X, Wq, Wk, Wv, Wo = _arrays(inputs, "X", "W_Q", "W_K", "W_V", "W_O")
        mask = np.asarray(inputs["mask"], dtype=bool)
        h, cols = self._heads(inputs)
        if recipe.get("concat") == "reversed" and h == 1:
            return None
        Q, K, V = X @ Wq, X @ Wk, X @ Wv
        out: dict[str, np.ndarray] = {}
        heads = []
        for i, c in enumerate(cols):
            one = attention_by_recipe(
                Q[:, c],
                K[:, c],
                V[:, c],
                mask,
                bool(inputs["scale"]),
                recipe,
                X.shape[1],
                decimals,
            )
            if one is None:
                return None
            out[f"weights_head_{i}"] = one["weights"]
            heads.append(one["output"])
        out["output"] = _r(_block_output(heads, Wo, recipe), decimals)
        return out

    def follow_on(
        self,
        inputs: dict[str, Any],
        given: Mapping[str, np.ndarray],
        recipe: Mapping[str, Any] | None = None,
    ) -> dict[str, Follow]:
        recipe = recipe or {}
        X, Wq, Wk, Wv, Wo = _arrays(inputs, "X", "W_Q", "W_K", "W_V", "W_O")
        mask = np.asarray(inputs["mask"], dtype=bool)
        scale, d_model = bool(inputs["scale"]), X.shape[1]
        h, cols = self._heads(inputs)
        Q, K, V = X @ Wq, X @ Wk, X @ Wv
        out: dict[str, Follow] = {}
        heads: list[np.ndarray] = []
        for i, c in enumerate(cols):
            # The scores are not asked: each head's weights follow from the inputs, with
            # what writing the scores and each e^s by hand carries.
            scores = scores_by_recipe(Q[:, c], K[:, c], scale, recipe, d_model)
            weights = None if scores is None else weights_by_recipe(scores, mask, recipe)
            if scores is not None and weights is not None:
                error = score_error(scores, scale, recipe, Q[:, c].shape[1], d_model)
                slack = weights_slack(scores, mask, recipe, error)
                out[f"weights_head_{i}"] = Follow(weights, (), "the inputs", slack)
            head = mix_by_recipe(given[f"weights_head_{i}"], V[:, c], recipe)
            if head is not None:
                heads.append(head)
        if len(heads) < h or (recipe.get("concat") == "reversed" and h == 1):
            return out
        # The heads' outputs are not asked: rounding each to three decimals moves an
        # output cell by up to half a unit of the third decimal times its column of |W_O|.
        carried = np.abs(Wo).sum(axis=0) if recipe.get("concat") != "no_w_o" else 1.0
        slack = HALF_UNIT * np.broadcast_to(carried, (X.shape[0], Wo.shape[1]))
        out["output"] = Follow(
            _block_output(heads, Wo, recipe),
            tuple(f"weights_head_{i}" for i in range(h)),
            "your head weights",
            slack,
        )
        return out

    def degenerate(self, generated: Generated) -> str | None:
        mask = np.asarray(generated.inputs["mask"], dtype=bool)
        X, Wq, Wk = _arrays(generated.inputs, "X", "W_Q", "W_K")
        scale = bool(generated.inputs["scale"])
        _, cols = self._heads(generated.inputs)
        for i, c in enumerate(cols):
            reason = weights_degenerate(np.asarray(generated.solution[f"weights_head_{i}"]), mask)
            scores = scores_by_recipe((X @ Wq)[:, c], (X @ Wk)[:, c], scale, {})
            assert scores is not None  # the right recipe always applies
            reason = reason or hand_fails(
                scores, mask, score_error(scores, scale, {}, X.shape[1] // len(cols))
            )
            if reason:
                return f"head {i}: {reason}"
        return output_degenerate(generated.solution["output"], generated.atol)


def head_parts(h: int) -> str:
    """The part that holds each head's weights: head 1 (counted as the tables count) is
    ``weights_head_0``."""
    return ", ".join(f"head {i + 1} is the part `weights_head_{i}`" for i in range(h))


def head_columns(h: int, d_head: int) -> str:
    """Which columns each head reads, counted from 1 as the tables count them."""
    spans = []
    for i in range(h):
        first, last = i * d_head + 1, (i + 1) * d_head
        cols = f"column {first}" if first == last else f"columns {first} to {last}"
        spans.append(f"head {i + 1} uses {cols}")
    return "; ".join(spans)


def _block_output(heads: list[np.ndarray], Wo: np.ndarray, recipe: Mapping[str, Any]) -> np.ndarray:
    """# h x (n, d_k), (d_model, d_model) -> (n, d_model): the heads concatenated in order,
    times W_O; ``concat`` "reversed" puts the last head first, "no_w_o" leaves W_O out."""
    how = recipe.get("concat")
    joined = np.concatenate(heads[::-1] if how == "reversed" else heads, axis=1)
    out: np.ndarray = joined if how == "no_w_o" else joined @ Wo
    return out


def _predict_first(generated: Generated, how: str, rng: np.random.Generator) -> Generated:
    """``generated`` with the prediction ``how`` asked first (unchanged for "none")."""
    if how == "none":
        return generated
    weights, mask = generated.solution["weights"], generated.inputs["mask"]
    if how == "token_0":
        question = predictions.first_token_question(weights)
    else:
        question = predictions.top_key_question(weights, mask, rng)
    return predictions.with_prediction(generated, question)


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

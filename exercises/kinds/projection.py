"""The ``projection`` kind: the tokens X projected by W_Q, W_K and W_V, then one head's
weights and output. By default on the lesson's "bag delayed refund" tokens."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from exercises import engine
from exercises.kinds.attention import (
    ATTENTION_MISTAKES,
    MAX_TOKENS,
    MAX_WIDTH,
    OUTPUT_HINT,
    SCALE_SPEC,
    SIZE_HELP,
    input_arrays,
    mask_words,
    scale_needs_width,
    scale_width_rule,
    weights_hint,
)
from exercises.kinds.base import (
    ROUNDING_RULE,
    ExerciseKind,
    Follow,
    Generated,
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
    rounded,
    score_error,
    scores_by_recipe,
    weights_by_recipe,
    weights_degenerate,
    weights_slack,
)
from exercises.kinds.worked import Step, attention_steps, step

# The lesson's application: "bag delayed refund" as one-hot rows, hand-set projections.
LESSON_X = np.eye(3)
LESSON_W_Q = np.array([[1, 0], [0, 1], [1, 1]])
LESSON_W_K = np.array([[1, 0], [1, 1], [0, 1]])
LESSON_W_V = np.array([[2, 0], [0, 2], [1, 1]])
LESSON_TOKENS = ("bag", "delayed", "refund")


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
            "wide, every score matrix is symmetric (QKᵀ and KQᵀ agree) and one-hot tokens "
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
                lead + mask_words(params["mask"]),
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
        X, Wq, Wk, Wv = input_arrays(inputs, "X", "W_Q", "W_K", "W_V")
        mask = np.asarray(inputs["mask"], dtype=bool)
        if recipe.get("projection") == "w_q_w_k_swapped":
            if np.array_equal(Wq, Wk):
                return None
            Wq, Wk = Wk, Wq
        Q, K, V = (rounded(X @ W, decimals) for W in (Wq, Wk, Wv))
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

    def hint(self, part: str, inputs: dict[str, Any]) -> str:
        if part in ("Q", "K", "V"):
            return (
                f"Multiply the token rows by W_{part[0]}: row i of {part} is row i of X times "
                f"W_{part[0]} ({part} = X · W_{part[0]}, one row per token, as wide as "
                f"W_{part[0]} has columns)."
            )
        if part == "weights":
            return (
                "From your Q and K: "
                + weights_hint(False, bool(inputs["scale"]))[0].lower()
                + weights_hint(False, bool(inputs["scale"]))[1:]
            )
        if part == "output":
            return OUTPUT_HINT.replace("by V:", "by your V:")
        return super().hint(part, inputs)

    def worked_steps(
        self, inputs: dict[str, Any], solution: Mapping[str, Any], asks: list[dict[str, Any]]
    ) -> list[Step]:
        X, Wq, Wk, Wv = input_arrays(inputs, "X", "W_Q", "W_K", "W_V")
        mask = np.asarray(inputs["mask"], dtype=bool)
        scale = bool(inputs["scale"])
        Q, K, V = engine.project(X, Wq, Wk, Wv)
        steps = [
            step(
                name,
                f"{name} = X · W_{name}",
                value,
                f"Row i is token i's row of X times W_{name}.",
                part=name,
            )
            for name, value in (("Q", Q), ("K", K), ("V", V))
        ]
        trace = engine.scaled_dot_product_attention(
            Q, K, V, mask=mask if mask.any() else None, scale=scale, return_intermediates=True
        )
        parts = {"scores": None, "weights": "weights", "output": "output"}
        return steps + attention_steps(trace, mask, scale, Q.shape[1], parts=parts)

    def degenerate(self, generated: Generated) -> str | None:
        mask = np.asarray(generated.inputs["mask"], dtype=bool)
        X, Wq, Wk = input_arrays(generated.inputs, "X", "W_Q", "W_K")
        scale = bool(generated.inputs["scale"])
        scores = scores_by_recipe(X @ Wq, X @ Wk, scale, {})
        assert scores is not None  # the right recipe always applies
        return (
            weights_degenerate(np.asarray(generated.solution["weights"]), mask)
            or output_degenerate(generated.solution["output"], generated.atol)
            or hand_fails(scores, mask, score_error(scores, scale, {}, Wq.shape[1]))
        )

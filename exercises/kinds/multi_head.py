"""The ``multi_head`` kind: the projections split into heads, each head's weights, and the
heads' outputs concatenated in order and mixed by W_O."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from exercises import engine
from exercises.kinds.attention import (
    MAX_TOKENS,
    SCALE_SPEC,
    SIZE_HELP,
    input_arrays,
    mask_words,
    scale_needs_width,
    scale_width_rule,
)
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
from exercises.kinds.worked import SOFTMAX_HOW, Step, attention_steps, step


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
            "Width of each head, dₖ = d_model / h (at least 2 with scale on).",
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
        "heads_interleaved",
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
                r"$K_i$ and $V_i$." + mask_words(params["mask"]),
                rf"$X = {tex_matrix(Xi)}$, $W_Q = {tex_matrix(W[0])}$, $W_K = {tex_matrix(W[1])}$, "
                rf"$W_V = {tex_matrix(W[2])}$, $W_O = {tex_matrix(W[3])}$.",
                f"Compute the weights of each head, {head_parts(h)}: the scores "
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
    def _heads(
        inputs: Mapping[str, Any], recipe: Mapping[str, Any] | None = None
    ) -> tuple[int, list[slice]]:
        """The heads and the columns each reads: a block of d_k adjacent columns, or with
        ``heads`` "interleaved" every h-th column from its own (the mistake)."""
        h = int(inputs["heads"])
        d_head = len(inputs["X"][0]) // h
        if (recipe or {}).get("heads") == "interleaved":
            return h, [slice(i, None, h) for i in range(h)]
        return h, [slice(i * d_head, (i + 1) * d_head) for i in range(h)]

    @staticmethod
    def _cannot(inputs: Mapping[str, Any], recipe: Mapping[str, Any]) -> bool:
        """The recipe's head mistake changes nothing here: one head, or heads one column
        wide (dealt out in turn or in blocks, the same columns)."""
        h = int(inputs["heads"])
        if recipe.get("concat") == "reversed":
            return h == 1
        if recipe.get("heads") == "interleaved":
            return h == 1 or len(inputs["X"][0]) == h
        return False

    def answers_under(
        self, inputs: dict[str, Any], recipe: Mapping[str, Any], decimals: int | None = None
    ) -> dict[str, np.ndarray] | None:
        X, Wq, Wk, Wv, Wo = input_arrays(inputs, "X", "W_Q", "W_K", "W_V", "W_O")
        mask = np.asarray(inputs["mask"], dtype=bool)
        if self._cannot(inputs, recipe):
            return None
        _, cols = self._heads(inputs, recipe)
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
        out["output"] = rounded(_block_output(heads, Wo, recipe), decimals)
        return out

    def follow_on(
        self,
        inputs: dict[str, Any],
        given: Mapping[str, np.ndarray],
        recipe: Mapping[str, Any] | None = None,
    ) -> dict[str, Follow]:
        recipe = recipe or {}
        X, Wq, Wk, Wv, Wo = input_arrays(inputs, "X", "W_Q", "W_K", "W_V", "W_O")
        mask = np.asarray(inputs["mask"], dtype=bool)
        scale, d_model = bool(inputs["scale"]), X.shape[1]
        h, cols = self._heads(inputs, recipe)
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
        if len(heads) < h or self._cannot(inputs, recipe):
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

    def hint(self, part: str, inputs: dict[str, Any]) -> str:
        h = int(inputs["heads"])
        d_head = len(inputs["X"][0]) // h
        if part.startswith("weights_head_"):
            i = int(part.rsplit("_", 1)[1])
            first, last = i * d_head + 1, (i + 1) * d_head
            scale = "divide by √dₖ, " if inputs["scale"] else ""
            return (
                f"Head {i + 1} reads columns {first} to {last} of Q = X · W_Q, K = X · W_K and "
                f"V = X · W_V (its own block of dₖ adjacent columns). Score its queries against "
                f"its keys, Q{i + 1}K{i + 1}ᵀ, {scale}set each blocked entry to −∞, then take "
                f"the softmax of each row, over the keys: {SOFTMAX_HOW}."
            )
        if part == "output":
            return (
                "From your head weights: each head's output is its weights times its own "
                "columns of V; concatenate the heads' outputs in order, head 1's columns first, "
                "then multiply the concatenation by W_O."
            )
        return super().hint(part, inputs)

    # Over 60 lines on purpose: the projections, every head's steps and the mix, in the order they are worked.
    def worked_steps(
        self, inputs: dict[str, Any], solution: Mapping[str, Any], asks: list[dict[str, Any]]
    ) -> list[Step]:
        X, Wq, Wk, Wv, Wo = input_arrays(inputs, "X", "W_Q", "W_K", "W_V", "W_O")
        mask = np.asarray(inputs["mask"], dtype=bool)
        h, scale = int(inputs["heads"]), bool(inputs["scale"])
        trace = engine.multi_head_attention(
            X,
            Wq,
            Wk,
            Wv,
            Wo,
            n_heads=h,
            mask=mask if mask.any() else None,
            scale=scale,
            return_intermediates=True,
        )
        steps = [
            step(
                name,
                f"{name} = X · W_{name}, all heads",
                engine.merge_heads(np.asarray(value)),
                f"Head i takes its own block of dₖ = {X.shape[1] // h} adjacent columns.",
            )
            for name, value in (("Q", trace.Q), ("K", trace.K), ("V", trace.V))
        ]
        for i in range(h):
            # The head alone, through the same engine call the block makes for every head.
            head = engine.scaled_dot_product_attention(
                trace.Q[i],
                trace.K[i],
                trace.V[i],
                mask=mask if mask.any() else None,
                scale=scale,
                return_intermediates=True,
            )
            parts = {"scores": None, "weights": f"weights_head_{i}", "output": None}
            steps += attention_steps(
                head,
                mask,
                scale,
                X.shape[1] // h,
                parts=parts,
                prefix=f"head_{i + 1}_",
                label=f"Head {i + 1}: ",
            )
            steps.append(
                step(
                    f"head_{i + 1}_output",
                    f"Head {i + 1}: output A{i + 1}V{i + 1}",
                    trace.head_outputs[i],
                    "Row i mixes the head's value rows with row i of its weights.",
                )
            )
        steps.append(
            step(
                "concat",
                "The heads' outputs concatenated, head 1's columns first",
                trace.concat,
                "One row per token, h · dₖ = d_model columns.",
            )
        )
        steps.append(
            step("output", "Output: the concatenation times W_O", trace.output, part="output")
        )
        return steps

    def degenerate(self, generated: Generated) -> str | None:
        mask = np.asarray(generated.inputs["mask"], dtype=bool)
        X, Wq, Wk = input_arrays(generated.inputs, "X", "W_Q", "W_K")
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
                return f"head {i + 1}: {reason}"  # heads counted from 1, as the prompt does
        return output_degenerate(generated.solution["output"], generated.atol)


def head_parts(h: int) -> str:
    """The heads, counted from 1 as the tables and the answer grids count them (the API's
    part for head 1 is ``weights_head_0``; each ask's ``label`` says so)."""
    if h == 1:
        return "head 1"
    return f"heads 1 to {h}"


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

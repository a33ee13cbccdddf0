"""Kinds about shapes, positions, the sqrt(d_k) scale and cost: small formulas, no matrices to mix."""

from __future__ import annotations

import numpy as np

from exercises import engine, predictions
from exercises.kinds.base import (
    ExerciseKind,
    ParamSpec,
    as_json,
    register,
    tex_vector,
)

SHAPE_PARTS = (
    ("Q_shape", "Q = X W_Q of one head"),
    ("K_shape", "K of one head"),
    ("V_shape", "V of one head"),
    ("scores_shape", "the scores of one head"),
    ("weights_shape", "the weights of one head"),
    ("head_output_shape", "one head's output"),
    ("concat_shape", "the heads' outputs concatenated"),
    ("output_shape", "the block's output after W_O"),
)


@register
class ShapesKind(ExerciseKind):
    name = "shapes"
    title = "Shapes through multi-head attention"
    description = (
        "Given n tokens, d_model and h heads, write the shape of every matrix through one "
        "head and the multi-head block."
    )
    params = {
        "n": ParamSpec("int", 6, "Number of tokens.", 1, 4096),
        "heads": ParamSpec("int", 2, "Number of heads h.", 1, 64),
        "d_head": ParamSpec("int", 4, "Width of each head, d_k = d_model / h.", 1, 256),
    }
    # Shapes are integers: only the exact answer is right.
    rtol = 0.0
    atol = 0.0
    mistakes = ("d_model_for_d_k",)

    def generate(self, params, rng):
        n, h, d_k = params["n"], params["heads"], params["d_head"]
        d_model = h * d_k
        solution = self._shapes(n, d_model, d_k)
        prompt = (
            rf"A multi-head self-attention block reads $n = {n}$ tokens of width "
            rf"$d_{{model}} = {d_model}$ with $h = {h}$ heads ($d_k = d_v = d_{{model}}/h$). "
            "Give the shape (rows, columns) of: "
            + "; ".join(words for _, words in SHAPE_PARTS)
            + "."
        )
        return self.variant(
            prompt=prompt,
            inputs={"n": n, "d_model": d_model, "heads": h},
            asks=[{"name": name, "shape": [2]} for name, _ in SHAPE_PARTS],
            solution=solution,
        )

    @staticmethod
    def _shapes(n: int, d_model: int, d_k: int) -> dict[str, list[int]]:
        return {
            "Q_shape": [n, d_k],
            "K_shape": [n, d_k],
            "V_shape": [n, d_k],
            "scores_shape": [n, n],
            "weights_shape": [n, n],
            "head_output_shape": [n, d_k],
            "concat_shape": [n, d_model],
            "output_shape": [n, d_model],
        }

    def answers_under(self, inputs, recipe):
        if recipe.get("head_width") != "d_model" or inputs["heads"] == 1:
            return None
        n, d_model = inputs["n"], inputs["d_model"]
        return {k: np.asarray(v) for k, v in self._shapes(n, d_model, d_model).items()}


@register
class PositionalEncodingKind(ExerciseKind):
    name = "positional_encoding"
    title = "Sinusoidal positional encoding"
    description = (
        "Write the sinusoidal position vectors of the original transformer for a few "
        "positions: sine on even dimensions, cosine on odd ones."
    )
    params = {
        "d_model": ParamSpec(
            "int", 4, "Width of the position vectors (even).", 2, 64, multiple_of=2
        ),
        "positions": ParamSpec("int", 2, "How many positions are asked.", 1, 4),
        "max_position": ParamSpec("int", 10, "Positions are drawn from 0 to this.", 3, 1000),
    }
    mistakes = ("pe_concatenated", "pe_sin_cos_swapped")

    def generate(self, params, rng):
        d = params["d_model"]
        picked = sorted(
            int(p)
            for p in rng.choice(params["max_position"] + 1, size=params["positions"], replace=False)
        )
        table = engine.sinusoidal_positions(max(picked) + 1, d)
        prompt = (
            r"The original transformer adds $PE_{(pos, 2i)} = \sin(pos / 10000^{2i/d_{model}})$ "
            r"and $PE_{(pos, 2i+1)} = \cos(pos / 10000^{2i/d_{model}})$ to the token vectors. "
            rf"With $d_{{model}} = {d}$, write the vector $PE_{{pos}}$ for "
            + ", ".join(f"$pos = {p}$" for p in picked)
            + " (angles in radians; round to three decimals or better)."
        )
        return self.variant(
            prompt=prompt,
            inputs={"d_model": d, "positions": picked},
            asks=[{"name": f"pe_{p}", "shape": [d]} for p in picked],
            solution={f"pe_{p}": as_json(table[p]) for p in picked},
        )

    def answers_under(self, inputs, recipe):
        layout = recipe.get("pe_layout")
        if layout is None:
            return None
        d = inputs["d_model"]
        pos = np.asarray(inputs["positions"], dtype=float)[:, None]
        angle = pos / 10000 ** (2 * np.arange(d // 2) / d)
        if layout == "concatenated":
            rows = np.concatenate([np.sin(angle), np.cos(angle)], axis=1)
        else:
            rows = np.empty((len(pos), d))
            rows[:, 0::2], rows[:, 1::2] = np.cos(angle), np.sin(angle)
        return {f"pe_{p}": rows[i] for i, p in enumerate(inputs["positions"])}


@register
class ScalingKind(ExerciseKind):
    name = "scaling"
    title = "Why divide by sqrt(d_k)"
    description = (
        "The variance of a query-key dot product grows with d_k; compare the softmax of "
        "the same scores with and without the 1/sqrt(d_k) scale."
    )
    params = {
        "d_k": ParamSpec("int", 4, "Width of queries and keys.", 1, 1024),
        "n": ParamSpec("int", 3, "Number of scores in the row.", 2, 6),
        "predict": ParamSpec(
            "choice",
            "none",
            "'scale_effect' first asks whether removing 1/sqrt(d_k) sharpens or flattens the row.",
            choices=("none", "scale_effect"),
        ),
    }
    mistakes = ("sd_for_variance", "divided_by_d_k", "scale_swapped")

    def generate(self, params, rng):
        d_k, n = params["d_k"], params["n"]
        raw = rng.integers(-2, 4, size=n)
        s = raw.astype(float)
        prompt = (
            rf"Queries and keys have $d_k = {d_k}$ independent components with mean 0 and "
            r"variance 1. (1) What is the variance of the dot product $q \cdot k$? "
            rf"(2) One query's raw scores against {n} keys are ${tex_vector(raw)}$: give the "
            r"softmax of the scaled scores $s/\sqrt{d_k}$ and (3) the softmax of the unscaled "
            "scores. Round to three decimals or better."
        )
        generated = self.variant(
            prompt=prompt,
            inputs={"d_k": d_k, "scores": raw.tolist()},
            asks=[
                {"name": "variance", "shape": []},
                {"name": "weights_scaled", "shape": [n]},
                {"name": "weights_unscaled", "shape": [n]},
            ],
            solution={
                "variance": float(d_k),
                "weights_scaled": as_json(engine.softmax(s / np.sqrt(d_k))),
                "weights_unscaled": as_json(engine.softmax(s)),
            },
        )
        if params["predict"] == "scale_effect":
            generated = predictions.with_prediction(generated, predictions.scale_question(raw, d_k))
        return generated

    def answers_under(self, inputs, recipe):
        d_k = inputs["d_k"]
        s = np.asarray(inputs["scores"], dtype=float)
        how = recipe.get("scaling")
        if how == "sd":
            return {"variance": np.asarray(np.sqrt(d_k))}
        if how == "d_k":
            return {"weights_scaled": engine.softmax(s / d_k)}
        if how == "swapped":
            return {
                "weights_scaled": engine.softmax(s),
                "weights_unscaled": engine.softmax(s / np.sqrt(d_k)),
            }
        return None


def quadratic_share(n: int, d_model: int) -> float:
    """Share of one layer's multiply-adds spent on the n×n part (batch 1, forward pass).

    Per token: the projections Q, K, V and W_O take 4 n d² and the 4x feed-forward 8 n d²,
    so 12 n d². The n×n part: Q K^T and A V take n² d each, so 2 n² d. The share is
    2n²d / (2n²d + 12nd²) = n / (n + 6d), one half at n = 6 d.
    """
    return n / (n + 6 * d_model)


@register
class CostKind(ExerciseKind):
    name = "cost"
    title = "The cost of attention"
    description = (
        "Count score-matrix entries and their memory, the parameters of a layer, and the "
        "share of a layer's compute spent on the n×n part."
    )
    params = {
        "n": ParamSpec("int", 4096, "Context length in tokens.", 1, 1_048_576),
        "d_model": ParamSpec("int", 768, "Model width.", 1, 65_536),
        "heads": ParamSpec("int", 12, "Heads per layer.", 1, 256),
        "layers": ParamSpec("int", 12, "Layers.", 1, 512),
        "bytes_per_entry": ParamSpec(
            "choice", 2, "Bytes per stored score (2 for half precision).", choices=(1, 2, 4)
        ),
    }
    mistakes = ("bytes_one_head", "share_qk_only")

    def generate(self, params, rng):
        n, d, h, L, b = (
            params["n"],
            params["d_model"],
            params["heads"],
            params["layers"],
            params["bytes_per_entry"],
        )
        prompt = (
            rf"A transformer has $L = {L}$ layers of width $d_{{model}} = {d}$ with $h = {h}$ "
            rf"heads and reads $n = {n}$ tokens. (1) How many entries has one head's score "
            rf"matrix in one layer, and (2) how many bytes do all score matrices of all heads "
            rf"and layers take at {b} byte(s) per entry? (3) How many weights (no biases) do "
            r"$W_Q, W_K, W_V, W_O$ of one layer hold, and (4) the feed-forward network with a "
            r"4x hidden expansion? (5) What share of one layer's multiply-adds (batch 1, "
            r"forward, ignoring softmax and normalisation) goes to the $n \times n$ part "
            r"($QK^\top$ and $AV$)? Give it as a fraction between 0 and 1."
        )
        return self.variant(
            prompt=prompt,
            inputs={"n": n, "d_model": d, "heads": h, "layers": L, "bytes_per_entry": b},
            asks=[
                {"name": "score_entries", "shape": []},
                {"name": "score_bytes", "shape": []},
                {"name": "attention_params", "shape": []},
                {"name": "ffn_params", "shape": []},
                {"name": "quadratic_share", "shape": []},
            ],
            solution={
                "score_entries": n * n,
                "score_bytes": n * n * h * L * b,
                "attention_params": 4 * d * d,
                "ffn_params": 8 * d * d,
                "quadratic_share": round(quadratic_share(n, d), 12),
            },
        )

    def answers_under(self, inputs, recipe):
        n, d = inputs["n"], inputs["d_model"]
        how = recipe.get("cost")
        if how == "one_head":
            return {"score_bytes": np.asarray(float(n * n * inputs["bytes_per_entry"]))}
        if how == "qk_only":
            # Counting only Q K^T: n²d / (n²d + 12nd²) = n / (n + 12d).
            return {"quadratic_share": np.asarray(n / (n + 12 * d))}
        return None

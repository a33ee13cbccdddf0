# One module on purpose: the theory kinds are small and read best side by side.
"""Kinds about shapes, positions, the sqrt(d_k) scale and cost: small formulas, no matrices to mix."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
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
    tex_vector,
)
from exercises.kinds.hand import (
    round_figures,
    scaled_score_error,
    softmax_by_hand,
    softmax_by_hand_fails,
    softmax_hand_slack,
)
from exercises.kinds.worked import SOFTMAX_HOW, Step, num, softmax_row_steps, step

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


def _around(rng: np.random.Generator, value: int, lo: int, hi: int) -> int:
    """``value`` times 1/2, 1 or 2, drawn, kept within [lo, hi]."""
    return int(min(max(round(value * 2.0 ** int(rng.integers(-1, 2))), lo), hi))


VARY_HELP = (
    "True draws other sizes near these for each variant (each halved, kept or doubled), "
    "so every review is new; false uses exactly these sizes."
)


@register
class ShapesKind(ExerciseKind):
    name = "shapes"
    title = "Shapes through multi-head attention"
    description = (
        "Given n tokens, d_model and h heads, write the shape of every matrix through one "
        "head and the multi-head block."
    )
    params: ClassVar[dict[str, ParamSpec]] = {
        "n": ParamSpec("int", 6, "Number of tokens.", 1, 4096),
        "heads": ParamSpec("int", 2, "Number of heads h.", 1, 64),
        "d_head": ParamSpec("int", 4, "Width of each head, dₖ = d_model / h.", 1, 256),
        "vary": ParamSpec("bool", True, VARY_HELP),
    }
    # Shapes are integers: only the exact answer is right.
    rtol = 0.0
    atol = 0.0
    mistakes = ("d_model_for_d_k",)

    def finish_params(self, params: dict[str, Any]) -> dict[str, Any]:
        if not params["vary"]:
            n, h, d = params["n"], params["heads"], params["d_head"]
            if not _sizes_differ(n, h * d, h):
                raise ParamError(
                    "n",
                    f"Expected n to differ from d_head and from d_model = h·d_head, got "
                    f"n = {n}, d_head = {d}, d_model = {h * d}: equal sizes would let a "
                    "swapped shape pass.",
                )
        return params

    def generate(self, params: dict[str, Any], rng: np.random.Generator) -> Generated:
        n, h, d_k = params["n"], params["heads"], params["d_head"]
        if params["vary"]:
            n = _around(rng, n, 2, 4096)
            h = _around(rng, h, 1, 64)
            d_k = _around(rng, d_k, 1, 256)
        d_model = h * d_k
        solution = self._shapes(n, d_model, d_k)
        prompt = (
            rf"A multi-head self-attention block reads $n = {n}$ tokens of width "
            rf"$d_{{model}} = {d_model}$ with $h = {h}$ heads ($d_k = d_v = d_{{model}}/h$). "
            "Give the shape (rows, columns) of: "
            + "; ".join(words for _, words in SHAPE_PARTS)
            + ". Shapes are whole numbers, checked exactly; each shape is also checked "
            "against the shapes you gave before it."
        )
        return self.variant(
            prompt=prompt,
            inputs={"n": n, "d_model": d_model, "heads": h},
            asks=[{"name": name, "shape": [2], "exact": True} for name, _ in SHAPE_PARTS],
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

    def answers_under(
        self, inputs: dict[str, Any], recipe: Mapping[str, Any], decimals: int | None = None
    ) -> dict[str, np.ndarray] | None:
        n, d_model, h = inputs["n"], inputs["d_model"], inputs["heads"]
        if not recipe:
            shapes = self._shapes(n, d_model, d_model // h)
        elif recipe.get("head_width") == "d_model" and h > 1:
            shapes = self._shapes(n, d_model, d_model)
            shapes["concat_shape"] = [n, h * d_model]
        else:
            return None
        return {k: np.asarray(v) for k, v in shapes.items()}

    def follow_on(
        self,
        inputs: dict[str, Any],
        given: Mapping[str, np.ndarray],
        recipe: Mapping[str, Any] | None = None,
    ) -> dict[str, Follow]:
        h, d_model = inputs["heads"], inputs["d_model"]
        q, k, v = given["Q_shape"], given["K_shape"], given["V_shape"]
        scores = given["scores_shape"]
        head = given["head_output_shape"]
        concat = given["concat_shape"]
        return {
            "scores_shape": Follow(
                np.array([q[0], k[0]]), ("Q_shape", "K_shape"), "your Q and K shapes"
            ),
            "weights_shape": Follow(np.array(scores), ("scores_shape",), "your scores shape"),
            "head_output_shape": Follow(
                np.array([given["weights_shape"][0], v[1]]),
                ("weights_shape", "V_shape"),
                "your weights and V shapes",
            ),
            "concat_shape": Follow(
                np.array([head[0], h * head[1]]), ("head_output_shape",), "your head output shape"
            ),
            "output_shape": Follow(
                np.array([concat[0], d_model]), ("concat_shape",), "your concatenation's shape"
            ),
        }

    hints: ClassVar[dict[str, str]] = {
        "Q_shape": "One row per token; as many columns as one head's width, dₖ = d_model / h "
        "(W_Q of one head has d_model rows and dₖ columns).",
        "K_shape": "Like Q: one row per token, one head's width dₖ = d_model / h of columns.",
        "V_shape": "One row per token; one head's value width dᵥ = d_model / h of columns.",
        "scores_shape": "QKᵀ: the rows of Q (one per query) by the rows of K (one per key).",
        "weights_shape": "The softmax keeps the shape of the scores: it works along each row.",
        "head_output_shape": "AV: the rows of the weights (one per query) by the columns of V.",
        "concat_shape": "The h heads' outputs side by side: the same rows, h times one head's "
        "columns.",
        "output_shape": "The concatenation times W_O (d_model × d_model): the same rows, "
        "d_model columns.",
    }

    def worked_steps(
        self, inputs: dict[str, Any], solution: Mapping[str, Any], asks: list[dict[str, Any]]
    ) -> list[Step]:
        return [
            step(name, f"Shape of {words}", solution[name], self.hints[name], part=name)
            for name, words in SHAPE_PARTS
        ]

    def degenerate(self, generated: Generated) -> str | None:
        n, d_model, h = (generated.inputs[k] for k in ("n", "d_model", "heads"))
        if not _sizes_differ(n, d_model, h):
            return "n, d_k and d_model are not all different"
        return None


def _sizes_differ(n: int, d_model: int, h: int) -> bool:
    """Sizes a swapped shape cannot pass with: n apart from d_k and from d_model. (With two
    heads or more d_k < d_model; with one head they are the same width by definition.)"""
    return n not in (d_model // h, d_model)


PE_LAYOUTS = ("interleaved", "sines_then_cosines", "either")
PE_ANGLE_ERROR = 0.001  # what writing 10000^(2i/d) may move an angle: with the angle and
# the sine each written to three decimals, well inside the 0.005 a cell is accepted within


def pe_figures(positions: Sequence[int], d: int) -> int:
    """The significant figures of 10000^(2i/d) that keep every angle within PE_ANGLE_ERROR.

    Written to k figures the divisor is off by at most a share 0.5 * 10^(1-k) of itself, so
    the angle by that share of itself; the largest angle past i = 0 (whose divisor is 1) is
    the largest position over 10000^(2/d). Never fewer than four: three decimals of a
    divisor of at least 1."""
    if d == 2 or not positions:
        return 4
    largest = max(positions) / 10000 ** (2 / d)
    return max(4, math.ceil(1 + math.log10(max(largest, 1e-12) / (2 * PE_ANGLE_ERROR))))


def pe_rounding_rule(figures: int) -> str:
    return (
        rf"Rounding: write each $10000^{{2i/d_{{model}}}}$ to {figures} significant figures "
        "(fewer would move the largest angles here by more than the tolerance), computed "
        r"from the exact exponent $2i/d_{model}$, which is not rounded; write every other "
        "step, the angles too, to three decimals or more. A cell is accepted within "
        "0.005 + 1% of the expected value."
    )


def pe_rows_by_hand(positions: Sequence[int], d: int, layout: str, decimals: int) -> np.ndarray:
    """``pe_rows`` as the prompt's rounding asks: each 10000^(2i/d) to ``pe_figures``
    significant figures, the angles and the sines and cosines to ``decimals`` decimals."""
    divisor = round_figures(10000 ** (2 * np.arange(d // 2) / d), pe_figures(positions, d))
    angle = np.round(np.asarray(positions, dtype=float)[:, None] / divisor, decimals)
    sin, cos = np.round(np.sin(angle), decimals), np.round(np.cos(angle), decimals)
    if layout == "sines_then_cosines":
        return np.concatenate([sin, cos], axis=1)
    rows = np.empty((len(positions), d))
    rows[:, 0::2], rows[:, 1::2] = sin, cos
    return rows


def pe_rows(positions: Sequence[int] | np.ndarray, d: int, layout: str) -> np.ndarray:
    """# (p,), d -> (p, d). 'interleaved' is the paper's sin, cos, sin, cos, ...;
    'sines_then_cosines' is the lab code's: all d/2 sines, then the cosines of the same angles."""
    pos = np.asarray(positions, dtype=float)[:, None]
    angle = pos / 10000 ** (2 * np.arange(d // 2) / d)
    if layout == "sines_then_cosines":
        return np.concatenate([np.sin(angle), np.cos(angle)], axis=1)
    rows = np.empty((len(pos), d))
    rows[:, 0::2], rows[:, 1::2] = np.sin(angle), np.cos(angle)
    return rows


def _swap_sin_cos(rows: np.ndarray, layout: str) -> np.ndarray:
    d = rows.shape[1]
    if layout == "sines_then_cosines":
        return np.concatenate([rows[:, d // 2 :], rows[:, : d // 2]], axis=1)
    out = rows.copy()
    out[:, 0::2], out[:, 1::2] = rows[:, 1::2], rows[:, 0::2]
    return out


@register
class PositionalEncodingKind(ExerciseKind):
    name = "positional_encoding"
    title = "Sinusoidal positional encoding"
    description = (
        "Write the sinusoidal position vectors of the original transformer for a few "
        "positions, in the layout the exercise names: the paper's interleaved sine and "
        "cosine, or the lab code's sines then cosines."
    )
    params: ClassVar[dict[str, ParamSpec]] = {
        "d_model": ParamSpec(
            "int", 4, "Width of the position vectors (even).", 2, 64, multiple_of=2
        ),
        "positions": ParamSpec("int", 2, "How many positions are asked.", 1, 4),
        "max_position": ParamSpec("int", 10, "Positions are drawn from 0 to this.", 3, 1000),
        "layout": ParamSpec(
            "choice",
            "interleaved",
            "'interleaved': the paper's layout, sine on even dimensions 2i and cosine on odd "
            "ones 2i+1; 'sines_then_cosines': the lab code's layout, all sines then all "
            "cosines (the same encoding with the dimensions reordered); 'either': both accepted.",
            choices=PE_LAYOUTS,
        ),
    }
    mistakes = ("pe_concatenated", "pe_interleaved", "pe_sin_cos_swapped")

    def generate(self, params: dict[str, Any], rng: np.random.Generator) -> Generated:
        d, layout = params["d_model"], params["layout"]
        picked = sorted(
            int(p)
            for p in rng.choice(params["max_position"] + 1, size=params["positions"], replace=False)
        )
        angle = r"\omega_i = pos / 10000^{2i/d_{model}}"
        paper = (
            r"the paper's interleaved layout: $PE_{(pos, 2i)} = \sin \omega_i$ on even "
            r"dimensions and $PE_{(pos, 2i+1)} = \cos \omega_i$ on odd ones"
        )
        lab = (
            r"the lab code's layout: the first $d_{model}/2$ dimensions hold "
            r"$\sin \omega_0, \ldots, \sin \omega_{d/2-1}$ and the last $d_{model}/2$ the "
            r"cosines of the same angles"
        )
        if layout == "interleaved":
            which = (
                f"Use {paper}. (The lesson's lab code stores the same encoding with all sines "
                "first and all cosines after them: the dimensions reordered. That layout is "
                "not the one asked here.)"
            )
        elif layout == "sines_then_cosines":
            which = (
                f"Use {lab}. (The paper interleaves them, sine on even dimensions and cosine "
                "on odd ones: the same encoding with the dimensions reordered. That layout is "
                "not the one asked here.)"
            )
        else:
            which = (
                f"Either layout is accepted, the same encoding with the dimensions reordered: "
                f"{paper}, or {lab}. Use one layout for every position."
            )
        prompt = (
            rf"The original transformer adds sinusoids of the angles ${angle}$, "
            r"$i = 0, \ldots, d_{model}/2 - 1$, to the token vectors. "
            + which
            + rf" With $d_{{model}} = {d}$, write the vector $PE_{{pos}}$ for "
            + ", ".join(f"$pos = {p}$" for p in picked)
            + " (angles in radians). "
            + pe_rounding_rule(pe_figures(picked, d))
        )
        rows = pe_rows(picked, d, "interleaved" if layout == "either" else layout)
        return self.variant(
            prompt=prompt,
            inputs={"d_model": d, "positions": picked, "layout": layout},
            asks=[{"name": f"pe_{p}", "shape": [d]} for p in picked],
            solution={f"pe_{p}": as_json(rows[i]) for i, p in enumerate(picked)},
        )

    @staticmethod
    def _layout(inputs: Mapping[str, Any]) -> str:
        layout = str(inputs.get("layout", "interleaved"))
        return "interleaved" if layout == "either" else layout

    def answers_under(
        self, inputs: dict[str, Any], recipe: Mapping[str, Any], decimals: int | None = None
    ) -> dict[str, np.ndarray] | None:
        d, positions = inputs["d_model"], inputs["positions"]
        asked, allowed = self._layout(inputs), inputs.get("layout", "interleaved")
        how = recipe.get("pe_layout")
        if how is None and recipe:
            return None
        if how in ("sines_then_cosines", "interleaved"):
            # The other layout is a mistake only where the prompt does not allow it; at
            # d_model = 2 both layouts are the same vector.
            if (
                allowed != ("interleaved" if how == "sines_then_cosines" else "sines_then_cosines")
                or d == 2
            ):
                return None
            layout = how
        else:
            layout = asked
        rows = (
            pe_rows(positions, d, layout)
            if decimals is None
            else pe_rows_by_hand(positions, d, layout, decimals)
        )
        if how == "swapped":
            rows = _swap_sin_cos(rows, layout)
        return {f"pe_{p}": rows[i] for i, p in enumerate(positions)}

    def hint(self, part: str, inputs: dict[str, Any]) -> str:
        pos = part.removeprefix("pe_")
        layout = self._layout(inputs)
        where = (
            "sine on the even dimensions, cosine on the odd ones, pair by pair"
            if layout == "interleaved"
            else "all the sines first, then the cosines of the same angles"
        )
        return (
            f"For position {pos}, compute each angle ωᵢ = {pos} / 10000 to the power 2i / d_model, for "
            "i = 0 to d_model/2 − 1, in radians (the exponent 2i / d_model exact); then write "
            f"the sine and the cosine of each angle, {where}."
        )

    def worked_steps(
        self, inputs: dict[str, Any], solution: Mapping[str, Any], asks: list[dict[str, Any]]
    ) -> list[Step]:
        d, layout = inputs["d_model"], self._layout(inputs)
        steps = []
        for pos in inputs["positions"]:
            angles = pos / 10000 ** (2 * np.arange(d // 2) / d)
            steps.append(
                step(
                    f"angles_{pos}",
                    f"Angles ωᵢ for position {pos}",
                    angles,
                    f"ωᵢ = {pos} / 10000 to the power 2i / {d}, for i = 0 to {d // 2 - 1}, in radians.",
                )
            )
            steps.append(
                step(
                    f"pe_{pos}",
                    f"Position vector for position {pos}",
                    pe_rows([pos], d, layout)[0],
                    "sin ωᵢ and cos ωᵢ, interleaved (sine on the even dimensions)"
                    if layout == "interleaved"
                    else "sin ω₀ … then cos ω₀ …: all the sines, then the cosines.",
                    part=f"pe_{pos}",
                )
            )
        return steps

    def accepted_alternatives(self, inputs: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        if inputs.get("layout") != "either":
            return []
        rows = pe_rows(inputs["positions"], inputs["d_model"], "sines_then_cosines")
        return [
            (
                "the lab code's layout (all sines, then all cosines), which this exercise accepts",
                {f"pe_{p}": rows[i].tolist() for i, p in enumerate(inputs["positions"])},
            )
        ]


SATURATED = 0.9  # a softmax row whose largest weight reaches this reads one key


@register
class ScalingKind(ExerciseKind):
    name = "scaling"
    title = "Why divide by √dₖ"
    description = (
        "The variance of a query-key dot product grows with dₖ; compare the softmax of "
        "the same scores with and without the 1/√dₖ scale."
    )
    params: ClassVar[dict[str, ParamSpec]] = {
        # Below 4 the unscaled row of hand-sized scores rarely saturates: nothing to compare.
        "d_k": ParamSpec(
            "int",
            4,
            "Width of queries and keys (from 4: narrower, the unscaled row does not saturate).",
            4,
            1024,
        ),
        "n": ParamSpec("int", 3, "Number of scores in the row.", 2, 6),
        "predict": ParamSpec(
            "choice",
            "none",
            "'scale_effect' first asks whether removing 1/√dₖ sharpens or flattens the row.",
            choices=("none", "scale_effect"),
        ),
    }
    mistakes = ("sd_for_variance", "divided_by_d_k", "no_scale", "scale_swapped")

    def generate(self, params: dict[str, Any], rng: np.random.Generator) -> Generated:
        d_k, n = params["d_k"], params["n"]
        # Raw scores drawn like dot products of unit-variance vectors: variance d_k.
        raw = np.rint(rng.normal(0.0, np.sqrt(d_k), size=n)).astype(int)
        prompt = (
            rf"Queries and keys have $d_k = {d_k}$ independent components with mean 0 and "
            r"variance 1. (1) What is the variance of the dot product $q \cdot k$? "
            rf"(2) One query's raw scores against {n} keys, drawn that way, are "
            rf"${tex_vector(raw)}$: give the softmax of the scaled scores $s/\sqrt{{d_k}}$ and "
            "(3) the softmax of the unscaled scores. " + ROUNDING_RULE
        )
        solution = self.answers_under({"d_k": d_k, "scores": raw.tolist()}, {})
        assert solution is not None  # the empty recipe always applies
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
                "weights_scaled": as_json(solution["weights_scaled"]),
                "weights_unscaled": as_json(solution["weights_unscaled"]),
            },
        )
        if params["predict"] == "scale_effect":
            generated = predictions.with_prediction(generated, predictions.scale_question(raw, d_k))
        return generated

    def answers_under(
        self, inputs: dict[str, Any], recipe: Mapping[str, Any], decimals: int | None = None
    ) -> dict[str, np.ndarray] | None:
        d_k = inputs["d_k"]
        s = np.asarray(inputs["scores"], dtype=float)
        if decimals is None:
            scaled, unscaled = engine.softmax(s / np.sqrt(d_k)), engine.softmax(s)
            by_d_k = engine.softmax(s / d_k)
        else:
            # By hand: sqrt(d_k) and each scaled score written to three decimals, then the
            # lesson's softmax (each e^s written so too).
            root = np.round(np.sqrt(d_k), decimals)
            scaled = softmax_by_hand(np.round(s / root, decimals)[None], decimals)[0]
            unscaled = softmax_by_hand(s[None], decimals)[0]
            by_d_k = softmax_by_hand(np.round(s / d_k, decimals)[None], decimals)[0]
        out = {
            "variance": np.asarray(float(d_k)),
            "weights_scaled": scaled,
            "weights_unscaled": unscaled,
        }
        if recipe.get("scaling") == "sd":
            out["variance"] = np.asarray(np.sqrt(d_k))
        elif recipe.get("scale") == "d_k":
            out["weights_scaled"] = by_d_k
        elif recipe.get("scale") == "none":
            out["weights_scaled"] = unscaled
        elif recipe.get("scaling") == "swapped":
            out["weights_scaled"], out["weights_unscaled"] = unscaled, scaled
        elif recipe:
            return None
        if decimals is not None:
            out = {k: np.round(v, decimals) for k, v in out.items()}
        return out

    def follow_on(
        self,
        inputs: dict[str, Any],
        given: Mapping[str, np.ndarray],
        recipe: Mapping[str, Any] | None = None,
    ) -> dict[str, Follow]:
        """Both rows follow from the inputs alone, with what the softmax by hand carries."""
        recipe = recipe or {}
        d_k = inputs["d_k"]
        s = np.asarray(inputs["scores"], dtype=float)
        rows = {
            "scaled": (s / np.sqrt(d_k), scaled_score_error(s / np.sqrt(d_k), np.sqrt(d_k))),
            "unscaled": (s, np.zeros_like(s)),
            "by_d_k": (s / d_k, np.full(s.shape, HALF_UNIT)),
        }
        which = {"weights_scaled": "scaled", "weights_unscaled": "unscaled"}
        if recipe.get("scale") == "d_k":
            which["weights_scaled"] = "by_d_k"
        elif recipe.get("scale") == "none":
            which["weights_scaled"] = "unscaled"
        elif recipe.get("scaling") == "swapped":
            which = {"weights_scaled": "unscaled", "weights_unscaled": "scaled"}
        out = {}
        for part, row in which.items():
            z, error = rows[row]
            out[part] = Follow(
                engine.softmax(z),
                (),
                "the inputs",
                softmax_hand_slack(z[None], None, error[None])[0],
            )
        return out

    hints: ClassVar[dict[str, str]] = {
        "variance": "The dot product q · k is a sum of dₖ independent products, each of mean 0 "
        "and variance 1; the variances of independent terms add.",
        "weights_scaled": "Divide each raw score by √dₖ first, then take the softmax of the "
        f"row: {SOFTMAX_HOW}.",
        "weights_unscaled": "Take the softmax of the raw scores as they are, with no scale: "
        f"{SOFTMAX_HOW}.",
    }

    def worked_steps(
        self, inputs: dict[str, Any], solution: Mapping[str, Any], asks: list[dict[str, Any]]
    ) -> list[Step]:
        d_k = inputs["d_k"]
        s = np.asarray(inputs["scores"], dtype=float)
        scaled = s / np.sqrt(d_k)
        steps = [
            step(
                "variance",
                "Variance of q · k",
                solution["variance"],
                f"A sum of dₖ = {d_k} independent products of variance 1: variance dₖ.",
                part="variance",
            ),
            step(
                "scaled_scores",
                "Scaled scores s / √dₖ",
                scaled,
                f"Each raw score divided by √{d_k} = {num(np.sqrt(d_k))}.",
            ),
        ]
        for z, part, label in (
            (scaled, "weights_scaled", "Scaled: "),
            (s, "weights_unscaled", "Unscaled: "),
        ):
            steps += softmax_row_steps(
                z[None], engine.softmax(z[None]), part=part, prefix=f"{part}_", label=label
            )
        return steps

    def degenerate(self, generated: Generated) -> str | None:
        scaled = max(generated.solution["weights_scaled"])
        unscaled = max(generated.solution["weights_unscaled"])
        if unscaled < SATURATED:
            return "the unscaled row does not saturate"
        if scaled >= SATURATED:
            return "the scaled row saturates too"
        s = np.asarray(generated.inputs["scores"], dtype=float)
        root = np.sqrt(generated.inputs["d_k"])
        if softmax_by_hand_fails(s[None]) or softmax_by_hand_fails(
            (s / root)[None], None, scaled_score_error(s / root, root)[None]
        ):
            return "the exponentials of a row all but vanish at three decimals"
        return None


def quadratic_share(n: int, d_model: int) -> float:
    """Share of one layer's multiply-adds spent on the n x n part (batch 1, forward pass).

    Per token: the projections Q, K, V and W_O take 4 n d² and the 4x feed-forward 8 n d²,
    so 12 n d². The n x n part: Q K^T and A V take n² d each, so 2 n² d. The share is
    2n²d / (2n²d + 12nd²) = n / (n + 6d), one half at n = 6 d.
    """
    return n / (n + 6 * d_model)


COUNTS = ("score_entries", "score_bytes", "attention_params", "ffn_params")


@register
class CostKind(ExerciseKind):
    name = "cost"
    title = "The cost of attention"
    description = (
        "Count score-matrix entries and their memory, the parameters of a layer, and the "
        "share of a layer's compute spent on the n\N{MULTIPLICATION SIGN}n part."
    )
    params: ClassVar[dict[str, ParamSpec]] = {
        "n": ParamSpec("int", 4096, "Context length in tokens.", 1, 1_048_576),
        "d_model": ParamSpec("int", 768, "Model width.", 1, 65_536),
        "heads": ParamSpec("int", 12, "Heads per layer.", 1, 256),
        "layers": ParamSpec("int", 12, "Layers.", 1, 512),
        "bytes_per_entry": ParamSpec(
            "choice", 2, "Bytes per stored score (2 for half precision).", choices=(1, 2, 4)
        ),
        "vary": ParamSpec("bool", True, VARY_HELP),
    }
    # Counts are checked exactly (asks marked exact); the share within 1%.
    rtol = 0.01
    atol = 0.0
    mistakes = (
        "bytes_one_head",
        "share_qk_only",
        "params_with_biases",
        "params_without_w_o",
        "ffn_one_matrix",
        "share_without_w_o",
    )

    def generate(self, params: dict[str, Any], rng: np.random.Generator) -> Generated:
        n, d, h, L, b = (
            params["n"],
            params["d_model"],
            params["heads"],
            params["layers"],
            params["bytes_per_entry"],
        )
        if params["vary"]:
            n = int(min(max(round(n * 2.0 ** int(rng.integers(-2, 3))), 1), 1_048_576))
            d = _around(rng, d, 1, 65_536)
            h = _around(rng, h, 1, 256)
            L = _around(rng, L, 1, 512)
        prompt = (
            rf"A transformer has $L = {L}$ layers of width $d_{{model}} = {d}$ with $h = {h}$ "
            rf"heads and reads $n = {n}$ tokens. (1) How many entries has one head's score "
            rf"matrix in one layer, and (2) how many bytes do all score matrices of all heads "
            rf"and layers take at {b} byte(s) per entry, as training at batch 1 stores them for "
            r"the backward pass? (Inference with a KV cache keeps the keys and values instead, "
            r"and only the newest token's scores.) (3) How many weights (no biases) do "
            r"$W_Q, W_K, W_V, W_O$ of one layer hold, all heads together, each head of width "
            r"$d_k = d_{model}/h$ (so each of the four is $d_{model} \times d_{model}$), and "
            r"(4) the feed-forward network with a 4x hidden expansion? (5) What share of one "
            r"layer's multiply-adds (batch 1, forward, ignoring softmax and normalisation) "
            r"goes to the $n \times n$ part ($QK^\top$ and $AV$)? The rest is the per-token "
            r"part: every token goes through all the weights of (3), $W_O$ included, and (4), "
            r"one multiply-add per weight. Give the counts (1) to (4) as exact whole numbers; they "
            "are checked exactly, and (2) also against your own count (1). Give the share as "
            "a fraction between 0 and 1 to three significant figures; it is accepted within 1%."
        )
        inputs = {"n": n, "d_model": d, "heads": h, "layers": L, "bytes_per_entry": b}
        right = self.answers_under(inputs, {})
        assert right is not None  # the empty recipe always applies
        return self.variant(
            prompt=prompt,
            inputs=inputs,
            asks=[
                {"name": "score_entries", "shape": [], "exact": True},
                {"name": "score_bytes", "shape": [], "exact": True},
                {"name": "attention_params", "shape": [], "exact": True},
                {"name": "ffn_params", "shape": [], "exact": True},
                {"name": "quadratic_share", "shape": []},
            ],
            solution={
                **{name: int(right[name]) for name in COUNTS},
                "quadratic_share": round(quadratic_share(n, d), 12),
            },
        )

    def answers_under(
        self, inputs: dict[str, Any], recipe: Mapping[str, Any], decimals: int | None = None
    ) -> dict[str, np.ndarray] | None:
        n, d, h, L, b = (inputs[k] for k in ("n", "d_model", "heads", "layers", "bytes_per_entry"))
        # Python integers: the counts exceed what a float holds exactly.
        out: dict[str, Any] = {
            "score_entries": n * n,
            "score_bytes": n * n * h * L * b,
            "attention_params": 4 * d * d,
            "ffn_params": 8 * d * d,
            "quadratic_share": quadratic_share(n, d),
        }
        how = recipe.get("cost")
        if how is None and recipe:
            return None
        if how is not None:
            changed = _cost_mistake(str(how), n, d, h * L, b)
            if changed is None:
                return None
            out.update(changed)
        if decimals is not None:
            out["quadratic_share"] = float(f"{out['quadratic_share']:.3g}")
        return {k: np.asarray(v, dtype=object if k in COUNTS else float) for k, v in out.items()}

    hints: ClassVar[dict[str, str]] = {
        "score_entries": "One head's score matrix in one layer has a row per query and a "
        "column per key: n × n entries.",
        "score_bytes": "Training at batch 1 keeps one score matrix per head per layer for the "
        "backward pass: multiply your entry count by the heads, the layers and the bytes per "
        "entry.",
        "attention_params": "W_Q, W_K, W_V and W_O are each d_model × d_model, all heads "
        "together: add up their weights, no biases.",
        "ffn_params": "The feed-forward network has two matrices, d_model × 4 · d_model up and "
        "4 · d_model × d_model back: add up their weights, no biases.",
        "quadratic_share": "The n × n part is QKᵀ and AV, n² · d_model multiply-adds each; the "
        "per-token part is one multiply-add per weight of (3) and (4) for each of the n tokens. "
        "The share is the n × n part over the two together.",
    }

    def worked_steps(
        self, inputs: dict[str, Any], solution: Mapping[str, Any], asks: list[dict[str, Any]]
    ) -> list[Step]:
        n, d, h, L, b = (inputs[k] for k in ("n", "d_model", "heads", "layers", "bytes_per_entry"))
        nn_part, per_token = 2 * n * n * d, 12 * n * d * d
        return [
            step(
                "score_entries",
                "Entries of one score matrix",
                solution["score_entries"],
                f"n × n = {n} × {n}.",
                part="score_entries",
            ),
            step(
                "score_bytes",
                "Bytes of every score matrix",
                solution["score_bytes"],
                f"n² · h · L · bytes = {n}² · {h} · {L} · {b}: what training at batch 1 "
                "stores for the backward pass. Inference with a KV cache keeps the keys and "
                f"values instead, 2 · n · d_model · L = {2 * n * d * L} numbers, and only the "
                "newest token's scores.",
                part="score_bytes",
            ),
            step(
                "attention_params",
                "Weights of W_Q, W_K, W_V, W_O",
                solution["attention_params"],
                f"4 · d_model² = 4 · {d}².",
                part="attention_params",
            ),
            step(
                "ffn_params",
                "Weights of the feed-forward network",
                solution["ffn_params"],
                f"d_model · 4 · d_model up and back: 8 · d_model² = 8 · {d}².",
                part="ffn_params",
            ),
            step(
                "nn_part",
                "Multiply-adds of the n × n part",
                nn_part,
                f"QKᵀ and AV, n² · d_model each: 2 · {n}² · {d}.",
            ),
            step(
                "per_token_part",
                "Multiply-adds of the per-token part",
                per_token,
                f"(4 + 8) · d_model² per token, for n tokens: 12 · {n} · {d}².",
            ),
            step(
                "quadratic_share",
                "Share of the n × n part",
                solution["quadratic_share"],
                f"{nn_part} / ({nn_part} + {per_token}) = n / (n + 6 · d_model).",
                part="quadratic_share",
            ),
        ]

    def follow_on(
        self,
        inputs: dict[str, Any],
        given: Mapping[str, np.ndarray],
        recipe: Mapping[str, Any] | None = None,
    ) -> dict[str, Follow]:
        per_entry = inputs["heads"] * inputs["layers"] * inputs["bytes_per_entry"]
        entries = given["score_entries"]
        return {
            "score_bytes": Follow(
                np.asarray(_as_int(entries) * per_entry, dtype=object),
                ("score_entries",),
                "your score entries",
            )
        }


def _cost_mistake(how: str, n: int, d: int, heads_layers: int, b: int) -> dict[str, Any] | None:
    """The counts a cost mistake changes; None where it cannot be made or the share's
    tolerance cannot show it."""
    if how == "one_head":
        return None if heads_layers == 1 else {"score_bytes": n * n * b}
    if how == "qk_only":
        # Counting only Q K^T: n²d / (n²d + 12nd²) = n / (n + 12d).
        return {"quadratic_share": n / (n + 12 * d)}
    if how == "biases":
        return {"attention_params": 4 * d * d + 4 * d, "ffn_params": 8 * d * d + 5 * d}
    if how == "no_w_o":
        return {"attention_params": 3 * d * d}
    if how == "ffn_one_matrix":
        return {"ffn_params": 4 * d * d}
    if how == "share_no_w_o" and 0.5 * d / (n + 5.5 * d) > CostKind.rtol:
        # W_O left out of the per-token part: W_Q, W_K, W_V (3nd²) and the feed-forward
        # network (8nd²), 11nd². 2n²d / (2n²d + 11nd²) = n / (n + 5.5d), off n / (n + 6d)
        # by a share 0.5d / (n + 5.5d): within the share's 1% once n > 44.5 d.
        return {"quadratic_share": n / (n + 5.5 * d)}
    return None


def _as_int(value: Any) -> Any:
    """An exact integer when ``value`` is integral, else the value itself."""
    v = value.item() if isinstance(value, np.ndarray) else value
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return v

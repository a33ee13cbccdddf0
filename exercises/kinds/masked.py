"""The masked-weights kinds, ``causal`` and ``padding``: one head's weights only, under a
causal mask or with the padded keys blocked (the mask convention: ``exercises.kinds.recipes``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from exercises import engine
from exercises.kinds.attention import (
    MAX_TOKENS,
    MAX_WIDTH,
    SCALE_SPEC,
    SIZE_HELP,
    STEPS_SCALED,
    STEPS_UNSCALED,
    AttentionFamily,
    attention_prompt,
    mask_words,
    predict_first,
)
from exercises.kinds.base import Generated, ParamSpec, as_json, register
from exercises.kinds.recipes import causal, trailing_padding


class _MaskedWeightsKind(AttentionFamily):
    """One head's weights only, from Q and K; each kind below draws its mask and lead."""

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
        "padded_rows_zeroed",
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
        prompt = attention_prompt(lead, Qi, Ki, None, mask, scale, asks)
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
            "Ask a prediction first: 'token_0' (a concept check: what does the first token "
            "attend to? the same answer in every variant) or 'top_key' "
            "(which key gets the most weight in a row).",
            choices=("none", "token_0", "top_key"),
        ),
    }

    def generate(self, params: dict[str, Any], rng: np.random.Generator) -> Generated:
        n = params["n"]
        lead = (
            f"{n} tokens of a decoder have queries $Q$ and keys $K$, one row per token."
            + mask_words("causal")
        )
        generated = self._generated(params, rng, n, causal(n), lead)
        return predict_first(generated, params["predict"], rng)


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
            + mask_words("padding")
        )
        g = self._generated(params, rng, n, trailing_padding(n, n, n_pad), lead)
        g.inputs["padded"] = [i >= n_real for i in range(n)]
        return g

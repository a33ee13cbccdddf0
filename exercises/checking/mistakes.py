"""The mistakes a learner makes, named: the registry a diagnosis draws on.

Pure: no Django. A kind lists the codes of the mistakes that can explain a wrong answer
(``kind.mistakes``); each ``recipe`` tells ``kind.answers_under`` and ``kind.follow_on``
how the mistaken computation differs from the right one. ``exercises.checking.diagnosis``
names the mistake a learner made; ``exercises.variants`` refuses a variant that would
accept one.

Every text here is plain text a learner reads as it is (no Markdown, no TeX): formulas are
written with Unicode (√dₖ, QKᵀ, n²), so the exercise pages, the review page and the labs
show them alike. Each mistake names ``section``, the key of the lesson section that
teaches the point (``LESSON_SECTIONS``: the sections of the starter deck's lesson); the
study core turns it into a link (``exercises.reviews``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# The sections of the starter deck's lesson, by key: what a mistake's ``section`` names.
LESSON_SECTIONS = (
    "objective",
    "worked-example",
    "shapes",
    "masks",
    "multi-head",
    "positions",
    "cost",
    "heat-maps",
    "lab",
    "interview",
)


@dataclass(frozen=True)
class Mistake:
    code: str
    text: str
    # Passed to ``kind.answers_under``: how the mistaken computation differs.
    recipe: Mapping[str, Any]
    # The mistake in a few words, for "this matches either ... or ...": by default what
    # ``text`` says after "This matches", up to its colon.
    short: str = ""
    # The key of the lesson section that teaches the point (one of ``LESSON_SECTIONS``).
    section: str = "worked-example"

    @property
    def what(self) -> str:
        if self.short:
            return self.short
        lead = "This matches "
        assert self.text.startswith(lead), self.code  # else give ``short``
        return self.text[len(lead) :].split(": ", 1)[0]


def either_words(mistakes: Sequence[Mistake]) -> str:
    """One sentence for mistakes that give the same numbers at a step."""
    whats = [m.what for m in mistakes]
    listed = ", ".join(whats[:-1]) + f" or {whats[-1]}"
    return (
        f"This matches either {listed}: at this step they give the same numbers, so the "
        "numbers cannot tell which was made. What each one means:"
    )


MISTAKES: dict[str, Mistake] = {
    m.code: m
    for m in (
        Mistake(
            "no_scale",
            "This matches the scores without dividing by √dₖ: multiply QKᵀ by 1/√dₖ before "
            "the softmax.",
            {"scale": "none"},
        ),
        Mistake(
            "scale_by_d_model",
            "This matches dividing by √d_model: each head divides by the square root of its "
            "own width, dₖ = d_model / h.",
            {"scale": "sqrt_d_model"},
            section="multi-head",
        ),
        Mistake(
            "no_mask",
            "This matches ignoring the mask: blocked scores become minus infinity before the "
            "softmax, so their weights are exactly 0.",
            {"mask": "ignored"},
            section="masks",
        ),
        Mistake(
            "mask_after_softmax",
            "This matches zeroing the blocked weights after the softmax without renormalising: "
            "apply the mask to the scores (minus infinity) before the softmax, so each row "
            "still sums to 1.",
            {"mask": "zero_after"},
            section="masks",
        ),
        Mistake(
            "mask_as_zero_score",
            "This matches setting blocked scores to 0 instead of minus infinity: a score of 0 "
            "still gets the weight e⁰ = 1 before normalising.",
            {"mask": "zero_score"},
            section="masks",
        ),
        Mistake(
            "softmax_over_queries",
            "This matches a softmax down each column: the softmax runs along each row, over the "
            "keys, so every row of the weights sums to 1.",
            {"softmax_axis": 0},
        ),
        Mistake(
            "scores_transposed",
            "This matches KQᵀ, the product in the wrong order: score (i, j) is query i against "
            "key j, so compute QKᵀ (rows are queries, columns keys).",
            {"scores": "k_q"},
        ),
        Mistake(
            "k_not_transposed",
            "This matches QK without transposing K: the scores are QKᵀ, each query dotted "
            "with each key's row.",
            {"scores": "q_k"},
            section="shapes",
        ),
        Mistake(
            "weights_transposed_in_output",
            "This matches AᵀV: output row i mixes the value rows with row i of the weights, "
            "so compute AV.",
            {"mix": "a_t_v"},
        ),
        Mistake(
            "d_model_for_d_k",
            "This uses d_model where each head has dₖ = d_model / h columns.",
            {"head_width": "d_model"},
            short="d_model used as each head's width",
            section="shapes",
        ),
        Mistake(
            "pe_concatenated",
            "This is the lab code's layout, all sines first and all cosines after them: the "
            "same encoding with the dimensions reordered, not a wrong one. This exercise asks "
            "for the paper's interleaved layout: sine on the even dimensions 2i, cosine on the "
            "odd ones 2i + 1.",
            {"pe_layout": "sines_then_cosines"},
            short="the lab code's layout, all sines then all cosines",
            section="positions",
        ),
        Mistake(
            "pe_interleaved",
            "This is the paper's interleaved layout, sine on even dimensions and cosine on odd "
            "ones: the same encoding with the dimensions reordered, not a wrong one. This "
            "exercise asks for the lab code's layout: all sines first, then all cosines.",
            {"pe_layout": "interleaved"},
            short="the paper's interleaved layout",
            section="positions",
        ),
        Mistake(
            "pe_sin_cos_swapped",
            "This swaps sine and cosine: in the layout asked, the sine of each angle comes "
            "before its cosine.",
            {"pe_layout": "swapped"},
            short="sine and cosine swapped",
            section="positions",
        ),
        Mistake(
            "sd_for_variance",
            "This is the standard deviation, √dₖ; the variance of a sum of dₖ independent "
            "products, each of variance 1, is dₖ.",
            {"scaling": "sd"},
            short="the standard deviation, √dₖ",
        ),
        Mistake(
            "divided_by_d_k",
            "This matches dividing the scores by dₖ: the scale is 1/√dₖ, which keeps the "
            "scores' variance at 1 instead of shrinking it to 1/dₖ.",
            {"scale": "d_k"},
        ),
        Mistake(
            "scale_swapped",
            "The scaled and unscaled weights are swapped: dividing by √dₖ makes the row "
            "flatter, not sharper.",
            {"scaling": "swapped"},
            short="the scaled and unscaled weights swapped",
        ),
        Mistake(
            "bytes_one_head",
            "This counts one score matrix only. Training at batch 1 stores an n × n score "
            "matrix for every head of every layer, for the backward pass: n² · h · L entries. "
            "(Inference with a KV cache keeps the keys and values instead, 2 · n · d_model · L "
            "numbers, and the scores of the newest token only.)",
            {"cost": "one_head"},
            short="one score matrix only",
            section="cost",
        ),
        Mistake(
            "high_weight_as_reliance",
            "This takes the highest attention weight as reliance: a high weight is not "
            "evidence that the model relies on the token. Judge by the change in the output "
            "when the token is removed: large and consistent across inputs, or not.",
            {"ablation": "weight_as_reliance"},
            short="the highest weight taken as reliance",
            section="heat-maps",
        ),
        Mistake(
            "ablation_masked_query",
            "This matches masking the token as a query (blocking its row): the [CLS] row that "
            "is read out does not change, so nothing does. Remove the token as a key: its "
            "column becomes minus infinity in the [CLS] row and the other weights renormalise. "
            "(In this one-head, one-layer model that is the same as removing the token; with "
            "more layers the token would still shape the other tokens' vectors.)",
            {"ablation": "query_mask"},
            section="heat-maps",
        ),
        Mistake(
            "low_weight_as_decoration",
            "This dismisses the token because another token has more weight in some input: "
            "a lower weight is no evidence that removing the token changes little. Judge by "
            "the change in the output when the token is removed, not by its weight.",
            {"ablation": "low_weight_as_decoration"},
            short="a lower weight taken as a sign the token can go",
            section="heat-maps",
        ),
        Mistake(
            "mixed_as_decoration",
            "This calls large changes that are not consistent redundant. Redundant means no "
            "change is large: removing the token barely moves the prediction. Here some change "
            "is large, so the token is not redundant; the changes do not all point one way, so "
            "it is not evidence of reliance either: mixed.",
            {"ablation": "mixed_as_decoration"},
            short="large changes in opposite directions called redundant",
            section="heat-maps",
        ),
        Mistake(
            "share_qk_only",
            "This counts only QKᵀ in the n × n part: AV costs another n² · d multiply-adds.",
            {"cost": "qk_only"},
            short="only QKᵀ counted in the n × n part",
            section="cost",
        ),
        Mistake(
            "causal_mask_transposed",
            "This matches the causal mask transposed: each query read itself and the keys "
            "after it. A query may read itself and the keys before it; the keys after its own "
            "position are blocked.",
            {"mask": "transposed"},
            section="masks",
        ),
        Mistake(
            "padding_on_queries",
            "This matches blocking the padded positions as queries (their rows left at 0) "
            "while the real tokens still read the padding: the padding mask blocks the padded "
            "keys, the columns, for every query.",
            {"mask": "queries"},
            short="the padded positions blocked as queries while the real tokens still read "
            "the padding",
            section="masks",
        ),
        Mistake(
            "padded_rows_zeroed",
            "This matches zeroing the padded tokens' own rows as well: the padding mask blocks "
            "the padded keys, the columns, for every query, the padded ones included, so a "
            "padded token's row reads the real tokens and sums to 1 like every other row.",
            {"mask": "padded_rows"},
            section="masks",
        ),
        Mistake(
            "w_q_w_k_swapped",
            "This matches swapping W_Q and W_K: the queries are X · W_Q and the keys X · W_K.",
            {"projection": "w_q_w_k_swapped"},
        ),
        Mistake(
            "sqrt_d_model_in_projection",
            "This matches dividing by √d_model, the width of the token vectors: the scale is "
            "1/√dₖ, the width of the queries and keys.",
            {"scale": "sqrt_d_model"},
        ),
        Mistake(
            "heads_concatenated_in_reverse",
            "This matches concatenating the heads' outputs in reverse: head 1's columns come "
            "first, then head 2's, and so on, before W_O.",
            {"concat": "reversed"},
            section="multi-head",
        ),
        Mistake(
            "heads_interleaved",
            "This matches dealing the columns out to the heads in turn (head 1 taking columns "
            "1, h + 1, 2h + 1, ...): each head takes a block of dₖ adjacent columns of Q, K "
            "and V, head 1 the first dₖ, head 2 the next dₖ, and so on.",
            {"heads": "interleaved"},
            section="multi-head",
        ),
        Mistake(
            "w_o_left_out",
            "This matches the heads' outputs concatenated without W_O: the block's output is "
            "that concatenation times W_O.",
            {"concat": "no_w_o"},
            section="multi-head",
        ),
        Mistake(
            "params_without_w_o",
            "This counts W_Q, W_K and W_V only, 3 · d_model²: the output projection W_O adds "
            "another d_model², 4 · d_model² in all.",
            {"cost": "no_w_o"},
            short="W_O left out of the count",
            section="cost",
        ),
        Mistake(
            "ffn_one_matrix",
            "This counts one matrix of the feed-forward network, d_model × 4 · d_model: it has "
            "two, up to 4 · d_model and back, 8 · d_model² in all.",
            {"cost": "ffn_one_matrix"},
            short="one matrix of the feed-forward network",
            section="cost",
        ),
        Mistake(
            "share_without_w_o",
            "This leaves W_O out of the per-token part (11 · n · d², a share of "
            "n / (n + 5.5 · d)): the projections W_Q, W_K, W_V and W_O take 4 · n · d² "
            "multiply-adds and the feed-forward network 8 · n · d², 12 · n · d² in all, so the "
            "share is n / (n + 6 · d).",
            {"cost": "share_no_w_o"},
            short="W_O left out of the per-token part",
            section="cost",
        ),
        Mistake(
            "params_with_biases",
            "This adds the biases: the question counts the weight matrices only, 4 · d_model² "
            "for W_Q, W_K, W_V, W_O and 8 · d_model² for the feed-forward network.",
            {"cost": "biases"},
            short="the biases counted",
            section="cost",
        ),
    )
}

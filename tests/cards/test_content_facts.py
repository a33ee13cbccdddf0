"""The starter deck's claims, each run as the computation it describes.

Every test here reads a card of cards/content/ and checks what it says against an
independent NumPy computation (or the engine, where the card is about the engine's
own convention). A card that teaches a false fact fails its test.
"""

from __future__ import annotations

import re
from functools import cache

import numpy as np
import pytest

from cards.decks import deck_load, deck_validate
from cards.management.commands.load_starter_content import CONTENT_DIR
from exercises import engine, predictions
from exercises.kinds import get_kind, quadratic_share
from exercises.variants import draw_variant


@cache
def cards() -> dict:
    spec = deck_validate(deck_load(CONTENT_DIR / "attention-and-transformers.yaml"))
    return {card.key: card for card in spec.cards if card.active}


@cache
def retired() -> set:
    spec = deck_validate(deck_load(CONTENT_DIR / "attention-and-transformers.yaml"))
    return {card.key for card in spec.cards if not card.active}


def flat(value: str) -> str:
    return " ".join(value.split())


def text(key: str) -> str:
    """A card's prompt and answer, with line breaks and indentation folded to spaces."""
    card = cards()[key]
    return flat(card.prompt + "\n" + card.answer)


def softmax(z, axis=-1):
    z = np.asarray(z, dtype=float)
    e = np.exp(z - z.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def attention(Q, K, V, blocked=None):
    """A plain reference: one query at a time, no tricks."""
    out = np.empty((Q.shape[0], V.shape[1]))
    for i, q in enumerate(Q):
        s = K @ q / np.sqrt(Q.shape[1])
        if blocked is not None:
            s = np.where(blocked[i], -np.inf, s)
        out[i] = softmax(s) @ V
    return out


def causal(n):
    return np.triu(np.ones((n, n), dtype=bool), k=1)


def numbers(vector: str) -> list[float]:
    return [float(x) for x in vector.strip("()").split(",")]


# --- Multi-head: split the width with reshape, then transpose --------------------------------


def test_splitting_heads_is_reshape_then_transpose_and_a_plain_reshape_mixes_tokens():
    card = text("split-heads-reshape-transpose")
    assert "**reshape** each to $(n, 2, 4)$" in card and "**transpose**" in card
    assert "$(2, n, n)$" in card and "mixing tokens across heads" in card
    # Counted from 1, as everywhere: head 1 owns columns 1 to 4, head 2 columns 5 to 8.
    assert "Head 1 owns columns 1 to 4 and head 2 columns 5 to 8" in card

    n, d_model, h = 6, 8, 2
    d_head = d_model // h
    Q = np.random.default_rng(0).normal(size=(n, d_model))
    per_head = np.stack([Q[:, j * d_head : (j + 1) * d_head] for j in range(h)])  # (h, n, d)

    split = Q.reshape(n, h, d_head).transpose(1, 0, 2)  # what the card says
    assert split.shape == (h, n, d_head)
    np.testing.assert_array_equal(split, per_head)
    np.testing.assert_array_equal(split.transpose(1, 0, 2).reshape(n, d_model), Q)  # undone

    plain = Q.reshape(h, n, d_head)  # what the card warns against
    assert plain.shape == split.shape and not np.array_equal(plain, per_head)
    # Head 1's second "token" is token 1's second half: two tokens' rows and two heads mixed.
    np.testing.assert_array_equal(plain[0, 1], Q[0, d_head:])
    np.testing.assert_array_equal(plain[0, 2], Q[1, :d_head])
    assert all(not np.array_equal(plain[0, i], Q[i, :d_head]) for i in range(1, n))


# --- Permutation equivariance holds only without a causal mask -------------------------------


def test_permutation_equivariance_holds_without_a_mask_and_fails_with_the_causal_one():
    assert "without a causal mask" in text("permutation-equivariance").lower()
    assert "$b$'s output has changed, not just moved" in text("causal-mask-breaks-equivariance")
    assert "Haviv et al., 2022" in text("decoder-without-positions")
    rng = np.random.default_rng(2)
    n, d = 5, 4
    X = rng.normal(size=(n, d))
    Wq, Wk, Wv = (rng.normal(size=(d, d)) for _ in range(3))
    perm = rng.permutation(n)

    def attn(X, blocked=None):
        return attention(X @ Wq, X @ Wk, X @ Wv, blocked)

    np.testing.assert_allclose(attn(X[perm]), attn(X)[perm], atol=1e-12)
    assert not np.allclose(attn(X[perm], causal(n)), attn(X, causal(n))[perm])

    # The card's two-token example: swapping a and b changes b's output, not just its row.
    a_b = attn(X[:2], causal(2))
    b_a = attn(X[[1, 0]], causal(2))
    assert not np.allclose(b_a[0], a_b[1])


def test_with_positions_added_the_permutation_test_fails():
    rng = np.random.default_rng(3)
    n, d = 5, 8
    X = rng.normal(size=(n, d))
    Wq, Wk, Wv = (rng.normal(size=(d, d)) for _ in range(3))
    P = engine.sinusoidal_positions(n, d)
    perm = np.array([1, 0, 2, 3, 4])

    def attn(X):
        return attention(X @ Wq, X @ Wk, X @ Wv)

    assert not np.allclose(attn(X[perm] + P), attn(X + P)[perm])


# --- Sinusoids: a linear function of the offset, and two layouts of one encoding -------------


def test_pe_of_pos_plus_k_is_one_linear_map_of_pe_of_pos_whatever_pos_is():
    card = text("sinusoid-reasons")
    assert "**linear function**" in card and "**may extrapolate**" in card
    assert "rotated by the angle $k\\,f_i$" in card
    d, n, k = 16, 60, 7
    pe = engine.sinusoidal_positions(n + k, d)
    omega = 1 / 10000 ** (np.arange(0, d, 2) / d)
    M = np.zeros((d, d))
    for i, w in enumerate(omega):
        c, s = np.cos(k * w), np.sin(k * w)
        # (sin a, cos a) -> (sin(a + kw), cos(a + kw))
        M[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = [[c, s], [-s, c]]
    np.testing.assert_allclose(pe[k:], pe[:n] @ M.T, atol=1e-12)


def lab_sinusoid(n, d):
    """The lesson's lab code, verbatim: all sines, then all cosines."""
    pos, i = np.arange(n)[:, None], np.arange(d // 2)[None]
    ang = pos / 10000 ** (2 * i / d)
    return np.concatenate([np.sin(ang), np.cos(ang)], axis=-1)


@pytest.mark.parametrize("d", [4, 8, 64])
def test_the_two_sinusoid_layouts_are_one_encoding_with_the_dimensions_reordered(d):
    n = 50
    paper = engine.sinusoidal_positions(n, d)  # interleaved, as in the formula
    lab = lab_sinusoid(n, d)
    assert not np.allclose(paper, lab)  # different layouts ...
    order = np.r_[0:d:2, 1:d:2]  # sines (even dimensions), then cosines (odd)
    np.testing.assert_allclose(paper[:, order], lab, atol=1e-12)  # ... same numbers
    np.testing.assert_allclose(paper @ paper.T, lab @ lab.T, atol=1e-9)  # same similarities


def test_the_layout_card_gives_both_layouts_numbers_right():
    card = text("sinusoid-two-layouts")
    assert "the same encoding with the dimensions reordered" in card
    found = re.findall(r"\$pos = 1\$(?: at \$d_\{model\} = 4\$)?:\s*\$(\([^$]+\))\$", card)
    assert len(found) == 2, found
    interleaved, concatenated = (numbers(v) for v in found)
    np.testing.assert_allclose(interleaved, engine.sinusoidal_positions(2, 4)[1], atol=5e-4)
    np.testing.assert_allclose(concatenated, lab_sinusoid(2, 4)[1], atol=5e-4)
    pe_card = text("exercise-positional-encoding")
    assert "interleaved" in pe_card and "sines come first" in pe_card


# --- Cost: doubling n below the crossover is not linear ---------------------------------------


def layer_cost(n, d):
    return 12 * n * d * d + 2 * n * n * d


def test_doubling_n_costs_two_times_one_plus_the_quadratic_share():
    card = text("doubling-below-crossover")
    assert "roughly linear" not in card and "2.67x at $n = 3d$" in card and "$2(1 + s)$" in card
    assert "At $n = 6\\,d_{model}$" in text("quadratic-crossover")
    d = 1024
    ratio = layer_cost(6 * d, d) / layer_cost(3 * d, d)
    assert ratio == pytest.approx(2 * (1 + quadratic_share(3 * d, d)))
    assert f"{ratio:.2f}" == "2.67"
    assert layer_cost(12 * d, d) / layer_cost(6 * d, d) == pytest.approx(3)  # at the crossover
    for n in (16, 512, 4096, 6144, 100_000):
        assert layer_cost(2 * n, d) / layer_cost(n, d) == pytest.approx(
            2 * (1 + quadratic_share(n, d))
        )
    assert layer_cost(2 * 64, d) / layer_cost(64, d) < 2.05  # far below: close to 2x


# --- Why scale: the variance rule -------------------------------------------------------------


def test_the_variance_of_a_dot_product_is_d_k():
    card = text("dot-product-variance")
    assert "the variance is 1,024 and the standard deviation 32" in card
    assert "1,033" in card  # the simulation is named as such, not as the rule
    rng = np.random.default_rng(0)
    for d_k in (4, 16, 64, 256):
        q = rng.standard_normal((8000, d_k))
        k = rng.standard_normal((8000, d_k))
        dots = (q * k).sum(axis=1)
        assert dots.var() == pytest.approx(d_k, rel=0.06)
        assert (dots / np.sqrt(d_k)).var() == pytest.approx(1, rel=0.06)


# --- Worked examples ---------------------------------------------------------------------------


def test_bank_session_gives_scaled_and_unscaled_weights_and_outputs():
    card = flat(cards()["bank-session-by-hand"].answer)
    keys = np.array([[1, 0, 0, 0], [1, 1, 0, 1], [0, 1, 1, 0]], dtype=float)
    q2 = np.array([1, 1, 0, 1], dtype=float)
    V = np.array([[1, 0], [0, 1], [1, 1]], dtype=float)
    for divisor in (2.0, 1.0):  # scaled by sqrt(4), then unscaled
        a = softmax(keys @ q2 / divisor)
        weights = "(" + ", ".join(f"{x:.3f}" for x in a) + ")"
        output = "(" + ", ".join(f"{x:.3f}" for x in a @ V) + ")"
        assert weights in card and f"= {output}" in card, (weights, output)


def test_causal_three_tokens_gives_its_inputs_and_they_produce_its_table():
    card = cards()["causal-mask-three-tokens"]
    rows = {
        name: np.array([numbers(v) for v in re.findall(r"\(\d, ?\d\)", given)])
        for name, given in re.findall(r"\$(W_[QK])\$ rows \$([^$]+)\$", flat(card.prompt))
    }
    assert set(rows) == {"W_Q", "W_K"}, rows
    Q, K = np.eye(3) @ rows["W_Q"], np.eye(3) @ rows["W_K"]
    A = softmax(np.where(causal(3), -np.inf, Q @ K.T / np.sqrt(2)))
    for row in A:
        cells = " | ".join("0" if v == 0 else f"{v:.3f}" for v in row)
        assert cells in card.answer


def test_each_worked_example_is_worked_in_one_card():
    # The lesson's causal table and token 0's walk-through live in one card each.
    holders = [key for key in cards() if "0.330" in text(key)]
    assert holders == ["causal-mask-three-tokens"]
    walked = [
        key for key in cards() if "(1.000, 1.000)" in text(key) or "output $(1, 1)$" in text(key)
    ]
    assert walked == ["bag-delayed-refund-token-0"]


# --- Cross-attention, the mask in training, residuals -----------------------------------------


def test_cross_attention_shapes():
    card = text("cross-attention-shapes")
    for fact in ("$(n_q, d_k)$", "$(n_k, d_k)$", "$(n_k, d_v)$", "$(n_q, n_k)$", "$(n_q, d_v)$"):
        assert fact in card
    n_q, n_k, d_k, d_v = 3, 7, 4, 5
    rng = np.random.default_rng(4)
    Q, K, V = rng.normal(size=(n_q, d_k)), rng.normal(size=(n_k, d_k)), rng.normal(size=(n_k, d_v))
    trace = engine.scaled_dot_product_attention(Q, K, V, return_intermediates=True)
    assert np.shape(trace.scores) == (n_q, n_k) and np.shape(trace.weights) == (n_q, n_k)
    np.testing.assert_allclose(np.sum(trace.weights, axis=1), 1)  # over the n_k source tokens
    assert np.shape(trace.output) == (n_q, d_v)


def test_masked_row_t_equals_attention_over_the_first_t_tokens():
    # Positions are counted from 1 in the card: row t reads tokens 1 to t.
    assert "row $t$ of the masked computation equals attention over the first $t$ tokens" in (
        text("mask-in-training-not-inference")
    )
    rng = np.random.default_rng(5)
    n, d = 6, 4
    Q, K, V = (rng.normal(size=(n, d)) for _ in range(3))
    full = engine.scaled_dot_product_attention(Q, K, V, mask=causal(n))
    for t in range(1, n + 1):
        prefix = attention(Q[:t], K[:t], V[:t])
        np.testing.assert_allclose(full[t - 1], prefix[t - 1], atol=1e-12)
    # Without the mask, position t reads later tokens: changing the last one moves row 1.
    V2 = V.copy()
    V2[-1] += 5
    assert not np.allclose(attention(Q, K, V2)[0], attention(Q, K, V)[0])
    np.testing.assert_allclose(
        attention(Q, K, V2, causal(n))[:-1], attention(Q, K, V, causal(n))[:-1], atol=1e-12
    )


def _lab_block_outputs(seed: int = 39):
    """The lesson's lab block, with and without its residual connection."""
    rng = np.random.default_rng(seed)
    n, d_model, heads = 6, 8, 2
    d_k = d_model // heads
    Wq, Wk, Wv = (rng.normal(0, 0.5, (heads, d_model, d_k)) for _ in range(3))
    Wo = rng.normal(0, 0.5, (heads * d_k, d_model))
    X = rng.normal(size=(n, d_model))
    outs = [attention(X @ Wq[h], X @ Wk[h], X @ Wv[h]) for h in range(heads)]
    mixed = np.concatenate(outs, axis=-1) @ Wo
    return X, engine.layer_norm(X + mixed), engine.layer_norm(mixed)


def _cos(a, b):
    return np.sum(a * b, axis=-1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)


def test_removing_the_residual_loses_the_token_and_makes_tokens_alike():
    card = text("residual-and-layer-norm")
    assert "cosine near 0 instead of about 0.5" in card and "more alike" in card
    X, with_residual, without = _lab_block_outputs()
    np.testing.assert_allclose(with_residual.mean(axis=-1), 0, atol=1e-8)  # LayerNorm rows
    assert _cos(X, with_residual).mean() == pytest.approx(0.5, abs=0.2)
    assert abs(_cos(X, without).mean()) < 0.15

    def mean_pairwise(Y):
        C = _cos(Y[:, None, :], Y[None, :, :])
        return C[np.triu_indices(len(Y), 1)].mean()

    assert mean_pairwise(without) > mean_pairwise(with_residual)


def test_stacked_attention_alone_only_averages_so_the_spread_shrinks():
    # With values V = X (no projection) each layer's rows lie in the convex hull of the
    # previous rows: the range of every coordinate can only shrink.
    rng = np.random.default_rng(6)
    X = rng.normal(size=(6, 4))
    spread = np.ptp(X, axis=0)
    for _ in range(5):
        X = attention(X, X, X)
        new = np.ptp(X, axis=0)
        assert np.all(new <= spread + 1e-12)
        spread = new


# --- Exercise cards ask for what is graded ------------------------------------------------------


@pytest.mark.parametrize("key", ["exercise-causal-mask", "exercise-padding-mask"])
def test_mask_exercise_prompts_ask_for_the_graded_weight_matrix(key):
    card = cards()[key]
    kind = get_kind(card.exercise["kind"])
    generated = kind.generate(
        kind.normalize_params(card.exercise["params"]), np.random.default_rng(1)
    )
    # A prediction asked first (the causal card's) is answered apart; the graded numbers
    # are the weight matrix.
    assert [ask["name"] for ask in predictions.numeric_asks(generated.asks)] == ["weights"]
    assert "the whole weight matrix $A$" in flat(card.prompt)
    if key == "exercise-padding-mask":
        assert "padded positions' own rows included" in flat(card.prompt)


def test_the_multi_head_card_can_tell_a_missing_scale():
    card = cards()["exercise-multi-head"]
    params = get_kind("multi_head").normalize_params(card.exercise["params"])
    assert params["d_head"] >= 2  # sqrt(1) = 1 would make the scale invisible
    kind = get_kind("multi_head")
    detected = 0
    for seed in range(40):
        g = kind.generate(params, np.random.default_rng(seed))
        arrays = {
            k: np.asarray(g.inputs[k], dtype=float) for k in ("X", "W_Q", "W_K", "W_V", "W_O")
        }
        unscaled = engine.multi_head_attention(
            arrays["X"], arrays["W_Q"], arrays["W_K"], arrays["W_V"], arrays["W_O"],
            n_heads=params["heads"], scale=False,
        )  # fmt: skip
        expected = np.asarray(g.solution["output"])
        if np.any(np.abs(unscaled - expected) > g.atol + g.rtol * np.abs(expected)):
            detected += 1
    assert detected >= 30, detected


# --- Other corrections and the lesson's lists ---------------------------------------------------


def test_alibi_is_a_penalty_on_the_scores_in_every_layer_taught_in_one_card():
    card = text("interview-word-order")
    assert "ALiBi" in card
    assert re.search(r"(adds|adding) (nothing|no position vectors) to the embeddings", card)
    assert "every layer" in card and "a fixed slope per head" in card
    assert "extrapolated to longer ones (Press et al., 2022)" in card
    # The merged card is retired through the deck file; the causal exception has its own.
    assert "alibi" in retired()
    assert "Haviv et al., 2022" not in card
    assert "Haviv et al., 2022" in text("decoder-without-positions")


def test_padding_purpose_names_pooling_and_the_loss():
    assert "depend on what a sentence was batched with" in text("padding-mask-purpose")
    card = text("padding-downstream")
    assert "**pooling**" in card and "**loss**" in card


# --- The cards the outside read asked for ------------------------------------------------------


def test_softmax_keeps_ratios_of_e_to_the_gap():
    card = text("what-softmax-does")
    assert "ratio $e^{\\Delta s}$" in card and "exaggerates" not in card
    for gap, ratio in ((1, "2.7"), (5, "148")):
        a = softmax([gap, 0.0])
        assert f"{a[0] / a[1]:.3g}".startswith(ratio.rstrip("0")), gap
        assert (
            f"a gap of {gap} a ratio of {ratio}" in card
            or f"a gap of {gap} is a ratio of {ratio}" in card
        )


def test_saturation_tells_a_starved_key_from_a_one_hot_row_and_the_measured_effect():
    card = text("softmax-saturation")
    assert f"$(1, 1, 0)$, gives $({', '.join(f'{v:.3f}' for v in softmax([1, 1, 0]))})$" in card
    two_way = softmax([8, 8, 0])
    assert "(0.500, 0.500, 0.0002)$ is not one-hot" in card
    assert two_way[0] == pytest.approx(0.5, abs=1e-3) and two_way[2] < 0.00025
    one_hot = softmax([8, 0, 0])
    assert "(8, 0, 0) \\to (0.999, 0.0003, 0.0003)" in card
    assert f"{one_hot[0]:.3f}" == "0.999" and f"{one_hot[1]:.4f}" == "0.0003"
    # The article's simulation, rerun: 2,000 queries against 10 keys at d_k = 1,024.
    card = text("scaling-simulation")
    assert "**0.97 unscaled**" in card and "**0.32 scaled**" in card
    rng = np.random.default_rng(0)
    d_k = 1024
    q = rng.standard_normal((2000, d_k))
    k = rng.standard_normal((2000, 10, d_k))
    scores = np.einsum("nd,nkd->nk", q, k)
    assert softmax(scores).max(axis=1).mean() == pytest.approx(0.97, abs=0.01)
    assert softmax(scores / np.sqrt(d_k)).max(axis=1).mean() == pytest.approx(0.32, abs=0.01)


def test_sinusoid_similarity_depends_on_the_offset_alone():
    card = text("sinusoid-offset-similarity")
    assert "It depends only on their **offset** $k$, not on where they start" in card
    pe = engine.sinusoidal_positions(300, 64)
    omega = 1 / 10000 ** (2 * np.arange(32) / 64)
    for k in range(0, 60):
        sims = [pe[p] @ pe[p + k] for p in (0, 25, 200)]
        assert max(sims) - min(sims) < 1e-12
        assert sims[0] == pytest.approx(np.cos(k * omega).sum())
    near = [pe[0] @ pe[k] for k in range(4)]
    assert near == sorted(near, reverse=True)  # largest at k = 0, falling off nearby
    # ... but not steadily: the card's two offsets, as cosines (every code has length^2 d/2).
    assert "does **not** fall steadily" in card
    cosine = {k: pe[0] @ pe[k] / 32 for k in (28, 32)}
    assert (
        f"offset 32 (cosine {cosine[32]:.2f}) is more alike than offset 28 ({cosine[28]:.2f})"
        in card
    )
    assert cosine[32] > cosine[28]
    assert "f_i = 1/10000^{2i/d_{model}}" in card and "omega" not in card


def test_the_articles_abc_example_with_identity_projections():
    card = text("abc-identity-example")
    X = np.array([[1, 0], [0, 1], [1, 1]], float)
    scores = X @ X.T
    for name, row in zip("ABC", scores, strict=True):
        assert f"{name} $[{', '.join(str(int(v)) for v in row)}]$" in card
    A = softmax(scores / np.sqrt(2))
    assert f"[{', '.join(f'{v:.3f}' for v in A[2])}]" in card
    out = attention(X, X, X)
    for name, row in zip("ABC", out, strict=True):
        assert f"[{row[0]:.3f}, {row[1]:.3f}]" in card, name
    # Worked once: no other card repeats row C.
    assert [key for key in cards() if "0.248, 0.248, 0.503" in text(key)] == [
        "abc-identity-example"
    ]


def test_the_misreadings_are_one_card_each_and_the_cost_one_is_for_exact_attention():
    # The five common readings are a table in the lesson's interview section; the three
    # not taught elsewhere are a card each.
    cost = text("misreading-one-quadratic-number")
    assert "**Compute** grows with $n^2$ for exact full attention, whatever the kernel" in cost
    assert "only when the $n \\times n$ weights are stored" in cost
    assert "compute is $n^2$ always" not in cost.lower()
    assert "one head in one layer" in text("misreading-attends-so-reason")
    assert "Where the label evidence sits" in text("misreading-more-context")
    assert "heat-map-staff-reading" in retired()


def test_positions_are_added_once_before_the_first_block():
    card = text("block-bottom-to-top")
    assert "Positions are added to the token vectors once, before the first block" in card
    assert "Token vectors plus positions;" not in card


def test_pre_ln_has_a_final_layer_norm_and_the_lab_layer_norm_has_no_gain_or_bias():
    assert "plus one final LayerNorm after the last block" in text("pre-ln-vs-post-ln")
    card = text("layer-norm-gain-and-bias")
    assert "learned gain $\\gamma$ and bias $\\beta$" in card
    assert "$\\gamma = 1$ and $\\beta = 0$" in card
    # Leaving them out is the same as gamma = 1 and beta = 0.
    x = np.random.default_rng(7).normal(size=(4, 8))
    d = x.shape[1]
    np.testing.assert_allclose(engine.layer_norm(x), engine.layer_norm(x, np.ones(d), np.zeros(d)))
    assert "without its learned gain and bias" in text("lab-layer-norm")


def test_cross_attention_says_where_it_sits():
    card = text("interview-self-vs-cross-attention")
    assert (
        "in every decoder layer, between the masked self-attention and the feed-forward network"
        in card
    )


def test_the_ablation_card_teaches_the_kinds_three_outcomes():
    from exercises.kinds import ablation

    card = text("ablation-reliance-test")
    assert "large and consistent" in card
    assert f"a change of {ablation.THRESHOLD} here" in card and "the lesson gives no number" in card
    # The card's three readings are the kind's verdicts, by name ...
    assert re.findall(r"- \*\*([a-z]+)\*\*:", card) == list(ablation.VERDICTS)
    reliance, mixed, redundant = ablation.VERDICTS
    # ... and the kind's verdicts on changes of each pattern.
    assert ablation.verdict(np.array([0.2, 0.3, 0.1])) == reliance  # one direction
    assert ablation.verdict(np.array([0.2, -0.3, 0.1])) == mixed  # mixed directions
    assert ablation.verdict(np.array([0.01, -0.02, 0.0])) == redundant  # small everywhere
    # A small change claims redundancy, never disuse; a mixed one claims no reliance.
    assert "the output does not need the token given the others" in card
    assert "that does not show the token is unused" in card
    for claim in ("barely uses", "decoration", "does not use", "ignores the token"):
        assert claim not in card.lower(), claim
    assert "which is not evidence that it is a reason for the prediction" in card
    assert "In this one-head, one-layer model that removes the token" in card
    trap = text("trap-heat-map-as-reason")
    assert "a small change shows only that the token is redundant for this output" in trap


def _ablation_parts(inputs, m):
    q, w = np.asarray(inputs["q"], dtype=float), np.asarray(inputs["w"], dtype=float)
    K = np.asarray(inputs[f"K_{m + 1}"], dtype=float)
    V = np.asarray(inputs[f"V_{m + 1}"], dtype=float)
    return q, K, V, w, float(inputs["b"]), int(inputs["highlighted"])


def test_a_redundant_token_changes_little_when_removed_yet_its_value_matters():
    """What the redundant verdict may claim, run on the kind's own variants: removing the
    token alone barely moves p, and shifting the token's value (kept in place) moves it
    by more than the threshold. So the token is redundant for the output, not unused."""
    from exercises.kinds import ablation

    redundant = ablation.VERDICTS[2]
    kind = get_kind("ablation")
    params = kind.normalize_params({"n_inputs": 3, "n": 3, "case": redundant})
    for seed in range(12):
        g = kind.generate(params, np.random.default_rng(seed))
        assert g.solution["verdict"] == redundant
        assert max(abs(c) for c in g.solution["change"]) <= ablation.SMALL
        moved = []
        for m in range(g.inputs["n_inputs"]):
            q, K, V, w, b, h = _ablation_parts(g.inputs, m)
            _, p = ablation.cls_readout(q, K, V, w, b, None)
            for sign in (1, -1):  # the token's value moved along the read-out, kept in place
                shifted = V.copy()
                shifted[h] += sign * 2 * w
                _, p_shifted = ablation.cls_readout(q, K, shifted, w, b, None)
                moved.append(abs(p_shifted - p))
        assert max(moved) > ablation.THRESHOLD, (seed, moved)


def test_masking_a_key_is_removing_the_token_in_one_head_and_one_layer_only():
    from exercises.kinds import ablation

    kind = get_kind("ablation")
    g = kind.generate(kind.normalize_params({"n_inputs": 3, "n": 3}), np.random.default_rng(3))
    for m in range(g.inputs["n_inputs"]):
        q, K, V, w, b, h = _ablation_parts(g.inputs, m)
        _, masked = ablation.cls_readout(q, K, V, w, b, h)
        _, removed = ablation.cls_readout(q, np.delete(K, h, 0), np.delete(V, h, 0), w, b, None)
        assert masked == pytest.approx(removed, abs=1e-12)
    # With a second layer the token's information has already reached the other rows:
    # masking its key in layer 2 leaves its trace, removing the token does not.
    rng = np.random.default_rng(8)
    X = rng.normal(size=(4, 2))
    layer1 = X + attention(X, X, X)
    blocked = np.zeros((4, 4), dtype=bool)
    blocked[:, 1] = True  # token 2 as a key in layer 2
    masked_layer2 = attention(layer1, layer1, layer1, blocked)[-1]
    Y = np.delete(X, 1, 0)
    Y1 = Y + attention(Y, Y, Y)
    removed_layer2 = attention(Y1, Y1, Y1)[-1]
    assert not np.allclose(masked_layer2, removed_layer2)


def test_the_cost_exercise_card_counts_every_head_and_layer_in_training_only():
    card = text("exercise-cost")
    assert (
        "$n^2 \\cdot h \\cdot L$ entries times the bytes per entry for one sequence (batch 1), "
        "not the bytes of one head" in card
    )
    assert "as plain attention does in training for the backward pass" in card
    assert "keeps keys and values instead, $2\\,n\\,d_{model}$ numbers per layer" in card
    kind = get_kind("cost")
    params = cards()["exercise-cost"].exercise["params"]
    g = kind.generate(kind.normalize_params({**params, "vary": False}), np.random.default_rng(0))
    n, h, L, d = params["n"], params["heads"], params["layers"], params["d_model"]
    assert g.solution["score_bytes"] == n * n * h * L * 2
    # The key-value cache of the same model is far smaller: linear in n, no n x n matrix.
    assert 2 * n * d * L * 2 < g.solution["score_bytes"] / 30


def test_the_projection_card_does_not_call_its_sequences_permutations():
    card = text("exercise-projection-bag-delayed-refund")
    assert "permut" not in card and "repeats tokens" in card
    kind = get_kind("projection")
    params = kind.normalize_params(
        cards()["exercise-projection-bag-delayed-refund"].exercise["params"]
    )
    repeated = [
        len(set(map(tuple, kind.generate(params, np.random.default_rng(seed)).inputs["X"]))) < 3
        for seed in range(30)
    ]
    assert any(repeated)  # a sequence with a repeated token: not a permutation of the three


def test_near_duplicates_are_differentiated():
    # The parameter count is one card's; the multi-head interview refers to it.
    holders = [key for key in cards() if "4\\,d_{model}^2" in text(key)]
    assert holders == ["attention-and-ffn-parameters"]
    assert "the count is its own card" in text("interview-why-multi-head")
    # The three causal exercises ask different things.
    exercises = {
        key: cards()[key].exercise
        for key in (
            "exercise-attention-causal",
            "exercise-projection-causal",
            "exercise-causal-mask",
        )
    }
    assert exercises["exercise-attention-causal"]["kind"] == "attention"  # and the output
    assert exercises["exercise-causal-mask"]["kind"] == "causal"  # the weights alone
    assert exercises["exercise-projection-causal"]["params"]["preset"] == "lesson"


def test_the_causal_mask_exercise_asks_a_prediction_whose_answer_varies():
    # A concept check with one answer ("token 1 reads only itself") is a recall card,
    # causal-first-token; the exercise's prediction must be worth making on each review.
    card = cards()["exercise-causal-mask"]
    kind = get_kind(card.exercise["kind"])
    params = kind.normalize_params(card.exercise["params"])
    asked = {
        (g.asks[0]["question"], g.solution["prediction"])
        for g in (draw_variant(kind, params, seed) for seed in range(40))
    }
    assert len({answer for _, answer in asked}) >= 3 and len({q for q, _ in asked}) >= 2
    assert "Only to itself" in text("causal-first-token")


def test_the_lessons_sources_for_interpretation_and_origin():
    baseline = text("uniform-weights-baseline")
    assert "Wiegreffe and Pinter, 2019" in baseline
    # What they compared: task performance, learned attention against attention frozen
    # to uniform weights; what a tie means: the task cannot tell, not "cannot explain".
    assert "task performance with its learned attention" in baseline  # against uniform
    assert "frozen to uniform weights" in baseline
    assert "the task cannot tell whether the weights explain anything" in baseline
    assert "cannot explain it" not in baseline
    conclusion = text("wiegreffe-pinter-conclusion")
    assert "depends on what one means by explanation" in conclusion
    assert "does not show attention never explains" in conclusion
    for test in ("uniform-weights baseline", "random seeds", "without context", "adversarially"):
        assert test in conclusion, test
    origin = text("attention-origin-bottleneck")
    assert "**fixed-length bottleneck**" in origin and "Bahdanau, Cho and Bengio (2015)" in origin

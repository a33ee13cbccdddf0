"""Properties of attention on seeded random inputs, and an independent loop-based reference.

The properties are the lesson's table: rows sum to 1, blocked weights are exactly 0,
permutation equivariance (lost once positions are added), causal isolation, padding
invariance, convex mixing; plus multi-head = a loop of single heads, and grouped-query
attention = multi-head attention with repeated key/value heads.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from exercises.engine import (
    causal_mask,
    grouped_query_attention,
    init_block_params,
    multi_head_attention,
    padding_mask,
    scaled_dot_product_attention,
    sinusoidal_positions,
    transformer_block,
)

SEEDS = [0, 1, 2, 3, 39]


def random_open_mask(rng, n_q, n_k, p_blocked=0.4):
    """A random blocking mask that leaves at least one key open in every row."""
    mask = rng.random((n_q, n_k)) < p_blocked
    mask[np.arange(n_q), rng.integers(0, n_k, n_q)] = False
    return mask


# --- an independent reference: nested loops, math.exp, no NumPy arithmetic -----------


def reference_attention(Q, K, V, blocked, scale):
    """Attention row by row, as the lesson writes it: o_i = sum_j a_ij v_j."""
    d_k = len(Q[0])
    weights, outputs = [], []
    for q, blocked_row in zip(Q, blocked, strict=True):
        scores = []
        for k, is_blocked in zip(K, blocked_row, strict=True):
            if is_blocked:
                scores.append(None)
                continue
            dot = 0.0
            for qc, kc in zip(q, k, strict=True):
                dot += qc * kc
            scores.append(dot / math.sqrt(d_k) if scale else dot)
        top = max(s for s in scores if s is not None)
        exps = [0.0 if s is None else math.exp(s - top) for s in scores]
        total = sum(exps)
        row = [e / total for e in exps]
        out = []
        for c in range(len(V[0])):
            acc = 0.0
            for a, v in zip(row, V, strict=True):
                acc += a * v[c]
            out.append(acc)
        weights.append(row)
        outputs.append(out)
    return weights, outputs


def test_engine_agrees_with_the_loop_reference_on_random_cases():
    rng = np.random.default_rng(20240)
    for _ in range(400):
        n_q, n_k, d_k, d_v = rng.integers(1, 7, size=4)
        Q = rng.normal(0, 2, (n_q, d_k))
        K = rng.normal(0, 2, (n_k, d_k))
        V = rng.normal(0, 2, (n_k, d_v))
        masked = rng.random() < 0.6
        mask = random_open_mask(rng, n_q, n_k) if masked else np.zeros((n_q, n_k), bool)
        scale = bool(rng.random() < 0.5)
        ref_w, ref_out = reference_attention(
            Q.tolist(), K.tolist(), V.tolist(), mask.tolist(), scale
        )
        given_mask = mask if masked else None
        fast = scaled_dot_product_attention(Q, K, V, mask=given_mask, scale=scale)
        trace = scaled_dot_product_attention(
            Q, K, V, mask=given_mask, scale=scale, return_intermediates=True
        )
        np.testing.assert_allclose(fast, ref_out, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(trace.output, ref_out, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(trace.weights, ref_w, rtol=1e-10, atol=1e-14)
        assert np.all(trace.weights[mask] == 0.0)


# --- one head ------------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
def test_rows_sum_to_one_and_blocked_weights_are_exactly_zero(seed):
    rng = np.random.default_rng(seed)
    n_q, n_k = 7, 9
    Q, K = rng.normal(0, 3, (2, n_q, 5)), rng.normal(0, 3, (2, n_k, 5))
    V = rng.normal(size=(2, n_k, 3))
    mask = np.stack([random_open_mask(rng, n_q, n_k) for _ in range(2)])
    trace = scaled_dot_product_attention(Q, K, V, mask=mask, return_intermediates=True)
    np.testing.assert_allclose(trace.weights.sum(axis=-1), 1.0, rtol=0, atol=1e-12)
    assert np.all(trace.weights >= 0)
    assert np.all(trace.weights[mask] == 0.0)
    assert np.all(trace.weights[~mask] > 0.0)


@pytest.mark.parametrize("seed", SEEDS)
def test_each_output_lies_in_the_hull_of_its_open_values(seed):
    rng = np.random.default_rng(seed)
    Q, K = rng.normal(0, 4, (6, 4)), rng.normal(0, 4, (8, 4))
    V = rng.normal(size=(8, 3))
    mask = random_open_mask(rng, 6, 8)
    out = scaled_dot_product_attention(Q, K, V, mask=mask)
    for i in range(6):
        open_values = V[~mask[i]]
        assert np.all(out[i] >= open_values.min(axis=0) - 1e-12)
        assert np.all(out[i] <= open_values.max(axis=0) + 1e-12)


@pytest.mark.parametrize("seed", SEEDS)
def test_permuting_tokens_permutes_outputs(seed):
    rng = np.random.default_rng(seed)
    Q, K, V = rng.normal(size=(3, 6, 4))
    perm = rng.permutation(6)
    np.testing.assert_allclose(
        scaled_dot_product_attention(Q[perm], K[perm], V[perm]),
        scaled_dot_product_attention(Q, K, V)[perm],
        rtol=1e-12,
        atol=1e-14,
    )


@pytest.mark.parametrize("seed", SEEDS)
def test_batched_attention_equals_a_loop_and_the_trace(seed):
    rng = np.random.default_rng(seed)
    Q = rng.normal(size=(2, 3, 5, 4))
    K = rng.normal(size=(2, 3, 6, 4))
    V = rng.normal(size=(2, 3, 6, 2))
    mask = random_open_mask(rng, 5, 6)
    fast = scaled_dot_product_attention(Q, K, V, mask=mask)
    trace = scaled_dot_product_attention(Q, K, V, mask=mask, return_intermediates=True)
    assert fast.shape == (2, 3, 5, 2)
    for b in range(2):
        for h in range(3):
            np.testing.assert_allclose(
                fast[b, h], scaled_dot_product_attention(Q[b, h], K[b, h], V[b, h], mask=mask)
            )
    np.testing.assert_allclose(fast, trace.output, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("seed", SEEDS)
def test_padding_keys_leaves_real_tokens_unchanged(seed):
    rng = np.random.default_rng(seed)
    n, pad, d = 5, 3, 4
    Q, K, V = rng.normal(size=(3, n + pad, d))
    valid = np.arange(n + pad) < n
    padded = scaled_dot_product_attention(Q, K, V, mask=padding_mask(valid))
    alone = scaled_dot_product_attention(Q[:n], K[:n], V[:n])
    np.testing.assert_allclose(padded[:n], alone, rtol=1e-12, atol=1e-14)
    # without the mask the padding leaks into the real tokens
    assert not np.allclose(scaled_dot_product_attention(Q, K, V)[:n], alone)


# --- heads ---------------------------------------------------------------------------


def heads_by_loop(X, W_Q, W_K, W_V, W_O, n_heads, mask=None):
    """Multi-head attention as the lab writes it: one single-head call per head."""
    d_k = W_Q.shape[1] // n_heads
    d_v = W_V.shape[1] // n_heads
    outs = []
    for j in range(n_heads):
        q, k = slice(j * d_k, (j + 1) * d_k), slice(j * d_v, (j + 1) * d_v)
        outs.append(
            scaled_dot_product_attention(X @ W_Q[:, q], X @ W_K[:, q], X @ W_V[:, k], mask=mask)
        )
    return np.concatenate(outs, axis=-1) @ W_O, outs


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("n_heads", [1, 2, 4])
def test_multi_head_equals_a_loop_over_single_heads(seed, n_heads):
    rng = np.random.default_rng(seed)
    n, d_model = 6, 8
    X = rng.normal(size=(n, d_model))
    W_Q, W_K, W_V, W_O = rng.normal(0, 0.5, (4, d_model, d_model))
    mask = random_open_mask(rng, n, n)
    expected, per_head = heads_by_loop(X, W_Q, W_K, W_V, W_O, n_heads, mask)
    got = multi_head_attention(X, W_Q, W_K, W_V, W_O, n_heads, mask=mask)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-13)
    trace = multi_head_attention(
        X, W_Q, W_K, W_V, W_O, n_heads, mask=mask, return_intermediates=True
    )
    d_k = d_model // n_heads
    assert trace.weights.shape == (n_heads, n, n)
    assert trace.head_outputs.shape == (n_heads, n, d_k)
    assert trace.concat.shape == trace.output.shape == (n, d_model)
    for j in range(n_heads):
        np.testing.assert_allclose(trace.head_outputs[j], per_head[j], rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(trace.output, expected, rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("seed", SEEDS)
def test_multi_head_batched_over_sequences(seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(3, 5, 8))
    W = rng.normal(0, 0.5, (4, 8, 8))
    valid = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [1, 0, 0, 0, 0]], dtype=bool)
    mask = padding_mask(valid) | causal_mask(5)
    got = multi_head_attention(X, *W, n_heads=2, mask=mask)
    for b in range(3):
        np.testing.assert_allclose(
            got[b], multi_head_attention(X[b], *W, n_heads=2, mask=mask[b]), rtol=1e-12
        )


@pytest.mark.parametrize("seed", SEEDS)
def test_grouped_query_with_one_group_per_head_is_multi_head(seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(6, 8))
    W = rng.normal(0, 0.5, (4, 8, 8))
    mask = causal_mask(6)
    np.testing.assert_array_equal(
        grouped_query_attention(X, *W, n_heads=4, n_kv_heads=4, mask=mask),
        multi_head_attention(X, *W, n_heads=4, mask=mask),
    )


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("n_kv_heads", [1, 2])
def test_grouped_query_equals_multi_head_with_repeated_key_value_heads(seed, n_kv_heads):
    rng = np.random.default_rng(seed)
    n, d_model, h = 6, 16, 4
    d_k = d_model // h
    r = h // n_kv_heads
    X = rng.normal(size=(n, d_model))
    W_Q, W_O = rng.normal(0, 0.5, (2, d_model, d_model))
    W_K, W_V = rng.normal(0, 0.5, (2, d_model, n_kv_heads * d_k))

    def repeat_heads(W):  # key/value head j serves query heads j*r .. j*r + r - 1
        return np.repeat(W.reshape(d_model, n_kv_heads, d_k), r, axis=1).reshape(d_model, -1)

    mask = random_open_mask(rng, n, n)
    got = grouped_query_attention(X, W_Q, W_K, W_V, W_O, h, n_kv_heads, mask=mask)
    expected = multi_head_attention(X, W_Q, repeat_heads(W_K), repeat_heads(W_V), W_O, h, mask=mask)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-13)
    trace = grouped_query_attention(
        X, W_Q, W_K, W_V, W_O, h, n_kv_heads, mask=mask, return_intermediates=True
    )
    assert trace.K.shape == (n_kv_heads, n, d_k)
    assert trace.weights.shape == (h, n, n)
    np.testing.assert_allclose(trace.output, expected, rtol=1e-12, atol=1e-13)


# --- the block (the lab's checks) -----------------------------------------------------


@pytest.fixture(params=SEEDS)
def lab(request):
    rng = np.random.default_rng(request.param)
    params = init_block_params(rng, 8, 32, n_heads=2, std=0.5)
    X = rng.normal(size=(6, 8))
    return rng, params, X


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_block_output_has_the_input_shape(lab, norm):
    _, params, X = lab
    assert transformer_block(X, params, n_heads=2, norm=norm).shape == X.shape
    assert transformer_block(np.stack([X, X]), params, n_heads=2, norm=norm).shape == (2, 6, 8)


def test_post_ln_rows_are_normalised(lab):
    _, params, X = lab
    Y = transformer_block(X, params, n_heads=2, norm="post")
    np.testing.assert_allclose(Y.mean(axis=-1), 0.0, atol=1e-12)
    np.testing.assert_allclose(Y.var(axis=-1), 1.0, atol=1e-3)  # var / (var + eps)
    # pre-LN leaves the residual stream unnormalised
    Z = transformer_block(X, params, n_heads=2, norm="pre")
    assert not np.allclose(Z.var(axis=-1), 1.0, atol=1e-2)


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_block_is_permutation_equivariant_until_positions_are_added(lab, norm):
    rng, params, X = lab
    perm = rng.permutation(6)
    while np.array_equal(perm, np.arange(6)):
        perm = rng.permutation(6)

    def block(x):
        return transformer_block(x, params, n_heads=2, norm=norm)

    np.testing.assert_allclose(block(X[perm]), block(X)[perm], rtol=1e-10, atol=1e-12)
    P = sinusoidal_positions(6, 8)
    assert not np.allclose(block(X[perm] + P), block(X + P)[perm])


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_causal_block_isolates_earlier_tokens_from_later_ones(lab, norm):
    _, params, X = lab
    X2 = X.copy()
    # change only the last token; not by a constant shift, which pre-LN would normalise away
    X2[-1, ::2] += 5.0

    def block(x, mask=None):
        return transformer_block(x, params, n_heads=2, mask=mask, norm=norm)

    causal = causal_mask(6)
    np.testing.assert_allclose(block(X2, causal)[:-1], block(X, causal)[:-1], rtol=0, atol=1e-13)
    assert not np.allclose(block(X2)[:-1], block(X)[:-1])


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_padding_leaves_real_tokens_unchanged_through_the_block(lab, norm):
    rng, params, X = lab
    padded = np.concatenate([X, rng.normal(size=(3, 8))])
    valid = np.arange(9) < 6
    for causal in (False, True):
        base = causal_mask(6) if causal else None
        mask = padding_mask(valid) | (causal_mask(9) if causal else False)
        got = transformer_block(padded, params, n_heads=2, mask=mask, norm=norm)[:6]
        expected = transformer_block(X, params, n_heads=2, mask=base, norm=norm)
        np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)


def test_grouped_query_block(lab):
    rng, _, X = lab
    params = init_block_params(rng, 8, 32, n_heads=4, n_kv_heads=2)
    Y = transformer_block(X, params, n_heads=4, n_kv_heads=2, mask=causal_mask(6))
    assert Y.shape == X.shape


def test_block_rejects_a_wrong_width_and_norm(lab):
    _, params, X = lab
    with pytest.raises(ValueError, match=r"X has 7 columns but the block's d_model is 8"):
        transformer_block(X[:, :7], params, n_heads=2)
    with pytest.raises(ValueError, match=r'norm must be "post" or "pre"'):
        transformer_block(X, params, n_heads=2, norm="middle")

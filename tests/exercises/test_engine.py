"""The attention engine against the seeds' worked examples and printed tables.

Each expected number below is copied from the two source lessons at the precision they
print it, and compared after rounding the engine's value to that precision.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from exercises.engine import (
    AttentionError,
    AttentionTrace,
    attention_parameter_count,
    causal_mask,
    gelu,
    init_block_params,
    layer_norm,
    multi_head_attention,
    padding_mask,
    project,
    scaled_dot_product_attention,
    sinusoidal_positions,
    softmax,
)


def rounded(x, decimals):
    return np.round(np.asarray(x, dtype=float), decimals) + 0.0  # + 0.0 turns -0.0 into 0.0


# --- the lesson's application: "bag delayed refund" ----------------------------------


@pytest.fixture
def triage():
    X = np.eye(3)  # bag, delayed, refund as one-hot rows, d_model = 3
    W_Q = np.array([[1, 0], [0, 1], [1, 1]], dtype=float)
    W_K = np.array([[1, 0], [1, 1], [0, 1]], dtype=float)
    W_V = np.array([[2, 0], [0, 2], [1, 1]], dtype=float)
    return project(X, W_Q, W_K, W_V)


def test_triage_shapes(triage):
    Q, K, V = triage
    trace = scaled_dot_product_attention(Q, K, V, return_intermediates=True)
    assert isinstance(trace, AttentionTrace)
    assert Q.shape == K.shape == V.shape == (3, 2)
    assert trace.scores.shape == trace.weights.shape == (3, 3)
    assert trace.output.shape == (3, 2)


def test_triage_token0_by_hand(triage):
    Q, K, V = triage
    trace = scaled_dot_product_attention(Q, K, V, return_intermediates=True)
    np.testing.assert_array_equal(trace.raw_scores[0], [1, 1, 0])
    np.testing.assert_array_equal(rounded(trace.scores[0], 3), [0.707, 0.707, 0.0])
    np.testing.assert_array_equal(rounded(trace.weights[0], 3), [0.401, 0.401, 0.198])
    np.testing.assert_array_equal(rounded(trace.output[0], 3), [1.0, 1.0])


def test_triage_weight_table_and_outputs(triage):
    Q, K, V = triage
    trace = scaled_dot_product_attention(Q, K, V, return_intermediates=True)
    np.testing.assert_array_equal(
        rounded(trace.weights, 3),
        [[0.401, 0.401, 0.198], [0.198, 0.401, 0.401], [0.248, 0.503, 0.248]],
    )
    np.testing.assert_array_equal(
        rounded(trace.output, 3), [[1.000, 1.000], [0.797, 1.203], [0.745, 1.255]]
    )
    # 'refund' attends most to 'delayed', not to itself
    assert trace.weights[2].argmax() == 1
    # the fast path gives the same output as the traced one
    np.testing.assert_allclose(scaled_dot_product_attention(Q, K, V), trace.output, rtol=1e-13)


def test_triage_causal_weights(triage):
    Q, K, V = triage
    mask = causal_mask(3)
    np.testing.assert_array_equal(mask, np.triu(np.ones((3, 3), dtype=bool), k=1))
    trace = scaled_dot_product_attention(Q, K, V, mask=mask, return_intermediates=True)
    np.testing.assert_array_equal(
        rounded(trace.weights, 3),
        [[1.000, 0.000, 0.000], [0.330, 0.670, 0.000], [0.248, 0.503, 0.248]],
    )
    assert trace.weights[0, 0] == 1.0  # token 0 attends only to itself, exactly
    assert np.all(trace.weights[mask] == 0.0)  # the upper triangle is exactly 0
    assert np.all(np.isneginf(trace.masked_scores[mask]))
    np.testing.assert_array_equal(trace.masked_scores[~mask], trace.scores[~mask])
    # the last row sees every key and is unchanged by the mask
    unmasked = scaled_dot_product_attention(Q, K, V, return_intermediates=True)
    np.testing.assert_array_equal(trace.weights[2], unmasked.weights[2])


def test_larger_score_spread_sharpens_the_softmax(triage):
    """The lesson's sequence: scaled (0.707, 0.707, 0), unscaled (1, 1, 0), eight times (8, 8, 0)."""
    Q, K, V = triage
    scaled = scaled_dot_product_attention(Q, K, V, return_intermediates=True)
    unscaled = scaled_dot_product_attention(Q, K, V, scale=False, return_intermediates=True)
    eightfold = scaled_dot_product_attention(Q, K, V, scale=8.0, return_intermediates=True)
    np.testing.assert_array_equal(eightfold.scores[0], [8, 8, 0])
    np.testing.assert_array_equal(rounded(scaled.weights[0], 3), [0.401, 0.401, 0.198])
    np.testing.assert_array_equal(rounded(unscaled.weights[0], 3), [0.422, 0.422, 0.155])
    # printed as (0.500, 0.500, 0.0002): the first two at 3 decimals, the third at 4
    np.testing.assert_array_equal(rounded(eightfold.weights[0, :2], 3), [0.5, 0.5])
    assert round(eightfold.weights[0, 2], 4) == 0.0002
    # and softmax itself, on the printed score vectors
    np.testing.assert_array_equal(rounded(softmax([0.707, 0.707, 0]), 3), [0.401, 0.401, 0.198])
    np.testing.assert_array_equal(rounded(softmax([1, 1, 0]), 3), [0.422, 0.422, 0.155])
    sharp = softmax([8, 8, 0])
    np.testing.assert_array_equal(rounded(sharp[:2], 3), [0.5, 0.5])
    assert round(sharp[2], 4) == 0.0002


# --- the lesson's bank session: login, new-device, transfer (d_k = 4) ----------------

BANK_K = np.array([[1, 0, 0, 0], [1, 1, 0, 1], [0, 1, 1, 0]], dtype=float)
BANK_V = np.array([[1, 0], [0, 1], [1, 1]], dtype=float)
Q_NEW_DEVICE = [0, 1, 1, 0]
Q_TRANSFER = [1, 1, 0, 1]


def bank_queries(q_login):
    return np.array([q_login, Q_NEW_DEVICE, Q_TRANSFER], dtype=float)


def test_bank_session_transfer_row():
    Q = bank_queries([0, 0, 1, 1])
    trace = scaled_dot_product_attention(Q, BANK_K, BANK_V, return_intermediates=True)
    np.testing.assert_array_equal(trace.raw_scores[2], [1, 3, 1])
    np.testing.assert_array_equal(trace.scores[2], [0.5, 1.5, 0.5])  # exact: sqrt(4) = 2
    np.testing.assert_array_equal(rounded(trace.weights[2], 3), [0.212, 0.576, 0.212])
    np.testing.assert_array_equal(rounded(trace.output[2], 3), [0.424, 0.788])
    unscaled = scaled_dot_product_attention(
        Q, BANK_K, BANK_V, scale=False, return_intermediates=True
    )
    np.testing.assert_array_equal(rounded(unscaled.weights[2], 3), [0.107, 0.787, 0.107])
    np.testing.assert_array_equal(rounded(softmax([1, 3, 1]), 3), [0.107, 0.787, 0.107])


def test_bank_session_causal_mask_by_hand():
    Q = bank_queries([0, 0, 1, 1])
    open_ = scaled_dot_product_attention(Q, BANK_K, BANK_V, return_intermediates=True)
    causal = scaled_dot_product_attention(
        Q, BANK_K, BANK_V, mask=causal_mask(3), return_intermediates=True
    )
    np.testing.assert_array_equal(open_.scores[1], [0.0, 0.5, 1.0])
    np.testing.assert_array_equal(rounded(open_.weights[1], 3), [0.186, 0.307, 0.506])
    np.testing.assert_array_equal(rounded(causal.weights[1], 3), [0.378, 0.622, 0.0])
    assert causal.weights[1, 2] == 0.0
    np.testing.assert_array_equal(causal.weights[2], open_.weights[2])


@pytest.mark.parametrize("q_login", [[0, 0, 0, 0], [5, -3, 2, 9], [-40, 0, 40, 1]])
def test_bank_session_login_row_weight_is_exactly_one(q_login):
    trace = scaled_dot_product_attention(
        bank_queries(q_login), BANK_K, BANK_V, mask=causal_mask(3), return_intermediates=True
    )
    np.testing.assert_array_equal(trace.weights[0], [1.0, 0.0, 0.0])
    np.testing.assert_array_equal(trace.output[0], BANK_V[0])


# --- the article's A, B, C example with identity projections -------------------------


def test_article_identity_example():
    X = np.array([[1, 0], [0, 1], [1, 1]], dtype=float)  # tokens A, B, C
    trace = scaled_dot_product_attention(X, X, X, return_intermediates=True)
    np.testing.assert_array_equal(trace.raw_scores, [[1, 0, 1], [0, 1, 1], [1, 1, 2]])
    assert sorted(set(rounded(trace.scores, 3).ravel())) == [0.0, 0.707, 1.414]
    np.testing.assert_array_equal(rounded(trace.weights[2], 3), [0.248, 0.248, 0.503])
    np.testing.assert_allclose(trace.weights.sum(axis=1), 1.0, rtol=0, atol=1e-15)
    np.testing.assert_array_equal(
        rounded(trace.output, 3), [[0.802, 0.599], [0.599, 0.802], [0.752, 0.752]]
    )


# --- the article's random 4-token example --------------------------------------------


@pytest.fixture
def article_random():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((4, 8))
    W_Q, W_K, W_V = (rng.standard_normal((8, 4)) for _ in range(3))
    return project(X, W_Q, W_K, W_V)


def test_article_random_example_shapes_and_range(article_random):
    Q, K, V = article_random
    assert Q.shape == K.shape == V.shape == (4, 4)
    trace = scaled_dot_product_attention(Q, K, V, return_intermediates=True)
    assert round(trace.raw_scores.min(), 2) == -10.86
    assert round(trace.raw_scores.max(), 2) == 20.54
    assert trace.weights.shape == trace.output.shape == (4, 4)
    np.testing.assert_allclose(trace.weights.sum(axis=1), 1.0, atol=1e-15)
    # "the last two rows put essentially all their weight on the last token"
    assert trace.weights[2, 3] > 0.999 and trace.weights[3, 3] > 0.999


def test_article_random_example_causal_rows(article_random):
    Q, K, V = article_random
    w = scaled_dot_product_attention(
        Q, K, V, mask=causal_mask(4), return_intermediates=True
    ).weights
    np.testing.assert_array_equal(w[0], [1, 0, 0, 0])
    np.testing.assert_array_equal(rounded(w[1], 2), [0.24, 0.76, 0, 0])
    # printed as [0.94, 0.001, 0.06, 0]: each entry at its own precision
    assert (round(w[2, 0], 2), round(w[2, 1], 3), round(w[2, 2], 2), w[2, 3]) == (
        0.94,
        0.001,
        0.06,
        0.0,
    )
    np.testing.assert_array_equal(rounded(w[3], 3), [0, 0, 0.001, 0.999])
    assert np.all(w[causal_mask(4)] == 0.0)  # lower-triangular


# --- positions ----------------------------------------------------------------------


def test_sinusoidal_positions_match_the_article_for_d_model_8():
    pe = sinusoidal_positions(2, 8)
    assert pe.shape == (2, 8)
    np.testing.assert_array_equal(pe[0], [0, 1, 0, 1, 0, 1, 0, 1])
    np.testing.assert_array_equal(
        rounded(pe[1], 3), [0.841, 0.540, 0.100, 0.995, 0.010, 1.000, 0.001, 1.000]
    )


def test_sinusoidal_positions_follow_the_paper_formula_interleaved():
    n, d = 50, 16
    pe = sinusoidal_positions(n, d)
    for pos in (0, 7, 49):
        for i in range(d // 2):
            angle = pos / 10000 ** (2 * i / d)
            assert pe[pos, 2 * i] == pytest.approx(math.sin(angle), abs=1e-12)
            assert pe[pos, 2 * i + 1] == pytest.approx(math.cos(angle), abs=1e-12)


def test_sinusoidal_similarity_depends_only_on_the_offset():
    pe = sinusoidal_positions(300, 64)
    for k in (1, 5, 40):
        dots = [pe[p] @ pe[p + k] for p in (0, 25, 200)]
        assert max(dots) - min(dots) < 1e-12


def test_sinusoidal_positions_odd_width():
    pe = sinusoidal_positions(3, 5)
    assert pe.shape == (3, 5)
    assert pe[1, 4] == pytest.approx(math.sin(1 / 10000 ** (4 / 5)))


# --- heads and parameter counts -------------------------------------------------------


@pytest.mark.parametrize("n_heads", [1, 2])
def test_attention_weights_are_4_d_model_squared_whatever_the_heads(n_heads):
    assert attention_parameter_count(8, n_heads) == 4 * 8**2 == 256
    params = init_block_params(np.random.default_rng(0), 8, 32, n_heads=n_heads)
    assert params.attention_parameter_count == 256
    # per head: three (8, d_k) projections, plus the shared (8, 8) output matrix
    d_k = 8 // n_heads
    per_head = [
        W[:, j * d_k : (j + 1) * d_k].size
        for j in range(n_heads)
        for W in (params.W_Q, params.W_K, params.W_V)
    ]
    assert per_head == [8 * d_k] * (3 * n_heads)
    assert sum(per_head) + params.W_O.size == 256


def test_parameter_counts_at_d_model_512():
    assert attention_parameter_count(512, 8) == 4 * 512**2 == 1_048_576  # "about 1.0 million"
    params = init_block_params(np.random.default_rng(0), 512, 2048, n_heads=8)
    assert params.W1.size + params.W2.size == 8 * 512**2 == 2_097_152  # "2.1 million"


def test_grouped_query_shrinks_key_and_value_weights():
    # g / h of the width for W_K and W_V: 2 * 64 + 2 * 64 / 4
    assert attention_parameter_count(64, 8, 2) == 2 * 64 * 64 + 2 * 64 * 16
    params = init_block_params(np.random.default_rng(0), 64, 128, n_heads=8, n_kv_heads=2)
    assert params.W_K.shape == params.W_V.shape == (64, 16)
    assert params.attention_parameter_count == attention_parameter_count(64, 8, 2)


def test_article_two_heads_on_four_tokens_shapes():
    rng = np.random.default_rng(2)
    X = rng.standard_normal((4, 8))
    W_Q, W_K, W_V, W_O = (rng.standard_normal((8, 8)) for _ in range(4))
    trace = multi_head_attention(X, W_Q, W_K, W_V, W_O, n_heads=2, return_intermediates=True)
    assert trace.scores.shape == trace.weights.shape == (2, 4, 4)
    assert trace.head_outputs.shape == (2, 4, 4)
    assert trace.concat.shape == trace.output.shape == (4, 8)


# --- errors say what is wrong -----------------------------------------------------------


def test_mismatched_d_k_names_both_matrices():
    with pytest.raises(ValueError, match=r"K has 3 columns but Q has 2; Q and K need the same d_k"):
        scaled_dot_product_attention(np.ones((3, 2)), np.ones((3, 3)), np.ones((3, 2)))


def test_mismatched_value_rows():
    with pytest.raises(ValueError, match=r"V has 4 rows but K has 3"):
        scaled_dot_product_attention(np.ones((3, 2)), np.ones((3, 2)), np.ones((4, 2)))


@pytest.mark.parametrize(
    ("Q", "message"),
    [
        ([1.0, 2.0], r"Q must be a matrix .* got shape \(2,\)"),
        (np.zeros((0, 2)), r"Q is empty"),
        ([[1, 2], [3]], r"Q is ragged"),
        ([[True, False]], r"Q holds booleans where numbers belong"),
        ([["a", "b"]], r"Q must hold real numbers"),
        (np.ones((1, 2), dtype=complex), r"Q must hold real numbers"),
    ],
)
def test_bad_operands(Q, message):
    with pytest.raises(ValueError, match=message):
        scaled_dot_product_attention(Q, np.ones((3, 2)), np.ones((3, 2)))


def test_lists_and_integers_are_accepted():
    out = scaled_dot_product_attention(
        [[1, 0], [0, 1], [1, 1]], [[1, 0], [0, 1], [1, 1]], np.eye(3, 2, dtype=int)
    )
    assert out.dtype == np.float64 and out.shape == (3, 2)


def test_all_blocked_row_raises_attention_error_naming_the_row():
    mask = np.array([[False, True, True], [True, True, True], [False, False, False]])
    Q = K = V = np.arange(6, dtype=float).reshape(3, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning on the way to the error
        for trace in (False, True):
            with pytest.raises(AttentionError, match=r"query row 1\b") as info:
                scaled_dot_product_attention(Q, K, V, mask=mask, return_intermediates=trace)
            assert info.value.rows == [1]
            assert isinstance(info.value, ValueError)


def test_all_blocked_rows_in_a_batched_mask_are_named_by_index():
    mask = np.zeros((2, 3, 3), dtype=bool)
    mask[1, 2] = True
    mask[0, 0] = True
    Q = K = V = np.ones((2, 3, 2))
    with pytest.raises(AttentionError) as info:
        scaled_dot_product_attention(Q, K, V, mask=mask)
    assert info.value.rows == [(0, 0), (1, 2)]


def test_all_blocked_row_in_multi_head_attention():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((4, 8))
    W = [rng.standard_normal((8, 8)) for _ in range(4)]
    mask = causal_mask(4)
    mask[3] = True
    with pytest.raises(AttentionError) as info:
        multi_head_attention(X, *W, n_heads=2, mask=mask)
    assert info.value.rows == [3]


@pytest.mark.parametrize(
    ("mask", "message"),
    [
        (np.zeros((3, 3), dtype=int), r"mask must be boolean \(True = blocked"),
        (
            np.zeros((2, 3), dtype=bool),
            r"mask has shape \(2, 3\) but the scores have shape \(3, 3\)",
        ),
        (np.zeros((2, 3, 3), dtype=bool), r"must broadcast to \(\.\.\., n_q, n_k\)"),
    ],
)
def test_bad_masks(mask, message):
    Q = K = V = np.ones((3, 2))
    with pytest.raises(ValueError, match=message):
        scaled_dot_product_attention(Q, K, V, mask=mask)


@pytest.mark.parametrize(
    ("Q", "K", "V", "message"),
    [
        ([[np.nan, 0]], [[1, 0]], [[1, 0]], r"scores are not finite"),
        ([[np.inf, 0]], [[1, 0]], [[1, 0]], r"scores are not finite"),
        ([[1, 0]], [[1, 0]], [[np.inf, 0]], r"output is not finite"),
        ([[1, 0]], [[1, 0]], [[np.nan, 0]], r"output is not finite"),
    ],
)
@pytest.mark.parametrize("trace", [False, True])
def test_non_finite_inputs_never_return_nan(Q, K, V, message, trace):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=message):
            scaled_dot_product_attention(Q, K, V, return_intermediates=trace)


@pytest.mark.parametrize("scale", [-1.0, 0, float("nan"), float("inf"), "yes", None, [2.0]])
def test_bad_scale(scale):
    if scale is None:  # None means "no scaling", like False
        out = scaled_dot_product_attention(
            np.ones((2, 2)), np.ones((2, 2)), np.ones((2, 2)), scale=None
        )
        assert out.shape == (2, 2)
        return
    with pytest.raises(ValueError, match=r"scale must be True"):
        scaled_dot_product_attention(np.ones((2, 2)), np.ones((2, 2)), np.ones((2, 2)), scale=scale)


def test_batch_axes_that_do_not_broadcast():
    with pytest.raises(ValueError, match=r"leading \(batch or head\) axes of Q, K and V"):
        scaled_dot_product_attention(np.ones((2, 3, 2)), np.ones((3, 3, 2)), np.ones((3, 2)))


def test_projection_shape_errors():
    X = np.ones((3, 4))
    with pytest.raises(ValueError, match=r"W_Q has 5 rows but its input has 4 columns"):
        project(X, np.ones((5, 2)), np.ones((4, 2)), np.ones((4, 2)))
    with pytest.raises(ValueError, match=r"W_K has 3 columns but W_Q has 2"):
        project(X, np.ones((4, 2)), np.ones((4, 3)), np.ones((4, 2)))


def test_head_count_errors():
    X, W = np.ones((3, 6)), np.ones((6, 6))
    with pytest.raises(ValueError, match=r"W_Q has 6 columns, which do not split into 4 heads"):
        multi_head_attention(X, W, W, W, W, n_heads=4)
    with pytest.raises(ValueError, match=r"n_heads must be at least 1"):
        multi_head_attention(X, W, W, W, W, n_heads=0)
    with pytest.raises(ValueError, match=r"n_heads must be an integer"):
        multi_head_attention(X, W, W, W, W, n_heads=2.0)


def test_trace_is_read_only():
    trace = scaled_dot_product_attention(np.eye(2), np.eye(2), np.eye(2), return_intermediates=True)
    with pytest.raises(ValueError):
        trace.weights[0, 0] = 1.0
    with pytest.raises(AttributeError):
        trace.weights = None


def test_unscaled_trace_keeps_raw_scores():
    rng = np.random.default_rng(3)
    Q, K, V = rng.standard_normal((3, 4, 5))
    trace = scaled_dot_product_attention(Q, K, V, scale=False, return_intermediates=True)
    np.testing.assert_array_equal(trace.scores, trace.raw_scores)
    np.testing.assert_array_equal(trace.masked_scores, trace.scores)


def test_float_scale_is_a_multiplier():
    rng = np.random.default_rng(4)
    Q, K, V = rng.standard_normal((3, 5, 4))  # d_k = 4, so 1 / sqrt(d_k) = 0.5 exactly
    np.testing.assert_array_equal(
        scaled_dot_product_attention(Q, K, V, scale=0.5), scaled_dot_product_attention(Q, K, V)
    )


# --- masks, softmax, norms -------------------------------------------------------------


def test_causal_mask_shapes_and_offset():
    np.testing.assert_array_equal(causal_mask(2, 4), [[0, 1, 1, 1], [0, 0, 1, 1]])
    # two new queries at the end of four keys: they see the prefix
    np.testing.assert_array_equal(causal_mask(2, 4, offset=2), [[0, 0, 0, 1], [0, 0, 0, 0]])
    with pytest.raises(ValueError, match=r"n_q >= 1"):
        causal_mask(0)


def test_padding_mask_blocks_only_padded_keys():
    mask = padding_mask(np.array([True, True, False]))
    np.testing.assert_array_equal(mask, [[0, 0, 1]] * 3)
    batched = padding_mask(np.array([[True, False], [True, True]]), n_q=3)
    assert batched.shape == (2, 3, 2)
    np.testing.assert_array_equal(batched[0], [[0, 1]] * 3)
    assert not batched[1].any()
    with pytest.raises(ValueError, match=r"valid must be a boolean vector"):
        padding_mask([1, 0])
    with pytest.raises(ValueError, match=r"no real token"):
        padding_mask(np.array([[True, False], [False, False]]))


def test_softmax_is_stable_and_rejects_empty_rows():
    np.testing.assert_allclose(softmax([1000.0, 1000.0]), [0.5, 0.5])
    np.testing.assert_allclose(
        softmax([[1, 2], [3, 3]], axis=0), [[0.119, 0.269], [0.881, 0.731]], atol=1e-3
    )
    with pytest.raises(ValueError, match=r"at least one entry above minus infinity"):
        softmax([-np.inf, -np.inf])


def test_layer_norm_gain_and_shift():
    x = np.array([[1.0, 2.0, 3.0, 6.0]])
    y = layer_norm(x)
    assert y.mean() == pytest.approx(0, abs=1e-12)
    assert y.var() == pytest.approx(1, abs=1e-5)
    z = layer_norm(x, gamma=np.full(4, 2.0), beta=np.ones(4))
    np.testing.assert_allclose(z, 2 * y + 1)


def test_gelu_approximation_and_exact():
    xs = np.linspace(-5, 5, 101)
    exact = gelu(xs, approximate="erf")
    np.testing.assert_allclose(exact, [x * 0.5 * (1 + math.erf(x / math.sqrt(2))) for x in xs])
    assert np.max(np.abs(gelu(xs) - exact)) < 1e-3
    assert gelu(1.0, approximate="erf") == pytest.approx(0.8413, abs=1e-4)
    with pytest.raises(ValueError, match=r'approximate must be "tanh" or "erf"'):
        gelu(xs, approximate="sigmoid")

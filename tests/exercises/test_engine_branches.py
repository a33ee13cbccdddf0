"""The engine's rarer paths: malformed operands and weights, and finite values near the
float limit, whose checks are taken only when a cheap sum overflows."""

from __future__ import annotations

import numpy as np
import pytest

from exercises.engine import (
    _scale_factor,
    attention_parameter_count,
    grouped_query_attention,
    init_block_params,
    project,
    scaled_dot_product_attention,
    softmax,
)

I2 = np.eye(2)


# --- operands and weights -------------------------------------------------------------


def test_complex_operand_is_refused_naming_its_dtype():
    with pytest.raises(ValueError, match=r"Q must hold real numbers; got dtype complex128"):
        scaled_dot_product_attention(I2 * (1 + 1j), I2, I2)


def test_operand_holding_something_else_than_numbers_is_refused():
    with pytest.raises(ValueError, match="K must hold only numbers in equal-length rows"):
        scaled_dot_product_attention(I2, [[1.0, None], [0.0, 1.0]], I2)


def test_weight_with_more_than_two_axes_is_refused():
    with pytest.raises(ValueError, match=r"W_Q must be a 2-D matrix \(d_model, d_k\); got shape"):
        project(I2, np.ones((1, 2, 2)), I2, I2)


def test_ragged_mask_is_refused():
    with pytest.raises(ValueError, match="mask is ragged"):
        scaled_dot_product_attention(I2, I2, I2, mask=[[False], [False, True]])


def test_mask_given_as_nested_lists_blocks_like_an_array():
    out = scaled_dot_product_attention(I2, I2, [[1.0], [5.0]], mask=[[False, True], [False, False]])
    # Row 0 reads key 0 only; row 1 reads both keys, weighting key 1 by e^(1/sqrt 2).
    w = np.exp(1 / np.sqrt(2))
    np.testing.assert_allclose(out, [[1.0], [(1.0 + 5.0 * w) / (1.0 + w)]])


def test_scale_true_divides_by_the_square_root_of_d_k():
    assert _scale_factor(True, 16) == 0.25
    assert _scale_factor(False, 16) is None
    assert _scale_factor(2, 16) == 2.0


# --- grouped-query widths -------------------------------------------------------------


def gqa(W_Q, W_K, W_V, W_O, h, g):
    X = np.arange(8.0).reshape(2, 4)
    return grouped_query_attention(X, W_Q, W_K, W_V, W_O, n_heads=h, n_kv_heads=g)


def test_query_heads_must_be_a_multiple_of_key_value_heads():
    W = np.ones((4, 4))
    with pytest.raises(ValueError, match=r"n_heads \(3\) must be a multiple of n_kv_heads \(2\)"):
        gqa(W, W, W, W, 3, 2)


def test_key_width_must_match_the_key_heads():
    W = np.ones((4, 4))
    with pytest.raises(ValueError, match=r"W_K has 3 columns but 2 key heads of d_k = 1 need 2"):
        gqa(W, np.ones((4, 3)), W, W, 4, 2)


def test_value_width_must_split_into_the_value_heads():
    W = np.ones((4, 4))
    with pytest.raises(ValueError, match=r"W_V has 3 columns, which do not split into 2 value"):
        gqa(W, np.ones((4, 2)), np.ones((4, 3)), W, 4, 2)


@pytest.mark.parametrize(("d_model", "h", "g"), [(6, 4, None), (8, 4, 3)])
def test_widths_that_do_not_split_are_refused(d_model, h, g):
    message = "d_model must split into n_heads, and n_heads into n_kv_heads"
    with pytest.raises(ValueError, match=message):
        attention_parameter_count(d_model, h, g)
    with pytest.raises(ValueError, match=message):
        init_block_params(np.random.default_rng(0), d_model, 8, n_heads=h, n_kv_heads=g)


# --- finite values near the float limit -----------------------------------------------

BIG = 1e154  # BIG * BIG = 1e308 is finite; two of them sum to infinity.


@pytest.mark.parametrize("masked", [False, True])
def test_huge_but_finite_scores_still_give_the_weighted_values(masked):
    Q = np.array([[BIG], [BIG]])
    K = np.array([[BIG], [0.0]])
    V = np.array([[3.0], [7.0]])
    mask = np.array([[False, False], [False, True]]) if masked else None
    out = scaled_dot_product_attention(Q, K, V, mask=mask, scale=False)
    # Each query puts all its weight on key 0, whose score is 1e308.
    np.testing.assert_array_equal(out, [[3.0], [3.0]])


def test_nan_query_under_a_mask_with_open_rows_is_a_clear_error():
    Q = np.array([[np.nan], [1.0]])
    mask = np.array([[False, True], [False, False]])
    with pytest.raises(ValueError, match="the scores are not finite"):
        scaled_dot_product_attention(Q, np.ones((2, 1)), np.ones((2, 1)), mask=mask)


def test_trace_keeps_huge_but_finite_outputs():
    V = np.array([[1e308], [1e308]])
    trace = scaled_dot_product_attention(I2, I2, V, return_intermediates=True)
    np.testing.assert_allclose(trace.output, [[1e308], [1e308]])
    np.testing.assert_allclose(trace.weights.sum(axis=-1), [1.0, 1.0])


def test_trace_refuses_an_output_that_overflows():
    V = np.array([[np.inf], [1.0]])
    with pytest.raises(ValueError, match="the output is not finite"):
        scaled_dot_product_attention(I2, I2, V, return_intermediates=True)


# --- softmax with the row maximum given ------------------------------------------------


def test_softmax_given_its_row_maximum_equals_softmax_finding_it():
    z = np.random.default_rng(5).normal(size=(3, 4, 5)) * 50
    top = z.max(axis=-1, keepdims=True)
    np.testing.assert_array_equal(softmax(z, top=top), softmax(z))


def test_softmax_of_finite_values_whose_cheap_sum_overflows_is_not_refused():
    # The row maxima are finite but sum past the float limit: the exact check decides.
    z = np.array([[1.7e308, 0.0], [1.7e308, 1.0]])
    np.testing.assert_allclose(softmax(z), [[1.0, 0.0], [1.0, 0.0]])


def test_softmax_of_an_all_blocked_row_is_refused():
    with pytest.raises(ValueError, match="at least one entry above minus infinity"):
        softmax(np.array([[0.0, 1.0], [-np.inf, -np.inf]]))


def test_trace_weights_equal_softmax_of_the_masked_scores():
    rng = np.random.default_rng(9)
    Q, K, V = (rng.normal(size=(4, 3)) for _ in range(3))
    mask = np.triu(np.ones((4, 4), dtype=bool), 1)
    trace = scaled_dot_product_attention(Q, K, V, mask=mask, return_intermediates=True)
    np.testing.assert_array_equal(trace.weights, softmax(trace.masked_scores))

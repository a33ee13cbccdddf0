"""Exercise and playground input at the edges: non-finite answers, unknown fields, and the
engine's precision."""

import numpy as np
import pytest

from exercises import engine
from exercises.models import Attempt, Exercise

pytestmark = pytest.mark.django_db

PLAYGROUND = "/api/v1/attention/"
EXERCISES = "/api/v1/exercises/"


def post_text(api, url, text):
    return api.post(url, data=text, content_type="application/json")


def scaling_exercise(api):
    r = api.post(EXERCISES, {"kind": "scaling", "params": {"seed": 1}}, format="json")
    assert r.status_code == 201
    return r.json()


# Python's json.dumps writes NaN and Infinity literals by default, and 1e400 is a legal
# JSON number that parses to infinity: each must come back naming the part and its shape.
@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e400", "-1e999"])
def test_a_non_finite_number_names_the_part_and_its_shape(api, literal):
    ex = scaling_exercise(api)
    body = (
        '{"answers": {"variance": LITERAL, "weights_scaled": [0.2, 0.3, 0.5], '
        '"weights_unscaled": [0.2, 0.3, 0.5]}}'
    ).replace("LITERAL", literal)
    r = post_text(api, f"{EXERCISES}{ex['id']}/submit/", body)
    assert r.status_code == 400
    errors = r.json()["answers"]
    assert list(errors) == ["variance"]
    assert "a number (shape [])" in errors["variance"][0]
    assert "finite" in errors["variance"][0]
    assert Exercise.objects.get(pk=ex["id"]).attempts_used == 0
    assert not Attempt.objects.exists()


@pytest.mark.parametrize("literal", ["NaN", "1e400"])
def test_a_non_finite_entry_of_a_vector_names_the_entry_and_the_shape(api, literal):
    ex = scaling_exercise(api)
    body = (
        '{"answers": {"variance": 16, "weights_scaled": [0.2, LITERAL, 0.5], '
        '"weights_unscaled": [0.2, 0.3, 0.5]}}'
    ).replace("LITERAL", literal)
    r = post_text(api, f"{EXERCISES}{ex['id']}/submit/", body)
    assert r.status_code == 400
    message = r.json()["answers"]["weights_scaled"][0]
    assert "entry [1]" in message and "shape [3]" in message


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "1e400"])
def test_playground_non_finite_entry_names_the_matrix_and_entry(api, literal):
    body = '{"Q": [[1, LITERAL]], "K": [[1, 0]], "V": [[1]]}'.replace("LITERAL", literal)
    r = post_text(api, PLAYGROUND, body)
    assert r.status_code == 400
    assert list(r.json()) == ["Q"]
    assert "Entry [0, 1]" in r.json()["Q"][0]


@pytest.mark.parametrize("field", ["causal", "Mask", "scaled"])
def test_playground_refuses_an_unknown_field_instead_of_ignoring_it(api, field):
    # A misspelt option silently ignored would show unmasked or scaled weights as if right.
    body = {"Q": [[1, 0], [0, 1]], "K": [[1, 0], [0, 1]], "V": [[1], [2]], field: True}
    r = api.post(PLAYGROUND, body, format="json")
    assert r.status_code == 400
    assert field in r.json()
    assert "mask" in r.json()[field][0] and "scale" in r.json()[field][0]


def test_exercise_create_refuses_a_seed_outside_params(api):
    # Without this a client asking for a reproducible variant would get a random one.
    r = api.post(EXERCISES, {"kind": "attention", "seed": 5}, format="json")
    assert r.status_code == 400
    assert "seed" in r.json()
    assert "params" in r.json()["seed"][0]
    assert not Exercise.objects.exists()


def test_the_schema_states_that_unknown_fields_are_refused(api):
    schema = api.get("/api/schema/?format=json").json()["components"]["schemas"]
    create = schema["ExerciseCreateRequest"]
    assert create["additionalProperties"] is False
    assert set(create["properties"]) == {"kind", "params"}
    playground = schema["PlaygroundRequestRequest"]
    assert playground["additionalProperties"] is False


# --- the engine -------------------------------------------------------------------


def reference(Q, K, V, mask=None):
    # A loop over queries in float64, the seeds' way.
    Q, K, V = (np.asarray(a, dtype=np.float64) for a in (Q, K, V))
    out = np.empty((Q.shape[0], V.shape[1]))
    for i, q in enumerate(Q):
        s = K @ q / np.sqrt(Q.shape[1])
        if mask is not None:
            s = np.where(mask[i], -np.inf, s)
        e = np.exp(s - s.max())
        out[i] = (e / e.sum()) @ V
    return out


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_low_precision_input_is_computed_in_float64_by_both_paths(dtype):
    rng = np.random.default_rng(3)
    Q, K, V = rng.normal(size=(4, 3)), rng.normal(size=(5, 3)), rng.normal(size=(5, 2))
    q, k, v = (a.astype(dtype) for a in (Q, K, V))
    fast = engine.scaled_dot_product_attention(q, k, v)
    trace = engine.scaled_dot_product_attention(q, k, v, return_intermediates=True)
    expected = reference(q, k, v)
    assert fast.dtype == trace.output.dtype == trace.weights.dtype == np.float64
    np.testing.assert_allclose(fast, expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(trace.output, expected, rtol=1e-12, atol=1e-12)


def test_half_precision_scores_beyond_its_range_still_give_the_softmax():
    # 300 * 300 = 90000 is past float16's largest value (65504).
    Q = np.array([[300.0, 0.0]], dtype=np.float16)
    K = np.array([[300.0, 0.0], [1.0, 0.0]], dtype=np.float16)
    V = np.array([[1.0], [2.0]], dtype=np.float16)
    trace = engine.scaled_dot_product_attention(Q, K, V, return_intermediates=True)
    np.testing.assert_array_equal(trace.weights, [[1.0, 0.0]])
    np.testing.assert_array_equal(engine.scaled_dot_product_attention(Q, K, V), [[1.0]])


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
@pytest.mark.parametrize("mask", [None, np.array([[False, False, True]])])
def test_values_near_the_float_limit_give_their_finite_average(mask):
    # Equal weights over values of 1e308: the average is 1e308, finite; only an
    # unnormalised sum of the values would overflow.
    Q = np.array([[1.0, 0.0]])
    K = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 0.0]])
    V = np.array([[1e308], [1e308], [0.0]])
    fast = engine.scaled_dot_product_attention(Q, K, V, mask=mask)
    trace = engine.scaled_dot_product_attention(Q, K, V, mask=mask, return_intermediates=True)
    assert np.isfinite(fast).all()
    np.testing.assert_allclose(fast, trace.output, rtol=1e-12)


def test_values_whose_average_overflows_are_still_refused():
    with pytest.raises(ValueError, match="output is not finite"):
        engine.scaled_dot_product_attention([[1.0]], [[1.0]], [[np.inf]])

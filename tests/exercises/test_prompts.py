"""What the prompts say: every size they rely on, no API field names, nothing unused,
rows and heads counted from 1, and parameter sets that either work or are refused with
the real range."""

import numpy as np
import pytest

from exercises.checking import check_answers
from exercises.kinds import get_kind
from exercises.variants import draw_variant

EXERCISES = "/api/v1/exercises/"


def offered(kind_name, seed=0, **params):
    kind = get_kind(kind_name)
    return kind, draw_variant(kind, kind.normalize_params(params), seed)


def flat(prompt):
    return " ".join(prompt.split())


def correct(kind, g, answers):
    return check_answers(
        asks=g.asks,
        solution=g.solution,
        answers=answers,
        rtol=g.rtol,
        atol=g.atol,
        inputs=g.inputs,
        kind=kind,
    ).correct


# --- cost: part (3) states the head width, part (5) what the per-token part counts -------------


def test_cost_states_the_head_width_and_what_the_per_token_part_counts():
    kind, g = offered("cost")
    prompt = flat(g.prompt)
    assert r"$d_k = d_{model}/h$" in prompt and "all heads together" in prompt
    assert "per-token part" in prompt and "$W_O$ included" in prompt
    n, d = g.inputs["n"], g.inputs["d_model"]
    # The share the prompt now defines: Q K^T and A V (2 n^2 d) against 12 n d^2 per token.
    assert g.solution["quadratic_share"] == pytest.approx(
        2 * n * n * d / (2 * n * n * d + 12 * n * d * d)
    )
    # Leaving W_O out of the per-token part is refused by the 1% tolerance.
    without_w_o = 2 * n * n * d / (2 * n * n * d + 11 * n * d * d)
    answers = {**g.solution, "quadratic_share": without_w_o}
    assert not correct(kind, g, answers)


# --- projection: d_k stated; one-hot tokens one column wide refused with the real range -----


@pytest.mark.parametrize("params", [{}, {"preset": "random", "d_k": 3, "d_model": 4}])
def test_projection_states_d_k(params):
    _, g = offered("projection", **params)
    d_k = len(g.solution["Q"][0])
    assert f"width $d_k = {d_k}$" in flat(g.prompt)


@pytest.mark.django_db
@pytest.mark.parametrize("x", ["one_hot", "integers"])
def test_projection_one_column_wide_is_refused_with_the_real_range(api, x):
    # One column wide, Q K^T is symmetric: no variant tells it from K Q^T.
    r = api.post(
        EXERCISES,
        {"kind": "projection", "params": {"preset": "random", "d_model": 1, "x": x}},
        format="json",
    )
    assert r.status_code == 400
    assert "d_model" in str(r.json()) and "from 2 to 8" in str(r.json())
    assert "vary" not in str(r.json())
    kinds = {k["kind"]: k for k in api.get("/api/v1/exercises/kinds/").json()["results"]}
    spec = kinds["projection"]["params"]["d_model"]
    assert spec["min"] == 2 and "At least 2" in spec["help"]
    r = api.post(
        EXERCISES,
        {"kind": "projection", "params": {"preset": "random", "d_model": 2, "x": x, "seed": 3}},
        format="json",
    )
    assert r.status_code == 201, r.content


# --- multi_head: the scores are Q_i K_i^T; heads and columns counted from 1 ------------------


def test_multi_head_says_the_scores_are_per_head_and_counts_heads_from_one():
    _, g = offered("multi_head", heads=2, d_head=2)
    prompt = flat(g.prompt)
    assert r"$Q_i K_i^\top$" in prompt
    assert "head 1 uses columns 1 to 2; head 2 uses columns 3 to 4" in prompt
    assert "Compute the weights of each head, heads 1 to 2:" in prompt
    # No API part name, counted from 0, for the learner to translate.
    assert "weights_head" not in prompt and "`" not in prompt


# --- padding: no API field name (the masked kinds give no values: tests/exercises/kinds/) --


def test_padding_names_the_padded_tokens_not_an_api_field():
    _, g = offered("padding", n_real=3, n_pad=2)
    prompt = flat(g.prompt)
    assert "inputs." not in prompt and "`" not in prompt
    assert "tokens 4 to 5 are padding" in prompt
    _, g = offered("padding", n_real=2, n_pad=1)
    assert "token 3 is padding" in flat(g.prompt)


# --- shapes with one head ----------------------------------------------------------------------


@pytest.mark.django_db
def test_shapes_with_one_head_and_fixed_sizes_works(api):
    r = api.post(
        EXERCISES,
        {"kind": "shapes", "params": {"heads": 1, "vary": False, "seed": 1}},
        format="json",
    )
    assert r.status_code == 201, r.content
    ex = r.json()
    assert ex["inputs"] == {"n": 6, "d_model": 4, "heads": 1}
    right = {
        "Q_shape": [6, 4],
        "K_shape": [6, 4],
        "V_shape": [6, 4],
        "scores_shape": [6, 6],
        "weights_shape": [6, 6],
        "head_output_shape": [6, 4],
        "concat_shape": [6, 4],
        "output_shape": [6, 4],
    }
    swapped = {**right, "Q_shape": [4, 6]}
    url = f"{EXERCISES}{ex['id']}/submit/"
    assert api.post(url, {"answers": swapped}, format="json").json()["correct"] is False
    assert api.post(url, {"answers": right}, format="json").json()["correct"] is True


@pytest.mark.django_db
def test_shapes_with_n_equal_to_the_head_width_is_refused_naming_the_sizes(api):
    r = api.post(
        EXERCISES,
        {"kind": "shapes", "params": {"heads": 1, "d_head": 6, "vary": False}},
        format="json",
    )
    assert r.status_code == 400
    assert "n = 6, d_head = 6" in str(r.json())


def test_shapes_with_one_head_vary_offers_one_head():
    kind = get_kind("shapes")
    normalized = kind.normalize_params({"heads": 1})
    heads = {draw_variant(kind, normalized, seed).inputs["heads"] for seed in range(30)}
    assert 1 in heads


# --- positional_encoding: the exponent 2i/d_model is not rounded ------------------------------


def _pe_rounding_the_exponent(inputs, figures):
    """A learner who also writes 2i/d_model to three decimals before raising 10000 to it."""
    d = inputs["d_model"]
    divisors = [float(f"{10000 ** round(2 * i / d, 3):.{figures}g}") for i in range(d // 2)]
    out = {}
    for pos in inputs["positions"]:
        angles = [round(pos / v, 3) for v in divisors]
        row = []
        for a in angles:
            row += [round(float(np.sin(a)), 3), round(float(np.cos(a)), 3)]
        out[f"pe_{pos}"] = row
    return out


def test_positional_prompt_says_in_one_clause_that_the_exponent_is_not_rounded():
    kind, g = offered("positional_encoding", seed=0, d_model=32, positions=1, max_position=200)
    prompt = flat(g.prompt)
    assert r"from the exact exponent $2i/d_{model}$, which is not rounded" in prompt
    assert g.inputs["positions"] == [170]
    figures = int(prompt.split(" significant figures")[0].rsplit(" ", 1)[-1])
    # The reading the clause rules out: the exponent written to three decimals moves the
    # divisor by a share of up to ln(10000) / 2000, about 0.5%, and angles near 170 by far
    # more than the tolerance.
    assert not correct(kind, g, _pe_rounding_the_exponent(g.inputs, figures))

import json

import numpy as np
import pytest

from exercises.checking import MISTAKES
from exercises.kinds import KINDS, ParamError, UnknownKindError, get_kind, quadratic_share

LESSON_WEIGHTS = [[0.401, 0.401, 0.198], [0.198, 0.401, 0.401], [0.248, 0.503, 0.248]]
LESSON_OUTPUT = [[1.000, 1.000], [0.797, 1.203], [0.745, 1.255]]
LESSON_CAUSAL = [[1.0, 0.0, 0.0], [0.330, 0.670, 0.0], [0.248, 0.503, 0.248]]


def test_unknown_kind_is_a_key_error_naming_the_kinds():
    with pytest.raises(UnknownKindError) as err:
        get_kind("nope")
    assert isinstance(err.value, KeyError)
    assert "attention" in str(err.value)


def test_the_catalogue_keeps_its_order_across_the_kinds_modules():
    # The import order in exercises/kinds/__init__.py is the catalogue's and the OpenAPI
    # enum's order; a kind added elsewhere than before ablation, or a reordered import, shows here.
    assert list(KINDS) == [
        "attention",
        "projection",
        "causal",
        "padding",
        "multi_head",
        "shapes",
        "positional_encoding",
        "scaling",
        "cost",
        "ablation",
    ]


@pytest.mark.parametrize("name", sorted(KINDS))
def test_every_ask_has_a_solution_of_its_shape_and_everything_is_plain_json(name, generate):
    kind, g = generate(name)
    assert [a["name"] for a in g.asks] == list(g.solution)
    for ask in g.asks:
        assert list(np.shape(g.solution[ask["name"]])) == ask["shape"]
    json.dumps({"inputs": g.inputs, "solution": g.solution, "asks": g.asks, "prompt": g.prompt})
    assert "$" in g.prompt
    assert set(kind.mistakes) <= set(MISTAKES)
    assert 1 <= g.max_attempts <= 5


@pytest.mark.parametrize("name", sorted(KINDS))
def test_same_params_and_seed_give_the_same_variant(name, generate):
    _, a = generate(name, seed=123)
    _, b = generate(name, seed=123)
    assert (a.inputs, a.solution, a.prompt) == (b.inputs, b.solution, b.prompt)


@pytest.mark.parametrize(
    "name",
    ["attention", "causal", "padding", "multi_head", "scaling", "projection", "shapes", "cost"],
)
def test_other_seeds_give_other_inputs(name, generate):
    variants = {json.dumps(generate(name, seed=s)[1].inputs) for s in range(5)}
    assert len(variants) > 1


@pytest.mark.parametrize("name", sorted(KINDS))
def test_defaults_are_filled_and_the_seed_kept(name):
    kind = get_kind(name)
    params = kind.normalize_params({"seed": 5})
    assert params["seed"] == 5
    assert set(params) == set(kind.params) | {"seed"}
    assert "seed" not in kind.normalize_params({})


@pytest.mark.parametrize(
    "raw, field",
    [
        ({"bogus": 1}, "bogus"),
        ({"n": True}, "n"),
        ({"n": "3"}, "n"),
        ({"n": 2.5}, "n"),
        ({"n": 1}, "n"),
        ({"n": 9}, "n"),
        ({"mask": "diagonal"}, "mask"),
        ({"scale": 1}, "scale"),
        ({"seed": -1}, "seed"),
        ({"seed": 2**63}, "seed"),
        ({"seed": True}, "seed"),
    ],
)
def test_bad_params_name_the_field(raw, field):
    with pytest.raises(ParamError) as err:
        get_kind("attention").normalize_params(raw)
    assert err.value.field == field
    assert isinstance(err.value, ValueError)


def test_params_must_be_an_object():
    with pytest.raises(ParamError) as err:
        get_kind("attention").normalize_params([1, 2])
    assert err.value.field == "params"


def test_choice_params_do_not_take_a_boolean_for_an_integer():
    with pytest.raises(ParamError):
        get_kind("cost").normalize_params({"bytes_per_entry": True})
    assert get_kind("cost").normalize_params({"bytes_per_entry": 4})["bytes_per_entry"] == 4


def test_even_width_for_positions():
    with pytest.raises(ParamError) as err:
        get_kind("positional_encoding").normalize_params({"d_model": 5})
    assert "multiple of 2" in err.value.message


def test_default_attention_is_three_tokens_of_small_integers(generate):
    _, g = generate("attention")
    Q = np.array(g.inputs["Q"])
    assert Q.shape == (3, 2) and np.abs(Q).max() <= 2
    assert g.inputs["mask"] == [[False] * 3] * 3
    assert [a["shape"] for a in g.asks] == [[3, 3], [3, 3], [3, 2]]


def test_attention_solution_by_hand(generate):
    _, g = generate("attention", seed=11)
    Q, K, V = (np.array(g.inputs[k], dtype=float) for k in "QKV")
    s = Q @ K.T / np.sqrt(2)
    a = np.exp(s - s.max(1, keepdims=True))
    a /= a.sum(1, keepdims=True)
    np.testing.assert_allclose(g.solution["scores"], s)
    np.testing.assert_allclose(g.solution["weights"], a)
    np.testing.assert_allclose(g.solution["output"], a @ V)


def test_attention_without_scale_asks_for_raw_scores(generate):
    _, g = generate("attention", scale=False)
    Q, K = (np.array(g.inputs[k], dtype=float) for k in "QK")
    np.testing.assert_allclose(g.solution["scores"], Q @ K.T)
    assert g.inputs["scale"] is False


@pytest.mark.parametrize("mask", ["causal", "padding"])
def test_attention_masks_are_in_the_inputs_and_zero_the_weights(mask, generate):
    _, g = generate("attention", mask=mask, n=5)
    blocked = np.array(g.inputs["mask"])
    assert blocked.any() and not blocked.all(axis=1).any()
    w = np.array(g.solution["weights"])
    assert (w[blocked] == 0).all()
    np.testing.assert_allclose(w.sum(axis=1), 1)


def test_projection_lesson_preset_fixed_is_the_lessons_bag_delayed_refund(generate):
    _, g = generate("projection", vary=False)
    assert g.inputs["X"] == np.eye(3, dtype=int).tolist()
    assert g.inputs["W_Q"] == [[1, 0], [0, 1], [1, 1]]
    np.testing.assert_allclose(g.solution["weights"], LESSON_WEIGHTS, atol=5e-4)
    np.testing.assert_allclose(g.solution["output"], LESSON_OUTPUT, atol=5e-4)
    assert g.solution["Q"] == [[1, 0], [0, 1], [1, 1]]


def test_projection_lesson_with_causal_mask_matches_the_lesson_table(generate):
    _, g = generate("projection", mask="causal", vary=False)
    np.testing.assert_allclose(g.solution["weights"], LESSON_CAUSAL, atol=5e-4)


def test_projection_lesson_preset_records_its_fixed_sizes():
    params = get_kind("projection").normalize_params({"n": 6})
    assert (params["n"], params["d_model"], params["d_k"]) == (3, 3, 2)


def test_projection_random_one_hot_rows(generate):
    _, g = generate("projection", preset="random", n=5, d_model=4, d_k=3)
    X = np.array(g.inputs["X"])
    assert X.shape == (5, 4) and (X.sum(axis=1) == 1).all()
    assert [a["shape"] for a in g.asks][:3] == [[5, 3]] * 3


def test_causal_kind_upper_triangle_is_zero_and_first_row_reads_itself(generate):
    _, g = generate("causal", n=4)
    w = np.array(g.solution["weights"])
    assert (np.triu(w, k=1) == 0).all()
    assert w[0, 0] == 1.0


def test_padding_kind_marks_padded_keys(generate):
    _, g = generate("padding", n_real=3, n_pad=2)
    assert g.inputs["padded"] == [False, False, False, True, True]
    w = np.array(g.solution["weights"])
    assert (w[:, 3:] == 0).all()
    np.testing.assert_allclose(w.sum(axis=1), 1)


def test_multi_head_parts_per_head_and_engine_agrees_with_a_loop(generate):
    _, g = generate("multi_head", heads=3, d_head=2, n=4)
    assert [a["name"] for a in g.asks] == [
        "weights_head_0",
        "weights_head_1",
        "weights_head_2",
        "output",
    ]
    X, Wq, Wk, Wv, Wo = (
        np.array(g.inputs[k], dtype=float) for k in ("X", "W_Q", "W_K", "W_V", "W_O")
    )
    heads = []
    for h in range(3):
        c = slice(2 * h, 2 * h + 2)
        s = (X @ Wq[:, c]) @ (X @ Wk[:, c]).T / np.sqrt(2)
        a = np.exp(s - s.max(1, keepdims=True))
        a /= a.sum(1, keepdims=True)
        np.testing.assert_allclose(g.solution[f"weights_head_{h}"], a, atol=1e-11)
        heads.append(a @ (X @ Wv[:, c]))
    np.testing.assert_allclose(g.solution["output"], np.concatenate(heads, 1) @ Wo, atol=1e-11)


def test_shapes_for_the_lessons_two_head_block(generate):
    _, g = generate("shapes", n=6, heads=2, d_head=4, vary=False)
    assert g.inputs == {"n": 6, "d_model": 8, "heads": 2}
    assert g.solution["Q_shape"] == [6, 4]
    assert g.solution["scores_shape"] == [6, 6]
    assert g.solution["concat_shape"] == [6, 8]
    assert g.solution["output_shape"] == [6, 8]
    assert g.rtol == 0 and g.atol == 0


def test_positional_encoding_matches_the_article(generate):
    kind, _ = generate("positional_encoding")
    g = kind.generate(
        kind.normalize_params({"d_model": 8, "positions": 4, "max_position": 3}),
        np.random.default_rng(0),
    )
    assert g.inputs["positions"] == [0, 1, 2, 3]
    assert g.solution["pe_0"] == [0, 1, 0, 1, 0, 1, 0, 1]
    np.testing.assert_allclose(
        g.solution["pe_1"], [0.841, 0.540, 0.100, 0.995, 0.010, 1.000, 0.001, 1.000], atol=5e-4
    )


def test_scaling_variance_is_d_k_and_the_lesson_row(generate):
    kind, g = generate("scaling", d_k=16)
    assert g.solution["variance"] == 16
    # The lesson: scores (1, 1, 0) at d_k = 2 give (0.401, 0.401, 0.198) scaled, (0.422, 0.422, 0.155) not.
    scores = np.array([1.0, 1.0, 0.0])
    out = kind.answers_under({"d_k": 2, "scores": scores.tolist()}, {"scaling": "swapped"})
    np.testing.assert_allclose(out["weights_unscaled"], [0.401, 0.401, 0.198], atol=5e-4)
    np.testing.assert_allclose(out["weights_scaled"], [0.422, 0.422, 0.155], atol=5e-4)


@pytest.mark.parametrize("d_model, share", [(768, 0.471), (1024, 0.400), (4096, 0.143)])
def test_quadratic_share_at_4096_tokens_matches_the_lesson(d_model, share):
    assert quadratic_share(4096, d_model) == pytest.approx(share, abs=5e-4)


@pytest.mark.parametrize("d_model", [256, 768, 1024, 4096])
def test_quadratic_part_crosses_half_at_six_d_model(d_model):
    assert quadratic_share(6 * d_model, d_model) == 0.5
    assert (
        quadratic_share(6 * d_model - 1, d_model) < 0.5 < quadratic_share(6 * d_model + 1, d_model)
    )


def test_cost_kind_counts(generate):
    _, g = generate(
        "cost", n=4096, d_model=1024, heads=16, layers=24, bytes_per_entry=2, vary=False
    )
    assert g.solution["score_entries"] == 16_777_216
    # The lesson's table: 4,096 tokens take 33.55 MB per head and layer at 2 bytes.
    assert g.solution["score_entries"] * 2 == 33_554_432
    assert g.solution["score_bytes"] == 33_554_432 * 16 * 24
    assert g.solution["attention_params"] == 4 * 1024**2
    assert g.solution["ffn_params"] == 8 * 1024**2
    assert g.solution["quadratic_share"] == pytest.approx(0.4)


def test_parameter_counts_at_512_match_the_lesson(generate):
    _, g = generate("cost", d_model=512, vary=False)
    assert round(g.solution["attention_params"] / 1e6, 1) == 1.0
    assert round(g.solution["ffn_params"] / 1e6, 1) == 2.1


@pytest.mark.parametrize("name", sorted(KINDS))
def test_largest_sizes_generate(name):
    kind = get_kind(name)
    big = {p: s.max for p, s in kind.params.items() if s.type == "int"}
    if name == "positional_encoding":
        big["d_model"] = 64
    g = kind.generate(kind.normalize_params(big), np.random.default_rng(3))
    for ask in g.asks:
        assert list(np.shape(g.solution[ask["name"]])) == ask["shape"]


def test_projection_lesson_preset_varies_the_token_sequence_by_default(generate):
    sequences = set()
    for seed in range(40):
        _, g = generate("projection", seed=seed)
        assert g.inputs["W_Q"] == [[1, 0], [0, 1], [1, 1]]  # the lesson's hand-set projections
        X = np.array(g.inputs["X"])
        assert (X.sum(axis=1) == 1).all()
        tokens = g.inputs["tokens"]
        assert [("bag", "delayed", "refund")[i] for i in X.argmax(axis=1)] == tokens
        assert len(set(tokens)) >= 2
        assert " ".join(tokens) in g.prompt
        sequences.add(tuple(tokens))
    assert len(sequences) >= 10


@pytest.mark.parametrize("name", ["shapes", "cost"])
def test_sizes_vary_near_the_given_ones_unless_fixed(name, generate):
    kind = get_kind(name)
    given = {p: s.default for p, s in kind.params.items() if s.type == "int"}
    seen = {json.dumps(generate(name, seed=s)[1].inputs) for s in range(30)}
    assert len(seen) > 5
    fixed = {json.dumps(generate(name, seed=s, vary=False)[1].inputs) for s in range(5)}
    assert len(fixed) == 1
    for s in range(30):
        inputs = generate(name, seed=s)[1].inputs
        assert given["n"] // 4 <= inputs["n"] <= given["n"] * 4


def test_cost_counts_are_exact_and_its_prompt_does_not_ask_for_decimals(generate):
    _, g = generate("cost", vary=False)
    exact = {a["name"] for a in g.asks if a.get("exact")}
    assert exact == {"score_entries", "score_bytes", "attention_params", "ffn_params"}
    assert "three decimals" not in g.prompt
    assert all(type(g.solution[name]) is int for name in exact)


def test_scaling_scores_have_variance_near_d_k_and_only_the_unscaled_row_saturates():
    from exercises.variants import draw_variant

    kind = get_kind("scaling")
    for d_k in (4, 16, 1024):
        params = kind.normalize_params({"d_k": d_k, "n": 6})
        scores = []
        for seed in range(60):
            g = draw_variant(kind, params, seed)
            scores.extend(g.inputs["scores"])
            assert max(g.solution["weights_unscaled"]) >= 0.9 > max(g.solution["weights_scaled"])
        # Drawn with variance d_k (and a selection for saturation): the spread grows with d_k.
        assert 0.3 * d_k < np.var(scores) < 6 * d_k
    for narrow in (1, 2, 3):
        with pytest.raises(ParamError) as err:
            kind.normalize_params({"d_k": narrow})
        assert err.value.field == "d_k"


@pytest.mark.parametrize(
    "name, params, field",
    [
        ("attention", {"d_k": 1}, "d_k"),
        ("causal", {"d_k": 1}, "d_k"),
        ("multi_head", {"d_head": 1}, "d_head"),
        ("projection", {"preset": "random", "d_k": 1}, "d_k"),
        ("attention", {"n": 2, "mask": "padding"}, "n"),
        ("shapes", {"n": 4, "d_head": 4, "vary": False}, "n"),
    ],
)
def test_parameters_that_cannot_test_what_they_ask_are_refused(name, params, field):
    with pytest.raises(ParamError) as err:
        get_kind(name).normalize_params(params)
    assert err.value.field == field


@pytest.mark.parametrize("name", ["attention", "multi_head", "projection"])
def test_width_one_is_fine_without_scaling(name):
    key = "d_head" if name == "multi_head" else "d_k"
    extra = {"preset": "random"} if name == "projection" else {}
    params = get_kind(name).normalize_params({key: 1, "scale": False, **extra})
    assert params[key] == 1


def test_positional_encoding_layouts_are_named_in_the_prompt(generate):
    _, paper = generate("positional_encoding", d_model=4, positions=2)
    assert "interleaved" in paper.prompt and "not the one asked" in paper.prompt
    _, lab = generate("positional_encoding", d_model=4, positions=2, layout="sines_then_cosines")
    assert "first $d_{model}/2$ dimensions hold" in lab.prompt
    assert paper.inputs["positions"] == lab.inputs["positions"]
    p = paper.inputs["positions"][0]
    a, b = np.array(paper.solution[f"pe_{p}"]), np.array(lab.solution[f"pe_{p}"])
    # The same numbers, the dimensions reordered.
    np.testing.assert_allclose(np.concatenate([a[0::2], a[1::2]]), b)
    _, either = generate("positional_encoding", layout="either")
    assert "Either layout is accepted" in either.prompt

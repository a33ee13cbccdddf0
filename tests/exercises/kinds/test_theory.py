"""The kinds of the lesson's theory: shapes, positional_encoding, scaling and cost
(exercises/kinds/theory.py)."""

import json

import numpy as np
import pytest

from exercises.kinds import ParamError, get_kind, quadratic_share
from tests.exercises import hand_solver as hs
from tests.exercises.kind_cases import KindCases

CASES = {
    "shapes": KindCases(
        solver=hs.shapes,
        example={"n": 6, "heads": 2, "d_head": 4},
        largest=({"n": 4096, "heads": 64, "d_head": 256},),
    ),
    "positional_encoding": KindCases(
        solver=hs.positional_encoding,
        example={"d_model": 4, "positions": 2},
        largest=(
            {"d_model": 64, "positions": 4, "max_position": 1000},
            {"d_model": 64, "positions": 4, "layout": "sines_then_cosines"},
        ),
        seeds_vary=False,
    ),
    "scaling": KindCases(
        solver=hs.scaling,
        example={"d_k": 16, "n": 3},
        largest=(
            {"d_k": 1024, "n": 6},
            {"d_k": 4, "n": 6},
            {"d_k": 1024, "n": 6, "predict": "scale_effect"},
        ),
    ),
    "cost": KindCases(
        solver=hs.cost,
        example={"n": 4096, "d_model": 1024, "heads": 16, "layers": 24},
        largest=(
            {
                "n": 1_048_576,
                "d_model": 65_536,
                "heads": 256,
                "layers": 512,
                "bytes_per_entry": 4,
            },
        ),
    ),
}


def test_choice_params_do_not_take_a_boolean_for_an_integer():
    with pytest.raises(ParamError):
        get_kind("cost").normalize_params({"bytes_per_entry": True})
    assert get_kind("cost").normalize_params({"bytes_per_entry": 4})["bytes_per_entry"] == 4


def test_even_width_for_positions():
    with pytest.raises(ParamError) as err:
        get_kind("positional_encoding").normalize_params({"d_model": 5})
    assert "multiple of 2" in err.value.message


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


def test_scaling_variance_is_d_k_and_the_lesson_row(generate):
    kind, g = generate("scaling", d_k=16)
    assert g.solution["variance"] == 16
    # The lesson: scores (1, 1, 0) at d_k = 2 give (0.401, 0.401, 0.198) scaled, (0.422, 0.422, 0.155) not.
    scores = np.array([1.0, 1.0, 0.0])
    out = kind.answers_under({"d_k": 2, "scores": scores.tolist()}, {"scaling": "swapped"})
    np.testing.assert_allclose(out["weights_unscaled"], [0.401, 0.401, 0.198], atol=5e-4)
    np.testing.assert_allclose(out["weights_scaled"], [0.422, 0.422, 0.155], atol=5e-4)


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


def test_cost_counts_are_exact_and_its_prompt_does_not_ask_for_decimals(generate):
    _, g = generate("cost", vary=False)
    exact = {a["name"] for a in g.asks if a.get("exact")}
    assert exact == {"score_entries", "score_bytes", "attention_params", "ffn_params"}
    assert "three decimals" not in g.prompt
    assert all(type(g.solution[name]) is int for name in exact)


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

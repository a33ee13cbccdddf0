"""Every offered variant tells right from wrong, proved with the mistake registry itself.

The always-run sweep takes 40 seeds per parameter set; the full one (2,000 seeds per set,
a few minutes) runs with STUDY_FULL_SWEEP=1:

    STUDY_FULL_SWEEP=1 python -m pytest tests/exercises/test_variants.py -m slow
"""

import os

import numpy as np
import pytest

from exercises.checking import MISTAKES, check_given
from exercises.kinds import get_kind
from exercises.kinds.base import STEP_DECIMALS, ParamError
from exercises.kinds.recipes import weights_degenerate
from exercises.variants import accepted, draw_rng, draw_variant, variant_problems
from tests.exercises.kind_cases import parameter_id
from tests.exercises.sweep import DECK_SETS, IDS, LARGEST_SETS, PARAMETER_SETS


def assert_solution_is_the_exact_method(kind, g, context) -> None:
    """The right method, every step rounded to three decimals, is accepted; exactly, it
    is the solution."""
    rounded = kind.answers_under(g.inputs, {}, STEP_DECIMALS)
    assert accepted(kind, g, rounded), context
    exact = kind.answers_under(g.inputs, {})
    # A prediction asked first is marked apart from the numbers.
    marked = g.asks[1:] if g.asks[0].get("choices") else g.asks
    for ask in marked:
        if ask.get("choices"):  # a choice (the ablation verdict) is one of its strings
            assert exact[ask["name"]] == g.solution[ask["name"]], context
            continue
        np.testing.assert_allclose(
            np.asarray(exact[ask["name"]], dtype=float),
            np.asarray(g.solution[ask["name"]], dtype=float),
            rtol=1e-9,
            atol=1e-9,
        )


def assert_mistakes_rejected(kind, g, context) -> set[str]:
    """Every registered mistake of the kind, exact or step-rounded, is rejected; returns the
    codes that applied to this variant."""
    seen = set()
    for code in kind.mistakes:
        for decimals in (None, STEP_DECIMALS):
            answers = kind.answers_under(g.inputs, MISTAKES[code].recipe, decimals)
            if answers is None:
                continue
            seen.add(code)
            assert not accepted(kind, g, answers), (*context, code, decimals)
    return seen


def assert_not_degenerate(g) -> None:
    if "mask" in g.inputs:
        mask = np.asarray(g.inputs["mask"], dtype=bool)
        for part in g.solution:
            if part.startswith("weights"):
                assert weights_degenerate(np.asarray(g.solution[part]), mask) is None
    if "output" in g.solution:
        assert np.abs(np.asarray(g.solution["output"], dtype=float)).max() > g.atol


def assert_tells_right_from_wrong(name: str, raw: dict, seeds) -> None:
    kind = get_kind(name)
    params = kind.normalize_params(raw)
    mistakes_seen: set[str] = set()
    for seed in seeds:
        g = draw_variant(kind, params, seed)
        context = (name, raw, seed)
        assert_solution_is_the_exact_method(kind, g, context)
        mistakes_seen |= assert_mistakes_rejected(kind, g, context)
        assert_not_degenerate(g)
    # The sweep saw mistakes at work, not only inapplicable ones.
    assert mistakes_seen


@pytest.mark.parametrize("name, raw", PARAMETER_SETS, ids=IDS)
def test_offered_variants_tell_right_from_wrong(name, raw):
    assert_tells_right_from_wrong(name, raw, range(40))


@pytest.mark.slow
@pytest.mark.skipif(
    not os.environ.get("STUDY_FULL_SWEEP"), reason="set STUDY_FULL_SWEEP=1 for 2,000 seeds"
)
@pytest.mark.parametrize("name, raw", PARAMETER_SETS, ids=IDS)
def test_offered_variants_tell_right_from_wrong_over_2000_seeds(name, raw):
    assert_tells_right_from_wrong(name, raw, range(2000))


def test_every_kind_is_swept_at_the_deck_and_at_its_largest():
    from exercises.kinds import KINDS

    # A kind without a card in the starter deck (cards/content/) has no deck sets.
    assert [name for name in KINDS if name not in {n for n, _ in DECK_SETS}] == []
    assert [name for name in KINDS if name not in {n for n, _ in LARGEST_SETS}] == []


# --- The seed decides, deterministically ---------------------------------------------


@pytest.mark.parametrize(
    "name, raw", DECK_SETS, ids=[parameter_id(name, raw) for name, raw in DECK_SETS]
)
def test_same_seed_same_variant_and_bound_streams_differ(name, raw):
    kind = get_kind(name)
    params = kind.normalize_params(raw)
    a, b = draw_variant(kind, params, 12345), draw_variant(kind, params, 12345)
    assert (a.inputs, a.prompt, a.solution) == (b.inputs, b.prompt, b.solution)
    c, d = (draw_variant(kind, params, 12345, bound=True) for _ in range(2))
    assert c.inputs == d.inputs


def test_a_bound_variant_is_not_the_practice_variant_of_its_seed():
    kind = get_kind("attention")
    params = kind.normalize_params({})
    same = sum(
        draw_variant(kind, params, seed).inputs
        == draw_variant(kind, params, seed, bound=True).inputs
        for seed in range(200)
    )
    assert same <= 2  # only by the chance of two independent draws


# The first draw of these seeds accepted a known-wrong answer.
@pytest.mark.parametrize(
    "name, raw, seed, code",
    [
        ("causal", {"n": 3, "d_k": 2}, 1, "no_scale"),
        ("padding", {"n_real": 2, "n_pad": 1}, 164, "mask_after_softmax"),
    ],
)
def test_a_draw_that_accepts_a_mistake_is_redrawn(name, raw, seed, code):
    kind = get_kind(name)
    params = kind.normalize_params(raw)
    first = kind.generate(params, draw_rng(seed, 0))
    mistaken = kind.answers_under(first.inputs, MISTAKES[code].recipe)
    assert accepted(kind, first, mistaken)  # the old variant could not tell
    assert f"{code} is accepted" in variant_problems(kind, first)
    offered = draw_variant(kind, params, seed)
    assert offered.inputs != first.inputs
    assert not accepted(kind, offered, kind.answers_under(offered.inputs, MISTAKES[code].recipe))


def test_the_lessons_multi_head_card_of_width_one_is_refused_and_width_two_discriminates():
    kind = get_kind("multi_head")
    with pytest.raises(ParamError):
        kind.normalize_params({"n": 3, "heads": 2, "d_head": 1})
    params = kind.normalize_params({"n": 3, "heads": 2, "d_head": 2})
    for seed in range(20):
        g = draw_variant(kind, params, seed)
        unscaled = kind.answers_under(g.inputs, MISTAKES["no_scale"].recipe)
        assert not accepted(kind, g, unscaled)


def test_parameters_with_nothing_to_vary_and_two_equal_answers_are_refused():
    kind = get_kind("cost")
    params = kind.normalize_params(
        {"n": 1_048_576, "d_model": 1, "heads": 2, "layers": 1, "vary": False}
    )
    with pytest.raises(ParamError) as err:
        draw_variant(kind, params, 1)
    assert err.value.field == "params" and "share_qk_only" in err.value.message


def test_variant_problems_finds_a_degenerate_variant():
    kind = get_kind("attention")
    g = kind.generate(kind.normalize_params({}), np.random.default_rng(0))
    g.inputs["Q"] = [[0, 0]] * 3  # every score 0: uniform weights
    g.solution["weights"] = [[1 / 3] * 3] * 3
    assert variant_problems(kind, g) == ["every row of the weights is uniform"]
    result = check_given(
        asks=g.asks,
        solution=g.solution,
        given={k: np.asarray(v, dtype=float) for k, v in g.solution.items()},
        rtol=g.rtol,
        atol=g.atol,
    )
    assert result.correct

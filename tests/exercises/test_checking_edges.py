"""The checker's edges: answers of the wrong shape or type, kinds whose recomputation
fails, and variants whose right method would be refused."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from exercises.checking import MISTAKES, cells_ok, check_given, follow_on
from exercises.checking.diagnosis import _answers_under
from exercises.kinds import get_kind
from exercises.kinds.base import STEP_DECIMALS
from exercises.variants import accepted, draw_variant, variant_problems


@pytest.fixture(scope="module")
def attention():
    kind = get_kind("attention")
    return kind, draw_variant(kind, kind.normalize_params({}), 7)


def test_a_boolean_is_not_a_count():
    ok = cells_ok([True, 2], [1, 2], exact=True, rtol=0, atol=0)
    assert ok.tolist() == [False, True]


@pytest.mark.parametrize("exact", [True, False])
def test_an_answer_of_another_shape_has_no_right_cell(exact):
    ok = cells_ok([1, 2, 3], [[1, 2], [3, 4]], exact=exact, rtol=0.01, atol=0.01)
    assert ok.shape == (2, 2)
    assert not ok.any()


class Failing:
    """A kind whose recomputations fail on the learner's numbers."""

    def follow_on(self, inputs, given, recipe):
        raise ZeroDivisionError

    def answers_under(self, inputs, recipe, decimals=None):
        raise ValueError("cannot be recomputed")


def test_a_recomputation_that_fails_means_nothing_follows():
    assert follow_on(Failing(), {"Q": [[1.0]]}, {"output": np.zeros((1, 1))}) == {}
    assert _answers_under(Failing(), {"Q": [[1.0]]}, {}) is None


def test_numbers_that_are_not_finite_are_never_accepted(attention):
    kind, g = attention
    right = kind.answers_under(g.inputs, {}, STEP_DECIMALS)
    assert accepted(kind, g, right)
    name = g.asks[-1]["name"]
    broken = {**right, name: np.full(np.shape(right[name]), np.nan).tolist()}
    assert not accepted(kind, g, broken)


def test_a_variant_that_refuses_the_right_method_is_reported(attention):
    kind, g = attention
    assert variant_problems(kind, g) == []
    # Shift every stored answer: the right method, rounded, no longer matches them.
    shifted = {
        a["name"]: (np.asarray(g.solution[a["name"]], dtype=float) + 1.0).tolist() for a in g.asks
    }
    bad = dataclasses.replace(g, solution={**g.solution, **shifted})
    problems = variant_problems(kind, bad)
    assert "the right method rounded to 3 decimals is rejected" in problems


def test_a_mistake_the_variant_accepts_is_reported(attention):
    kind, g = attention
    code = next(c for c in kind.mistakes if kind.answers_under(g.inputs, MISTAKES[c].recipe))
    wrong = kind.answers_under(g.inputs, MISTAKES[code].recipe)
    # A solution equal to the mistaken answers makes the mistake "right".
    solution = {**g.solution, **{k: v for k, v in wrong.items() if k in g.solution}}
    bad = dataclasses.replace(g, solution=solution)
    assert f"{code} is accepted" in variant_problems(kind, bad)


def test_check_given_with_a_kind_that_cannot_recompute_still_marks(attention):
    _, g = attention
    given = {a["name"]: np.asarray(g.solution[a["name"]], dtype=float) for a in g.asks}
    result = check_given(
        asks=g.asks,
        solution=g.solution,
        given=given,
        rtol=g.rtol,
        atol=g.atol,
        inputs=g.inputs,
        kind=Failing(),
    )
    assert result.correct

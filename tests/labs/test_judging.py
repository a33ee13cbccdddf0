"""The judges' shared comparisons, and every judge against values no lab expects: each
returns a verdict that fails and says why, and none raises."""

from __future__ import annotations

import numpy as np
import pytest

from labs.catalogue import LABS, lab
from labs.judging import LabTest, diagnosis, judge, layer_norm_forms
from labs.runner import Foreign
from labs.spec import Call, Returned, RunResult
from labs.values import (
    TOLERANCE,
    Tolerance,
    as_array,
    as_number,
    describe,
    first_match,
    mismatch,
    non_finite,
    show,
)
from tests.labs.test_catalogue import SOLUTIONS, block, run_with

EXPECTED = np.arange(48, dtype=float).reshape(6, 8) / 10


# --- messages -----------------------------------------------------------------------------------


def test_a_transposed_array_is_told_both_shapes():
    assert mismatch(EXPECTED, EXPECTED.T) == "Expected shape (6, 8), got (8, 6)."


def test_the_first_wrong_entry_is_named_with_both_values_and_the_count():
    got = EXPECTED.copy()
    got[1, 3] += 0.5
    got[4, 0] = -1.0
    assert mismatch(EXPECTED, got) == "Entry [1, 3] is 1.6; expected 1.1 (2 of 48 entries wrong)."
    got = EXPECTED.copy()
    got[2, 2] = np.nan
    assert mismatch(EXPECTED, got) == "Entry [2, 2] is nan; expected 1.8."
    got[2, 2] = np.inf
    assert mismatch(EXPECTED, got) == "Entry [2, 2] is inf; expected 1.8."


def test_values_that_round_alike_are_shown_with_more_digits():
    got = EXPECTED.copy()
    got[0, 1] = 0.1004
    assert mismatch(EXPECTED, got) == "Entry [0, 1] is 0.1004; expected 0.1."
    tight = Tolerance(rtol=1e-9, atol=1e-12)
    got[0, 1] = 0.1000004
    assert mismatch(EXPECTED, got, tight) == "Entry [0, 1] is 0.1000004; expected 0.1."


def test_a_right_answer_within_the_tolerance_has_no_message_float32_included():
    assert mismatch(EXPECTED, EXPECTED * (1 + 1e-9)) is None
    assert mismatch(EXPECTED, EXPECTED.astype(np.float32)) is None
    assert mismatch(EXPECTED, EXPECTED * (1 + 5e-5)) is None
    assert mismatch(EXPECTED, EXPECTED * (1 + 5e-4)) is not None
    assert mismatch(np.array([np.nan, 1.0]), np.array([np.nan, 1.0])) is None
    assert TOLERANCE.words() == "within 1e-6 + 1e-4 × |expected| of the expected value"


def test_lists_are_not_arrays_and_the_dtype_that_came_is_named():
    assert mismatch(EXPECTED, EXPECTED.tolist()).startswith("Returned list, expected ndarray")
    ints = np.zeros((6, 8), dtype=np.int64)
    assert mismatch(EXPECTED, ints) == (
        "Returned an ndarray of dtype int64, expected a floating dtype (float64 or float32)."
    )
    mask = np.triu(np.ones((3, 3), dtype=bool), 1)
    assert mismatch(mask, mask.astype(np.int32)) == (
        "Returned an ndarray of dtype int32, expected dtype bool (True = blocked, False = open)."
    )
    assert mismatch(EXPECTED, Foreign("str", "'done'")) == (
        "Returned str, expected ndarray: an ndarray of shape (6, 8)."
    )


@pytest.mark.parametrize(
    ("value", "shown", "kind"),
    [
        (None, "None", "None"),
        ("all tests passed", "str 'all tests passed'", "str"),
        ([[1.0, 2.0], [3.0]], "a list of 2 items", "list"),
        ((1, 2), "a tuple of 2 items", "tuple"),
        (3.5, "the number 3.5", "float"),
        (True, "the bool True", "bool"),
        (Foreign("dict", "a dict; expected an array"), "dict", "dict"),
        (np.zeros((8, 6)), "an ndarray of shape (8, 6) (float64)", "ndarray"),
    ],
)
def test_what_came_back_is_described(value, shown, kind):
    assert describe(value) == shown
    if not isinstance(value, np.ndarray):
        assert mismatch(EXPECTED, value).startswith(f"Returned {kind}, expected ndarray")


def test_booleans_and_numbers_do_not_stand_in_for_each_other():
    mask = np.triu(np.ones((3, 3), dtype=bool), 1)
    assert mismatch(mask, mask.astype(float)).startswith("Returned an ndarray of dtype float64")
    assert mismatch(mask, ~mask) == "Entry [0, 0] is True; expected False (9 of 9 entries wrong)."
    assert as_array(mask) is None and as_array(mask, bool) is not None
    assert as_array(np.zeros(2_000_000)) is None  # too large to look at


def test_a_long_value_is_quoted_short():
    shown = describe("x" * 10_000)
    assert len(shown) < 200 and shown.endswith("...")


def test_values_are_shown_whole_when_small_and_summarised_when_large():
    assert show(np.array([[1.0, 0.5]])) == "[[1. , 0.5]]"
    assert show(np.array([1.0, 2.0], dtype=np.float32)).endswith("(float32)")
    big = show(np.arange(100.0).reshape(10, 10))
    assert big == ("an ndarray of shape (10, 10) (float64); its first entries: 0, 1, 2, 3, 4, 5, …")
    assert show(Foreign("str", "'done'")) == "str 'done'"


def test_numbers_non_finite_entries_and_first_match():
    assert as_number(np.array([2.0])) == 2.0
    assert as_number(7) == 7.0
    assert as_number(True) is None and as_number("7") is None and as_number([1, 2]) is None
    assert non_finite(np.array([[1.0, np.nan]])) == "entry [0, 1] is nan"
    assert non_finite(np.ones(3)) is None and non_finite("x") is None
    variants = {"a": None, "b": EXPECTED.T, "c": EXPECTED}
    assert first_match(EXPECTED, variants) == "c"
    assert first_match(EXPECTED + 1, variants) == ""
    assert first_match(EXPECTED, {"d": [EXPECTED.T, EXPECTED]}) == "d"


def test_a_diagnosis_says_what_the_mistake_means_without_its_code():
    assert diagnosis("no_scale").startswith("This matches the scores without dividing")
    assert diagnosis("mask_inverted").startswith("This matches the mask inverted")
    assert diagnosis("") == ""


def test_one_rule_for_eps_accepts_it_inside_or_outside_the_root():
    x = np.random.default_rng(0).normal(size=(4, 6))
    inside, outside = layer_norm_forms(x).values()
    assert mismatch(inside, outside) is None  # far inside the tolerance on usual rows
    constant = np.full((1, 6), 2.5)
    assert all(np.all(form == 0) for form in layer_norm_forms(constant).values())


# --- a run that gave nothing to judge ----------------------------------------------------------

CALLS = [Call("f/1", "f", (1.0,)), Call("f/2", "f", (2.0,))]
TESTS = [
    LabTest("first", lambda r: mismatch(np.array(1.0), r.value("f/1"))),
    LabTest("second", lambda r: mismatch(np.array(2.0), r.value("f/2"))),
]


@pytest.mark.parametrize(
    ("run", "message"),
    [
        (RunResult(failure="bwrap: no user namespaces"), "The code could not be run: bwrap"),
        (
            RunResult(limit="time", limit_message="Stopped after 5 s of CPU time"),
            "Stopped after 5 s of CPU time",
        ),
        (RunResult(limit="memory"), "Stopped: the memory limit was reached"),
        (
            RunResult(load_error="SyntaxError: invalid syntax (line 3)"),
            "The code did not load: SyntaxError: invalid syntax (line 3)",
        ),
    ],
)
def test_a_run_that_failed_broke_a_limit_or_did_not_load_fails_every_test(run, message):
    verdict = judge(TESTS, CALLS, run)
    assert not verdict.passed
    assert [t.message.startswith(message) for t in verdict.tests] == [True, True]


def test_a_call_that_raised_or_never_ran_fails_with_its_own_words():
    run = RunResult(returned={"f/1": Returned(error="ValueError: shapes (6,8) and (4,4)")})
    first, second = judge(TESTS, CALLS, run).tests
    assert first.message == "f() raised ValueError: shapes (6,8) and (4,4)."
    assert second.message == "f() was not called: the run stopped before it."


def test_a_check_that_trips_on_a_value_fails_that_test_only():
    def trips(r):
        raise ZeroDivisionError

    run = RunResult(returned={"f/1": Returned(np.array(1.0)), "f/2": Returned(np.array(2.0))})
    verdict = judge([TESTS[0], LabTest("odd", trips)], CALLS, run, diagnose=lambda r: 1 / 0)
    assert [t.passed for t in verdict.tests] == [True, False]
    assert verdict.tests[1].message == "The value returned could not be judged (ZeroDivisionError)."
    assert verdict.diagnosis == "" and verdict.mistake == ""


def test_no_tests_is_no_pass():
    assert not judge([], CALLS, RunResult()).passed


# --- every judge against anything ---------------------------------------------------------------

ODD_VALUES = {
    "None": None,
    "a string": "all tests passed",
    "ragged": [[1.0, 2.0], [3.0]],
    "nan": np.full((6, 8), np.nan),
    "huge": np.full((6, 8), 1e308),
    "empty": np.zeros((0,)),
    "a tuple": (1.0, "b", None),
    "a bool": True,
    "a dict": Foreign("dict", "a dict; expected an array"),
    "a str": Foreign("str", "'done'"),
    "ints": np.zeros((6, 8), dtype=np.int64),
    "a big array": np.zeros((1_200, 1_000)),
    "inf": float("inf"),
    "an int": 2,
}


@pytest.mark.parametrize("odd", list(ODD_VALUES))
@pytest.mark.parametrize("slug", list(LABS))
def test_every_judge_fails_any_odd_value_without_raising(slug, odd):
    the_lab = lab(slug)
    calls = list(the_lab.calls(np.random.default_rng(3)))
    run = RunResult(returned={c.key: Returned(value=ODD_VALUES[odd]) for c in calls})
    verdict = the_lab.judge(calls, run)
    assert [t.name for t in verdict.tests] == list(the_lab.tests)
    assert not verdict.passed
    assert all(t.message for t in verdict.tests)
    assert isinstance(verdict.diagnosis, str)


@pytest.mark.parametrize("slug", list(LABS))
def test_every_judge_reports_calls_that_raised_and_an_empty_run(slug):
    the_lab = lab(slug)
    calls = list(the_lab.calls(np.random.default_rng(3)))
    raised = RunResult(returned={c.key: Returned(error="TypeError: nope") for c in calls})
    verdict = the_lab.judge(calls, raised)
    assert not verdict.passed
    assert any("raised TypeError: nope" in t.message for t in verdict.tests)
    empty = the_lab.judge(calls, RunResult())
    assert not empty.passed
    assert any("was not called" in t.message for t in empty.tests)
    nothing = the_lab.judge(calls, RunResult(returned=None))  # type: ignore[arg-type]
    assert not nothing.passed


# --- the block's property tests, each on its own ----------------------------------------------


def block_verdict(**functions):
    calls = list(lab("block").calls(np.random.default_rng(0)))
    verdict = lab("block").judge(
        calls, run_with(calls, {**SOLUTIONS["block"]["reference"], **functions})
    )
    return {t.name: t for t in verdict.tests}, verdict.mistake


def test_a_block_that_ignores_its_input_shows_positions_made_no_difference():
    tests, _ = block_verdict(block=lambda X, *w, causal=False: np.zeros_like(X))
    assert tests["without positions: permuting tokens permutes outputs"].passed
    order = tests["with positions: permuting tokens no longer only permutes"]
    assert not order.passed and "the positions P made no difference" in order.message


def test_a_block_that_ignores_causal_fails_the_causal_test_only_among_the_properties():
    tests, code = block_verdict(block=lambda X, *w, causal=False: block(X, *w))
    failed = {name for name, t in tests.items() if not t.passed}
    assert failed == {"causal: changing the last token leaves earlier outputs unchanged"}
    assert code == "no_mask"


def test_a_block_always_masked_fails_the_not_causal_test():
    tests, _ = block_verdict(block=lambda X, *w, causal=False: block(X, *w, causal=True))
    assert not tests["not causal: changing the last token changes earlier outputs"].passed
    assert not tests["the engine's block, LayerNorm(X + MultiHead(X))"].passed


def test_the_spread_is_judged_with_a_tolerance_suited_to_n():
    calls = {c.key: c for c in lab("block").calls(np.random.default_rng(0))}
    d_k = calls["qk_spread"].args[0]
    root = d_k**0.5

    def spread(raw, scaled):
        tests, code = block_verdict(qk_spread=lambda d_k, n, seed: (raw, scaled))
        return tests[lab("block").tests[7]], code

    assert spread(root * 1.005, 1.005)[0].passed
    too_far, _ = spread(root * 1.2, 1.2)
    assert too_far.message.startswith(f"raw_std is {root * 1.2:.6g}; expected ")
    variance, code = spread(d_k * 1.003, d_k * 1.003 / root)
    assert not variance.passed and code == "variance_for_sd"
    by_d_k, code = spread(root, root / d_k)
    assert not by_d_k.passed and code == "spread_divided_by_d_k"
    unscaled, code = spread(root, root)
    assert not unscaled.passed and code == "spread_not_scaled"
    fixed, code = spread(8.0, 1.0)
    assert not fixed.passed and code == "spread_fixed_d_k"
    odd, _ = spread(float("nan"), 1.0)
    assert "two finite numbers" in odd.message


def test_the_residual_answer_must_be_one_of_the_statements():
    calls = list(lab("without-residual").calls(np.random.default_rng(0)))
    for answer, shown in ((5, "the number 5"), ("b", "str 'b'"), (None, "None")):
        functions = {"block": block, "residual_answer": lambda answer=answer: answer}
        verdict = lab("without-residual").judge(calls, run_with(calls, functions))
        assert verdict.tests[2].message == (
            f"residual_answer() must return one of 1, 2, 3, 4; got {shown}."
        )
    for wrong in (3, 4):
        functions = {"block": block, "residual_answer": lambda wrong=wrong: wrong}
        verdict = lab("without-residual").judge(calls, run_with(calls, functions))
        assert verdict.tests[2].message.startswith(
            f"Statement {wrong} does not describe your block"
        )

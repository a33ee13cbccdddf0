"""Marking that follows the learner's own steps (error carried forward), exact counts and
the layouts a prompt allows."""

import numpy as np
import pytest

from exercises.checking import FOLLOW_CREDIT, MISTAKES, check_answers
from exercises.kinds import KINDS, get_kind
from exercises.kinds.base import STEP_DECIMALS
from exercises.variants import draw_variant


def variant(name, seed=3, **raw):
    kind = get_kind(name)
    return kind, draw_variant(kind, kind.normalize_params(raw), seed)


def check(kind, g, answers, **kw):
    return check_answers(
        asks=g.asks,
        solution=g.solution,
        answers={k: np.asarray(v).tolist() for k, v in answers.items()},
        rtol=g.rtol,
        atol=g.atol,
        inputs=g.inputs,
        kind=kind,
        **kw,
    )


def expected_score(result):
    credits = [
        max(p.right_cells / p.cells, FOLLOW_CREDIT) if p.follows else p.right_cells / p.cells
        for p in result.parts.values()
    ]
    return round(sum(credits) / len(credits), 4)


def test_step_rounding_never_rejects_the_right_method():
    # The case: output[4, 4] is 0.1022, and 0.109 follows from weights rounded to
    # three decimals. Checked only against the right answer it would be rejected.
    kind = get_kind("attention")
    params = kind.normalize_params({"n": 8, "d_k": 8, "d_v": 8, "max_abs": 5})
    g = kind.generate(params, np.random.default_rng(99))
    assert draw_variant(kind, params, 99).inputs == g.inputs  # this variant is offered
    rounded = kind.answers_under(g.inputs, {}, STEP_DECIMALS)
    assert g.solution["output"][4][4] == pytest.approx(0.1022, abs=1e-4)
    assert rounded["output"][4][4] == pytest.approx(0.109)
    rounded = {k: v.tolist() for k, v in rounded.items()}
    without_own_steps = check_answers(
        asks=g.asks, solution=g.solution, answers=rounded, rtol=g.rtol, atol=g.atol
    )
    assert without_own_steps.parts["output"].wrong_cells == [[4, 4]]
    r = check(kind, g, rounded)
    assert r.correct and r.score == 1.0 and r.first_wrong is None


def test_an_unscaled_attempt_is_wrong_once_and_the_later_steps_follow():
    kind, g = variant("attention", seed=5)
    answers = kind.answers_under(g.inputs, MISTAKES["no_scale"].recipe, STEP_DECIMALS)
    r = check(kind, g, answers)
    assert not r.correct
    assert r.first_wrong == "scores" and not r.parts["scores"].follows
    for part, words in (("weights", "your scores"), ("output", "your weights")):
        assert not r.parts[part].correct
        assert r.parts[part].follows and r.parts[part].follows_from == words
        assert r.as_dict()["parts"][part]["follows"] is True
        assert words in r.parts[part].message
    assert [(d["code"], d["parts"]) for d in r.diagnosis] == [("no_scale", ["scores"])]
    assert r.score == expected_score(r) and r.score >= 2 * FOLLOW_CREDIT / 3


def test_a_later_part_that_does_not_follow_either_is_plain_wrong():
    kind, g = variant("attention", seed=5)
    answers = kind.answers_under(g.inputs, MISTAKES["no_scale"].recipe)
    answers["output"] = answers["output"] + 1.0
    r = check(kind, g, answers)
    assert r.parts["weights"].follows
    assert not r.parts["output"].follows and not r.parts["output"].correct
    assert r.first_wrong == "scores"  # the diagnosis still names only the first wrong step
    assert [d["parts"] for d in r.diagnosis] == [["scores"]]


def test_an_all_zero_answer_earns_no_follow_on_credit():
    kind, g = variant("attention", seed=5)
    zeros = {ask["name"]: np.zeros(ask["shape"]) for ask in g.asks}
    r = check(kind, g, zeros)
    # Zero weights times V is zero: the output "follows", but from no step at all.
    assert not any(part.follows for part in r.parts.values())
    assert not r.parts["output"].correct
    # Only cells that happen to be right count: no half credit for a part.
    shares = [p.right_cells / p.cells for p in r.parts.values()]
    assert r.score == round(sum(shares) / len(shares), 4)


def test_weights_done_the_wrong_way_from_right_scores_name_that_step():
    kind, g = variant("attention", seed=8, mask="causal")
    answers = kind.answers_under(g.inputs, MISTAKES["mask_after_softmax"].recipe)
    r = check(kind, g, answers)
    assert r.parts["scores"].correct
    assert r.first_wrong == "weights"
    assert [d["code"] for d in r.diagnosis] == ["mask_after_softmax"]
    assert r.parts["output"].follows and r.parts["output"].follows_from == "your weights"


def test_projection_weights_follow_from_the_learners_q_and_k():
    kind, g = variant("projection", seed=4, vary=False)
    answers = kind.answers_under(g.inputs, {})
    Q = np.asarray(answers["Q"]) * 2  # a wrong Q, everything after computed from it
    K, V = np.asarray(answers["K"]), np.asarray(answers["V"])
    s = Q @ K.T / np.sqrt(2)
    w = np.exp(s - s.max(axis=1, keepdims=True))
    w /= w.sum(axis=1, keepdims=True)
    r = check(kind, g, {"Q": Q, "K": K, "V": V, "weights": w, "output": w @ V})
    assert r.first_wrong == "Q"
    assert r.parts["K"].correct and r.parts["V"].correct
    assert r.parts["weights"].follows and r.parts["weights"].follows_from == "your Q and K"
    assert r.parts["output"].follows


def test_multi_head_output_follows_from_the_head_weights_with_rounded_head_outputs():
    kind, g = variant("multi_head", seed=2, n=4, heads=2, d_head=2)
    unscaled = kind.answers_under(g.inputs, MISTAKES["no_scale"].recipe, STEP_DECIMALS)
    r = check(kind, g, unscaled)
    assert r.first_wrong == "weights_head_0"
    assert "no_scale" in [d["code"] for d in r.diagnosis]
    assert r.parts["output"].follows
    assert r.parts["output"].follows_from == "your head weights"
    right = kind.answers_under(g.inputs, {}, STEP_DECIMALS)
    assert check(kind, g, right).correct


def test_shapes_carry_a_wrong_head_width_forward():
    kind, g = variant("shapes", seed=1, n=6, heads=2, d_head=4, vary=False)
    wrong = kind.answers_under(g.inputs, MISTAKES["d_model_for_d_k"].recipe)
    r = check(kind, g, wrong)
    assert r.first_wrong == "Q_shape"
    assert r.parts["scores_shape"].correct
    assert r.parts["head_output_shape"].follows and r.parts["concat_shape"].follows
    assert r.parts["output_shape"].correct
    assert [d["code"] for d in r.diagnosis] == ["d_model_for_d_k"]


def test_cost_counts_are_exact_even_beyond_a_float_and_bytes_follow_from_entries():
    kind, g = variant(
        "cost",
        n=1_048_576,
        d_model=65_536,
        heads=256,
        layers=512,
        bytes_per_entry=4,
        vary=False,
    )

    def mark(answers):
        return check_answers(
            asks=g.asks,
            solution=g.solution,
            answers=answers,
            rtol=g.rtol,
            atol=g.atol,
            inputs=g.inputs,
            kind=kind,
        )

    exact = dict(g.solution)
    assert exact["score_bytes"] > 2**53
    assert check(kind, g, exact).correct
    r = mark({**exact, "score_bytes": exact["score_bytes"] + 1})
    assert not r.correct and r.first_wrong == "score_bytes"
    with_biases = kind.answers_under(g.inputs, MISTAKES["params_with_biases"].recipe)
    r = mark({k: np.asarray(v).tolist() for k, v in with_biases.items()})
    assert r.first_wrong == "attention_params"
    assert [d["code"] for d in r.diagnosis] == ["params_with_biases"]
    # Entries off by a factor, bytes computed from them: bytes follow.
    entries = exact["score_entries"] * 2
    per = g.inputs["heads"] * g.inputs["layers"] * g.inputs["bytes_per_entry"]
    r = mark({**exact, "score_entries": entries, "score_bytes": entries * per})
    assert r.parts["score_bytes"].follows and r.first_wrong == "score_entries"
    # A count written with a fraction is not the whole number asked.
    r = mark({**exact, "ffn_params": exact["ffn_params"] + 0.5})
    assert (
        r.parts["ffn_params"].message
        == "Not the exact whole number expected. This is the first wrong step."
    )


def test_the_share_is_accepted_to_three_significant_figures():
    kind, g = variant("cost", vary=False)
    share = g.solution["quadratic_share"]
    assert check(kind, g, {**g.solution, "quadratic_share": float(f"{share:.3g}")}).correct
    assert not check(kind, g, {**g.solution, "quadratic_share": share * 1.02}).correct


def test_positional_encoding_other_layout_is_a_reordering_not_a_wrong_answer():
    kind, g = variant("positional_encoding", seed=4, d_model=8, positions=2)
    lab = kind.answers_under(g.inputs, MISTAKES["pe_concatenated"].recipe)
    r = check(kind, g, lab)
    assert not r.correct
    (d,) = r.diagnosis
    assert d["code"] == "pe_concatenated"
    assert "same encoding with the dimensions reordered" in d["text"]
    assert "interleaved" in d["text"]


def test_positional_encoding_either_layout_accepts_the_lab_layout_whole():
    kind, g = variant("positional_encoding", seed=4, d_model=8, positions=2, layout="either")
    rows = {}
    for p in g.inputs["positions"]:
        a = np.asarray(g.solution[f"pe_{p}"])
        rows[f"pe_{p}"] = np.concatenate([a[0::2], a[1::2]])
    r = check(kind, g, rows)
    assert r.correct
    assert all("lab code's layout" in p.message for p in r.parts.values())
    assert check(kind, g, g.solution).correct
    # The lab layout asked: the paper's answer is named as the reordering it is.
    kind, lab = variant("positional_encoding", seed=4, d_model=8, layout="sines_then_cosines")
    paper = kind.answers_under(lab.inputs, MISTAKES["pe_interleaved"].recipe)
    r = check(kind, lab, paper)
    assert not r.correct and [d["code"] for d in r.diagnosis] == ["pe_interleaved"]


@pytest.mark.parametrize("name", list(KINDS))
def test_every_prompt_states_its_rounding_rule(name):
    _, g = variant(name)
    if any(a.get("exact") for a in g.asks):
        # Counts and shapes are whole numbers, asked exactly.
        assert "exact" in g.prompt
    elif name == "positional_encoding":
        # The positions are independent parts; the divisors need more than three decimals.
        assert "three decimals" in g.prompt and "significant figures" in g.prompt
    else:
        assert "three decimals" in g.prompt and "your own earlier answers" in g.prompt

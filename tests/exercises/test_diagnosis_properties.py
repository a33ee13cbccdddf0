"""A diagnosis names a mistake only when that mistake gives the learner's numbers.

Over seeds: a learner who makes a registered mistake, exactly or writing every step to
three decimals, is told that mistake at the first wrong step; every mistake named there
gives the learner's numbers at that step (its whole chain from the inputs, exact or by
hand, or the step computed its way from the learner's own earlier parts); and mistakes
named together are named in one entry that says "either ... or ...".

Then the cases found from outside: heads dealt out in turn, a padded query row zeroed,
and saturated weights that K Q^T and Q K give alike.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from exercises.checking import MISTAKES, answer_cells, cells_ok, check_answers, follow_on
from exercises.kinds import get_kind
from exercises.variants import draw_variant
from tests.exercises import hand_solver as hs

SETS = [
    ("attention", {"n": 3, "d_k": 2, "d_v": 2, "mask": "causal"}),
    ("attention", {"n": 4, "d_k": 2, "d_v": 2, "mask": "padding"}),
    ("causal", {"n": 3, "d_k": 2}),
    ("padding", {"n_real": 4, "n_pad": 1, "d_k": 3, "scale": False}),
    ("projection", {"preset": "random", "x": "integers", "n": 3, "d_model": 4, "d_k": 3}),
    ("projection", {"preset": "lesson", "mask": "causal"}),
    ("multi_head", {"heads": 2, "d_head": 3, "n": 2, "mask": "causal"}),
    ("multi_head", {"n": 3, "heads": 2, "d_head": 2}),
    ("scaling", {"d_k": 16, "n": 3}),
    ("cost", {}),
    ("positional_encoding", {"d_model": 8, "positions": 2}),
]


def check(kind, g, answers):
    return check_answers(
        asks=g.asks,
        solution=g.solution,
        answers=answers,
        rtol=g.rtol,
        atol=g.atol,
        inputs=g.inputs,
        kind=kind,
    )


def as_json(answers):
    return {name: np.asarray(value).tolist() for name, value in answers.items()}


def named(result) -> list[str]:
    return [e["code"] for d in result.diagnosis for e in d.get("either", [d])]


def gives_the_numbers(kind, g, answers, code, step) -> bool:
    """The mistake's own numbers at ``step`` are the learner's, within the tolerance."""
    ask = next(a for a in g.asks if a["name"] == step)
    mine = answer_cells(ask, answers[step])
    exact = bool(ask.get("exact"))

    def close(value, slack=0.0):
        ok = cells_ok(
            mine, answer_cells(ask, value), exact=exact, rtol=g.rtol, atol=g.atol, slack=slack
        )
        return bool(ok.all())

    recipe = MISTAKES[code].recipe
    for decimals in (None, 3):
        chain = kind.answers_under(g.inputs, recipe, decimals)
        if chain is not None and step in chain and close(chain[step]):
            return True
    floats = {
        a["name"]: np.asarray(answer_cells(a, answers[a["name"]]), dtype=float) for a in g.asks
    }
    follow = follow_on(kind, g.inputs, floats, recipe).get(step)
    return follow is not None and close(follow.value, follow.slack)


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow],
)
@given(
    which=st.integers(0, len(SETS) - 1),
    seed=st.integers(0, 200_000),
    pick=st.integers(0, 10**6),
    decimals=st.sampled_from((None, 3)),
)
def test_every_named_mistake_gives_the_learners_numbers(which, seed, pick, decimals):
    name, params = SETS[which]
    kind = get_kind(name)
    g = draw_variant(kind, kind.normalize_params(params), seed)
    code = kind.mistakes[pick % len(kind.mistakes)]
    made = kind.answers_under(g.inputs, MISTAKES[code].recipe, decimals)
    assume(made is not None)
    answers = as_json(made)
    r = check(kind, g, answers)
    assert not r.correct
    assert code in named(r), (name, params, seed, code, decimals, r.diagnosis)
    for entry in r.diagnosis:
        codes = [e["code"] for e in entry.get("either", [entry])]
        for other in codes:
            assert gives_the_numbers(kind, g, answers, other, r.first_wrong), (other, seed)
        if len(codes) > 1:
            assert entry["text"].startswith("This matches either ")
            assert all(MISTAKES[c].what in entry["text"] for c in codes)
    assert len(r.diagnosis) <= 1  # one entry, at the first wrong step


# --- Heads dealt out in turn (columns 1, h + 1, ... to head 1) ---------------------------


def interleaved_by_hand(inputs):
    """Written from the words of the mistake, not from the kind: head i reads every h-th
    column from column i; its outputs are concatenated in order and mixed by W_O."""
    X, h = inputs["X"], inputs["heads"]
    Q, K, V = (hs.matmul(X, inputs[n]) for n in ("W_Q", "W_K", "W_V"))
    out, concat = {}, [[] for _ in X]
    for i in range(h):

        def cols(M, i=i):
            return [row[i::h] for row in M]

        weights = hs.weights_by_hand(
            hs.scores_by_hand(cols(Q), cols(K), inputs["scale"]), inputs["mask"]
        )
        out[f"weights_head_{i}"] = weights
        for row, head_row in zip(concat, hs.mix_by_hand(weights, cols(V)), strict=True):
            row.extend(head_row)
    out["output"] = [[hs.w(x) for x in row] for row in hs.matmul(concat, inputs["W_O"])]
    return out


@pytest.mark.parametrize("seed", [23766, 55482, 63416, 87230, 111062])
def test_heads_dealt_out_in_turn_are_named_so(seed):
    kind = get_kind("multi_head")
    params = {"heads": 2, "d_head": 3, "n": 2, "mask": "causal"}
    g = draw_variant(kind, kind.normalize_params(params), seed)
    r = check(kind, g, interleaved_by_hand(g.inputs))
    assert r.first_wrong == "weights_head_0"
    assert named(r) == ["heads_interleaved"]
    assert "head 1 taking columns 1, h + 1" in r.diagnosis[0]["text"]


# --- A padded query row zeroed ------------------------------------------------------------


def test_a_zeroed_padded_row_is_not_told_the_real_tokens_read_the_padding():
    kind = get_kind("padding")
    params = {"n_real": 4, "n_pad": 1, "d_k": 3, "scale": False}
    g = draw_variant(kind, kind.normalize_params(params), 111062)
    answers = hs.hand_answers("padding", g.inputs, g.prompt)
    answers["weights"] = [
        [0.0] * len(row) if padded else row
        for row, padded in zip(answers["weights"], g.inputs["padded"], strict=True)
    ]
    r = check(kind, g, answers)
    assert "padded_rows_zeroed" in named(r)
    # The real rows' weight on the padding is below the tolerance here: the two mistakes
    # give the same numbers, and the diagnosis says so rather than naming one.
    (entry,) = r.diagnosis
    assert entry["text"].startswith("This matches either ")
    assert {e["code"] for e in entry["either"]} == {"padded_rows_zeroed", "padding_on_queries"}


def test_real_rows_that_visibly_read_the_padding_are_told_that_alone():
    kind = get_kind("padding")
    for seed in range(40):
        g = draw_variant(kind, kind.normalize_params({"n_real": 2, "n_pad": 1}), seed)
        made = kind.answers_under(g.inputs, MISTAKES["padding_on_queries"].recipe)
        zeroed = kind.answers_under(g.inputs, MISTAKES["padded_rows_zeroed"].recipe)
        r = check(kind, g, as_json(made))
        if not check(kind, g, {"weights": np.asarray(zeroed["weights"]).tolist()}).correct:
            far = not cells_ok(
                made["weights"], zeroed["weights"], exact=False, rtol=g.rtol, atol=g.atol
            ).all()
            if far:
                assert named(r) == ["padding_on_queries"], seed
                return
    raise AssertionError("no variant where the padding is visibly read")


# --- Saturated weights: K Q^T and Q K alike -------------------------------------------------


def test_saturated_weights_that_two_orders_give_are_named_either_or():
    kind = get_kind("projection")
    params = {"preset": "random", "x": "integers", "n": 3, "d_model": 4, "d_k": 3}
    g = draw_variant(kind, kind.normalize_params(params), 158780)
    X = np.asarray(g.inputs["X"], dtype=float)
    Q, K, V = (X @ np.asarray(g.inputs[w], dtype=float) for w in ("W_Q", "W_K", "W_V"))
    root = hs.w(math.sqrt(3))
    answers = hs.hand_answers("projection", g.inputs, g.prompt)
    scores = [[hs.w(x / root) for x in row] for row in (K @ Q.T).tolist()]
    weights = hs.weights_by_hand(scores, g.inputs["mask"])
    answers.update(weights=weights, output=hs.mix_by_hand(weights, V.tolist()))
    r = check(kind, g, answers)
    (entry,) = r.diagnosis
    assert {e["code"] for e in entry["either"]} == {"scores_transposed", "k_not_transposed"}
    assert entry["text"].startswith(
        "This matches either KQᵀ, the product in the wrong order or QK without "
        "transposing K: at this step they give the same numbers"
    )

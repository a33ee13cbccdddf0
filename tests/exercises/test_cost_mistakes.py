"""Each cost mistake, computed by the method its name says, from a layer's matrices.

The layer is written out as its weight matrices and the two n x n products; a mistake
leaves out or adds exactly what its name says, and the share and the counts are summed
from that list, not from the kind's formulas. The kind's ``answers_under`` must give the
same numbers, and a learner who makes the mistake must be told that mistake, and only it.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exercises.checking import MISTAKES, check_answers
from exercises.kinds import get_kind
from exercises.variants import draw_variant

COST = get_kind("cost")


def layer_weights(d: int) -> dict[str, tuple[int, int]]:
    """Every weight matrix of one layer, (rows, columns): four projections and the 4x FFN."""
    return {
        "W_Q": (d, d),
        "W_K": (d, d),
        "W_V": (d, d),
        "W_O": (d, d),
        "FFN_up": (d, 4 * d),
        "FFN_down": (4 * d, d),
    }


def layer_biases(d: int) -> dict[str, int]:
    return {"b_Q": d, "b_K": d, "b_V": d, "b_O": d, "b_up": 4 * d, "b_down": d}


def n_by_n_products(n: int, d: int) -> dict[str, int]:
    """Multiply-adds of the n x n part, all heads together: Q K^T and A V."""
    return {"QK^T": n * n * d, "AV": n * n * d}


def share(n: int, d: int, *, leave_out: tuple[str, ...] = ()) -> float:
    """The n x n part's share of a layer's multiply-adds, one per weight per token, with
    the matrices or products named in ``leave_out`` left out."""
    quadratic = sum(v for k, v in n_by_n_products(n, d).items() if k not in leave_out)
    per_token = sum(r * c for k, (r, c) in layer_weights(d).items() if k not in leave_out)
    return quadratic / (quadratic + n * per_token)


def by_method(code: str, n: int, d: int, h: int, L: int, b: int) -> dict[str, float | int]:
    """What the learner who makes ``code`` writes for the parts that mistake changes."""
    weights = layer_weights(d)
    attention = sum(r * c for k, (r, c) in weights.items() if k.startswith("W_"))
    ffn = sum(r * c for k, (r, c) in weights.items() if k.startswith("FFN"))
    biases = layer_biases(d)
    if code == "bytes_one_head":
        return {"score_bytes": n * n * b}  # one head of one layer
    if code == "share_qk_only":
        return {"quadratic_share": share(n, d, leave_out=("AV",))}
    if code == "share_without_w_o":
        return {"quadratic_share": share(n, d, leave_out=("W_O",))}
    if code == "params_without_w_o":
        return {"attention_params": attention - d * d}
    if code == "ffn_one_matrix":
        return {"ffn_params": weights["FFN_up"][0] * weights["FFN_up"][1]}
    assert code == "params_with_biases"
    return {
        "attention_params": attention + sum(biases[k] for k in ("b_Q", "b_K", "b_V", "b_O")),
        "ffn_params": ffn + biases["b_up"] + biases["b_down"],
    }


def test_the_right_share_is_the_method_with_nothing_left_out():
    for n, d in ((4096, 768), (1, 1), (512, 64)):
        assert share(n, d) == pytest.approx(n / (n + 6 * d))


@settings(max_examples=200, deadline=None)
@given(
    code=st.sampled_from(COST.mistakes),
    n=st.integers(1, 1_048_576),
    d=st.integers(1, 65_536),
    h=st.integers(1, 256),
    L=st.integers(1, 512),
    b=st.sampled_from((1, 2, 4)),
)
def test_each_cost_mistake_is_computed_by_the_method_its_name_says(code, n, d, h, L, b):
    inputs = {"n": n, "d_model": d, "heads": h, "layers": L, "bytes_per_entry": b}
    got = COST.answers_under(inputs, MISTAKES[code].recipe)
    right = COST.answers_under(inputs, {})
    assert right is not None
    expected = by_method(code, n, d, h, L, b)
    if got is None:
        # Only where the mistake changes nothing the exercise can see: one head in one
        # layer, or a share within the share's tolerance of the right one.
        if code == "bytes_one_head":
            assert h * L == 1
        else:
            (value,) = expected.values()
            assert abs(value - float(right["quadratic_share"])) <= COST.rtol * float(
                right["quadratic_share"]
            ) * (1.0 + 1e-9)
        return
    for part, value in expected.items():
        assert float(got[part]) == pytest.approx(value, rel=1e-12), part
    for part in set(right) - set(expected):
        assert got[part] == right[part], part  # nothing else changes


def _variant(**params):
    return draw_variant(COST, COST.normalize_params({**params, "vary": False}), 1)


def _codes(g, **changed):
    answers = {name: g.solution[name] for name in g.solution} | changed
    r = check_answers(
        asks=g.asks,
        solution=g.solution,
        answers=answers,
        rtol=g.rtol,
        atol=g.atol,
        inputs=g.inputs,
        kind=COST,
    )
    return r.correct, [d["code"] for d in r.diagnosis]


def test_the_share_with_w_o_left_out_is_told_so_and_nothing_else_is():
    g = _variant(n=4096, d_model=768, heads=12, layers=12, bytes_per_entry=2)
    assert g.solution["quadratic_share"] == pytest.approx(0.4706, abs=5e-5)
    # W_O really left out: 2n²d / (2n²d + 11nd²).
    assert _codes(g, quadratic_share=0.4923) == (False, ["share_without_w_o"])
    # n / (n + 5d) leaves out more than W_O: no mistake of the list gives it.
    assert _codes(g, quadratic_share=0.5161) == (False, [])
    assert _codes(g, quadratic_share=0.4706) == (True, [])

"""The lab catalogue: every lab's reference passes and every registered mistake fails with
its diagnosis named, judged on values computed here with NumPy and the engine.

The lab's reference and mistake sources are never run in this process: they are only
parsed (``ast``) to check that they define what the calls ask for. The values a right
solution and each mistake return are computed by this module's own NumPy below.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Mapping

import numpy as np
import pytest

from exercises import engine
from exercises.checking.mistakes import MISTAKES
from labs.catalogue import LABS, lab
from labs.judging import LAB_MISTAKES, mistake_codes, mistake_text
from labs.runner import decode, encode_returned
from labs.spec import Call, Lab, Returned, RunResult
from studyapp.common import rendering

Fn = Callable[..., object]


def run_with(calls: list[Call], functions: Mapping[str, Fn]) -> RunResult:
    """What the sandbox would hand back if the learner's functions were ``functions``."""
    returned = {}
    for c in calls:
        try:
            with np.errstate(all="ignore"):
                value = functions[c.function](*c.args, **c.kwargs)
        except Exception as exc:
            returned[c.key] = Returned(error=f"{type(exc).__name__}: {exc}")
            continue
        returned[c.key] = Returned(value=decode(encode_returned(value)))  # as the sandbox does
    return RunResult(returned=returned)


# --- the learner's functions, written here in NumPy -------------------------------------------
# Each takes ``dtype`` (float32 work must pass) and the options that make one mistake.


def softmax(z, axis=-1, *, dtype=np.float64, shift="row"):
    z = np.asarray(z, dtype=dtype)
    if shift == "row":
        z = z - z.max(axis=axis, keepdims=True)
    elif shift == "global":
        z = z - z.max()
    e = np.exp(z)
    return e / e.sum(axis=axis, keepdims=True)


def attention(
    Q, K, V, mask=None, *, dtype=np.float64, scale="d_k", axis=-1, masking="inf", causal=False
):
    Q, K, V = (np.asarray(a, dtype=dtype) for a in (Q, K, V))
    divisor = {
        "d_k": np.sqrt(Q.shape[-1]),
        "none": 1.0,
        "4": np.sqrt(4),
        "d_v": np.sqrt(V.shape[-1]),
        "d_k^1": Q.shape[-1],
    }[scale]
    s = Q @ K.T / divisor
    if causal and mask is None:
        mask = np.triu(np.ones(s.shape, dtype=bool), 1)
    if mask is not None and masking == "after":
        return np.where(mask, 0.0, softmax(s, dtype=dtype)) @ V
    if mask is not None:
        blocked = ~mask if masking == "inverted" else mask
        s = np.where(blocked, 0.0 if masking == "zero" else -np.inf, s)
    return softmax(s, axis=axis, dtype=dtype) @ V


def attention_einsum(Q, K, V, mask=None):
    """Another right formulation: einsum, a boolean mask via a large negative fill."""
    s = np.einsum("qd,kd->qk", Q, K) / Q.shape[1] ** 0.5
    if mask is not None:
        s = s.copy()
        s[mask] = -np.inf
    w = np.exp(s - s.max(-1, keepdims=True))
    return np.einsum("qk,kv->qv", w / w.sum(-1, keepdims=True), V)


def multi_head(
    X,
    W_Q,
    W_K,
    W_V,
    W_O,
    *,
    dtype=np.float64,
    by_d_model=False,
    reverse=False,
    w_o=True,
    mask=None,
    reshape=False,
    fixed=None,
):
    X, W_Q, W_K, W_V, W_O = (np.asarray(a, dtype=dtype) for a in (X, W_Q, W_K, W_V, W_O))
    outs = []
    for h in range(len(W_Q)):
        Q, K, V = X @ W_Q[h], X @ W_K[h], X @ W_V[h]
        width = fixed or (X.shape[-1] if by_d_model else Q.shape[-1])
        s = Q @ K.T / np.sqrt(width)
        if mask is not None:
            s = np.where(mask, -np.inf, s)
        outs.append(softmax(s, dtype=dtype) @ V)
    if reshape:
        joined = np.stack(outs).reshape(len(X), -1)
    else:
        joined = np.concatenate(outs[::-1] if reverse else outs, axis=-1)
    return joined @ W_O if w_o else joined


def multi_head_batched(X, W_Q, W_K, W_V, W_O):
    """Another right formulation: every head at once, then transpose and reshape."""
    Q, K, V = (np.einsum("nd,hdk->hnk", X, W) for W in (W_Q, W_K, W_V))
    s = Q @ K.transpose(0, 2, 1) / np.sqrt(Q.shape[-1])
    w = np.exp(s - s.max(-1, keepdims=True))
    heads = (w / w.sum(-1, keepdims=True)) @ V  # (h, n, d_k)
    return heads.transpose(1, 0, 2).reshape(len(X), -1) @ W_O


def layer_norm(x, eps=1e-5, axis=-1, centre=True, *, dtype=np.float64, outside=False, ddof=0):
    x = np.asarray(x, dtype=dtype)
    shifted = x - x.mean(axis, keepdims=True) if centre else x
    var = x.var(axis, keepdims=True, ddof=ddof)
    return shifted / (np.sqrt(var) + eps if outside else np.sqrt(var + eps))


def sinusoid(n, d, *, interleaved=False, swap=False, two=2, dtype=np.float64):
    pos, i = np.arange(n)[:, None], np.arange(d // 2)[None]
    ang = pos / 10000 ** (two * i / d)
    first, second = (np.cos(ang), np.sin(ang)) if swap else (np.sin(ang), np.cos(ang))
    if not interleaved:
        return np.concatenate([first, second], axis=-1).astype(dtype)
    out = np.empty((n, d), dtype=dtype)
    out[:, 0::2], out[:, 1::2] = first, second
    return out


LESSON_TABLE = sinusoid(6, 8)


def block(
    X,
    W_Q,
    W_K,
    W_V,
    W_O,
    causal=False,
    residual=True,
    *,
    scale="d_k",
    tril=False,
    dtype=np.float64,
    outside=False,
    combine="post",
    reshape=False,
    always_masked=False,
    inverted=False,
    zero_mask=False,
    ddof=0,
):
    X, W_Q, W_K, W_V, W_O = (np.asarray(a, dtype=dtype) for a in (X, W_Q, W_K, W_V, W_O))
    if inverted:
        residual = not residual
    n = len(X)
    outs = []
    for h in range(len(W_Q)):
        Q, K, V = X @ W_Q[h], X @ W_K[h], X @ W_V[h]
        s = Q @ K.T / {"d_k": np.sqrt(Q.shape[-1]), "none": 1.0, "4": np.sqrt(4)}[scale]
        if causal or always_masked:
            ones = np.ones((n, n), dtype=bool)
            blocked = np.tril(ones, -1) if tril else np.triu(ones, 1)
            s = np.where(blocked, 0.0 if zero_mask else -np.inf, s)
        outs.append(softmax(s, dtype=dtype) @ V)
    joined = np.stack(outs).reshape(n, -1) if reshape else np.concatenate(outs, axis=-1)
    mixed = joined @ W_O
    if combine == "norm_first":
        return X + layer_norm(mixed, dtype=dtype, outside=outside, ddof=ddof)
    return layer_norm(X + mixed if residual else mixed, dtype=dtype, outside=outside, ddof=ddof)


def qk_spread(d_k, n, seed, *, scale="d_k", width=None, variance=False):
    rng = np.random.default_rng(seed)
    d = width or d_k
    dots = (rng.normal(size=(n, d)) * rng.normal(size=(n, d))).sum(axis=1)
    divisor = {"d_k": np.sqrt(d_k), "none": 1.0, "64": np.sqrt(64), "d_k^1": d_k}[scale]
    if variance:
        return float(dots.var()), float((dots / divisor).var())
    return float(dots.std()), float((dots / divisor).std())


def score_bytes(n, bytes_per_entry=2):
    return n * n * bytes_per_entry


BLOCK = {"block": block, "qk_spread": qk_spread, "score_bytes": score_bytes}


def blocked(**options):
    return {**BLOCK, "block": lambda *a, **k: block(*a, **k, **options)}


def causal(n, k=1, dtype=bool):
    return np.triu(np.ones((n, n), dtype=bool), k).astype(dtype)


def listed(fn):
    """The same numbers, returned as nested Python lists: not an ndarray."""
    return lambda *a, **k: np.asarray(fn(*a, **k)).tolist()


# slug -> {"reference" or a mistake's name: the functions that solution defines}
SOLUTIONS: dict[str, dict[str, dict[str, Fn]]] = {
    "softmax": {
        "reference": {"softmax": softmax},
        "softmax_overflow": {"softmax": lambda z: softmax(z, shift=None)},
        "softmax_global_max": {"softmax": lambda z: softmax(z, shift="global")},
        "softmax_over_queries": {"softmax": lambda z: softmax(z, axis=0)},
    },
    "attention": {
        "reference": {"attention": attention},
        "no_scale": {"attention": lambda *a, **k: attention(*a, **k, scale="none")},
        "softmax_over_queries": {"attention": lambda *a, **k: attention(*a, **k, axis=0)},
        "mask_after_softmax": {"attention": lambda *a, **k: attention(*a, **k, masking="after")},
        "mask_inverted": {"attention": lambda *a, **k: attention(*a, **k, masking="inverted")},
        "mask_as_zero_score": {"attention": lambda *a, **k: attention(*a, **k, masking="zero")},
        "scale_fixed": {"attention": lambda *a, **k: attention(*a, **k, scale="4")},
        "scale_by_d_v": {"attention": lambda *a, **k: attention(*a, **k, scale="d_v")},
        "mask_when_off": {"attention": lambda *a, **k: attention(*a, **k, causal=True)},
        "divided_by_d_k": {"attention": lambda *a, **k: attention(*a, **k, scale="d_k^1")},
    },
    "causal-mask": {
        "reference": {"causal_mask": causal},
        "causal_mask_transposed": {
            "causal_mask": lambda n: np.tril(np.ones((n, n), dtype=bool), -1)
        },
        "causal_mask_diagonal_blocked": {"causal_mask": lambda n: causal(n, 0)},
    },
    "multi-head": {
        "reference": {"multi_head": multi_head},
        "scale_by_d_model": {"multi_head": lambda *a: multi_head(*a, by_d_model=True)},
        "heads_concatenated_in_reverse": {"multi_head": lambda *a: multi_head(*a, reverse=True)},
        "w_o_left_out": {"multi_head": lambda *a: multi_head(*a, w_o=False)},
        "heads_reshaped_without_transpose": {"multi_head": lambda *a: multi_head(*a, reshape=True)},
        "scale_fixed": {"multi_head": lambda *a: multi_head(*a, fixed=4)},
    },
    "layer-norm": {
        "reference": {"layer_norm": layer_norm, "residual_norm": lambda x, o: layer_norm(x + o)},
        "layer_norm_over_tokens": {
            "layer_norm": lambda x: layer_norm(x, axis=0),
            "residual_norm": lambda x, o: layer_norm(x + o, axis=0),
        },
        "layer_norm_no_centering": {
            "layer_norm": lambda x: layer_norm(x, centre=False),
            "residual_norm": lambda x, o: layer_norm(x + o, centre=False),
        },
        "layer_norm_no_eps": {
            "layer_norm": lambda x: layer_norm(x, eps=0.0),
            "residual_norm": lambda x, o: layer_norm(x + o, eps=0.0),
        },
        "variance_ddof_one": {
            "layer_norm": lambda x: layer_norm(x, ddof=1),
            "residual_norm": lambda x, o: layer_norm(x + o, ddof=1),
        },
        "norm_before_residual": {
            "layer_norm": layer_norm,
            "residual_norm": lambda x, o: x + layer_norm(o),
        },
        "residual_left_out": {
            "layer_norm": layer_norm,
            "residual_norm": lambda x, o: layer_norm(o),
        },
    },
    "sinusoid": {
        "reference": {"sinusoid": sinusoid},
        "pe_sin_cos_swapped": {"sinusoid": lambda n, d: sinusoid(n, d, swap=True)},
        "pe_exponent_without_two": {"sinusoid": lambda n, d: sinusoid(n, d, two=1)},
        "pe_table_pasted": {"sinusoid": lambda n, d: LESSON_TABLE},
    },
    "block": {
        "reference": BLOCK,
        "no_scale": blocked(scale="none"),
        "scale_fixed": blocked(scale="4"),
        "residual_left_out": blocked(residual=False),
        "norm_before_residual": blocked(combine="norm_first"),
        "causal_mask_transposed": blocked(tril=True),
        "heads_reshaped_without_transpose": blocked(reshape=True),
        "mask_when_off": blocked(always_masked=True),
        "mask_as_zero_score": blocked(zero_mask=True),
        "variance_ddof_one": blocked(ddof=1),
        "score_bytes_linear": {
            **BLOCK,
            "score_bytes": lambda n, bytes_per_entry=2: n * bytes_per_entry,
        },
        "spread_not_scaled": {**BLOCK, "qk_spread": lambda *a: qk_spread(*a, scale="none")},
        "spread_divided_by_d_k": {**BLOCK, "qk_spread": lambda *a: qk_spread(*a, scale="d_k^1")},
        "spread_fixed_d_k": {**BLOCK, "qk_spread": lambda *a: qk_spread(*a, scale="64")},
        "variance_for_sd": {**BLOCK, "qk_spread": lambda *a: qk_spread(*a, variance=True)},
    },
    "without-residual": {
        "reference": {"block": block, "residual_answer": lambda: 2},
        "residual_statement_wrong": {"block": block, "residual_answer": lambda: 1},
        "residual_not_removed": {
            "block": lambda *a, residual=True, **k: block(*a, **k),
            "residual_answer": lambda: 2,
        },
        "residual_flag_inverted": {
            "block": lambda *a, **k: block(*a, **k, inverted=True),
            "residual_answer": lambda: 2,
        },
        "norm_before_residual": {
            "block": lambda *a, residual=True, **k: block(
                *a, **k, residual=residual, combine="norm_first" if residual else "post"
            ),
            "residual_answer": lambda: 2,
        },
    },
}

# Other right solutions: float32 work, eps outside the square root, other formulations.
RIGHT: dict[str, dict[str, dict[str, Fn]]] = {
    "softmax": {
        "float32": {"softmax": lambda z: softmax(z, dtype=np.float32)},
        "scipy-style": {
            "softmax": lambda z: np.exp(
                z
                - np.log(np.exp(z - z.max(-1, keepdims=True)).sum(-1, keepdims=True))
                - z.max(-1, keepdims=True)
            )
        },
    },
    "attention": {
        "float32": {"attention": lambda *a, **k: attention(*a, **k, dtype=np.float32)},
        "einsum": {"attention": attention_einsum},
    },
    "causal-mask": {
        "comparison": {"causal_mask": lambda n: np.arange(n)[None, :] > np.arange(n)[:, None]},
    },
    "multi-head": {
        "float32": {"multi_head": lambda *a: multi_head(*a, dtype=np.float32)},
        "batched": {"multi_head": multi_head_batched},
    },
    "layer-norm": {
        "float32": {
            "layer_norm": lambda x: layer_norm(x, dtype=np.float32),
            "residual_norm": lambda x, o: layer_norm(x + o, dtype=np.float32),
        },
        "eps outside": {
            "layer_norm": lambda x: layer_norm(x, outside=True),
            "residual_norm": lambda x, o: layer_norm(x + o, outside=True),
        },
        "eps 1e-6": {
            "layer_norm": lambda x: layer_norm(x, eps=1e-6),
            "residual_norm": lambda x, o: layer_norm(x + o, eps=1e-6),
        },
    },
    "sinusoid": {
        "float32": {"sinusoid": lambda n, d: sinusoid(n, d, dtype=np.float32)},
        "interleaved": {"sinusoid": lambda n, d: sinusoid(n, d, interleaved=True)},
    },
    "block": {
        "float32": blocked(dtype=np.float32),
        "eps outside": blocked(outside=True),
    },
    "without-residual": {
        "float32": {
            "block": lambda *a, **k: block(*a, **k, dtype=np.float32),
            "residual_answer": lambda: 2,
        },
        "eps outside": {
            "block": lambda *a, **k: block(*a, **k, outside=True),
            "residual_answer": lambda: 2,
        },
    },
}

# Lists where arrays are asked for: the numbers are right, the type is not.
LISTS: dict[str, dict[str, Fn]] = {
    "softmax": {"softmax": listed(softmax)},
    "attention": {"attention": listed(attention)},
    "causal-mask": {"causal_mask": listed(causal)},
    "multi-head": {"multi_head": listed(multi_head)},
    "layer-norm": {
        "layer_norm": listed(layer_norm),
        "residual_norm": listed(lambda x, o: layer_norm(x + o)),
    },
    "sinusoid": {"sinusoid": listed(sinusoid)},
    "block": {**BLOCK, "block": listed(block)},
    "without-residual": {"block": listed(block), "residual_answer": lambda: 2},
}

CASES = [(slug, name) for slug, by_name in SOLUTIONS.items() for name in by_name]
RIGHT_CASES = [(slug, name) for slug, by_name in RIGHT.items() for name in by_name]
FRESH = [int(seed) for seed in np.random.default_rng().integers(2**31, size=3)]


def verdict_of(slug: str, name: str, seed: int = 0, solutions=None):
    the_lab = lab(slug)
    calls = list(the_lab.calls(np.random.default_rng(seed)))
    functions = (solutions or SOLUTIONS)[slug][name]
    return the_lab.judge(calls, run_with(calls, functions))


# --- the catalogue --------------------------------------------------------------------------------


def test_the_labs_come_in_the_lessons_order():
    assert list(LABS) == [
        "softmax",
        "attention",
        "causal-mask",
        "multi-head",
        "layer-norm",
        "sinusoid",
        "block",
        "without-residual",
    ]
    assert [each.position for each in LABS.values()] == list(range(1, 9))
    assert lab("attention") is LABS["attention"]


@pytest.mark.parametrize("slug", ["nope", "", None, 3])
def test_an_unknown_slug_is_a_key_error(slug):
    with pytest.raises(KeyError):
        lab(slug)


def test_every_lab_is_covered_here_with_each_of_its_mistakes():
    assert set(SOLUTIONS) == set(LABS) == set(RIGHT) == set(LISTS)
    for slug, each in LABS.items():
        assert {"reference", *each.mistakes} <= set(SOLUTIONS[slug]), slug


@pytest.mark.parametrize("each", LABS.values(), ids=list(LABS))
def test_a_lab_has_its_words_and_registered_mistake_names(each: Lab):
    assert each.title and each.prompt.strip() and "$" in each.prompt
    assert len(set(each.tests)) == len(each.tests) >= 2
    assert each.mistakes, "every lab names at least one mistake"
    for name in each.mistakes:
        assert name in MISTAKES or name in LAB_MISTAKES, name


@pytest.mark.parametrize("each", LABS.values(), ids=list(LABS))
def test_every_prompt_states_its_tolerance_and_the_types_it_accepts(each: Lab):
    if each.slug == "causal-mask":
        assert "compared exactly: there is no tolerance" in each.prompt
    else:
        assert "within 1e-6 + 1e-4 × |expected|" in each.prompt
    assert "ndarray" in each.prompt
    if each.slug != "causal-mask":
        assert "float32" in each.prompt


def test_one_rule_for_eps_in_both_labs_that_normalise():
    from labs.judging import EPS_RULE

    assert EPS_RULE in lab("layer-norm").prompt and EPS_RULE in lab("block").prompt


def defined_functions(source: str) -> set[str]:
    return {n.name for n in ast.parse(source).body if isinstance(n, ast.FunctionDef)}


def imported_modules(source: str) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            found.add(node.module or "")
    return found


@pytest.mark.parametrize("each", LABS.values(), ids=list(LABS))
def test_every_source_defines_what_the_calls_ask_for_and_imports_only_numpy(each: Lab):
    called = {c.function for c in each.calls(np.random.default_rng(5))}
    sources = {"starter": each.starter_code, "reference": each.reference, **each.mistakes}
    for name, source in sources.items():
        assert called <= defined_functions(source), name
        assert imported_modules(source) == {"numpy"}, name
    assert "NotImplementedError" in each.starter_code or "..." in each.starter_code


def shapes(each: Lab, seed: int) -> list[object]:
    return [
        (c.key, [np.shape(a) if isinstance(a, np.ndarray) else a for a in c.args])
        for c in each.calls(np.random.default_rng(seed))
        if not c.function.startswith("score_bytes") and c.function != "residual_answer"
    ]


@pytest.mark.parametrize("each", LABS.values(), ids=list(LABS))
def test_calls_are_fresh_per_seed_sizes_included_and_repeat_for_the_same_seed(each: Lab):
    def flat(seed: int) -> list[str]:
        return [
            repr((c.key, c.function, c.args, dict(c.kwargs)))
            for c in each.calls(np.random.default_rng(seed))
        ]

    assert flat(1) == flat(1)
    keys = [c.key for c in each.calls(np.random.default_rng(1))]
    assert len(set(keys)) == len(keys)
    assert len({repr(flat(seed)) for seed in range(6)}) == 6
    # the sizes themselves change from run to run, not only the values
    assert len({repr(shapes(each, seed)) for seed in range(6)}) > 1


def test_attention_is_called_with_several_d_k_and_never_only_4():
    for seed in range(40):
        calls = lab("attention").calls(np.random.default_rng(seed))
        widths = [c.args[0].shape[1] for c in calls]
        assert len(set(widths)) == 3 and [w for w in widths if w != 4]
        assert all(c.args[2].shape[1] != c.args[0].shape[1] for c in calls)  # d_v != d_k


def test_the_block_and_spread_are_never_asked_the_lessons_widths_alone():
    for seed in range(40):
        calls = {c.key: c for c in lab("block").calls(np.random.default_rng(seed))}
        assert calls["qk_spread"].args[0] != 64
        assert calls["block/X"].args[1].shape[2] != calls["block/other"].args[1].shape[2]
        sizes = [c.args for c in lab("sinusoid").calls(np.random.default_rng(seed))]
        assert (6, 8) not in sizes and (50, 64) not in sizes


# --- right solutions pass, mistakes are named ----------------------------------------------------


# By index, not by seed: each pytest-xdist worker collects the tests itself, and the ids
# must be the same in every worker while the seeds are drawn fresh in each.
@pytest.mark.parametrize("draw", range(len(FRESH)))
@pytest.mark.parametrize("slug", list(LABS))
def test_the_reference_passes_every_test_on_fresh_sizes(slug, draw):
    seed = FRESH[draw]
    verdict = verdict_of(slug, "reference", seed)
    assert [t.name for t in verdict.tests] == list(lab(slug).tests)
    assert verdict.passed, (seed, [t for t in verdict.tests if not t.passed])
    assert verdict.diagnosis == "" and verdict.mistake == ""
    assert all(t.message == "Passed." for t in verdict.tests)


@pytest.mark.parametrize(("slug", "name"), RIGHT_CASES)
def test_other_right_solutions_pass_float32_included(slug, name):
    for seed in [*FRESH, *range(10)]:
        verdict = verdict_of(slug, name, seed, RIGHT)
        assert verdict.passed, (seed, [t for t in verdict.tests if not t.passed])


@pytest.mark.parametrize(("slug", "name"), [c for c in CASES if c[1] != "reference"])
def test_each_mistake_fails_with_its_diagnosis_named_on_fresh_sizes(slug, name):
    for seed in FRESH:
        verdict = verdict_of(slug, name, seed)
        assert not verdict.passed
        assert verdict.mistake == name, (seed, verdict.mistake, verdict.tests)
        assert verdict.diagnosis == mistake_text(name)
        failed = [t for t in verdict.tests if not t.passed]
        assert all(t.message and t.hint for t in failed)
        assert any(t.mistake == name for t in failed)


@pytest.mark.parametrize("slug", list(LABS))
def test_lists_where_arrays_are_asked_for_fail_and_say_so(slug):
    the_lab = lab(slug)
    calls = list(the_lab.calls(np.random.default_rng(FRESH[0])))
    verdict = the_lab.judge(calls, run_with(calls, LISTS[slug]))
    assert not verdict.passed
    said = " ".join(t.message for t in verdict.tests if not t.passed)
    assert "Returned list, expected ndarray" in said, verdict.tests


def test_the_papers_interleaved_layout_is_accepted_but_not_mixed_with_the_other():
    calls = list(lab("sinusoid").calls(np.random.default_rng(FRESH[0])))
    mixed = {"sinusoid": lambda n, d: sinusoid(n, d, interleaved=d > 20)}
    verdict = lab("sinusoid").judge(calls, run_with(calls, mixed))
    assert [t.passed for t in verdict.tests] == [True, False, True]
    assert "use one layout" in verdict.tests[1].message


def test_a_failed_test_shows_expected_got_input_and_a_hint():
    verdict = verdict_of("attention", "no_scale", FRESH[0])
    first = verdict.tests[0]
    assert first.message.startswith("Entry [0, ") and "; expected " in first.message
    assert first.expected.startswith("[[") and first.got.startswith("[[")  # small: whole
    assert first.input.startswith("Q = ") and "\nK = " in first.input and "\nV = " in first.input
    assert "square root of d_k" in first.hint and "last axis" in first.hint
    # a large value is summarised: shape, dtype, its first entries
    verdict = verdict_of("sinusoid", "pe_exponent_without_two", FRESH[0])
    wide = verdict.tests[1]
    assert wide.expected.startswith("an ndarray of shape (") and "first entries" in wide.expected


def test_the_overflow_and_the_global_shift_are_told_apart():
    overflow = verdict_of("softmax", "softmax_overflow", FRESH[0])
    assert (
        "nan" in overflow.tests[1].message and "each row's own maximum" in overflow.tests[1].message
    )
    assert "infinite" in overflow.diagnosis
    shifted = verdict_of("softmax", "softmax_global_max", FRESH[0])
    assert shifted.tests[0].passed and not shifted.tests[1].passed
    assert "underflows" in shifted.diagnosis and "0 / 0" in shifted.diagnosis


def test_an_int_mask_and_a_str_name_what_came():
    calls = list(lab("causal-mask").calls(np.random.default_rng(FRESH[0])))
    ints = lab("causal-mask").judge(
        calls, run_with(calls, {"causal_mask": lambda n: causal(n, 1, np.int64)})
    )
    assert ints.tests[0].message.startswith(
        "Returned an ndarray of dtype int64, expected dtype bool"
    )
    calls = list(lab("attention").calls(np.random.default_rng(FRESH[0])))
    text = lab("attention").judge(calls, run_with(calls, {"attention": lambda *a, **k: "done"}))
    assert text.tests[0].message.startswith("Returned str, expected ndarray")
    assert "raised" not in text.tests[0].message


def test_the_spread_is_blamed_on_the_spread_not_on_attention():
    verdict = verdict_of("block", "spread_fixed_d_k", FRESH[0])
    failed = [t.name for t in verdict.tests if not t.passed]
    assert failed == [lab("block").tests[7]]
    assert verdict.mistake == "spread_fixed_d_k" and "qk_spread" in verdict.diagnosis


def test_bytes_messages_name_both_figures():
    message = verdict_of("block", "score_bytes_linear", FRESH[0]).tests[-1].message
    assert message == "score_bytes(1000, bytes_per_entry=2) is 2,000; expected 2,000,000 bytes."


def test_a_transposed_attention_output_is_told_its_shape():
    calls = list(lab("attention").calls(np.random.default_rng(FRESH[0])))
    transposed = {"attention": lambda *a, **k: attention(*a, **k).T}
    verdict = lab("attention").judge(calls, run_with(calls, transposed))
    for call, test in zip(calls, verdict.tests, strict=True):
        Q, _, V = call.args
        right, wrong = (len(Q), V.shape[1]), (V.shape[1], len(Q))
        if right != wrong:
            assert test.message == f"Expected shape {right}, got {wrong}."


# --- what a learner reads holds no internal code --------------------------------------------------

ODD = [
    None,
    "done",
    [1, 2],
    {"a": 1},
    np.zeros((2, 2), dtype=np.int64),
    np.array(["x"]),
    float("nan"),
    1e308,
    np.zeros((0,)),
    np.full((3, 3), np.nan),
    True,
]


def every_text(verdict) -> list[str]:
    texts = [verdict.diagnosis]
    for t in verdict.tests:
        texts += [t.name, t.message, t.expected, t.got, t.input, t.hint]
    return [text for text in texts if text]


def test_no_message_a_lab_can_produce_holds_an_internal_code():
    codes = mistake_codes()
    pattern = re.compile(r"\b(" + "|".join(sorted(codes, key=len, reverse=True)) + r")\b")
    seen = 0
    for slug in LABS:
        the_lab = lab(slug)
        calls = list(the_lab.calls(np.random.default_rng(FRESH[1])))
        runs = [run_with(calls, fns) for fns in SOLUTIONS[slug].values()]
        runs += [run_with(calls, fns) for fns in RIGHT[slug].values()]
        runs.append(run_with(calls, LISTS[slug]))
        for odd in ODD:
            runs.append(run_with(calls, {c.function: (lambda *a, _o=odd, **k: _o) for c in calls}))
        runs.append(RunResult())
        runs.append(RunResult(returned={c.key: Returned(error="ValueError: no") for c in calls}))
        for run in runs:
            verdict = the_lab.judge(calls, run)
            for text in every_text(verdict):
                seen += 1
                assert not pattern.search(text), (slug, text)
                assert text.strip().lower() != "ok", (slug, text)
        texts = [the_lab.prompt, *the_lab.tests]
        assert not any(pattern.search(t) for t in texts), slug
    for text in [*LAB_MISTAKES.values()]:
        assert not pattern.search(text), text
    assert seen > 1000


def test_the_numpy_here_is_the_engines_where_it_is_right():
    rng = np.random.default_rng(7)
    Q, K, V = rng.normal(size=(5, 4)), rng.normal(size=(6, 4)), rng.normal(size=(6, 3))
    mask = np.zeros((5, 6), dtype=bool)
    mask[:, -2:] = True
    assert np.allclose(attention(Q, K, V, mask), engine.scaled_dot_product_attention(Q, K, V, mask))
    assert np.allclose(attention_einsum(Q, K, V, mask), attention(Q, K, V, mask))
    X = rng.normal(size=(6, 8))
    W = rng.normal(size=(3, 2, 8, 4))
    W_O = rng.normal(size=(8, 8))
    full = [np.concatenate(list(w), axis=1) for w in W]
    assert np.allclose(
        multi_head(X, *W, W_O), engine.multi_head_attention(X, *full, W_O, n_heads=2)
    )
    assert np.allclose(multi_head_batched(X, *W, W_O), multi_head(X, *W, W_O))
    assert np.allclose(layer_norm(X), engine.layer_norm(X))
    assert np.allclose(sinusoid(9, 6, interleaved=True), engine.sinusoidal_positions(9, 6))


@pytest.mark.parametrize("each", LABS.values(), ids=list(LABS))
def test_every_prompt_renders_with_its_math(each: Lab):
    formulas = list(rendering.formulas(each.prompt))
    assert formulas
    assert all(rendering.formula_renders(tex, display) for tex, display in formulas)
    text = re.sub(r"<[^>]+>", "", rendering.render_markdown(each.prompt))
    assert "$" not in text, "a formula left unrendered"

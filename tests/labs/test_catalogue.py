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
from labs.judging import LAB_MISTAKES
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
        if isinstance(value, np.ndarray) and value.dtype != np.bool_:
            value = value.astype(np.float64)  # the sandbox returns float64 or bool arrays
        returned[c.key] = Returned(value=value)
    return RunResult(returned=returned)


# --- the learner's functions, written here in NumPy -------------------------------------------


def softmax(z, axis=-1):
    z = np.asarray(z, dtype=float)
    e = np.exp(z - z.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def naive_softmax(z):
    e = np.exp(np.asarray(z, dtype=float))
    return e / e.sum(axis=-1, keepdims=True)


def attention(Q, K, V, mask=None, *, scale=True, axis=-1, after=False, invert=False):
    s = Q @ K.T / (np.sqrt(Q.shape[-1]) if scale else 1.0)
    if mask is not None and after:
        return np.where(mask, 0.0, softmax(s)) @ V
    if mask is not None:
        s = np.where(~mask if invert else mask, -np.inf, s)
    return softmax(s, axis=axis) @ V


def multi_head(X, W_Q, W_K, W_V, W_O, *, by_d_model=False, reverse=False, w_o=True, mask=None):
    outs = []
    for h in range(len(W_Q)):
        Q, K, V = X @ W_Q[h], X @ W_K[h], X @ W_V[h]
        s = Q @ K.T / np.sqrt(X.shape[-1] if by_d_model else Q.shape[-1])
        if mask is not None:
            s = np.where(mask, -np.inf, s)
        outs.append(softmax(s) @ V)
    joined = np.concatenate(outs[::-1] if reverse else outs, axis=-1)
    return joined @ W_O if w_o else joined


def layer_norm(x, eps=1e-5, axis=-1, centre=True):
    x = np.asarray(x, dtype=float)
    shifted = x - x.mean(axis, keepdims=True) if centre else x
    return shifted / np.sqrt(x.var(axis, keepdims=True) + eps)


def sinusoid(n, d, *, interleaved=False, swap=False, two=2):
    pos, i = np.arange(n)[:, None], np.arange(d // 2)[None]
    ang = pos / 10000 ** (two * i / d)
    first, second = (np.cos(ang), np.sin(ang)) if swap else (np.sin(ang), np.cos(ang))
    if not interleaved:
        return np.concatenate([first, second], axis=-1)
    out = np.empty((n, d))
    out[:, 0::2], out[:, 1::2] = first, second
    return out


def block(X, W_Q, W_K, W_V, W_O, causal=False, residual=True, *, scale=True, tril=False):
    n = len(X)
    outs = []
    for h in range(len(W_Q)):
        Q, K, V = X @ W_Q[h], X @ W_K[h], X @ W_V[h]
        s = Q @ K.T / (np.sqrt(Q.shape[-1]) if scale else 1.0)
        if causal:
            ones = np.ones((n, n), dtype=bool)
            s = np.where(np.tril(ones, -1) if tril else np.triu(ones, 1), -np.inf, s)
        outs.append(softmax(s) @ V)
    mixed = np.concatenate(outs, axis=-1) @ W_O
    return layer_norm(X + mixed if residual else mixed)


def qk_spread(d_k, n, seed, *, scale=True):
    rng = np.random.default_rng(seed)
    dots = (rng.normal(size=(n, d_k)) * rng.normal(size=(n, d_k))).sum(axis=1)
    return float(dots.std()), float((dots / (np.sqrt(d_k) if scale else 1.0)).std())


def score_bytes(n, bytes_per_entry=2):
    return n * n * bytes_per_entry


BLOCK = {"block": block, "qk_spread": qk_spread, "score_bytes": score_bytes}

# slug -> {"reference" or a mistake's name: the functions that solution defines}
SOLUTIONS: dict[str, dict[str, dict[str, Fn]]] = {
    "softmax": {
        "reference": {"softmax": softmax},
        "softmax_overflow": {"softmax": naive_softmax},
        "softmax_over_queries": {"softmax": lambda z: softmax(z, axis=0)},
    },
    "attention": {
        "reference": {"attention": attention},
        "no_scale": {"attention": lambda *a, **k: attention(*a, **k, scale=False)},
        "softmax_over_queries": {"attention": lambda *a, **k: attention(*a, **k, axis=0)},
        "mask_after_softmax": {"attention": lambda *a, **k: attention(*a, **k, after=True)},
        "mask_inverted": {"attention": lambda *a, **k: attention(*a, **k, invert=True)},
    },
    "causal-mask": {
        "reference": {"causal_mask": lambda n: np.triu(np.ones((n, n), dtype=bool), 1)},
        "causal_mask_transposed": {
            "causal_mask": lambda n: np.tril(np.ones((n, n), dtype=bool), -1)
        },
        "causal_mask_diagonal_blocked": {
            "causal_mask": lambda n: np.triu(np.ones((n, n), dtype=bool), 0)
        },
    },
    "multi-head": {
        "reference": {"multi_head": multi_head},
        "scale_by_d_model": {"multi_head": lambda *a: multi_head(*a, by_d_model=True)},
        "heads_concatenated_in_reverse": {"multi_head": lambda *a: multi_head(*a, reverse=True)},
        "w_o_left_out": {"multi_head": lambda *a: multi_head(*a, w_o=False)},
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
        "norm_before_residual": {
            "layer_norm": layer_norm,
            "residual_norm": lambda x, o: x + layer_norm(o),
        },
    },
    "sinusoid": {
        "reference": {"sinusoid": sinusoid},
        "pe_sin_cos_swapped": {"sinusoid": lambda n, d: sinusoid(n, d, swap=True)},
        "pe_exponent_without_two": {"sinusoid": lambda n, d: sinusoid(n, d, two=1)},
    },
    "block": {
        "reference": BLOCK,
        "no_scale": {
            "block": lambda *a, **k: block(*a, **k, scale=False),
            "qk_spread": lambda *a: qk_spread(*a, scale=False),
            "score_bytes": score_bytes,
        },
        "residual_left_out": {**BLOCK, "block": lambda *a, **k: block(*a, **k, residual=False)},
        "causal_mask_transposed": {**BLOCK, "block": lambda *a, **k: block(*a, **k, tril=True)},
        "score_bytes_linear": {**BLOCK, "score_bytes": lambda n, bytes_per_entry=2: n * 2},
    },
    "without-residual": {
        "reference": {"block": block, "residual_answer": lambda: 2},
        "residual_statement_wrong": {"block": block, "residual_answer": lambda: 1},
        "residual_not_removed": {
            "block": lambda *a, residual=True, **k: block(*a, **k),
            "residual_answer": lambda: 2,
        },
    },
}

CASES = [(slug, name) for slug, by_name in SOLUTIONS.items() for name in by_name]


def verdict_of(slug: str, name: str, seed: int = 0):
    the_lab = lab(slug)
    calls = list(the_lab.calls(np.random.default_rng(seed)))
    return the_lab.judge(calls, run_with(calls, SOLUTIONS[slug][name]))


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
    assert set(SOLUTIONS) == set(LABS)
    for slug, each in LABS.items():
        assert set(SOLUTIONS[slug]) == {"reference", *each.mistakes}, slug


@pytest.mark.parametrize("each", LABS.values(), ids=list(LABS))
def test_a_lab_has_its_words_and_registered_mistake_names(each: Lab):
    assert each.title and each.prompt.strip() and "$" in each.prompt
    assert len(set(each.tests)) == len(each.tests) >= 2
    assert each.mistakes, "every lab names at least one mistake"
    for name in each.mistakes:
        assert name in MISTAKES or name in LAB_MISTAKES, name


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


@pytest.mark.parametrize("each", LABS.values(), ids=list(LABS))
def test_calls_are_fresh_per_seed_and_repeat_for_the_same_seed(each: Lab):
    def flat(seed: int) -> list[str]:
        return [
            repr((c.key, c.function, c.args, dict(c.kwargs)))
            for c in each.calls(np.random.default_rng(seed))
        ]

    first, again = flat(1), flat(1)
    assert first == again
    keys = [c.key for c in each.calls(np.random.default_rng(1))]
    assert len(set(keys)) == len(keys)
    if each.slug not in ("causal-mask", "sinusoid"):  # sizes only: nothing to draw afresh
        assert flat(2) != first


# --- references pass, mistakes are named ----------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("slug", list(LABS))
def test_the_reference_passes_every_test(slug, seed):
    verdict = verdict_of(slug, "reference", seed)
    assert [t.name for t in verdict.tests] == list(lab(slug).tests)
    assert verdict.passed, [t for t in verdict.tests if not t.passed]
    assert verdict.diagnosis == ""


@pytest.mark.parametrize(("slug", "name"), [c for c in CASES if c[1] != "reference"])
def test_each_mistake_fails_with_its_diagnosis_named(slug, name):
    for seed in (0, 1):
        verdict = verdict_of(slug, name, seed)
        assert not verdict.passed
        assert verdict.diagnosis.startswith(f"{name}: "), verdict.diagnosis
        failed = [t for t in verdict.tests if not t.passed]
        assert all(t.message and t.message != "ok" for t in failed)


def test_the_papers_interleaved_layout_is_accepted_as_the_same_encoding():
    interleaved = {"sinusoid": lambda n, d: sinusoid(n, d, interleaved=True)}
    calls = list(lab("sinusoid").calls(np.random.default_rng(0)))
    assert lab("sinusoid").judge(calls, run_with(calls, interleaved)).passed
    mixed = {"sinusoid": lambda n, d: sinusoid(n, d, interleaved=d > 8)}
    verdict = lab("sinusoid").judge(calls, run_with(calls, mixed))
    assert [t.passed for t in verdict.tests] == [True, False, True]
    assert "use one layout" in verdict.tests[1].message


def test_messages_name_what_was_expected_and_what_came_back():
    attention_verdict = verdict_of("attention", "no_scale")
    message = attention_verdict.tests[0].message
    assert message.startswith("entry [0, ") and ", expected " in message
    overflow = verdict_of("softmax", "softmax_overflow").tests[1].message
    assert "overflow" in overflow and "subtract the row max" in overflow and "nan" in overflow
    bytes_message = verdict_of("block", "score_bytes_linear").tests[-1].message
    assert (
        bytes_message == "score_bytes(1000, bytes_per_entry=2) is 2,000, expected 2,000,000 bytes"
    )


def test_a_transposed_attention_output_is_told_its_shape():
    calls = list(lab("attention").calls(np.random.default_rng(0)))
    transposed = {"attention": lambda *a, **k: attention(*a, **k).T}
    verdict = lab("attention").judge(calls, run_with(calls, transposed))
    assert verdict.tests[0].message == "expected shape (5, 3), got (3, 5)"
    assert verdict.tests[2].message == "expected shape (4, 3), got (3, 4)"


def test_the_numpy_here_is_the_engines_where_it_is_right():
    rng = np.random.default_rng(7)
    Q, K, V = rng.normal(size=(5, 4)), rng.normal(size=(6, 4)), rng.normal(size=(6, 3))
    mask = np.zeros((5, 6), dtype=bool)
    mask[:, -2:] = True
    assert np.allclose(attention(Q, K, V, mask), engine.scaled_dot_product_attention(Q, K, V, mask))
    X = rng.normal(size=(6, 8))
    W = rng.normal(size=(3, 2, 8, 4))
    W_O = rng.normal(size=(8, 8))
    full = [np.concatenate(list(w), axis=1) for w in W]
    assert np.allclose(
        multi_head(X, *W, W_O), engine.multi_head_attention(X, *full, W_O, n_heads=2)
    )
    assert np.allclose(layer_norm(X), engine.layer_norm(X))
    assert np.allclose(sinusoid(9, 6, interleaved=True), engine.sinusoidal_positions(9, 6))


@pytest.mark.parametrize("each", LABS.values(), ids=list(LABS))
def test_every_prompt_renders_with_its_math(each: Lab):
    formulas = list(rendering.formulas(each.prompt))
    assert formulas
    assert all(rendering.formula_renders(tex, display) for tex, display in formulas)
    text = re.sub(r"<[^>]+>", "", rendering.render_markdown(each.prompt))
    assert "$" not in text, "a formula left unrendered"

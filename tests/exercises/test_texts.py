"""What a learner reads from the exercise kinds holds no raw code or unrendered notation,
counts from 1, and claims no more than the test behind it shows.

Two forms: prompts are Markdown with $...$ math (every formula renders, and outside the
math and code spans there is no caret, no sqrt( and no backslash); everything else (the
mistakes' texts, hints, the worked solution's titles and notes, a kind's title,
description and parameter help) is plain text with its formulas in Unicode (√dₖ, QKᵀ, n²).
"""

import re

import numpy as np
import pytest

from exercises.checking import MISTAKES
from exercises.kinds import KINDS, ParamError, ablation
from exercises.variants import draw_variant
from studyapp.common.rendering import formula_renders
from tests.exercises.sweep import PARAMETER_SETS

RAW = (re.compile(r"\^"), re.compile(r"sqrt\("), re.compile(r"\\"), re.compile(r"\$"))
PLAIN_ONLY = (re.compile(r"\bd_k\b"), re.compile(r"\bK\^T"), re.compile(r"\bn\^2"))
ZERO_BASED = re.compile(r"\b(head|token|row|input|query|key|column) 0\b")
MATH = re.compile(r"\$\$.+?\$\$|\$.+?\$", re.S)
CODE = re.compile(r"`[^`]*`")
SEEDS = range(12)


def plain_problems(text: str) -> list[str]:
    found = [p.pattern for p in RAW + PLAIN_ONLY if p.search(text)]
    if ZERO_BASED.search(text):
        found.append("0-based")
    return found


def prompt_problems(text: str) -> list[str]:
    found = [f"formula does not render: {m}" for m in MATH.findall(text) if not _renders(m)]
    outside = CODE.sub(" ", MATH.sub(" ", text))
    found += [p.pattern for p in RAW if p.search(outside)]
    if ZERO_BASED.search(outside):
        found.append("0-based")
    return found


def _renders(formula: str) -> bool:
    display = formula.startswith("$$")
    return formula_renders(formula.strip("$"), display)


def variants():
    for name, params in PARAMETER_SETS:
        kind = KINDS[name]
        for seed in SEEDS:
            yield name, kind, draw_variant(kind, kind.normalize_params(params), seed)


def test_every_mistake_text_is_plain_and_readable():
    for code, mistake in MISTAKES.items():
        assert not plain_problems(mistake.text), (code, plain_problems(mistake.text))
        assert not plain_problems(mistake.what), code


def test_each_kinds_title_description_and_help_are_plain():
    for name, kind in KINDS.items():
        texts = [kind.title, kind.description, *(s.help for s in kind.params.values())]
        for text in texts:
            assert not plain_problems(text), (name, text, plain_problems(text))


def test_prompts_hints_steps_and_diagnoses_over_many_seeds():
    for name, kind, g in variants():
        assert not prompt_problems(g.prompt), (name, prompt_problems(g.prompt))
        numeric = [a for a in g.asks if a["name"] != "prediction"]
        for ask in g.asks:
            for text in (ask.get("question", ""),):
                assert not prompt_problems(text), (name, text)
        for ask in numeric:
            hint = kind.hint(ask["name"], g.inputs)
            assert not plain_problems(hint), (name, ask["name"], hint, plain_problems(hint))
        for step in kind.worked_steps(g.inputs, g.solution, numeric):
            for text in (step["title"], step["note"]):
                assert not plain_problems(text), (name, step["name"], text, plain_problems(text))
        for code in kind.mistakes:
            text = kind.mistake_text(code, g.inputs) or MISTAKES[code].text
            assert not plain_problems(text), (name, code, plain_problems(text))


def test_the_checks_catch_what_they_are_for():
    assert plain_problems("divide by sqrt(d_k)") and plain_problems("costs n^2")
    assert plain_problems("weights of head 0") and not plain_problems("√dₖ and QKᵀ, n²")
    assert prompt_problems("scores n^2 outside") and not prompt_problems(r"$n^2$ and $\sqrt{d_k}$")
    assert prompt_problems(r"$\begin{pmatrix$")


# --- The ablation verdict claims only what removing one token shows ---------------------


@pytest.mark.parametrize(
    "params", [{"case": "redundant"}, {"case": "redundant", "n": 5, "n_inputs": 5}]
)
def test_a_redundant_token_changes_little_when_removed_yet_its_value_moves_the_output(params):
    kind = KINDS["ablation"]
    for seed in range(25):
        g = draw_variant(kind, kind.normalize_params(params), seed)
        change = np.abs(np.asarray(g.solution["change"]))
        assert g.solution["verdict"] == "redundant"
        assert change.max() <= ablation.SMALL
        moved = max(
            abs(ablation.value_shift_change(g.inputs, m, shift))
            for m in range(g.inputs["n_inputs"])
            for shift in (3, -3)
        )
        # Removal barely moves it; the token's own value, moved, does: it is used.
        assert moved >= ablation.LARGE > ablation.SMALL >= change.max()


def test_the_redundant_verdict_says_what_the_test_shows_and_its_limit():
    g = draw_variant(KINDS["ablation"], KINDS["ablation"].normalize_params({}), 0)
    prompt = " ".join(g.prompt.split())
    words = ablation.lesson_test_words(np.array([0.01, 0.0, -0.01]))
    for text in (prompt, words, KINDS["ablation"].description):
        assert "barely uses" not in text and "decoration" not in text
    assert "not that the model ignores it" in words
    assert "removing one token at a time cannot see that" in prompt
    assert (
        "one-head, one-layer" in prompt
        and "one-head, one-layer" in MISTAKES["ablation_masked_query"].text
    )


def test_the_mixed_verdict_never_calls_a_large_change_evidence_and_not():
    words = ablation.lesson_test_words(np.array([0.2, -0.3, 0.1]))
    assert "evidence" not in words
    assert "evidence" not in MISTAKES["mixed_as_decoration"].text.replace(
        "not evidence of reliance either", ""
    )


def test_an_old_exercise_asking_for_the_old_verdict_name_still_takes_its_parameters():
    kind = KINDS["ablation"]
    assert kind.normalize_params({"case": "decoration"})["case"] == "redundant"
    with pytest.raises(ParamError) as refused:  # anything else is refused as before
        kind.normalize_params({"case": {}})
    assert refused.value.field == "case"


def test_the_memory_figure_says_when_it_holds():
    text = MISTAKES["bytes_one_head"].text
    assert "Training at batch 1" in text and "KV cache" in text
    g = draw_variant(KINDS["cost"], KINDS["cost"].normalize_params({}), 0)
    assert "training at batch 1" in g.prompt and "KV cache" in g.prompt

"""The starter deck's lesson: its sections, its figures, its numbers, and every phrase of a
card that points to it.

The lesson is read from the deck file as it is imported (``deck_validate``). Its numbers
are recomputed here with the engine or plain NumPy; a phrase such as "the lesson's
worked example" in a card, an exercise or a lab must land in a section that holds it.
"""

from __future__ import annotations

import re
from functools import cache

import numpy as np
import pytest

from cards.decks import deck_load, deck_validate
from cards.management.commands.load_starter_content import CONTENT_DIR
from exercises import engine
from exercises.checking.mistakes import LESSON_SECTIONS
from exercises.kinds import get_kind, quadratic_share
from exercises.presets import PRESETS
from labs.catalogue import LABS
from studyapp.common.rendering import render_markdown

DECK = CONTENT_DIR / "attention-and-transformers.yaml"

# The agreed keys, in this order (the one list, which the mistakes' sections name); the
# lesson may add sections between them.
AGREED = list(LESSON_SECTIONS)
FIGURES = {
    "worked-example-weights": "worked-example",
    "causal-mask": "masks",
    "padding-mask": "masks",
    "sinusoids": "positions",
}


@cache
def spec():
    return deck_validate(deck_load(DECK))


@cache
def sections() -> dict[str, str]:
    return {section.key: section.body for section in spec().lesson.sections}


def body(key: str) -> str:
    """A section's body with line breaks and indentation folded to single spaces."""
    return " ".join(sections()[key].split())


def fmt(values, digits: int = 3) -> str:
    return ", ".join(f"{v:.{digits}f}" for v in values)


def softmax(z):
    z = np.asarray(z, dtype=float)
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


# --- Structure ---------------------------------------------------------------------------


def test_the_agreed_sections_come_in_their_order():
    keys = spec().lesson.keys
    assert [key for key in keys if key in AGREED] == AGREED
    assert spec().lesson.title


def test_each_figure_stands_once_in_the_section_it_belongs_to():
    placed = {
        name: key
        for key, text in sections().items()
        for name in re.findall(r"(?m)^\{\{figure:([a-z0-9-]+)\}\}$", text)
    }
    assert placed == FIGURES
    counts = [text.count("{{figure:") for text in sections().values()]
    assert sum(counts) == len(FIGURES)


def test_every_section_renders_and_is_practised_by_an_active_card():
    practised = {card.lesson_section for card in spec().cards if card.active}
    for key, text in sections().items():
        html = render_markdown(re.sub(r"(?m)^\{\{figure:[a-z0-9-]+\}\}$", "", text))
        assert "math-error" not in html and "$" not in html, key
        assert key in practised, f"no active card points to section {key!r}"


# --- Every reference to the lesson resolves ------------------------------------------------

# A phrase that points to the lesson -> where it must land (None: the card's own section)
# and what that section must hold. Any mention of the lesson that no phrase here covers
# fails the walk below, so a new reference has to be added, and resolved, on purpose.
REFERENCES: list[tuple[str, str | None, tuple[str, ...]]] = [
    # In the cards.
    (r"the lesson's worked example(?! does)", None, ("(0.707, 0.707, 0)",)),
    (r"the lesson's lab code", None, ("np.concatenate([np.sin(ang), np.cos(ang)], axis=-1)",)),
    (r"the lesson's curves", None, ("$p = 200$", "8 \\times 10^{-16}")),
    (r"the lesson's rule", None, ("large and consistent",)),
    (r"the lesson gives no number", None, ("sets no number for *large*",)),
    # In the exercises' own texts.
    (r"as the lesson's worked example does", "worked-example", ("$2.028$", "$5.056$")),
    (r"The lesson's tokens \*bag\*, \*delayed\* and \*refund\*", None, ("bag", "delayed", "refund")),
    (r"The lesson's lab code stores the same encoding", None, ("np.concatenate(",)),
    (r"The lesson's \*no\*", None, ("may not be presented as why",)),
    (r"not the lesson's", None, ("sets no number for *large*",)),
    # In the labs' prompts.
    (r"the lesson's `np\.triu\(\.\.\., k=1\)` convention", None, ("np.triu(np.ones((n, n), dtype=bool), k=1)",)),
    (r"the lesson's form", None, ("inside the square root",)),
    (r"the lesson's post-LN block", None, ("post-LN",)),
    (r"(?:Build|Build the|The) lesson's (?:two-head )?block", None, ("two-head block for six tokens",)),
    (r"The lesson's lab ends", None, ("remove the residual connection and describe what changes",)),
]  # fmt: skip


def _learner_texts(card) -> list[tuple[str, str]]:
    """What a learner reads with a card: its own text, the exercise it draws (two draws),
    the lab it opens."""
    out = [("card", card.prompt + "\n" + card.answer)]
    if card.exercise is not None:
        kind = get_kind(card.exercise["kind"])
        params = kind.normalize_params(card.exercise["params"])
        for seed in (0, 1):
            generated = kind.generate(params, np.random.default_rng(seed))
            out.append(("exercise", generated.prompt))
    if card.lab is not None:
        out.append(("lab", LABS[card.lab].prompt))
    return out


def unresolved(card, where: str, text: str) -> list[str]:
    """The lesson references in ``text`` that land nowhere, as messages."""
    text = " ".join(text.split())
    covered: list[tuple[int, int]] = []
    problems = []
    for pattern, target, needs in REFERENCES:
        for match in re.finditer(pattern, text, re.I):
            covered.append(match.span())
            section = target or card.lesson_section
            if section is None:
                problems.append(f"{card.key} ({where}): {match.group(0)!r} but no lesson_section")
                continue
            missing = [need for need in needs if need not in body(section)]
            if missing:
                problems.append(
                    f"{card.key} ({where}): {match.group(0)!r} -> section {section!r} lacks {missing}"
                )
    for match in re.finditer(r"lesson", text, re.I):
        if not any(start <= match.start() < end for start, end in covered):
            context = text[max(0, match.start() - 40) : match.end() + 40]
            problems.append(f"{card.key} ({where}): unresolved reference ...{context}...")
    return problems


def test_every_phrase_that_points_to_the_lesson_resolves():
    problems = []
    for card in spec().cards:
        if card.active:
            for where, text in _learner_texts(card):
                problems += unresolved(card, where, text)
    assert problems == []


def test_the_walk_refuses_a_reference_that_lands_nowhere():
    card = next(c for c in spec().cards if c.key == "sinusoid-two-layouts")
    assert unresolved(card, "card", "the lesson's lab code") == []
    assert unresolved(card, "card", "as in the lesson's glossary")  # no phrase covers it
    heat = next(c for c in spec().cards if c.key == "ablation-reliance-test")
    # The lab code's layout is in the positions section, not in the heat-map one.
    assert unresolved(heat, "card", "the lesson's lab code")


# --- The lesson's numbers, recomputed -------------------------------------------------------


def _worked(mask=None):
    m = PRESETS["bag"]["matrices"]
    Q, K, V = engine.project(m["X"], m["W_Q"], m["W_K"], m["W_V"])
    return engine.scaled_dot_product_attention(Q, K, V, mask=mask, return_intermediates=True)


def test_the_worked_example_numbers_are_the_engines():
    text = body("worked-example")
    trace = _worked()
    for row in trace.raw_scores:
        assert f"$({', '.join(str(int(v)) for v in row)})$" in text
    for row in trace.scores:
        assert f"$({', '.join('0' if v == 0 else f'{v:.3f}' for v in row)})$" in text
    for name, row in zip(("bag", "delayed", "refund"), trace.weights, strict=True):
        assert f"{name} $({fmt(row)})$" in text
    for name, out in zip(("bag", "delayed", "refund"), trace.output, strict=True):
        assert f"{name} $({fmt(out)})$" in text
    # Token 1 by hand: its exponentials, their sum, its weights.
    e = np.exp(trace.scores[0])
    assert f"Exponentials ${e[0]:.3f}$, ${e[1]:.3f}$ and $1$, summing to ${e.sum():.3f}$" in text
    assert f"the weights are $({fmt(trace.weights[0])})$" in text
    # The colleague's 40%: row 2 gives refund 0.401, as much as it gives itself.
    assert trace.weights[1, 2] == pytest.approx(trace.weights[1, 1])
    assert f'gives "refund" {trace.weights[1, 2]:.3f}' in text


def test_the_two_more_examples_by_hand():
    text = body("worked-example")
    keys = np.array([[1, 0, 0, 0], [1, 1, 0, 1], [0, 1, 1, 0]], dtype=float)
    q3 = np.array([1, 1, 0, 1], dtype=float)
    values = np.array([[1, 0], [0, 1], [1, 1]], dtype=float)
    scaled = softmax(keys @ q3 / 2)
    assert f"$({fmt(scaled)})$: transfer reads mostly from new-device" in text
    assert f"The output is $({fmt(scaled @ values)})$" in text
    assert f"Without the scale the weights are $({fmt(softmax(keys @ q3))})$" in text
    assert f"sum to ${np.exp(keys @ q3 / 2).sum():.3f}$" in text
    X = np.array([[1, 0], [0, 1], [1, 1]], dtype=float)
    A = softmax(X @ X.T / np.sqrt(2))
    assert f"$[{fmt(A[2])}]$" in text
    out = A @ X
    for name, row in zip("ABC", out, strict=True):
        assert f"{name} $[{fmt(row)}]$" in text


def test_the_causal_table_and_what_masking_after_the_softmax_would_leave():
    text = body("masks")
    n = 3
    trace = _worked(engine.causal_mask(n))
    for name, row in zip(("bag (token 1)", "delayed (token 2)", "refund (token 3)"), trace.weights, strict=True):  # fmt: skip
        cells = ", ".join("0" if v == 0 else "1" if v == 1 else f"{v:.3f}" for v in row)
        assert f"{name} $({cells})$" in text
    assert f"its own value, $({', '.join(str(int(v)) for v in trace.output[0])})$" in text
    zeroed = _worked().weights[1].copy()
    zeroed[2] = 0
    assert f"row 2 would keep $({', '.join('0' if v == 0 else f'{v:.3f}' for v in zeroed)})$, which sums to {zeroed.sum():.3f}" in text  # fmt: skip


def test_the_scaling_table_and_the_articles_simulation_rerun():
    text = body("scaling")
    for scores in ([0.7071067811865476, 0.7071067811865476, 0], [1, 1, 0], [8, 8, 0]):
        a = softmax(scores)
        cells = ", ".join(f"{v:.4f}" if v < 0.001 else f"{v:.3f}" for v in a)
        assert f"$({cells})$" in text, cells
    one_hot = softmax([8, 0, 0])
    assert f"$({one_hot[0]:.3f}, {one_hot[1]:.4f}, {one_hot[2]:.4f})$" in text
    third = 1 / 3
    assert f"For a uniform row of three they reach {third * (1 - third):.2f}" in text
    # The article's simulation with its seed, row by row. The last row (d_k = 1,024) costs
    # three times the others together; its unscaled and scaled weights are rerun apart in
    # test_content_facts.py, and here its figures are the ones the cards teach.
    assert "| 1,024 | 1,033 | 0.97 | 0.32 |" in text
    rng = np.random.default_rng(0)
    for d_k in (4, 16, 64, 256):
        q, k = rng.standard_normal((20000, d_k)), rng.standard_normal((20000, d_k))
        variance = (q * k).sum(1).var()
        qq, kk = rng.standard_normal((2000, d_k)), rng.standard_normal((2000, 10, d_k))
        scores = np.einsum("nd,nkd->nk", qq, kk)
        unscaled = softmax(scores).max(1).mean()
        scaled = softmax(scores / np.sqrt(d_k)).max(1).mean()
        shown = "4.0" if d_k == 4 else f"{round(variance, 2):g}"
        assert f"| {d_k:,} | {shown} | {unscaled:.2f} | {scaled:.2f} |" in text, d_k


def test_the_positions_numbers():
    text = body("positions")
    pe8 = engine.sinusoidal_positions(2, 8)
    assert f"$pos = 1$ is $({fmt(pe8[1])})$" in text
    assert "$pos = 0$ is $(0, 1, 0, 1, 0, 1, 0, 1)$" in text
    pe4 = engine.sinusoidal_positions(2, 4)[1]
    assert f"$({fmt(pe4)})$ interleaved" in text
    assert f"$({fmt(pe4[[0, 2, 1, 3]])})$ concatenated" in text
    d = 64
    pe = engine.sinusoidal_positions(300, d)
    sims = {k: [pe[p] @ pe[p + k] for p in (0, 25, 200)] for k in range(40)}
    assert max(max(s) - min(s) for s in sims.values()) < 8e-16 * d  # rounding, at this scale
    cosine = {k: s[0] / (d / 2) for k, s in sims.items()}
    assert np.allclose([pe[p] @ pe[p] for p in range(20)], d / 2)
    assert (
        f"{cosine[5]:.2f} at offset 5 and {cosine[6]:.2f} at offset 6, and offset 32 "
        f"({cosine[32]:.2f}) is more alike than offset 28 ({cosine[28]:.2f})"
    ) in text
    assert cosine[6] > cosine[5] and cosine[32] > cosine[28]  # not falling steadily


def test_the_multi_head_and_cost_numbers():
    heads = body("multi-head")
    assert engine.attention_parameter_count(8, 1) == engine.attention_parameter_count(8, 2) == 256
    assert "$4 \\cdot 8 \\cdot 8 = 256$" in heads and "also have 256" in heads
    assert f"about {4 * 512**2 / 1e6:.1f} million attention weights" in heads
    assert f"{8 * 512**2 / 1e6:.1f} million feed-forward weights" in heads
    cost = body("cost")
    for d_model, share in ((768, 47), (1024, 40), (4096, 14)):
        assert f"{round(100 * quadratic_share(4096, d_model))}%" == f"{share}%"
    assert "47% for $d_{model} = 768$, 40% for 1,024, and 14%" in cost
    n, h, L, d = 4096, 16, 24, 1024
    assert f"about {n * n * h * L * 2 / 1e9:.1f} GB" in cost
    assert f"about {2 * n * d * L * 2 / 1e6:.0f} MB at 2 bytes" in cost
    for tokens, megabytes in ((1024, "2.1"), (2048, "8.39"), (4096, "33.55")):
        assert f"| {tokens:,} | {tokens * tokens:,} | {megabytes} MB |" in cost
        assert float(megabytes) == pytest.approx(tokens * tokens * 2 / 1e6, abs=0.05)
    lab = body("lab")
    for tokens, size in ((1_000, 2), (8_000, 128), (32_000, 2_048)):
        assert tokens * tokens * 2 / 1e6 == size
    assert "2 MB, 128 MB and 2,048 MB at 1,000, 8,000 and 32,000 tokens" in lab


def test_the_redundant_tokens_example():
    """Two tokens carrying the same information: each removal alone changes little, both
    together a lot. The numbers in the heat-map section, from the engine."""
    text = body("heat-maps")
    q = np.array([1.0, 0.0])
    w, b = np.array([1.0, 0.0]), -1.0
    K = np.array([[4, 0], [4, 0], [0, 1], [0, 0]], dtype=float)
    V = np.array([[2, 0], [2, 0], [0, 0], [0, 0]], dtype=float)

    def p(blocked=()):
        mask = np.zeros((1, len(K)), dtype=bool)
        mask[0, list(blocked)] = True
        o = engine.scaled_dot_product_attention(q[None], K, V, mask=mask)[0]
        return 1 / (1 + np.exp(-(w @ o + b)))

    assert f"Then $p = {p():.3f}$" in text
    assert f"Remove token 1 and $p = {p([0]):.3f}$" in text
    assert f"remove token 2 and $p = {p([1]):.3f}$ again" in text
    assert f"Remove both and $p = {p([0, 1]):.3f}$" in text
    assert abs(p([0]) - p()) < 0.05 and abs(p([0, 1]) - p()) > 0.4


# --- What the lesson carries over ------------------------------------------------------------


@pytest.mark.parametrize(
    "phrase",
    [
        # Useful for ...
        "reading a transformer diagram or paper",
        "reasoning about the cost of a longer context",
        "why a decoder needs a causal mask",
        "setting honest expectations when attention heat maps are shown to users",
        # ... not for ...
        "It is not for explaining an individual prediction",
        "training or tuning a production transformer",
        "must still beat strong baselines on your own task",
        # ... and what attention assumes.
        "worth paying $n^2$ for: cheap for short sequences, not for very long ones",
        "for generation the future tokens are masked",
        "The training objective rewards the roles you hope the heads play",
    ],
)
def test_the_lessons_lists_are_in_the_objective(phrase):
    assert phrase in body("objective")


def test_the_five_common_readings_are_a_table_in_the_interview_section():
    text = body("interview")
    rows = [
        "a learned map of what matters",
        "one $n^2$ number",
        '"more heads, more parameters"',
        '"it attends to X, so X is the reason"',
        '"it cannot hurt"',
    ]
    at = [text.find(row) for row in rows]
    assert -1 not in at and at == sorted(at), at
    assert "exact full attention computes $n^2$ whatever the kernel" in text
    assert "Write $n$ for the old context length in tokens" in text


def test_the_lab_section_walks_the_labs_in_their_order():
    text = body("lab")
    names = {
        "softmax": "`softmax`",
        "attention": "`attention`",
        "causal-mask": "`causal_mask`",
        "multi-head": "`multi_head`",
        "layer-norm": "`layer_norm`",
        "sinusoid": "`sinusoid`",
        "block": "`block`",
        "without-residual": "**Without the residual**",
    }
    assert list(LABS) == list(names)
    at = [text.find(names[slug]) for slug in LABS]
    assert -1 not in at and at == sorted(at), at
    assert len(re.findall(r"(?m)^\d\. \*\*", sections()["lab"])) == len(LABS)
    labbed = {card.lab for card in spec().cards if card.active and card.lab}
    assert labbed == set(LABS)
    assert all(c.lesson_section == "lab" for c in spec().cards if c.lab)


def test_the_heat_map_section_says_what_each_verdict_may_claim():
    from exercises.kinds import ablation

    text = body("heat-maps")
    for name in ablation.VERDICTS:
        assert f"**{name}**" in text
    assert "the token is **redundant for this output**" in text
    assert "It does not show that the model ignores the token" in text
    assert "Removing one token at a time misses redundant tokens" in text
    assert "masking the token as a key is the same as removing the token" in text
    assert "In a model with several layers it is not" in text
    assert f"the exercise's {ablation.THRESHOLD}" in text
    assert f"by at most {ablation.SMALL}" in text
    # Wiegreffe and Pinter: what they compared, and what they concluded.
    assert "depends on what one means by explanation" in text
    assert "task performance with its attention frozen to uniform weights" in text
    assert "had not disproved that attention can be useful for explanation" in text


def test_the_masks_section_needs_the_mask_at_prefill_and_gives_pytorchs_conventions():
    text = body("masks")
    assert "the prefill. That pass processes every prompt token at once, so it needs the causal mask" in text  # fmt: skip
    assert "that step's mask row blocks nothing" in text
    assert "| `MultiheadAttention`, boolean `attn_mask` | `True` = not allowed to attend |" in text
    assert "| `scaled_dot_product_attention`, boolean `attn_mask` | `True` = may attend |" in text
    # Row t of the masked computation is attention over the first t tokens (from 1).
    rng = np.random.default_rng(11)
    Q, K, V = (rng.normal(size=(5, 3)) for _ in range(3))
    full = engine.scaled_dot_product_attention(Q, K, V, mask=engine.causal_mask(5))
    for t in range(1, 6):
        prefix = engine.scaled_dot_product_attention(Q[:t], K[:t], V[:t])
        np.testing.assert_allclose(full[t - 1], prefix[t - 1], atol=1e-12)
    assert "row $t$ of the masked computation equals attention over the first $t$ tokens alone" in text  # fmt: skip


def test_the_block_and_cost_sections_state_the_corrected_facts():
    block = body("block")
    assert "one final LayerNorm after the last block" in block
    assert "leave $\\gamma$ and $\\beta$ out" in block
    cost = body("cost")
    assert "changes the order of the computation and adds recomputation" in cost
    assert "equals plain attention up to floating-point rounding" in cost
    assert "**Compute grows with $n^2$ for exact full attention**" in cost
    assert "$n^2 \\cdot h \\cdot L$ entries per sequence, at batch 1" in cost
    assert "$2\\,n\\,d_{model}$ numbers per layer, and the $n \\times n$ weights need not be kept" in cost  # fmt: skip

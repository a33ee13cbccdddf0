"""The starter deck: loads, is complete, renders, checks out against the lesson's numbers."""

from __future__ import annotations

import io
import re

import numpy as np
import pytest
from django.core.management import call_command

from cards.decks import deck_load, deck_validate
from cards.management.commands.load_starter_content import starter_files
from cards.models import Card, Deck
from exercises.kinds import KINDS, get_kind
from studyapp.common.rendering import render_markdown

SLUG = "attention-and-transformers"
# The starter deck has a card of every registered kind.
EXERCISE_KINDS = set(KINDS)

pytestmark = pytest.mark.django_db


@pytest.fixture
def deck() -> Deck:
    call_command("load_starter_content", stdout=io.StringIO())
    return Deck.objects.get(slug=SLUG)


def _softmax(z):
    z = np.asarray(z, dtype=float)
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _fmt(values) -> str:
    return ", ".join(f"{v:.3f}" for v in values)


def test_starter_file_is_valid_on_its_own():
    (path,) = [p for p in starter_files() if p.stem == SLUG]
    spec = deck_validate(deck_load(path))
    assert spec.slug == SLUG
    assert all(card.key_given for card in spec.cards), "every starter card needs a permanent key"


def test_starter_deck_has_enough_recall_and_interview_cards(deck):
    cards = Card.objects.filter(deck=deck, is_active=True)
    study = cards.filter(kind__in=["recall", "interview"])
    assert study.count() >= 20
    assert cards.filter(kind="interview").count() >= 8
    for card in study:
        assert card.prompt.strip() and card.answer.strip(), card.key
        assert card.tags.exists(), f"{card.key} has no tags"
    for card in cards.filter(kind="interview"):
        assert card.tags.filter(name="interview").exists(), card.key


def test_every_listed_exercise_kind_has_a_card_that_generates(deck):
    exercise_cards = Card.objects.filter(deck=deck, kind="exercise", is_active=True)
    assert {card.exercise["kind"] for card in exercise_cards} >= EXERCISE_KINDS
    rng = np.random.default_rng(39)
    for card in exercise_cards:
        kind = get_kind(card.exercise["kind"])
        params = kind.normalize_params(card.exercise["params"])
        generated = kind.generate(params, rng)
        assert generated.asks, card.key
        assert card.prompt.strip() and card.answer.strip(), card.key
    attention = [c.exercise["params"] for c in exercise_cards if c.exercise["kind"] == "attention"]
    assert {"mask": "none", "scale": True}.items() <= next(
        p for p in attention if p.get("mask") == "none"
    ).items()
    assert any(p.get("mask") == "causal" for p in attention)
    projection = [
        c.exercise["params"] for c in exercise_cards if c.exercise["kind"] == "projection"
    ]
    assert any(p.get("preset") == "lesson" for p in projection)


def test_positions_follow_the_file_and_keys_are_unique(deck):
    cards = list(Card.objects.filter(deck=deck).order_by("position"))
    assert [card.position for card in cards] == list(range(len(cards)))
    keys = [card.key for card in cards]
    assert len(set(keys)) == len(keys) and all(keys)


def test_every_card_renders_without_math_errors(deck):
    for card in Card.objects.filter(deck=deck):
        for name in ("prompt", "answer"):
            rendered = render_markdown(getattr(card, name))
            assert "math-error" not in rendered, (card.key, name)
            # A dollar sign left in the HTML means a formula whose delimiters did not pair up.
            assert "$" not in rendered, (card.key, name, rendered)
            if "$" in getattr(card, name):
                assert "<math" in rendered, (card.key, name)


def test_lessons_scheduled_cards_and_interview_question_are_present(deck):
    by_key = {card.key: card for card in Card.objects.filter(deck=deck)}
    # The lesson's two scheduled cards asked two things each; each thing is now one card.
    assert "(n, n)" in by_key["single-head-shapes"].answer
    assert "Over the **keys**" in by_key["softmax-over-keys"].answer
    assert not by_key["quadratic-cost-and-explanation-caveat"].is_active
    assert "quadruples" in by_key["quadratic-cost-context-length"].answer
    assert "hypothesis" in by_key["explanation-caveat"].answer
    walkthrough = by_key["interview-three-token-walkthrough"]
    assert walkthrough.kind == "interview"
    for word in ("scale", "mask", "heat map"):
        assert word in walkthrough.prompt.lower()
    assert "16" in by_key["interview-four-times-context"].answer


def test_worked_numbers_match_an_independent_computation(deck):
    by_key = {card.key: card for card in Card.objects.filter(deck=deck)}
    X = np.eye(3)
    W_Q = np.array([[1, 0], [0, 1], [1, 1]], dtype=float)
    W_K = np.array([[1, 0], [1, 1], [0, 1]], dtype=float)
    W_V = np.array([[2, 0], [0, 2], [1, 1]], dtype=float)
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    scores = Q @ K.T / np.sqrt(2)
    weights = _softmax(scores)
    blocked = np.triu(np.ones((3, 3), dtype=bool), k=1)
    causal = _softmax(np.where(blocked, -np.inf, scores))

    answer = by_key["bag-delayed-refund-token-0"].answer
    assert f"({_fmt(weights[0])})" in answer
    for row in (1, 2):
        assert f"({_fmt(weights[row])})" in answer
        assert f"({_fmt(weights[row] @ V)})" in answer
    table = by_key["causal-mask-three-tokens"].answer
    for row in causal:
        cells = " | ".join("0" if v == 0 else f"{v:.3f}" for v in row)
        assert cells in table

    bank = by_key["bank-session-by-hand"].answer
    q2 = np.array([1, 1, 0, 1.0])
    keys = np.array([[1, 0, 0, 0], [1, 1, 0, 1], [0, 1, 1, 0]], dtype=float)
    values = np.array([[1, 0], [0, 1], [1, 1]], dtype=float)
    a = _softmax(keys @ q2 / 2)
    assert f"({_fmt(a)})" in bank and f"({_fmt(a @ values)})" in bank
    assert f"({_fmt(_softmax(keys @ q2))})" in bank

    saturation = by_key["softmax-saturation"].answer
    assert f"({_fmt(_softmax([1, 1, 0]))})" in saturation
    assert "0.0002" in saturation and abs(_softmax([8, 8, 0])[2] - 0.0002) < 0.00005


def test_cost_and_size_facts_match_the_formulas(deck):
    by_key = {card.key: card for card in Card.objects.filter(deck=deck)}
    memory = by_key["score-matrix-memory"].answer
    for n, megabytes in ((1024, "2.1"), (2048, "8.39"), (4096, "33.55")):
        assert f"{n * n:,}" in memory
        assert f"{megabytes} MB" in memory and float(megabytes) == pytest.approx(
            n * n * 2 / 1e6, abs=0.05
        )
    assert "6,144 tokens" in by_key["quadratic-crossover"].answer
    shares = by_key["quadratic-share-at-4096"].answer
    for d_model, share in ((768, 47), (1024, 40), (4096, 14)):
        # Quadratic part 2 n^2 d against 12 n d^2 per token: share n / (n + 6 d).
        assert round(100 * 4096 / (4096 + 6 * d_model)) == share
        assert f"{share}%" in shares
    params = by_key["attention-and-ffn-parameters"].answer
    assert f"{4 * 512**2:,}".replace(",", "{,}") in params
    assert f"{8 * 512**2 / 1e6:.1f} million" in by_key["ffn-parameters"].answer
    # The base model's sizes, one card each; each head is the model's width split h ways.
    assert "$d_k = d_v = 64$" in by_key["base-model-head-width"].answer and 512 // 8 == 64
    assert "$N = 6$" in by_key["base-model-layers"].answer
    assert "$d_{ff} = 2048$" in by_key["base-model-ffn-width"].answer and 2048 == 4 * 512
    assert not by_key["base-model-dimensions"].is_active
    assert "1,033" in by_key["dot-product-variance"].answer


def test_reloading_changes_nothing(deck):
    before = {c.pk: (c.updated_at, c.prompt) for c in Card.objects.filter(deck=deck)}
    out = io.StringIO()
    call_command("load_starter_content", stdout=out)
    assert re.search(r": 0 created, 0 updated, \d+ unchanged, 0 deactivated", out.getvalue()), (
        out.getvalue()
    )
    after = {c.pk: (c.updated_at, c.prompt) for c in Card.objects.filter(deck=deck)}
    assert after == before


def test_dry_run_saves_nothing():
    out = io.StringIO()
    call_command("load_starter_content", "--dry-run", stdout=out)
    assert "Dry run" in out.getvalue() and re.search(r"[1-9]\d* created", out.getvalue())
    assert not Deck.objects.filter(slug=SLUG).exists()
    assert Card.objects.count() == 0

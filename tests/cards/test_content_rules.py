"""The card-writing rules of docs/content.md that a program can check, on the starter deck.

Each rule reads the deck file as it is imported (``deck_validate``) and names the card
and the text that break it. The rules apply to active cards; a retired card keeps the
text learners saw, and only has to name a section.
"""

from __future__ import annotations

import re
from functools import cache

import pytest

from cards.decks import deck_load, deck_validate
from cards.management.commands.load_starter_content import CONTENT_DIR

DECK = CONTENT_DIR / "attention-and-transformers.yaml"

# A recall card asks for one fact, or one reasoned answer: a short answer, a short list.
RECALL_ANSWER_MAX_CHARS = 700
RECALL_ANSWER_MAX_ITEMS = 4

# Tokens, heads, columns ... are counted from 1 in every word a learner reads. A formula's
# own variable is not a count: the sinusoids' pos starts at 0, so "$pos = 0$" is allowed.
ZERO_BASED = [
    re.compile(
        r"\b(?:tokens?|heads?|columns?|rows?|queries|query|keys?|inputs?|layers?)\s+0\b", re.I
    ),
    re.compile(
        r"\b(?:tokens?|heads?|columns?|rows?)\s+\$?\d+\s*\$?\s*(?:to|\.\.)\s*\$?\w*\s*[-+]\s*1\$?"
    ),
    re.compile(r"[A-Za-z]_\{?0\}?(?![\d.])"),  # q_0, k_{0}, W_0 ...
    re.compile(r"columns\s+\$?\d*h"),  # "columns 4h to 4h + 3"
]
# Notation that only reads right inside math: outside $...$ and code it is raw text.
RAW_NOTATION = [
    re.compile(r"\^"),  # n^2, K^T
    re.compile(r"sqrt\s*[({]"),  # sqrt(d_k)
    re.compile(r"\\[A-Za-z]+"),  # a TeX command: \sqrt, \cdot ...
    re.compile(r"\b[A-Za-z]_(?:\{|[A-Za-z0-9])"),  # d_k, W_Q, d_{model}
]
# Key points are plain text on the review page (no math is rendered there): words, and
# no notation at all.
POINT_NOTATION = [
    re.compile(r"\^"),
    re.compile(r"sqrt", re.I),
    re.compile(r"[$\\]"),
    re.compile(r"\bO\(n"),  # O(n^2 d): say it in words
]

_CODE = re.compile(r"```.*?```|`[^`\n]*`", re.S)
_MATH = re.compile(r"\$\$.+?\$\$|\$[^$\n]+?\$", re.S)
_FIGURE = re.compile(r"(?m)^\{\{figure:[a-z0-9-]+\}\}$")


@cache
def spec():
    return deck_validate(deck_load(DECK))


def active_cards():
    return [card for card in spec().cards if card.active]


def texts(card) -> list[tuple[str, str]]:
    return [("prompt", card.prompt), ("answer", card.answer)]


def outside_math(text: str) -> str:
    """The prose a learner reads as plain text: formulas, code and figure lines cut out."""
    return _MATH.sub(" ", _CODE.sub(" ", _FIGURE.sub(" ", text)))


def found(patterns: list[re.Pattern[str]], text: str) -> list[str]:
    return [m.group(0) for pattern in patterns for m in pattern.finditer(text)]


def test_every_card_names_a_section_of_the_deck_lesson():
    assert spec().lesson is not None and spec().lesson.sections
    keys = set(spec().lesson.keys)
    missing = [card.key for card in spec().cards if card.lesson_section is None]
    assert missing == [], f"cards without lesson_section: {missing}"
    unknown = [(c.key, c.lesson_section) for c in spec().cards if c.lesson_section not in keys]
    assert unknown == []


@pytest.mark.parametrize("where", ["cards", "lesson"])
def test_tokens_heads_and_columns_are_counted_from_one(where):
    bad = []
    if where == "cards":
        for card in active_cards():
            for name, text in [*texts(card), *(("points", p) for p in card.points)]:
                bad += [(card.key, name, hit) for hit in found(ZERO_BASED, text)]
    else:
        for section in spec().lesson.sections:
            bad += [(section.key, "body", hit) for hit in found(ZERO_BASED, section.body)]
    assert bad == []


def test_the_zero_based_patterns_catch_what_they_are_for():
    # A rule that cannot fail is no rule: each pattern catches the old wordings.
    for old in ("For token 0 (bag)", "head 0 would get", "$q_0 = (1, 0)$", "keys $k_{0}$",
                "columns $4h$ to $4h + 3$", "row 0 was [1, 0, 0, 0]", "tokens 0 to n - 1"):  # fmt: skip
        assert found(ZERO_BASED, old), old
    for fine in ("token 1", "head 2", "$pos = 0$", "$k = 0$", "weight 0", "$10^{-16}$", "0.330"):
        assert not found(ZERO_BASED, fine), fine


@pytest.mark.parametrize("where", ["cards", "lesson"])
def test_no_raw_notation_outside_math(where):
    bad = []
    if where == "cards":
        for card in active_cards():
            for name, text in texts(card):
                bad += [(card.key, name, hit) for hit in found(RAW_NOTATION, outside_math(text))]
    else:
        for section in spec().lesson.sections:
            prose = outside_math(section.body)
            bad += [(section.key, hit) for hit in found(RAW_NOTATION, prose)]
    assert bad == []


def test_interview_key_points_are_plain_words():
    bad = [
        (card.key, point, found(POINT_NOTATION, point))
        for card in active_cards()
        for point in card.points
        if found(POINT_NOTATION, point)
    ]
    assert bad == []
    assert found(POINT_NOTATION, "The score matrix has n^2 entries")
    assert found(POINT_NOTATION, "Dividing by sqrt(d_k) restores variance 1")
    assert found(RAW_NOTATION, outside_math("scores QK^T / sqrt(d_k), not $QK^\\top$"))


def _prompt_words(text: str) -> str:
    return " ".join(re.sub(r"[^\w$^{}\\ ]+", " ", text.lower()).split())


def test_no_two_active_cards_ask_the_same_prompt():
    seen: dict[str, str] = {}
    repeated = []
    for card in active_cards():
        words = _prompt_words(card.prompt)
        if words in seen:
            repeated.append((seen[words], card.key))
        seen.setdefault(words, card.key)
    assert repeated == []


def _list_items(text: str) -> int:
    return len(re.findall(r"(?m)^\s*(?:[-*+]|\d+\.)\s", text))


def asks_two(prompt: str) -> bool:
    """Whether a prompt asks two questions: two question marks, "..., and what ...", or a
    question followed by a second request ("? Name two more ...")."""
    prompt = " ".join(outside_math(prompt).split())
    return bool(
        prompt.count("?") > 1
        or re.search(
            r",\s+and\s+(?:what|why|how|when|which|where|say|give|name|describe)\b", prompt
        )
        or re.search(r"\?\s+(?:Name|Give|Say|List|Describe)\b", prompt)
    )


def test_recall_cards_ask_one_thing_and_answer_it_briefly():
    too_long, lists, double = [], [], []
    for card in active_cards():
        if card.kind != "recall":
            continue
        if len(card.answer) > RECALL_ANSWER_MAX_CHARS:
            too_long.append((card.key, len(card.answer)))
        if _list_items(card.answer) > RECALL_ANSWER_MAX_ITEMS:
            lists.append((card.key, _list_items(card.answer)))
        if asks_two(card.prompt):
            double.append((card.key, card.prompt))
    assert too_long == [], f"recall answers over {RECALL_ANSWER_MAX_CHARS} characters"
    assert lists == [], f"recall answers listing more than {RECALL_ANSWER_MAX_ITEMS} items"
    assert double == [], "recall prompts asking two questions"


def test_the_brevity_rule_would_catch_the_old_list_cards():
    old = deck_validate(deck_load(DECK)).cards
    retired = {card.key: card for card in old if not card.active}
    for key in ("lesson-useful-for", "heat-map-staff-reading", "base-model-dimensions"):
        assert key in retired, key
    # The five misreadings were a list of five; the base model, four facts and a score.
    assert _list_items(retired["heat-map-staff-reading"].answer) > RECALL_ANSWER_MAX_ITEMS
    for key in ("pytorch-mask-conventions", "quadratic-cost-and-explanation-caveat"):
        assert asks_two(retired[key].prompt), key
    assert not asks_two("Is masked attention permutation-equivariant? Show why with two tokens.")


def test_retired_cards_are_replaced_not_lost():
    # Every retired card's subject lives on: in an active card, or named in the comment
    # above it in the file, which says where it went.
    text = DECK.read_text()
    for card in spec().cards:
        if card.active:
            continue
        at = text.index(f"- key: {card.key}\n")
        comment = text[text.rfind("\n\n", 0, at) : at]
        assert "# Retired:" in comment, card.key

"""A deck's lesson: its sections rendered with their figures, and what practises each.

A section body is card Markdown (``studyapp.common.rendering``: math to MathML, the
whole sanitised), cut at its figure lines, each replaced by the figure the engine draws
(``cards.figures``). What practises a section is derived, never written: the active cards
whose ``lesson_section`` is its key, and through them the exercise kinds, the playground
presets and the labs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from django.utils.safestring import SafeString, mark_safe

from exercises.kinds import KINDS
from exercises.presets import PRESETS
from labs import selectors as lab_selectors
from studyapp.common.rendering import render_markdown

from .figures import FIGURE_LINE, FIGURES, figure_html
from .models import Card, Deck, Enrollment, LessonSection
from .templatetags.study import excerpt

# An exercise whose params name the lesson's preset starts from the worked example,
# which the playground shows as ``bag`` (or ``causal`` with the causal mask on).
LESSON_PRESET = "lesson"
EXCERPT_CHARS = 80


_HEADING = re.compile(r"<(/?)h([1-6])>")


def _nest_headings(rendered: str) -> str:
    """The body's own headings below the section's title (an h2): its top level is h3."""
    levels = [int(level) for _, level in _HEADING.findall(rendered)]
    if not levels:
        return rendered
    shift = 3 - min(levels)
    return _HEADING.sub(lambda m: f"<{m.group(1)}h{min(int(m.group(2)) + shift, 6)}>", rendered)


# The lesson page carries hundreds of formulas: HTML parses <math> into MathML's namespace
# by itself, and inline is MathML's default display, so both attributes are dropped there.
_MATH_DEFAULTS = re.compile(
    r'<math xmlns="http://www\.w3\.org/1998/Math/MathML"( display="inline")?'
)


_BLOCK_MATH = re.compile(r'<math display="block">.*?</math>', re.S)


def _lean_math(rendered: str) -> str:
    return _MATH_DEFAULTS.sub("<math", rendered)


def _scrolling_display_math(rendered: str) -> str:
    """A display formula wider than a phone scrolls in its own box (made focusable while
    it overflows, by the pages' scroller script), not the whole section sideways."""
    return _BLOCK_MATH.sub(
        lambda m: f'<span class="scroll-x math-block">{m.group(0)}</span>', rendered
    )


def render_body(body: str) -> SafeString:
    """A section body as safe HTML: Markdown with math, each figure line a figure; the
    body's headings nest under the section's title."""
    pieces: list[str] = []
    start = 0
    for match in FIGURE_LINE.finditer(body or ""):
        pieces.append(render_markdown(body[start : match.start()]))
        name = match.group(1)
        # An unknown name cannot pass the rules; one stored by other means shows as text.
        pieces.append(
            str(figure_html(name)) if name in FIGURES else render_markdown(match.group(0))
        )
        start = match.end()
    pieces.append(render_markdown((body or "")[start:]))
    # render_markdown sanitises (nh3); the figures are built with format_html.
    return mark_safe(_scrolling_display_math(_lean_math(_nest_headings("".join(pieces)))))


@dataclass
class Practice:
    """What practises one section, in deck order."""

    cards: list[dict[str, Any]] = field(default_factory=list)
    kinds: list[dict[str, str]] = field(default_factory=list)
    presets: list[dict[str, str]] = field(default_factory=list)
    labs: list[dict[str, str]] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "cards": [{"id": c["id"], "key": c["key"], "kind": c["kind"]} for c in self.cards],
            "exercise_kinds": [k["kind"] for k in self.kinds],
            "presets": [p["preset"] for p in self.presets],
            "labs": [lab["slug"] for lab in self.labs],
        }


def playground_preset(params: Any) -> str | None:
    """The playground preset an exercise's params start from, if any."""
    if not isinstance(params, dict):
        return None
    preset = params.get("preset")
    if preset == LESSON_PRESET:
        return "causal" if params.get("mask") == "causal" else "bag"
    return preset if isinstance(preset, str) and preset in PRESETS else None


def _add_once(items: list[dict[str, str]], key: str, item: dict[str, str]) -> None:
    if all(existing[key] != item[key] for existing in items):
        items.append(item)


def _practice_of(cards: list[Card]) -> Practice:
    practice = Practice()
    labs = lab_selectors.catalogue()
    for card in cards:
        practice.cards.append(
            {
                "id": card.pk,
                "key": card.key,
                "kind": card.kind,
                "prompt": card.prompt,
                # A line of the page per card: a short excerpt, its formulas lean.
                "excerpt": mark_safe(_lean_math(str(excerpt(card.prompt, EXCERPT_CHARS)))),
            }
        )
        spec = card.exercise if isinstance(card.exercise, dict) else None
        if spec and spec.get("kind") in KINDS:
            name = spec["kind"]
            _add_once(practice.kinds, "kind", {"kind": name, "title": KINDS[name].title})
            preset = playground_preset(spec.get("params"))
            if preset is not None:
                _add_once(
                    practice.presets,
                    "preset",
                    {"preset": preset, "title": str(PRESETS[preset]["title"])},
                )
        if card.lab and card.lab in labs:
            _add_once(practice.labs, "slug", {"slug": card.lab, "title": labs[card.lab].title})
    return practice


@dataclass
class Section:
    key: str
    title: str
    body: str
    practice: Practice

    @property
    def html(self) -> SafeString:
        return render_body(self.body)


@dataclass
class Lesson:
    deck: Deck
    title: str
    sections: list[Section]
    card_count: int


def deck_lesson(*, deck: Deck) -> Lesson:
    """The deck's lesson: its title, its sections in order, each with what practises it.

    Three queries: the sections, the deck's active cards that point to one, and the
    count of its active cards.
    """
    sections = list(LessonSection.objects.filter(deck=deck).order_by("position", "id"))
    by_key: dict[str, list[Card]] = {}
    cards = (
        Card.objects.filter(deck=deck, is_active=True, lesson_section__isnull=False)
        .only("id", "key", "kind", "prompt", "exercise", "lab", "lesson_section", "position")
        .order_by("position", "id")
    )
    for card in cards:
        by_key.setdefault(card.lesson_section or "", []).append(card)
    return Lesson(
        deck=deck,
        title=deck.lesson_title or deck.title,
        sections=[
            Section(
                key=s.key,
                title=s.title,
                body=s.body,
                practice=_practice_of(by_key.get(s.key, [])),
            )
            for s in sections
        ],
        card_count=Card.objects.filter(deck=deck, is_active=True).count(),
    )


def section_keys(deck: Deck | int | None) -> list[str]:
    """The keys of a deck's lesson sections, in order (none for no deck)."""
    if deck is None:
        return []
    return list(
        LessonSection.objects.filter(deck=deck)
        .order_by("position", "id")
        .values_list("key", flat=True)
    )


def enrolled_in(*, learner: Any, deck: Deck) -> bool:
    """Whether ``learner`` (perhaps a visitor, who is not) is enrolled in ``deck``."""
    if not getattr(learner, "is_authenticated", False):
        return False
    return Enrollment.objects.filter(learner=learner, deck=deck).exists()

"""Checking a parsed deck document: one declarative serializer per part of the file.

``DeckFileSerializer`` reads the top level and ``deck``; ``CardEntrySerializer`` reads
one entry of ``cards`` and applies the card rules of ``cards.rules``, the same rules
the API and the admin apply. Errors come back as ``path: message`` lines that name
the entry and field (``cards[3].exercise.params.n: expected ...``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

from django.utils.text import slugify
from rest_framework import serializers

from cards import rules

from .fields import (
    DECK_SLUG_MAX,
    _AsGiven,
    _CardList,
    _Description,
    _file_message,
    _Flag,
    _flatten,
    _FormatVersion,
    _Slug,
    _Strict,
    _TagList,
    _Title,
)
from .format import DeckFileError
from .lesson import LessonSpec, lesson_validate


@dataclass(frozen=True)
class CardSpec:
    key: str
    kind: str
    prompt: str
    answer: str
    tags: tuple[str, ...]
    exercise: dict | None
    active: bool
    key_given: bool
    lab: str | None = None
    points: tuple[str, ...] = ()
    lesson_section: str | None = None


@dataclass(frozen=True)
class DeckSpec:
    slug: str
    title: str
    description: str
    cards: list[CardSpec]
    lesson: LessonSpec | None = None


class DeckInfoSerializer(_Strict):
    expected = "a mapping {slug, title, description}"
    slug = _Slug(DECK_SLUG_MAX)
    title = _Title()
    description = _Description(required=False, default="")


class DeckFileSerializer(_Strict):
    expected = "a mapping with format, deck and cards"
    format = _FormatVersion()
    deck = DeckInfoSerializer()
    lesson = _AsGiven(default=None)  # checked by .lesson, section by section
    cards = _CardList()


class CardEntrySerializer(_Strict):
    """One entry of ``cards``; the content rules are those of every card (``cards.rules``)."""

    key = _AsGiven(default="")
    kind = _AsGiven(default=None)
    prompt = _AsGiven(default=None)
    answer = _AsGiven(default="")
    tags = _TagList(required=False, default=list)
    exercise = _AsGiven(default=None)
    lab = _AsGiven(default=None)
    points = _AsGiven(default=list)
    lesson_section = _AsGiven(default=None)
    active = _Flag(required=False, default=True)

    def validate(self, attrs):
        if attrs.get("answer") is None:
            attrs["answer"] = ""
        if attrs.get("points") is None:
            attrs["points"] = []
        problems = rules.card_problems(
            kind=attrs.get("kind"),
            prompt=attrs.get("prompt"),
            answer=attrs["answer"],
            exercise=attrs.get("exercise"),
            lab=attrs.get("lab"),
            points=attrs["points"],
        )
        if problems:
            raise serializers.ValidationError(
                {
                    field: [_file_message(m) for m in messages]
                    for field, messages in problems.items()
                }
            )
        exercise = attrs.get("exercise")
        if exercise is not None:
            attrs["exercise"] = {
                "kind": exercise["kind"],
                "params": dict(exercise.get("params") or {}),
            }
        return attrs


def derived_key(prompt: str, taken: set[str]) -> str:
    base = slugify(prompt)[:60].strip("-_") or "card"
    key, n = base, 1
    while key in taken:
        n += 1
        key = f"{base}-{n}"
    return key


def _explicit_keys(entries: list) -> tuple[dict[str, int], dict[int, list[str]]]:
    """Keys named in the file, and the entries whose key is malformed or repeated."""
    seen: dict[str, int] = {}
    errors: dict[int, list[str]] = {}
    for index, entry in enumerate(entries):
        key = entry.get("key") if isinstance(entry, Mapping) else None
        if key is None or key == "":
            continue
        problems = rules.key_problems(key)
        if problems:
            errors[index] = [f"cards[{index}].key: {_file_message(m)}" for m in problems["key"]]
        elif key in seen:
            errors[index] = [
                f"cards[{index}].key: {key!r} is already the key of cards[{seen[key]}]"
            ]
        else:
            seen[key] = index
    return seen, errors


def _formulas_to_check(index: int, entry: Any) -> list[tuple[int, str, str]]:
    if not isinstance(entry, Mapping):
        return []
    out = []
    for name in ("prompt", "answer"):
        text = entry.get(name)
        if (
            isinstance(text, str)
            and "$" in text
            and len(text) <= rules.MAX_TEXT_CHARS
            and "\x00" not in text
        ):
            out.append((index, name, text))
    return out


def _card_specs(
    entries: list, by_entry: dict[int, list[str]], *, taken: set[str], sections: set[str]
) -> list[CardSpec]:
    """The entries that pass as ``CardSpec``; the others' errors go to ``by_entry``."""
    cards: list[CardSpec] = []
    # One serializer runs every entry, as DRF's ListSerializer runs its child: building
    # the fields once per file instead of once per card halves the cost of a large file.
    entry_serializer = CardEntrySerializer()
    for index, entry in enumerate(entries):
        try:
            values = entry_serializer.run_validation(entry)
        except serializers.ValidationError as exc:
            by_entry.setdefault(index, []).extend(_flatten(exc.detail, f"cards[{index}]"))
        else:
            for message in rules.lesson_section_problems(
                values["lesson_section"], sorted(sections)
            ).get("lesson_section", []):
                by_entry.setdefault(index, []).append(
                    f"cards[{index}].lesson_section: {_file_message(message)}"
                )
        if index in by_entry:
            continue
        key = values.get("key") or ""
        if not key:
            key = derived_key(values["prompt"], taken)
            taken.add(key)
        cards.append(
            CardSpec(
                key=key,
                kind=values["kind"],
                prompt=values["prompt"],
                answer=values["answer"],
                tags=tuple(sorted(values["tags"])),
                exercise=values["exercise"],
                active=values["active"],
                key_given=bool(values.get("key")),
                lab=values["lab"],
                points=tuple(rules.clean_points(values["points"])),
                lesson_section=values["lesson_section"],
            )
        )
    return cards


def deck_validate(
    data: Any, *, stored_texts: Callable[[str], Collection[str]] | None = None
) -> DeckSpec:
    """Check a whole parsed document; raise ``DeckFileError`` listing every problem.

    Converting formulas is the one costly check. When the rest of the file is sound,
    ``stored_texts(slug)`` may name texts the deck already holds; those skip it, so
    re-importing a large deck stays fast.
    """
    top = DeckFileSerializer(data=data)
    errors = [] if top.is_valid() else _flatten(top.errors, "")
    if not isinstance(data, Mapping):
        raise DeckFileError(errors)
    deck = top.validated_data.get("deck", {}) if not errors else {}
    raw_cards = data.get("cards")
    entries: list[Any] = raw_cards if isinstance(raw_cards, list) else []

    lesson, lesson_errors, section_keys = lesson_validate(data.get("lesson"))
    errors += lesson_errors
    seen_keys, by_entry = _explicit_keys(entries)
    cards = _card_specs(entries, by_entry, taken=set(seen_keys), sections=section_keys)
    formulas = [
        item for index, entry in enumerate(entries) for item in _formulas_to_check(index, entry)
    ]

    slug = deck.get("slug", "")
    sound = not errors and not by_entry
    accepted = stored_texts(slug) if sound and stored_texts is not None else ()
    for index, name, text in formulas:
        if text in accepted:
            continue
        bad = rules.broken_formula(text)
        if bad is not None:
            by_entry.setdefault(index, []).append(
                f"cards[{index}].{name}: math does not render: ${bad}$"
            )
    for index in sorted(by_entry):
        errors += by_entry[index]
    if errors:
        raise DeckFileError(errors)
    return DeckSpec(
        slug=slug,
        title=deck["title"],
        description=deck.get("description", ""),
        cards=cards,
        lesson=lesson,
    )

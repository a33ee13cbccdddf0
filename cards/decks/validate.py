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
from rest_framework.fields import empty
from rest_framework.settings import api_settings

from cards import rules
from cards.models import Deck

from .format import FORMAT_VERSION, DeckFileError

DECK_SLUG_MAX: int = Deck._meta.get_field("slug").max_length or 80
TITLE_MAX = Deck._meta.get_field("title").max_length
NON_FIELD = api_settings.NON_FIELD_ERRORS_KEY


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


@dataclass(frozen=True)
class DeckSpec:
    slug: str
    title: str
    description: str
    cards: list[CardSpec]


def _file_message(message: str) -> str:
    """A rule's sentence as a deck-file message: lower-case start, no closing full stop."""
    message = str(message).removesuffix(".")
    if len(message) > 1 and message[0].isupper() and not message[1].isupper():
        message = message[0].lower() + message[1:]
    return message


# --- Fields: each takes the value at its YAML/JSON type and says what it expected ------


class _Checked(serializers.Field):
    """A field that checks the value at its YAML/JSON type; a missing required value is null.

    DRF's own "This field is required." would not say what was expected, so a missing
    or null value goes to ``to_internal_value`` like any other.
    """

    def validate_empty_values(self, data):
        if data is empty and not self.required:
            return super().validate_empty_values(data)  # the default, or left out
        return False, (None if data is empty else data)

    def to_representation(self, value):
        return value


class _AsGiven(_Checked):
    """The value as the file gives it; the serializer's ``validate`` applies the rules."""

    def __init__(self, **kwargs):
        kwargs.setdefault("required", False)
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        return data


class _Slug(_Checked):
    def __init__(self, max_length: int, what: str = "a slug", **kwargs):
        self.max_length, self.what = max_length, what
        super().__init__(**kwargs)

    def expected(self) -> str:
        return f"expected {self.what} (letters, digits, '-', '_'; at most {self.max_length})"

    def to_internal_value(self, data):
        if not rules.is_slug(data, self.max_length):
            raise serializers.ValidationError(f"{self.expected()}, got {data!r}")
        return data


class _TagList(_Checked):
    def to_internal_value(self, data):
        if data is None:
            return []
        if not isinstance(data, list):
            raise serializers.ValidationError(
                f"expected a list of tag slugs, got {rules.type_name(data)}"
            )
        errors = {
            index: [f"expected a slug of at most {rules.TAG_MAX} characters, got {tag!r}"]
            for index, tag in enumerate(data)
            if not rules.is_slug(tag, rules.TAG_MAX)
        }
        if errors:
            raise serializers.ValidationError(errors)
        return list(dict.fromkeys(data))


class _Flag(_Checked):
    def to_internal_value(self, data):
        if not isinstance(data, bool):
            raise serializers.ValidationError(f"expected true or false, got {data!r}")
        return data


class _Title(_Checked):
    def to_internal_value(self, data):
        if not isinstance(data, str) or not data.strip() or len(data) > TITLE_MAX:
            raise serializers.ValidationError(
                f"expected text of 1 to {TITLE_MAX} characters, got {data!r}"
            )
        _refuse_nul(data)
        return data.strip()


class _Description(_Checked):
    def to_internal_value(self, data):
        if data is None:
            return ""
        if not isinstance(data, str) or len(data) > rules.MAX_TEXT_CHARS:
            raise serializers.ValidationError(
                f"expected text of at most {rules.MAX_TEXT_CHARS} characters, "
                f"got {rules.type_name(data)}"
            )
        _refuse_nul(data)
        return data


class _CardList(_Checked):
    """The entries are checked one by one (``CardEntrySerializer``), so each is named."""

    def to_internal_value(self, data):
        if not isinstance(data, list):
            raise serializers.ValidationError(f"expected a list, got {rules.type_name(data)}")
        return data


class _FormatVersion(_Checked):
    def to_internal_value(self, data):
        if data != FORMAT_VERSION or isinstance(data, bool):
            raise serializers.ValidationError(f"expected {FORMAT_VERSION}, got {data!r}")
        return data


def _refuse_nul(text: str) -> None:
    # PostgreSQL text cannot hold NUL; left alone it fails the import with a database error.
    if "\x00" in text:
        raise serializers.ValidationError("contains a NUL character (\\x00); remove it")


# --- Serializers -------------------------------------------------------------------------


class _Strict(serializers.Serializer):
    """A mapping with exactly the declared fields: anything else is named, not dropped."""

    expected = "a mapping"

    def validate_empty_values(self, data):
        return False, (None if data is empty else data)

    def to_internal_value(self, data):
        if not isinstance(data, Mapping):
            raise serializers.ValidationError(
                {NON_FIELD: [f"expected {self.expected}, got {rules.type_name(data)}"]}
            )
        errors: dict = {}
        value: dict = {}
        try:
            value = super().to_internal_value(data)
        except serializers.ValidationError as exc:
            errors = dict(exc.detail)
        for name in sorted(set(data) - set(self.fields), key=str):
            errors[str(name)] = ["unknown field"]
        if errors:
            raise serializers.ValidationError(errors)
        return value


class DeckInfoSerializer(_Strict):
    expected = "a mapping {slug, title, description}"
    slug = _Slug(DECK_SLUG_MAX)
    title = _Title()
    description = _Description(required=False, default="")


class DeckFileSerializer(_Strict):
    expected = "a mapping with format, deck and cards"
    format = _FormatVersion()
    deck = DeckInfoSerializer()
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


def _flatten(detail: Any, path: str) -> list[str]:
    """DRF's nested error detail as ``path: message`` lines."""
    if isinstance(detail, Mapping):
        lines: list[str] = []
        for name, sub in detail.items():
            if name == NON_FIELD:
                lines += _flatten(sub, path)
            elif isinstance(name, int):
                lines += _flatten(sub, f"{path}[{name}]")
            else:
                lines += _flatten(sub, f"{path}.{name}" if path else str(name))
        return lines
    if isinstance(detail, list):
        return [line for item in detail for line in _flatten(item, path)]
    return [f"{path}: {_file_message(detail)}" if path else _file_message(detail)]


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
    entries: list, by_entry: dict[int, list[str]], *, taken: set[str]
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

    seen_keys, by_entry = _explicit_keys(entries)
    cards = _card_specs(entries, by_entry, taken=set(seen_keys))
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
        slug=slug, title=deck["title"], description=deck.get("description", ""), cards=cards
    )

"""The deck file's field types: each takes a value at its YAML/JSON type and says what
it expected; ``_Strict`` is a mapping that names unknown fields instead of dropping them.

Shared by the serializers of ``validate`` (the deck and its cards) and ``lesson`` (its
lesson); ``_flatten`` turns DRF's nested errors into ``path: message`` lines.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rest_framework import serializers
from rest_framework.fields import empty
from rest_framework.settings import api_settings

from cards import rules
from cards.models import Deck

from .format import FORMAT_VERSION

DECK_SLUG_MAX: int = Deck._meta.get_field("slug").max_length or 80
TITLE_MAX = Deck._meta.get_field("title").max_length
NON_FIELD = api_settings.NON_FIELD_ERRORS_KEY


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

"""Checking a deck file's ``lesson``: its title and its sections, by the lesson rules.

``lesson`` is optional. Its sections are named by key (a slug unique within the lesson);
their order in the file is their order in the lesson. A body's math must convert with
the site's converter and its ``{{figure:NAME}}`` lines must name figures that exist
(``cards.rules.section_problems``). Errors are ``path: message`` lines that name the
section and field (``lesson.sections[2].body: unknown figure 'foo'; ...``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rest_framework import serializers

from cards import rules

from .fields import _AsGiven, _file_message, _flatten, _Strict, _Title


@dataclass(frozen=True)
class SectionSpec:
    key: str
    title: str
    body: str


@dataclass(frozen=True)
class LessonSpec:
    title: str  # "" for the deck's own title
    sections: tuple[SectionSpec, ...]

    @property
    def keys(self) -> list[str]:
        return [section.key for section in self.sections]


class _SectionList(_AsGiven):
    def to_internal_value(self, data):
        if data is None:
            return []
        if not isinstance(data, list):
            raise serializers.ValidationError(
                f"expected a list of sections {{key, title, body}}, got {rules.type_name(data)}"
            )
        if len(data) > rules.MAX_SECTIONS:
            raise serializers.ValidationError(
                f"expected at most {rules.MAX_SECTIONS} sections, got {len(data)}"
            )
        return data


class _LessonTitle(_Title):
    def to_internal_value(self, data):
        return "" if data is None else super().to_internal_value(data)


class LessonSerializer(_Strict):
    expected = "a mapping {title, sections}"
    title = _LessonTitle(required=False, default="")
    sections = _SectionList(default=list)


class SectionEntrySerializer(_Strict):
    """One entry of ``lesson.sections``; the rules are those of every section (``cards.rules``)."""

    expected = "a mapping {key, title, body}"
    key = _AsGiven()
    title = _AsGiven()
    body = _AsGiven()

    def validate(self, attrs):
        problems = rules.section_problems(
            key=attrs.get("key"), title=attrs.get("title"), body=attrs.get("body")
        )
        if problems:
            raise serializers.ValidationError(
                {
                    field: [_file_message(m) for m in messages]
                    for field, messages in problems.items()
                }
            )
        attrs["title"] = attrs["title"].strip()
        return attrs


def _section(index: int, entry: Any, seen: dict[str, int], errors: list[str]) -> SectionSpec | None:
    path = f"lesson.sections[{index}]"
    try:
        values = SectionEntrySerializer().run_validation(entry)
    except serializers.ValidationError as exc:
        errors.extend(_flatten(exc.detail, path))
        return None
    key = values["key"]
    if key in seen:
        errors.append(f"{path}.key: {key!r} is already the key of lesson.sections[{seen[key]}]")
        return None
    seen[key] = index
    bad = rules.broken_formula(values["body"])
    if bad is not None:
        errors.append(f"{path}.body: math does not render: ${bad}$")
        return None
    return SectionSpec(key=key, title=values["title"], body=values["body"])


def lesson_validate(data: Any) -> tuple[LessonSpec | None, list[str], set[str]]:
    """The file's lesson (None without one), its problems, and the section keys it names.

    The keys are every slug a section gives, also where that section has other
    problems, so a card pointing to it is not reported as well.
    """
    if data is None:
        return None, [], set()
    top = LessonSerializer(data=data)
    if not top.is_valid():
        given = data.get("sections") if isinstance(data, Mapping) else None
        return None, _flatten(top.errors, "lesson"), _named_keys(given)
    errors: list[str] = []
    seen: dict[str, int] = {}
    entries = top.validated_data["sections"]
    sections = [_section(index, entry, seen, errors) for index, entry in enumerate(entries)]
    keys = _named_keys(entries)
    if errors:
        return None, errors, keys
    return (
        LessonSpec(
            title=top.validated_data["title"],
            sections=tuple(section for section in sections if section is not None),
        ),
        [],
        keys,
    )


def _named_keys(entries: Any) -> set[str]:
    if not isinstance(entries, list):
        return set()
    return {
        entry["key"]
        for entry in entries
        if isinstance(entry, Mapping) and rules.is_slug(entry.get("key"), rules.SECTION_KEY_MAX)
    }

"""Importing a deck document: validate all of it, then create or update in chunks.

Cards are matched on re-import by ``key`` (a slug, unique within the deck), so
editing a card's text updates that card in place and never touches anyone's
ReviewState. A card's position in the deck is its index in ``cards``. The lesson's
sections are matched by key the same way, and ordered as the file lists them.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.utils import timezone

from cards.models import Card, Deck, Enrollment, LessonSection, Tag
from cards.services.scheduling import enqueue_schedule_new_cards, sync_scheduled

from .format import deck_load, is_source
from .lesson import LessonSpec
from .validate import CardSpec, DeckSpec, deck_validate

# Cards are planned and written in chunks: bounded memory per statement, and a
# natural unit for progress reporting on large files.
CHUNK = 500
CARD_FIELDS = (
    "key",
    "kind",
    "prompt",
    "answer",
    "exercise",
    "lab",
    "points",
    "lesson_section",
    "position",
    "is_active",
    "generation_error",
)


@dataclass(frozen=True)
class ImportReport:
    deck: str
    deck_created: bool = False
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    deactivated: int = 0
    dry_run: bool = False
    # "enqueued": new cards are handed to the placement task once the import commits
    # (the periodic schedule_new_cards job is the backstop); "": nothing to place.
    scheduling: str = ""
    # The lesson's sections: (created, updated, deleted).
    sections: tuple[int, int, int] = (0, 0, 0)

    @property
    def total(self) -> int:
        return self.created + self.updated + self.unchanged

    def summary(self) -> str:
        head = "Dry run, nothing saved. " if self.dry_run else ""
        deck = f"deck {self.deck!r}" + (" (new)" if self.deck_created else "")
        lesson = ""
        if any(self.sections):
            made, changed, deleted = self.sections
            lesson = f"; lesson sections: {made} created, {changed} updated, {deleted} deleted"
        return (
            f"{head}{deck}: {self.created} created, {self.updated} updated, "
            f"{self.unchanged} unchanged, {self.deactivated} deactivated{lesson}"
        )


def _stored_texts(slug: str) -> set[str]:
    """Prompts and answers the deck already holds (none for a new deck)."""
    texts: set[str] = set()
    for prompt, answer in Card.objects.filter(deck__slug=slug).values_list("prompt", "answer"):
        texts.add(prompt)
        texts.add(answer)
    return texts


def _chunks(items: list, size: int) -> Iterable[list]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def deck_import(
    *,
    data: Any,
    name: str | None = None,
    dry_run: bool = False,
    deactivate_missing: bool = False,
    progress: Callable[[int], None] | None = None,
) -> ImportReport:
    """Create or update a deck and its cards from a deck document, all or nothing.

    ``data`` is a parsed document (a mapping) or anything ``deck_load`` reads.
    The whole file is validated before anything is written. Cards are matched by
    ``key``; a card without one in the file gets a key derived from its prompt,
    and an existing keyless card (made in the admin) with the same kind and prompt
    is adopted rather than duplicated. Updating a card never touches ReviewStates.
    With ``deactivate_missing``, active cards of the deck that the file does not
    list are deactivated (they leave queues; their history stays). ``progress`` is
    called with the number of cards handled after each chunk.
    """
    if is_source(data):
        data = deck_load(data, name=name)
    spec = deck_validate(data, stored_texts=_stored_texts)
    now = timezone.now()

    with transaction.atomic():
        deck, deck_created = _deck_for(spec)
        sections = _sync_lesson(deck, spec.lesson, now)
        plan = _Plan.of(deck, now)
        tag_ids = _ensure_tags({tag for card in spec.cards for tag in card.tags})
        offset = 0
        for chunk in _chunks(spec.cards, CHUNK):
            plan.write(plan.chunk(chunk, offset), tag_ids)
            offset += len(chunk)
            if progress is not None:
                progress(len(chunk))
        deactivated = plan.deactivate_missing() if deactivate_missing else 0

        if plan.activated or plan.made_inactive or deactivated:
            # Learners' queues read a flag kept per review state: bring it in line.
            sync_scheduled(deck_ids=[deck.pk])
        scheduling = ""
        if plan.activated and Enrollment.objects.filter(deck=deck).exists():
            enqueue_schedule_new_cards(deck.pk)  # publishes once the import commits
            scheduling = "enqueued"
        if dry_run:
            # Everything ran, so the counts are exact; nothing is kept and
            # on_commit callbacks registered above are discarded with the rollback.
            transaction.set_rollback(True)

    return ImportReport(
        deck=spec.slug,
        deck_created=deck_created,
        created=plan.created,
        updated=plan.updated,
        unchanged=plan.unchanged,
        deactivated=deactivated,
        dry_run=dry_run,
        scheduling="" if dry_run else scheduling,
        sections=sections,
    )


def _deck_for(spec: DeckSpec) -> tuple[Deck, bool]:
    """The deck by slug, locked for the import; its title, description and lesson title as
    the file says."""
    lesson_title = spec.lesson.title if spec.lesson is not None else ""
    wanted = (spec.title, spec.description, lesson_title)
    deck, created = Deck.objects.select_for_update().get_or_create(
        slug=spec.slug,
        defaults={
            "title": spec.title,
            "description": spec.description,
            "lesson_title": lesson_title,
        },
    )
    if not created and (deck.title, deck.description, deck.lesson_title) != wanted:
        deck.title, deck.description, deck.lesson_title = wanted
        deck.save(update_fields=["title", "description", "lesson_title", "updated_at"])
    return deck, created


def _sync_lesson(deck: Deck, lesson: LessonSpec | None, now: dt.datetime) -> tuple[int, int, int]:
    """Make the deck's sections those of the file, matched by key, in the file's order:
    ``(created, updated, deleted)``. A file without a lesson leaves the deck without one.

    Runs before the cards are planned: a card the file does not list loses a section
    that is gone; the file's own cards name sections it has (``deck_validate``)."""
    specs = lesson.sections if lesson is not None else ()
    existing = {section.key: section for section in LessonSection.objects.filter(deck=deck)}
    wanted = {spec.key for spec in specs}
    stale = [section.pk for key, section in existing.items() if key not in wanted]
    if stale:
        LessonSection.objects.filter(pk__in=stale).delete()
    new, changed = [], []
    for position, spec in enumerate(specs):
        section = existing.get(spec.key)
        values = {"title": spec.title, "body": spec.body, "position": position}
        if section is None:
            new.append(LessonSection(deck=deck, key=spec.key, **values))
        elif any(getattr(section, name) != value for name, value in values.items()):
            for name, value in values.items():
                setattr(section, name, value)
            changed.append(section)
    LessonSection.objects.bulk_update(changed, ["title", "body", "position"])
    LessonSection.objects.bulk_create(new)
    _unlink_lost_sections(deck, lesson, now)
    return len(new), len(changed), len(stale)


def _unlink_lost_sections(deck: Deck, lesson: LessonSpec | None, now: dt.datetime) -> None:
    """Cards the file does not list keep their section only while the lesson has it."""
    keys = lesson.keys if lesson is not None else []
    Card.objects.filter(deck=deck, lesson_section__isnull=False).exclude(
        lesson_section__in=keys
    ).update(lesson_section=None, updated_at=now)


@dataclass
class _Writes:
    """One chunk's writes: new cards, changed cards, tag-only edits and wanted tags."""

    new: list[Card] = field(default_factory=list)
    changed: list[Card] = field(default_factory=list)
    retagged: list[int] = field(default_factory=list)
    tags: dict[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass
class _Plan:
    """The deck's cards as they are, matched against the file's, with the counts so far."""

    deck: Deck
    now: dt.datetime
    existing: list[Card]
    by_key: dict[str, Card]
    keyless: dict[tuple[str, str], list[Card]]
    current_tags: dict[int, set[str]]
    matched_ids: set[int] = field(default_factory=set)
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    activated: int = 0
    # Existing active cards the file marks inactive (they leave learners' queues).
    made_inactive: int = 0

    @classmethod
    def of(cls, deck: Deck, now: dt.datetime) -> _Plan:
        existing = list(Card.objects.filter(deck=deck))
        keyless: dict[tuple[str, str], list[Card]] = {}
        for card in existing:
            if not card.key:
                keyless.setdefault((card.kind, card.prompt), []).append(card)
        current_tags: dict[int, set[str]] = {}
        links = Card.tags.through.objects.filter(card__deck=deck)
        for card_id, tag_name in links.values_list("card_id", "tag__name"):
            current_tags.setdefault(card_id, set()).add(tag_name)
        return cls(
            deck=deck,
            now=now,
            existing=existing,
            by_key={card.key: card for card in existing if card.key},
            keyless=keyless,
            current_tags=current_tags,
        )

    def _match(self, spec: CardSpec) -> Card | None:
        card = self.by_key.get(spec.key)
        if card is None:
            candidates = self.keyless.get((spec.kind, spec.prompt))
            card = candidates.pop(0) if candidates else None
        return card

    def chunk(self, specs: list[CardSpec], offset: int) -> _Writes:
        writes = _Writes()
        for position, spec in enumerate(specs, start=offset):
            card = self._match(spec)
            writes.tags[spec.key] = spec.tags
            values = {
                "key": spec.key,
                "kind": spec.kind,
                "prompt": spec.prompt,
                "answer": spec.answer,
                "exercise": spec.exercise,
                "lab": spec.lab,
                "points": list(spec.points),
                "lesson_section": spec.lesson_section,
                "position": position,
                "is_active": spec.active,
                # The file passed the card rules, so a generation failure recorded
                # earlier no longer holds.
                "generation_error": "",
            }
            if card is None:
                writes.new.append(
                    Card(deck=self.deck, created_at=self.now, updated_at=self.now, **values)
                )
                self.created += 1
                self.activated += spec.active
                continue
            self.matched_ids.add(card.pk)
            self.activated += spec.active and not card.is_active
            self.made_inactive += card.is_active and not spec.active
            fields_differ = any(getattr(card, name) != value for name, value in values.items())
            tags_differ = self.current_tags.get(card.pk, set()) != set(spec.tags)
            if fields_differ:
                for name, value in values.items():
                    setattr(card, name, value)
                card.updated_at = self.now
                writes.changed.append(card)
            elif tags_differ:
                writes.retagged.append(card.pk)  # the only edit is its tags
            if fields_differ or tags_differ:
                self.updated += 1
            else:
                self.unchanged += 1
        return writes

    def write(self, writes: _Writes, tag_ids: dict[str, int]) -> None:
        Card.objects.bulk_create(writes.new, batch_size=CHUNK)
        Card.objects.bulk_update(writes.changed, [*CARD_FIELDS, "updated_at"], batch_size=CHUNK)
        if writes.retagged:
            # A tag-only edit is an edit too: keep updated_at honest for API clients.
            Card.objects.filter(pk__in=writes.retagged).update(updated_at=self.now)
        _sync_tags(self.deck, writes.tags, tag_ids)

    def deactivate_missing(self) -> int:
        """Deactivate the deck's active cards that the file does not list."""
        missing = [
            card.pk for card in self.existing if card.pk not in self.matched_ids and card.is_active
        ]
        deactivated = 0
        for ids in _chunks(missing, CHUNK):
            deactivated += Card.objects.filter(pk__in=ids).update(
                is_active=False, updated_at=self.now
            )
        return deactivated


def _sync_tags(deck: Deck, wanted: dict[str, tuple[str, ...]], tag_ids: dict[str, int]) -> None:
    """Make the tag links of the cards keyed in ``wanted`` exactly those listed."""
    through = Card.tags.through
    # Ids by key: bulk_create does not return primary keys on every backend.
    ids = dict(Card.objects.filter(deck=deck, key__in=list(wanted)).values_list("key", "pk"))
    want = {(ids[key], tag_ids[tag]) for key, tags in wanted.items() for tag in tags}
    rows = through.objects.filter(card_id__in=list(ids.values())).values_list(
        "pk", "card_id", "tag_id"
    )
    have = {(card_id, tag_id): pk for pk, card_id, tag_id in rows}
    stale = [pk for pair, pk in have.items() if pair not in want]
    if stale:
        through.objects.filter(pk__in=stale).delete()
    through.objects.bulk_create(
        [
            through(card_id=card_id, tag_id=tag_id)
            for card_id, tag_id in want
            if (card_id, tag_id) not in have
        ],
        batch_size=CHUNK,
    )


def _ensure_tags(names: set[str]) -> dict[str, int]:
    if not names:
        return {}
    found = dict(Tag.objects.filter(name__in=names).values_list("name", "pk"))
    missing = names - set(found)
    if missing:
        Tag.objects.bulk_create([Tag(name=name) for name in missing], ignore_conflicts=True)
        found = dict(Tag.objects.filter(name__in=names).values_list("name", "pk"))
    return found

"""Importing a deck document: validate all of it, then create or update in chunks.

Cards are matched on re-import by ``key`` (a slug, unique within the deck), so
editing a card's text updates that card in place and never touches anyone's
ReviewState. A card's position in the deck is its index in ``cards``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.utils import timezone

from cards.models import Card, Deck, Enrollment, Tag

from .format import deck_load, is_source
from .validate import deck_validate

# Cards are planned and written in chunks: bounded memory per statement, and a
# natural unit for progress reporting on large files.
CHUNK = 500
CARD_FIELDS = (
    "key",
    "kind",
    "prompt",
    "answer",
    "exercise",
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
    # "enqueued": new cards were handed to cards.tasks right after commit;
    # "beat": the periodic schedule_new_cards job will place them; "": nothing to place.
    scheduling: str = ""

    @property
    def total(self) -> int:
        return self.created + self.updated + self.unchanged

    def summary(self) -> str:
        head = "Dry run, nothing saved. " if self.dry_run else ""
        deck = f"deck {self.deck!r}" + (" (new)" if self.deck_created else "")
        return (
            f"{head}{deck}: {self.created} created, {self.updated} updated, "
            f"{self.unchanged} unchanged, {self.deactivated} deactivated"
        )


def _stored_texts(slug: str) -> set[str]:
    """Prompts and answers the deck already holds (none for a new deck)."""
    texts: set[str] = set()
    for prompt, answer in Card.objects.filter(deck__slug=slug).values_list("prompt", "answer"):
        texts.add(prompt)
        texts.add(answer)
    return texts


def _schedule_new_cards(deck_id: int) -> str:
    """Hand new cards to the scheduling task after commit; the beat job is the backstop."""
    try:
        tasks = importlib.import_module("cards.tasks")
    except ImportError:
        return "beat"
    enqueue = getattr(tasks, "enqueue_schedule_new_cards", None)
    if enqueue is None:
        return "beat"
    transaction.on_commit(lambda: enqueue(deck_id), robust=True)
    return "enqueued"


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
        deck, deck_created = Deck.objects.select_for_update().get_or_create(
            slug=spec.slug, defaults={"title": spec.title, "description": spec.description}
        )
        if not deck_created and (deck.title, deck.description) != (spec.title, spec.description):
            deck.title, deck.description = spec.title, spec.description
            deck.save(update_fields=["title", "description", "updated_at"])

        existing = list(Card.objects.filter(deck=deck))
        by_key = {card.key: card for card in existing if card.key}
        keyless: dict[tuple[str, str], list[Card]] = {}
        for card in existing:
            if not card.key:
                keyless.setdefault((card.kind, card.prompt), []).append(card)
        current_tags: dict[int, set[str]] = {}
        for card_id, tag_name in Card.tags.through.objects.filter(card__deck=deck).values_list(
            "card_id", "tag__name"
        ):
            current_tags.setdefault(card_id, set()).add(tag_name)

        tag_ids = _ensure_tags({tag for card in spec.cards for tag in card.tags})
        matched_ids: set[int] = set()
        created = updated = unchanged = activated = 0
        fields = [*CARD_FIELDS, "updated_at"]

        offset = 0
        for chunk in _chunks(spec.cards, CHUNK):
            new_cards: list[Card] = []
            changed: list[Card] = []
            retagged: list[int] = []  # matched cards whose only edit is their tags
            wanted_tags: dict[str, tuple[str, ...]] = {}
            for position, card_spec in enumerate(chunk, start=offset):
                card = by_key.get(card_spec.key)
                if card is None:
                    candidates = keyless.get((card_spec.kind, card_spec.prompt))
                    card = candidates.pop(0) if candidates else None
                wanted_tags[card_spec.key] = card_spec.tags
                values = {
                    "key": card_spec.key,
                    "kind": card_spec.kind,
                    "prompt": card_spec.prompt,
                    "answer": card_spec.answer,
                    "exercise": card_spec.exercise,
                    "position": position,
                    "is_active": card_spec.active,
                    # The file passed the card rules, so a generation failure recorded
                    # earlier no longer holds.
                    "generation_error": "",
                }
                if card is None:
                    new_cards.append(Card(deck=deck, created_at=now, updated_at=now, **values))
                    created += 1
                    activated += card_spec.active
                    continue
                matched_ids.add(card.pk)
                if card_spec.active and not card.is_active:
                    activated += 1
                fields_differ = any(getattr(card, name) != value for name, value in values.items())
                tags_differ = current_tags.get(card.pk, set()) != set(card_spec.tags)
                if fields_differ:
                    for name, value in values.items():
                        setattr(card, name, value)
                    card.updated_at = now
                    changed.append(card)
                elif tags_differ:
                    retagged.append(card.pk)
                if fields_differ or tags_differ:
                    updated += 1
                else:
                    unchanged += 1
            offset += len(chunk)

            Card.objects.bulk_create(new_cards, batch_size=CHUNK)
            Card.objects.bulk_update(changed, fields, batch_size=CHUNK)
            if retagged:
                # A tag-only edit is an edit too: keep updated_at honest for API clients.
                Card.objects.filter(pk__in=retagged).update(updated_at=now)
            _sync_tags(deck, wanted_tags, tag_ids)
            if progress is not None:
                progress(len(chunk))

        deactivated = 0
        if deactivate_missing:
            missing = [
                card.pk for card in existing if card.pk not in matched_ids and card.is_active
            ]
            for ids in _chunks(missing, CHUNK):
                deactivated += Card.objects.filter(pk__in=ids).update(
                    is_active=False, updated_at=now
                )

        scheduling = ""
        if activated and Enrollment.objects.filter(deck=deck).exists():
            scheduling = _schedule_new_cards(deck.pk)
        if dry_run:
            # Everything ran, so the counts are exact; nothing is kept and
            # on_commit callbacks registered above are discarded with the rollback.
            transaction.set_rollback(True)

    return ImportReport(
        deck=spec.slug,
        deck_created=deck_created,
        created=created,
        updated=updated,
        unchanged=unchanged,
        deactivated=deactivated,
        dry_run=dry_run,
        scheduling="" if dry_run else scheduling,
    )


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

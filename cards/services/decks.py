"""Deck files: parse, validate, import and export (format 1, see docs/deck-format.md).

A deck file is YAML or JSON with the same structure::

    {format: 1,
     deck: {slug, title, description},
     cards: [{key, kind, prompt, answer, tags: [...], exercise: {kind, params} | null,
              active: true}]}

Cards are matched on re-import by ``key`` (a slug, unique within the deck), so
editing a card's text updates that card in place and never touches anyone's
ReviewState. A card's position in the deck is its index in ``cards``.
"""

from __future__ import annotations

import importlib
import json
import logging
import os
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import yaml
from django.core.exceptions import ValidationError
from django.core.validators import validate_slug
from django.db import transaction
from django.utils import timezone
from django.utils.text import slugify

from cards.models import Card, Deck, Enrollment, Tag
from cards.rendering import formula_renders, formulas
from exercises.kinds import KINDS, ParamError, UnknownKindError, get_kind

from .scheduling import sync_scheduled

logger = logging.getLogger(__name__)

FORMAT_VERSION = 1
CARD_KINDS = tuple(Card.Kind.values)  # recall, interview, exercise
MAX_TEXT_CHARS = 20_000
KEY_MAX = Card._meta.get_field("key").max_length
DECK_SLUG_MAX = Deck._meta.get_field("slug").max_length
TITLE_MAX = Deck._meta.get_field("title").max_length
TAG_MAX = Tag._meta.get_field("name").max_length
# Cards are planned and written in chunks: bounded memory per statement, and a
# natural unit for progress reporting on large files.
CHUNK = 500

_TOP_FIELDS = {"format", "deck", "cards"}
_DECK_FIELDS = {"slug", "title", "description"}
_CARD_FIELDS = {"key", "kind", "prompt", "answer", "tags", "exercise", "active"}
_EXERCISE_FIELDS = {"kind", "params"}


class DeckFileError(ValueError):
    """The file cannot be imported; ``errors`` names every entry and field at fault."""

    def __init__(self, errors: list[str]):
        self.errors = list(errors)
        super().__init__("\n".join(self.errors))


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


@dataclass(frozen=True)
class DeckSpec:
    slug: str
    title: str
    description: str
    cards: list[CardSpec]


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


# --- Parsing ----------------------------------------------------------------------


def _is_source(data: Any) -> bool:
    """Whether ``data`` is something to read (a path, text, bytes, a stream), not a document."""
    return isinstance(data, (str, bytes, os.PathLike)) or hasattr(data, "read")


def _at(path: str, key: Any) -> str:
    return f"{path}.{key}" if path else str(key)


def _yaml_duplicates(node: yaml.Node, path: str = "") -> list[str]:
    """Keys given twice in one mapping of a composed YAML document, named by path and lines.

    PyYAML keeps the last value without a word; a content author would lose the first.
    """
    errors: list[str] = []
    if isinstance(node, yaml.MappingNode):
        first_line: dict[tuple[str, str], int] = {}
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else "?"
            if isinstance(key_node, yaml.ScalarNode) and key != "<<":
                line = key_node.start_mark.line + 1
                first = first_line.get((key_node.tag, key))
                if first is None:
                    first_line[(key_node.tag, key)] = line
                else:
                    errors.append(f"{_at(path, key)}: given twice (lines {first} and {line}); keep one")  # fmt: skip
            errors += _yaml_duplicates(value_node, _at(path, key))
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            errors += _yaml_duplicates(item, f"{path}[{index}]")
    return errors


class _JsonObject(dict):
    """A JSON object that remembers the names it was given more than once."""

    repeated: tuple[str, ...] = ()


def _json_object(pairs: list[tuple[str, Any]]) -> dict:
    obj = _JsonObject(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        obj.repeated = tuple(dict.fromkeys(k for k, _ in pairs if k in seen or seen.add(k)))
    return obj


def _json_duplicates(value: Any, path: str = "") -> list[str]:
    errors: list[str] = []
    if isinstance(value, dict):
        errors += [
            f"{_at(path, key)}: given more than once; keep one"
            for key in getattr(value, "repeated", ())
        ]
        for key, item in value.items():
            errors += _json_duplicates(item, _at(path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            errors += _json_duplicates(item, f"{path}[{index}]")
    return errors


_EMPTY = "the file is empty; expected a mapping with format, deck and cards"


def deck_load(source: Any, *, name: str | None = None) -> Any:
    """Parse a deck file from a path, text, bytes or an open stream.

    JSON is chosen by a ``.json`` name, YAML by ``.yaml``/``.yml``; otherwise a
    document starting with ``{`` or ``[`` is read as JSON and anything else as YAML.
    Raises ``DeckFileError`` with the line and column of a syntax error, for an
    empty file, and for a key given twice in one mapping (named by entry and field).
    A UTF-8 byte order mark, as some editors write, is skipped.
    """
    if isinstance(source, os.PathLike):
        path = Path(source)
        name = name or path.name
        text = path.read_text(encoding="utf-8-sig")
    elif isinstance(source, bytes):
        text = source.decode("utf-8-sig")
    elif isinstance(source, str):
        text = source
    elif hasattr(source, "read"):
        name = name or getattr(source, "name", None)
        raw = source.read()
        text = raw.decode("utf-8-sig") if isinstance(raw, bytes) else raw
    else:
        raise DeckFileError([f"expected a deck file, got {type(source).__name__}"])
    text = text.removeprefix("\ufeff")
    if not text.strip():
        raise DeckFileError([_EMPTY])

    suffix = Path(str(name)).suffix.lower() if name else ""
    is_json = suffix == ".json" or (
        suffix not in {".yaml", ".yml"} and text.lstrip()[:1] in {"{", "["}
    )
    if is_json:
        try:
            document = json.loads(text, object_pairs_hook=_json_object)
        except json.JSONDecodeError as exc:
            raise DeckFileError(
                [f"not valid JSON: line {exc.lineno} column {exc.colno}: {exc.msg}"]
            ) from exc
        duplicates = _json_duplicates(document)
        if duplicates:
            raise DeckFileError(duplicates)
        return document
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)
    try:
        node = loader.get_single_node()
        if node is None:  # only comments or blank lines
            raise DeckFileError([_EMPTY])
        duplicates = _yaml_duplicates(node)
        if duplicates:
            raise DeckFileError(duplicates)
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1} column {mark.column + 1}: " if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise DeckFileError([f"not valid YAML: {where}{problem}"]) from exc
    finally:
        loader.dispose()


# --- Validation -------------------------------------------------------------------


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "a boolean", int: "a number", float: "a number", str: "a string",
            list: "a list", dict: "a mapping"}.get(type(value), type(value).__name__)  # fmt: skip


def _is_slug(value: str) -> bool:
    try:
        validate_slug(value)
    except ValidationError:
        return False
    return True


def _math_problem(text: str, cache: dict[tuple[str, bool], bool]) -> str | None:
    """The first formula in ``text`` that the renderer cannot convert, if any.

    Only the formulas are converted (with the renderer's own delimiters and converter):
    a full Markdown render per card would dominate the import of a large file.
    """
    if "$" not in text:
        return None
    for tex, display in formulas(text):
        if (tex, display) not in cache:
            cache[(tex, display)] = not formula_renders(tex, display)
        if cache[(tex, display)]:
            return tex
    return None


def _nul_error(where: str, value: Any) -> list[str]:
    # PostgreSQL text cannot hold NUL; left alone it fails the import with a database error.
    if isinstance(value, str) and "\x00" in value:
        return [f"{where}: contains a NUL character (\\x00); remove it"]
    return []


def _derived_key(prompt: str, taken: set[str]) -> str:
    base = slugify(prompt)[:60].strip("-_") or "card"
    key, n = base, 1
    while key in taken:
        n += 1
        key = f"{base}-{n}"
    return key


def _exercise_error(spec: Any, where: str) -> list[str]:
    if not isinstance(spec, Mapping):
        return [f"{where}: expected a mapping {{kind, params}}, got {_type_name(spec)}"]
    errors = [
        f"{where}.{name}: unknown field" for name in sorted(set(spec) - _EXERCISE_FIELDS, key=str)
    ]
    kind = spec.get("kind")
    params = spec.get("params", {})
    if params is None:
        params = {}
    if not isinstance(params, Mapping):
        errors.append(f"{where}.params: expected a mapping, got {_type_name(params)}")
    if not isinstance(kind, str) or not kind:
        errors.append(f"{where}.kind: expected an exercise kind name, got {_type_name(kind)}")
        return errors
    try:
        exercise_kind = get_kind(kind)
    except UnknownKindError:
        errors.append(f"{where}.kind: expected one of {', '.join(sorted(KINDS))}, got {kind!r}")
        return errors
    if isinstance(params, Mapping):
        if "seed" in params:
            # Each review of an exercise card draws a fresh variant with a server-chosen seed.
            errors.append(f"{where}.params.seed: an exercise card gets a fresh seed at every review; remove it")  # fmt: skip
            params = {name: value for name, value in params.items() if name != "seed"}
        try:
            exercise_kind.normalize_params(dict(params))
        except ParamError as exc:
            errors.append(f"{where}.params.{exc.field}: {exc.message}")
    return errors


def deck_validate(
    data: Any, *, stored_texts: Callable[[str], Collection[str]] | None = None
) -> DeckSpec:
    """Check a whole parsed document; raise ``DeckFileError`` listing every problem.

    Converting formulas is the one costly check. When the rest of the file is sound,
    ``stored_texts(slug)`` may name texts the deck already holds; those skip it, so
    re-importing a large deck stays fast.
    """
    errors: list[str] = []
    by_entry: dict[int, list[str]] = {}
    if not isinstance(data, Mapping):
        raise DeckFileError([f"expected a mapping with format, deck and cards, got {_type_name(data)}"])  # fmt: skip
    errors += [f"{name}: unknown field" for name in sorted(set(data) - _TOP_FIELDS, key=str)]

    version = data.get("format")
    if version != FORMAT_VERSION or isinstance(version, bool):
        errors.append(f"format: expected {FORMAT_VERSION}, got {version!r}")

    deck = data.get("deck")
    slug = title = description = ""
    if not isinstance(deck, Mapping):
        errors.append(f"deck: expected a mapping {{slug, title, description}}, got {_type_name(deck)}")  # fmt: skip
    else:
        errors += [f"deck.{name}: unknown field" for name in sorted(set(deck) - _DECK_FIELDS, key=str)]  # fmt: skip
        slug, title, description = deck.get("slug"), deck.get("title"), deck.get("description", "")
        if not isinstance(slug, str) or not _is_slug(slug) or len(slug) > DECK_SLUG_MAX:
            errors.append(
                f"deck.slug: expected a slug (letters, digits, '-', '_'; at most {DECK_SLUG_MAX}), got {slug!r}"
            )
        if not isinstance(title, str) or not title.strip() or len(title) > TITLE_MAX:
            errors.append(
                f"deck.title: expected text of 1 to {TITLE_MAX} characters, got {title!r}"
            )
        if description is None:
            description = ""
        if not isinstance(description, str) or len(description) > MAX_TEXT_CHARS:
            errors.append(f"deck.description: expected text of at most {MAX_TEXT_CHARS} characters, got {_type_name(description)}")  # fmt: skip
        errors += _nul_error("deck.title", title) + _nul_error("deck.description", description)

    entries = data.get("cards")
    if not isinstance(entries, list):
        errors.append(f"cards: expected a list, got {_type_name(entries)}")
        entries = []

    # Explicit keys first, so a derived key never takes a key a later entry names.
    seen_keys: dict[str, int] = {}
    for index, entry in enumerate(entries):
        key = entry.get("key") if isinstance(entry, Mapping) else None
        if key is None or key == "":
            continue
        where = f"cards[{index}].key"
        if not isinstance(key, str) or not _is_slug(key) or len(key) > KEY_MAX:
            by_entry.setdefault(index, []).append(f"{where}: expected a slug (letters, digits, '-', '_'; at most {KEY_MAX}), got {key!r}")  # fmt: skip
        elif key in seen_keys:
            by_entry.setdefault(index, []).append(
                f"{where}: {key!r} is already the key of cards[{seen_keys[key]}]"
            )
        else:
            seen_keys[key] = index
    taken = set(seen_keys)

    cards: list[CardSpec] = []
    formulas: list[tuple[int, str, str]] = []  # (entry, field, text) still to convert
    for index, entry in enumerate(entries):
        at = f"cards[{index}]"
        entry_errors = by_entry.setdefault(index, [])
        if not isinstance(entry, Mapping):
            entry_errors.append(f"{at}: expected a mapping, got {_type_name(entry)}")
            continue
        entry_errors += [f"{at}.{name}: unknown field" for name in sorted(set(entry) - _CARD_FIELDS, key=str)]  # fmt: skip

        kind = entry.get("kind")
        if kind not in CARD_KINDS:
            entry_errors.append(f"{at}.kind: expected one of {', '.join(CARD_KINDS)}, got {kind!r}")

        texts = {}
        for name in ("prompt", "answer"):
            value = entry.get(name, "" if name == "answer" else None)
            if value is None and name == "answer":
                value = ""
            if not isinstance(value, str):
                entry_errors.append(f"{at}.{name}: expected Markdown text, got {_type_name(value)}")
                continue
            if len(value) > MAX_TEXT_CHARS:
                entry_errors.append(f"{at}.{name}: expected at most {MAX_TEXT_CHARS} characters, got {len(value)}")  # fmt: skip
                continue
            if nul := _nul_error(f"{at}.{name}", value):
                entry_errors += nul
                continue
            if "$" in value:
                formulas.append((index, name, value))
            texts[name] = value
        if "prompt" in texts and not texts["prompt"].strip():
            entry_errors.append(f"{at}.prompt: expected Markdown text, got an empty string")
        if kind in ("recall", "interview") and not texts.get("answer", "x").strip():
            entry_errors.append(f"{at}.answer: a {kind} card needs an answer")

        raw_tags = entry.get("tags", [])
        if raw_tags is None:
            raw_tags = []
        tags: list[str] = []
        if not isinstance(raw_tags, list):
            entry_errors.append(f"{at}.tags: expected a list of tag slugs, got {_type_name(raw_tags)}")  # fmt: skip
        else:
            for t_index, tag in enumerate(raw_tags):
                if not isinstance(tag, str) or not _is_slug(tag) or len(tag) > TAG_MAX:
                    entry_errors.append(f"{at}.tags[{t_index}]: expected a slug of at most {TAG_MAX} characters, got {tag!r}")  # fmt: skip
                elif tag not in tags:
                    tags.append(tag)

        exercise = entry.get("exercise")
        if kind == "exercise":
            if exercise is None:
                entry_errors.append(f"{at}.exercise: an exercise card needs {{kind, params}}")
            else:
                entry_errors += _exercise_error(exercise, f"{at}.exercise")
        elif exercise is not None and kind in CARD_KINDS:
            entry_errors.append(f"{at}.exercise: only exercise cards carry one; expected null for a {kind} card")  # fmt: skip

        active = entry.get("active", True)
        if not isinstance(active, bool):
            entry_errors.append(f"{at}.active: expected true or false, got {active!r}")

        if entry_errors:
            continue
        key = entry.get("key") or ""
        key_given = bool(key)
        if not key_given:
            key = _derived_key(texts["prompt"], taken)
            taken.add(key)
        cards.append(
            CardSpec(
                key=key,
                kind=kind,
                prompt=texts["prompt"],
                answer=texts["answer"],
                tags=tuple(sorted(tags)),
                exercise=(
                    {"kind": exercise["kind"], "params": dict(exercise.get("params") or {})}
                    if kind == "exercise"
                    else None
                ),
                active=active,
                key_given=key_given,
            )
        )

    sound = not errors and not any(by_entry.values())
    accepted = stored_texts(slug) if sound and stored_texts is not None else ()
    cache: dict[tuple[str, bool], bool] = {}
    for index, name, text in formulas:
        if text not in accepted:
            bad = _math_problem(text, cache)
            if bad is not None:
                by_entry[index].append(f"cards[{index}].{name}: math does not render: ${bad}$")
    for index in sorted(by_entry):
        errors += by_entry[index]

    if errors:
        raise DeckFileError(errors)
    return DeckSpec(slug=slug, title=title.strip(), description=description, cards=cards)


# --- Import -----------------------------------------------------------------------


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
    if _is_source(data):
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
        fields = [
            "key", "kind", "prompt", "answer", "exercise", "position", "is_active", "updated_at",
        ]  # fmt: skip

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

        if activated or deactivated:
            sync_scheduled(deck_ids=[deck.pk])
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


# --- Export -----------------------------------------------------------------------


def deck_export(*, deck: Deck) -> dict:
    """The deck as a format-1 document; importing it reproduces the deck.

    Cards come in deck order (position, then id). A card made without a key (in the
    admin or the API) is written with one derived from its prompt; importing the
    document back adopts that card and stores the key.
    """
    cards = list(Card.objects.filter(deck=deck).order_by("position", "id").prefetch_related("tags"))
    taken = {card.key for card in cards if card.key}
    entries = []
    for card in cards:
        key = card.key
        if not key:
            key = _derived_key(card.prompt, taken)
            taken.add(key)
        entries.append(
            {
                "key": key,
                "kind": card.kind,
                "prompt": card.prompt,
                "answer": card.answer,
                "tags": sorted(tag.name for tag in card.tags.all()),
                "exercise": card.exercise,
                "active": card.is_active,
            }
        )
    return {
        "format": FORMAT_VERSION,
        "deck": {"slug": deck.slug, "title": deck.title, "description": deck.description},
        "cards": entries,
    }


class _BlockDumper(yaml.SafeDumper):
    """Multi-line text as YAML block literals, so Markdown stays readable in diffs."""


def _str_representer(dumper: yaml.SafeDumper, value: str):
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_BlockDumper.add_representer(str, _str_representer)


def deck_dump(document: Mapping, *, fmt: str = "yaml", stream: IO[str] | None = None) -> str:
    """Serialise a deck document as ``yaml`` or ``json`` text (and write it to ``stream``)."""
    if fmt == "json":
        text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    elif fmt == "yaml":
        text = yaml.dump(
            dict(document),
            Dumper=_BlockDumper,
            sort_keys=False,
            allow_unicode=True,
            width=100,
        )
    else:
        raise ValueError(f"format: expected yaml or json, got {fmt!r}")
    if stream is not None:
        stream.write(text)
    return text


__all__ = [
    "CardSpec",
    "DeckFileError",
    "DeckSpec",
    "ImportReport",
    "deck_dump",
    "deck_export",
    "deck_import",
    "deck_load",
    "deck_validate",
]

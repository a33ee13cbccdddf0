"""Decks as Anki packages (``.apkg``) and a learner's review log as CSV for Anki's FSRS tools.

Recall and interview cards become Basic notes; exercise cards a worked example of
one fixed variant (the card's own seed, else one derived from the deck slug and
card key) with its solution. Math goes out in Anki's MathJax delimiters, ``\\(..\\)``
inline and ``\\[..\\]`` display. Note guids derive from the deck slug and the card
key, and the deck and note-type ids from fixed names, so importing a re-export
updates the notes instead of duplicating them.

A package is built once per deck version and kept in the cache (``deck_apkg_cached``):
the key is a digest of what goes into it, so any change gives a fresh file.
"""

from __future__ import annotations

import csv
import hashlib
import html
import io
import logging
import os
import tempfile
from collections.abc import Iterable
from typing import Any

import genanki
import nh3
import numpy as np
from django.core.cache import cache

from exercises.kinds import get_kind
from exercises.kinds.base import tex_matrix, tex_vector
from labs.selectors import LabNotFound, lab_get
from studyapp.common.rendering import markdown_with_math

from .models import Card, Deck, ReviewLog

logger = logging.getLogger(__name__)

# Worked examples draw from seeds below this bound (31 bits), stable for a card.
ANKI_SEED_LIMIT = 2**31 - 1
# Part of every cached package's key: bump it when the export itself changes, so
# packages built by the previous code are not served after a deploy.
APKG_LAYOUT = 2
# A package not asked for in a day leaves the cache; a new deck version never waits.
APKG_CACHE_SECONDS = 24 * 60 * 60

CSS = """.card { font-family: system-ui, sans-serif; font-size: 18px; text-align: left;
  color: #1b1b1b; background: #fff; max-width: 42em; margin: 0 auto; }
pre, code { font-size: 15px; } .kind { color: #666; font-size: 14px; }"""


def _stable_id(name: str) -> int:
    """A positive 31-bit id from a name: the same on every export."""
    return int(hashlib.sha256(name.encode()).hexdigest()[:8], 16) & 0x7FFFFFFF or 1


BASIC_MODEL = genanki.Model(
    _stable_id("study-service basic"),
    "Study service: Basic",
    fields=[{"name": "Front"}, {"name": "Back"}, {"name": "Kind"}],
    templates=[
        {
            "name": "Card 1",
            "qfmt": '<div class="kind">{{Kind}}</div>{{Front}}',
            "afmt": '{{FrontSide}}<hr id="answer">{{Back}}',
        }
    ],
    css=CSS,
)


def _mathjax(tex: str, display: bool) -> str:
    tex = html.escape(tex.strip(), quote=False)
    return rf"\[{tex}\]" if display else rf"\({tex}\)"


def markdown_to_anki(text: str) -> str:
    """Card Markdown to HTML with the math left as MathJax for Anki to typeset."""
    return nh3.clean(markdown_with_math(text, _mathjax), link_rel="noopener noreferrer")


def _tex_value(value: Any) -> str:
    array = np.asarray(value)
    if array.ndim == 0:
        number = float(array)
        return str(int(number)) if number.is_integer() else f"{number:.4g}"
    if array.ndim == 1:
        return tex_vector(value)
    return tex_matrix(value)


def card_key(card: Card) -> str:
    return card.key or f"id-{card.pk}"


def worked_example(card: Card, deck_slug: str) -> tuple[str, str]:
    """``(front, back)`` Markdown of one fixed variant of an exercise card and its solution."""
    spec = card.exercise or {}
    kind = get_kind(spec.get("kind", ""))
    params = kind.normalize_params(spec.get("params") or {})
    if params.get("seed") is None:
        params["seed"] = _stable_id(f"{deck_slug}/{card_key(card)}") % ANKI_SEED_LIMIT
    generated = kind.generate(params, np.random.default_rng(params["seed"]))
    front = f"{card.prompt}\n\n**Worked example** ({kind.title}):\n\n{generated.prompt}"
    lines = ["**Solution**", ""]
    for ask in generated.asks:
        value = generated.solution[ask["name"]]
        lines.append(f"- `{ask['name']}`: $${_tex_value(value)}$$")
    if card.answer.strip():
        lines += ["", card.answer]
    return front, "\n".join(lines)


def lab_sides(card: Card) -> tuple[str, str]:
    """A lab card as a note: the card's and the lab's prompt; the lab's reference solution.

    The reference is shown as source text, for reading; nothing here runs it.
    """
    lab = lab_get(card.lab or "")
    front = f"{card.prompt}\n\n**Lab: {lab.title}**\n\n{lab.prompt}"
    back = f"**Reference solution**\n\n```python\n{lab.reference.strip()}\n```"
    if card.answer.strip():
        back += f"\n\n{card.answer}"
    return front, back


def interview_sides(card: Card) -> tuple[str, str]:
    """An interview card as a note: the question; the model answer, then its key points
    (the list a written answer is ticked against on the review page)."""
    points = [str(point).strip() for point in card.points or [] if str(point).strip()]
    back = card.answer
    if points:
        back = f"{back}\n\n**Key points**\n\n" + "\n".join(f"- {point}" for point in points)
    return card.prompt, back.strip()


def deck_package(*, deck: Deck) -> genanki.Package:
    anki_deck = genanki.Deck(_stable_id(f"study-service deck {deck.slug}"), deck.title)
    anki_deck.description = markdown_to_anki(deck.description)
    cards = Card.objects.filter(deck=deck, is_active=True).order_by("position", "id")
    for card in cards.prefetch_related("tags"):
        if card.kind == Card.Kind.EXERCISE:
            try:
                front, back = worked_example(card, deck.slug)
            except (KeyError, ValueError):  # a broken exercise spec: export the card's text
                front, back = card.prompt, card.answer
        elif card.kind == Card.Kind.LAB:
            try:
                front, back = lab_sides(card)
            except LabNotFound:  # a lab no longer offered: export the card's text
                front, back = card.prompt, card.answer
        elif card.kind == Card.Kind.INTERVIEW:
            front, back = interview_sides(card)
        else:
            front, back = card.prompt, card.answer
        tags = [tag.name for tag in card.tags.all()] + [f"kind::{card.kind}"]
        anki_deck.add_note(
            genanki.Note(
                model=BASIC_MODEL,
                fields=[markdown_to_anki(front), markdown_to_anki(back), card.get_kind_display()],
                guid=genanki.guid_for(deck.slug, card_key(card)),
                tags=tags,
                sort_field=f"{card.position:06d}",
            )
        )
    return genanki.Package(anki_deck)


def deck_apkg(*, deck: Deck) -> bytes:
    """The deck as the bytes of an ``.apkg`` file (a zip holding an SQLite collection)."""
    package = deck_package(deck=deck)
    handle, path = tempfile.mkstemp(suffix=".apkg")
    os.close(handle)
    try:
        package.write_to_file(path)
        with open(path, "rb") as f:
            return f.read()
    finally:
        os.unlink(path)


def deck_version(*, deck: Deck) -> str:
    """A digest of everything an export of ``deck`` reads: the deck's own fields and,
    for its active cards, each card's id and last change and its tag names.

    Saves in the admin, imports (which stamp ``updated_at`` on every card they change,
    retag or deactivate), the admin's activate and deactivate actions (the set of
    active ids changes) and tag renames all give a new digest.
    """
    digest = hashlib.sha256()
    deck_fields = (APKG_LAYOUT, deck.pk, deck.slug, deck.title, deck.description, deck.updated_at)
    digest.update(repr(deck_fields).encode())
    active = Card.objects.filter(deck=deck, is_active=True)
    digest.update(repr(list(active.order_by("pk").values_list("pk", "updated_at"))).encode())
    links = Card.tags.through.objects.filter(card__in=active)
    digest.update(
        repr(
            list(links.order_by("card_id", "tag__name").values_list("card_id", "tag__name"))
        ).encode()
    )
    return digest.hexdigest()


def deck_apkg_cached(*, deck: Deck) -> bytes:
    """``deck_apkg``, built once per deck version (``deck_version``) and then served
    from the cache. A cache that fails costs a rebuild, never the download."""
    key = f"anki:apkg:{deck.pk}:{deck_version(deck=deck)}"
    try:
        cached = cache.get(key)
    except Exception as exc:
        logger.warning("Anki package cache unavailable: %s: %s", type(exc).__name__, exc)
        return deck_apkg(deck=deck)
    if isinstance(cached, bytes):
        return cached
    package = deck_apkg(deck=deck)
    try:
        cache.set(key, package, timeout=APKG_CACHE_SECONDS)
    except Exception as exc:
        logger.warning("Anki package cache unavailable: %s: %s", type(exc).__name__, exc)
    return package


# --- Review log for FSRS tools -------------------------------------------------------

FSRS_COLUMNS = ["card_id", "review_time", "review_rating", "review_state", "review_duration"]
RATING: dict[str, int] = {ReviewLog.Result.FAIL: 1, ReviewLog.Result.PASS: 3}  # Again, Good
STATE_NEW, STATE_REVIEW, STATE_RELEARNING = 0, 2, 3


def fsrs_rows(logs: Iterable[ReviewLog]) -> Iterable[list]:
    """Rows in the layout of fsrs-optimizer's ``revlog.csv``, oldest first.

    The log is read net of undos (an undone review and its compensating entry are
    both left out). Rating 1 (Again) for a fail, 3 (Good) for a pass; state 0 (New)
    for a card's first review, 3 (Relearning) right after a fail, else 2 (Review).
    The service does not time reviews, so the duration is 0.
    """
    last_result: dict[int, str] = {}
    for log in logs:
        previous = last_result.get(log.card_id)
        if previous is None:
            state = STATE_NEW
        elif previous == ReviewLog.Result.FAIL:
            state = STATE_RELEARNING
        else:
            state = STATE_REVIEW
        last_result[log.card_id] = log.result
        yield [log.card_id, int(log.reviewed_at.timestamp() * 1000), RATING[log.result], state, 0]


def reviews_csv(logs: Iterable[ReviewLog]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(FSRS_COLUMNS)
    writer.writerows(fsrs_rows(logs))
    return out.getvalue()

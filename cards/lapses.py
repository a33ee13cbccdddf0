"""Lapses and leeches: where a leech is decided.

A *lapse* is a failed review of a card, net of undos (an undone fail and its undo entry
count nowhere). A learner's card is a *leech* once its lapses reach
``STUDY_LEECH_LAPSES``. :func:`is_leech` is the definition; the reads that cannot call
it per row take its other forms from here: :func:`leech_q` in the ORM (the card page and
stats: :func:`leech_card_ids`, :func:`leech_stats`) and :func:`leech_sql` in SQL (the
staff's item analysis, ``cards.db.item_figures``). The due page (``cards.due``) and the
benchmarks' floor (``benchmarks/floor.py``) call :func:`is_leech` on the lapses they read.
``tests/cards/test_lapse_forms.py`` holds the forms equal to :func:`is_leech`.

The lapses of every (learner, card) pair are kept by the database in ``LapseCount``
(triggers on the review log); reads go through it, not through the log.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.conf import settings
from django.db.models import OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce

from .models import LapseCount
from .selectors import scheduled_states


def leech_lapses() -> int:
    """The lapses that make a leech: ``STUDY_LEECH_LAPSES`` (8 by default)."""
    return settings.STUDY_LEECH_LAPSES


def is_leech(lapses: int) -> bool:
    """Whether a card failed ``lapses`` times (net of undos) by a learner is a leech."""
    return lapses >= leech_lapses()


def leech_q(field: str) -> Q:
    """:func:`is_leech` of the lapses in ``field``, as an ORM condition."""
    return Q(**{f"{field}__gte": leech_lapses()})


def leech_sql(column: str) -> str:
    """:func:`is_leech` of the lapses in ``column``, as an SQL condition with one
    parameter, :func:`leech_lapses` (so a changed setting needs no new statement)."""
    return f"{column} >= %s"


def leech_card_ids(*, learner, card_ids: Iterable[int] | QuerySet | None = None) -> set[int]:
    """The learner's leeches among ``card_ids`` (all of their cards by default).

    ``card_ids`` may be a list or a queryset of ids (kept in SQL). Read from the lapse
    counts through ``(learner, n)``: the learner's leeches only, not their log.
    """
    leeches = LapseCount.objects.filter(leech_q("n"), learner=learner)
    if card_ids is not None:
        if not isinstance(card_ids, QuerySet):
            card_ids = list(card_ids)
        leeches = leeches.filter(card_id__in=card_ids)
    return set(leeches.values_list("card_id", flat=True))


def leech_stats(*, learner) -> dict:
    """``leech``, ``leech_count`` and ``leech_cards`` of stats/: the learner's scheduled leeches.

    The learner's leeches from the lapse counts (most learners have none: one short
    read), then those few checked against the ladder: no pass over the log or the states.
    """
    candidates = leech_card_ids(learner=learner)
    leeches: list[int] = []
    if candidates:
        leeches = sorted(
            scheduled_states(learner=learner)
            .filter(card_id__in=sorted(candidates))
            .values_list("card_id", flat=True)
        )
    return {"leech": bool(leeches), "leech_count": len(leeches), "leech_cards": leeches}


def lapses_column() -> Coalesce:
    """The learner's lapses of a review state's card, as a column over review states."""
    counts = LapseCount.objects.filter(
        learner_id=OuterRef("learner_id"), card_id=OuterRef("card_id")
    )
    return Coalesce(Subquery(counts.values("n")[:1]), 0)

"""Item analysis for staff: which cards and exercises learners fail, and why.

Everything is computed set-based in SQL, one statement per page whatever the
number of learners: per card from ``CardFigures`` (the review log net of undos,
summed per card and lapse count by the database as the log is written) and the open
reports; per exercise kind from ``ExerciseKindFigures`` (the attempts' stored verdicts,
``exercises.Attempt.result``: per-part ``wrong_cells`` and the ``diagnosis`` of
mistakes, counted by the database as the attempts are written).
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass

from exercises.checking import MISTAKES
from exercises.kinds import KINDS

from .db.item_figures import KIND_FIGURES_SQL, card_filter, card_sql, fetch
from .lapses import leech_lapses

PAGE_SIZE = 50
# Column name -> heading; every one is sortable.
COLUMNS = {
    "card": "Card",
    "learners": "Learners",
    "reviews": "Reviews",
    "first_pass_rate": "Pass rate, first review",
    "later_pass_rate": "Pass rate, later reviews",
    "lapses": "Lapses",
    "leeches": "Leeches",
    "open_reports": "Open reports",
}
DEFAULT_ORDER = "-lapses"
TOP_CELLS = 12


@dataclass(frozen=True)
class CardRow:
    card: int
    deck: str
    kind: str
    prompt: str
    is_active: bool
    learners: int
    reviews: int
    first_reviews: int
    first_pass_rate: float | None
    later_reviews: int
    later_pass_rate: float | None
    lapses: int
    leeches: int
    open_reports: int


def card_row(r: tuple) -> CardRow:
    """A :class:`CardRow` from a row of the per-card statement."""
    return CardRow(
        card=r[0],
        deck=r[1],
        kind=r[2],
        prompt=r[3],
        is_active=bool(r[4]),
        learners=int(r[5]),
        reviews=int(r[6]),
        first_reviews=int(r[7]),
        first_pass_rate=None if r[8] is None else float(r[8]),
        later_reviews=int(r[9]),
        later_pass_rate=None if r[10] is None else float(r[10]),
        lapses=int(r[11]),
        leeches=int(r[12]),
        open_reports=int(r[13]),
    )


def card_analysis(
    *,
    deck: str | None = None,
    kind: str | None = None,
    tag: str | None = None,
    order: str = DEFAULT_ORDER,
    limit: int | None = PAGE_SIZE,
    offset: int = 0,
) -> tuple[list[CardRow], int]:
    """One page of per-card figures and the number of cards matching, in one statement
    (every matching card when ``limit`` is None: the CSV export).

    ``learners`` counts those who reviewed the card; a review undone and its undo
    entry count nowhere. The first review is each learner's earliest remaining one;
    a learner whose fails make a leech (:func:`cards.lapses.leech_lapses`) counts in
    ``leeches``. The figures are read from ``CardFigures``, which the database keeps
    exact as the log is written: no lag, and a cost that follows the cards, not the log.
    """
    column = order.lstrip("-")
    if column not in COLUMNS:
        raise ValueError(f"order: expected one of {', '.join(COLUMNS)}, got {order!r}")
    direction = "DESC" if order.startswith("-") else "ASC"
    sort = "c.id" if column == "card" else f"COALESCE(c.{column}, -1)"
    where, params = card_filter(deck=deck, kind=kind, tag=tag)
    paged = limit is not None
    sql = card_sql(where=where, sort=sort, direction=direction, paged=paged)
    fetched = fetch(sql, [*params, leech_lapses(), False, *([limit, offset] if paged else [])])
    if not fetched and offset:
        # Past the last page: the total still comes from a first-page read.
        return [], card_analysis(deck=deck, kind=kind, tag=tag, order=order, limit=1)[1]
    total = fetched[0][-1] if fetched else 0
    rows = [card_row(r) for r in fetched]
    return rows, int(total)


# --- Exercise kinds -----------------------------------------------------------------


def exercise_kind_analysis() -> list[dict]:
    """Per exercise kind: attempts, share correct, diagnosed mistakes and wrong cells.

    ``mistakes`` is ``[{code, text, count}]`` most frequent first; ``parts`` is
    ``[{name, wrong, cells: [{cell, count}]}]`` with the most often wrong cells. Read from
    the counts the database keeps as attempts are written: one statement over a few rows
    per kind, whatever the number of attempts.
    """
    return kinds_arranged(fetch(KIND_FIGURES_SQL, []))


def kinds_arranged(fetched: list[tuple]) -> list[dict]:
    """The rows ``(section, kind, key, sub, count)`` arranged per kind, as
    :func:`exercise_kind_analysis` returns them."""
    kinds: dict[str, dict] = defaultdict(
        lambda: {"attempts": 0, "correct": 0, "mistakes": [], "parts": {}}
    )
    for section, kind, key, sub, count in fetched:
        entry = kinds[kind]
        if section in ("attempts", "correct"):
            entry[section] = int(count)
        elif section == "mistake":
            mistake = MISTAKES.get(key)
            entry["mistakes"].append(
                {"code": key, "text": mistake.text if mistake else "", "count": int(count)}
            )
        elif section == "part":
            entry["parts"].setdefault(key, {"name": key, "wrong": 0, "cells": []})["wrong"] = int(
                count
            )
        else:
            part = entry["parts"].setdefault(key, {"name": key, "wrong": 0, "cells": []})
            part["cells"].append({"cell": json.loads(sub), "count": int(count)})
    result = []
    for name in sorted(kinds):
        entry = kinds[name]
        kind = KINDS.get(name)
        parts = sorted(entry["parts"].values(), key=lambda p: (-p["wrong"], p["name"]))
        for part in parts:
            part["cells"] = sorted(part["cells"], key=lambda c: (-c["count"], c["cell"]))[
                :TOP_CELLS
            ]
        attempts = entry["attempts"]
        result.append(
            {
                "kind": name,
                "title": kind.title if kind else name,
                "attempts": attempts,
                "correct_rate": entry["correct"] / attempts if attempts else None,
                "mistakes": sorted(entry["mistakes"], key=lambda m: (-m["count"], m["code"])),
                "parts": parts,
            }
        )
    return result

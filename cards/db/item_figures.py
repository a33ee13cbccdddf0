"""The item analysis's statements: per-card figures over a filter, and the per-kind counts.

Both read the counts tables the database keeps as the log and the attempts are written
(``CardFigures``, ``ExerciseKindFigures``: ``cards.db.counts``), one statement a page.
The figures' meaning and their arrangement are in ``cards.item_analysis``.
"""

from __future__ import annotations

from typing import Any

from django.db import connection

from ..lapses import leech_sql


def card_filter(*, deck: str | None, kind: str | None, tag: str | None) -> tuple[str, list]:
    """SQL condition over the cards ``c`` and decks ``d`` of the filters given, and its
    parameters."""
    where, params = ["1 = 1"], []
    if deck:
        where.append("d.slug = %s")
        params.append(deck)
    if kind:
        where.append("c.kind = %s")
        params.append(kind)
    if tag:
        where.append(
            "EXISTS (SELECT 1 FROM cards_card_tags ct JOIN cards_tag t ON t.id = ct.tag_id"
            " WHERE ct.card_id = c.id AND t.name = %s)"
        )
        params.append(tag)
    return " AND ".join(where), params


# Per-card figures over the cards of a ``picked`` CTE, summed from the few CardFigures rows
# of each card (one per lapse count its learners have), which the database keeps as the
# log is written; its parameters are the leech threshold and ``False`` (open reports).
_CARD_FIGURES = f"""
        per_card AS (
            SELECT card_id, SUM(learners) AS learners, SUM(reviews) AS reviews,
                   SUM(lapses * learners) AS lapses, SUM(first_passes) AS first_pass,
                   SUM(reviews) - SUM(learners) AS later,
                   SUM(passes) - SUM(first_passes) AS later_pass,
                   SUM(CASE WHEN {leech_sql("lapses")} THEN learners ELSE 0 END) AS leeches
            FROM cards_cardfigures
            WHERE card_id IN (SELECT id FROM picked)
            GROUP BY card_id
        ),
        reports AS (
            SELECT card_id, COUNT(*) AS open_reports FROM cards_report
            WHERE resolved = %s AND card_id IN (SELECT id FROM picked) GROUP BY card_id
        ),
        card_rows AS (
            SELECT c.id, d.title AS deck, c.kind, c.prompt, c.is_active,
                   COALESCE(p.learners, 0) AS learners, COALESCE(p.reviews, 0) AS reviews,
                   COALESCE(p.learners, 0) AS first_reviews,
                   CASE WHEN p.learners > 0 THEN 1.0 * p.first_pass / p.learners END
                       AS first_pass_rate,
                   COALESCE(p.later, 0) AS later_reviews,
                   CASE WHEN p.later > 0 THEN 1.0 * p.later_pass / p.later END AS later_pass_rate,
                   COALESCE(p.lapses, 0) AS lapses, COALESCE(p.leeches, 0) AS leeches,
                   COALESCE(r.open_reports, 0) AS open_reports
            FROM cards_card c
            JOIN cards_deck d ON d.id = c.deck_id
            LEFT JOIN per_card p ON p.card_id = c.id
            LEFT JOIN reports r ON r.card_id = c.id
            WHERE c.id IN (SELECT id FROM picked)
        )
"""


def card_sql(*, where: str, sort: str, direction: str, paged: bool) -> str:
    """The per-card statement: the filter's parameters, then the leech threshold, ``False``
    (open reports) and, when ``paged``, the limit and the offset."""
    return f"""
        WITH picked AS (
            SELECT c.id FROM cards_card c JOIN cards_deck d ON d.id = c.deck_id WHERE {where}
        ),
{_CARD_FIGURES}
        SELECT c.*, COUNT(*) OVER () AS total FROM card_rows c
        ORDER BY {sort} {direction}, c.id
        {"LIMIT %s OFFSET %s" if paged else ""}
    """


# The counts the database keeps per kind (``ExerciseKindFigures``), in the rows
# ``(section, kind, key, sub, count)`` that ``exercise_kind_analysis`` arranges.
KIND_FIGURES_SQL = "SELECT section, kind, item, cell, n FROM cards_exercisekindfigures WHERE n <> 0"


def fetch(sql: str, params: list[Any]) -> list[tuple[Any, ...]]:
    """Every row of one of these statements."""
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return list(cursor.fetchall())

"""The item analysis grouped from the whole review log at read time: the yardstick.

This is how ``cards.item_analysis.card_analysis`` read its figures before they were kept
by the database (``CardFigures``): one statement grouping the log by (card, learner) for
the page's cards; and ``exercise_kind_analysis`` before ``ExerciseKindFigures``: one
statement unpacking every attempt's JSON verdict. ``benchmarks/bench_item_analysis.py`` runs it beside the kept figures on
the same data, prints both and their ratio, and checks that they agree.
"""

from __future__ import annotations

from django.db import connection, transaction

from cards import item_analysis
from cards.db.counts import kept
from cards.db.item_figures import card_filter
from cards.item_analysis import COLUMNS, DEFAULT_ORDER, PAGE_SIZE, CardRow, card_row
from cards.lapses import leech_lapses

_CARD_FIGURES = f"""
        per_learner AS (
            SELECT l.card_id, l.learner_id, COUNT(*) AS reviews,
                   SUM(CASE WHEN l.result = 'pass' THEN 1 ELSE 0 END) AS passes,
                   SUM(CASE WHEN l.result = 'fail' THEN 1 ELSE 0 END) AS fails,
                   MIN(2 * l.id + CASE WHEN l.result = 'pass' THEN 1 ELSE 0 END) %% 2
                       AS first_pass
            FROM cards_reviewlog l
            WHERE {kept("l")}
              AND l.card_id IN (SELECT id FROM picked)
            GROUP BY l.card_id, l.learner_id
        ),
        per_card AS (
            SELECT card_id, COUNT(*) AS learners, SUM(reviews) AS reviews, SUM(fails) AS lapses,
                   SUM(first_pass) AS first_pass, SUM(reviews) - COUNT(*) AS later,
                   SUM(passes) - SUM(first_pass) AS later_pass,
                   SUM(CASE WHEN fails >= %s THEN 1 ELSE 0 END) AS leeches
            FROM per_learner GROUP BY card_id
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


def card_analysis_from_log(
    *,
    deck: str | None = None,
    kind: str | None = None,
    tag: str | None = None,
    order: str = DEFAULT_ORDER,
    limit: int = PAGE_SIZE,
    offset: int = 0,
) -> tuple[list[CardRow], int]:
    """One page as ``card_analysis`` gives it, grouped from the log (two statements on
    PostgreSQL: the memory and JIT settings, then the figures)."""
    column = order.lstrip("-")
    if column not in COLUMNS:
        raise ValueError(f"order: expected one of {', '.join(COLUMNS)}, got {order!r}")
    direction = "DESC" if order.startswith("-") else "ASC"
    sort = "c.id" if column == "card" else f"COALESCE(c.{column}, -1)"
    where, params = card_filter(deck=deck, kind=kind, tag=tag)
    sql = f"""
        WITH picked AS (
            SELECT c.id FROM cards_card c JOIN cards_deck d ON d.id = c.deck_id WHERE {where}
        ),
{_CARD_FIGURES}
        SELECT c.*, COUNT(*) OVER () AS total FROM card_rows c
        ORDER BY {sort} {direction}, c.id
        LIMIT %s OFFSET %s
    """
    with transaction.atomic(savepoint=False), connection.cursor() as cursor:
        analysis_tune(cursor)
        cursor.execute(sql, [*params, leech_lapses(), False, limit, offset])
        fetched = cursor.fetchall()
    if not fetched and offset:
        first = card_analysis_from_log(deck=deck, kind=kind, tag=tag, order=order, limit=1)
        return [], first[1]
    total = fetched[0][-1] if fetched else 0
    return [card_row(r) for r in fetched], int(total)


WORK_MEM = "128MB"


def analysis_tune(cursor) -> None:
    """PostgreSQL: memory to group a million (learner, card) pairs without spilling to
    disk, and no JIT compilation (it costs more than it saves on one analytic statement).
    Local to the transaction; one statement. Nothing to do on SQLite."""
    if connection.vendor == "postgresql":
        cursor.execute(
            "SELECT set_config('work_mem', %s, true), set_config('jit', 'off', true)",
            [WORK_MEM],
        )


def kind_figures_sql() -> str:
    """Rows ``(section, kind, key, sub, count)`` over the attempts; one parameter (True).
    How the exercise kinds page read before ``ExerciseKindFigures``.

    Sections: ``attempts`` and ``correct`` per kind, ``mistake`` per diagnosis code,
    ``part`` per wrong part, ``cell`` per wrong cell of a part (``sub``, as JSON text).
    """
    base = "FROM exercises_attempt a JOIN exercises_exercise e ON e.id = a.exercise_id"
    if connection.vendor == "postgresql":
        diagnosis = (
            "CROSS JOIN LATERAL jsonb_array_elements(CASE WHEN jsonb_typeof(a.result->'diagnosis')"
            " = 'array' THEN a.result->'diagnosis' ELSE '[]'::jsonb END) dg"
        )
        code = "dg.value->>'code'"
        parts = (
            "CROSS JOIN LATERAL jsonb_each(CASE WHEN jsonb_typeof(a.result->'parts') = 'object'"
            " THEN a.result->'parts' ELSE '{}'::jsonb END) p"
        )
        part_wrong = "p.value->>'correct' = 'false'"
        cells = (
            "CROSS JOIN LATERAL jsonb_array_elements(CASE WHEN jsonb_typeof(p.value->'wrong_cells')"
            " = 'array' THEN p.value->'wrong_cells' ELSE '[]'::jsonb END) cell"
        )
        cell = "cell.value::text"
    else:
        diagnosis = ", json_each(a.result, '$.diagnosis') dg"
        code = "json_extract(dg.value, '$.code')"
        parts = ", json_each(a.result, '$.parts') p"
        part_wrong = "json_extract(p.value, '$.correct') = 0"
        cells = ", json_each(p.value, '$.wrong_cells') cell"
        cell = "cell.value"
    return f"""
        SELECT 'attempts', e.kind, '', '', COUNT(*) {base} GROUP BY e.kind
        UNION ALL
        SELECT 'correct', e.kind, '', '', COUNT(*) {base} WHERE a.correct = %s GROUP BY e.kind
        UNION ALL
        SELECT 'mistake', e.kind, {code}, '', COUNT(*) {base} {diagnosis}
            GROUP BY e.kind, {code}
        UNION ALL
        SELECT 'part', e.kind, p.key, '', COUNT(*) {base} {parts} WHERE {part_wrong}
            GROUP BY e.kind, p.key
        UNION ALL
        SELECT 'cell', e.kind, p.key, {cell}, COUNT(*) {base} {parts} {cells}
            GROUP BY e.kind, p.key, {cell}
    """


def exercise_kind_analysis_from_attempts() -> list[dict]:
    """The exercise kinds page as ``exercise_kind_analysis`` gives it, grouped from every
    attempt's JSON verdict at read time (two statements on PostgreSQL)."""
    with transaction.atomic(savepoint=False), connection.cursor() as cursor:
        analysis_tune(cursor)
        cursor.execute(kind_figures_sql(), [True])
        fetched = cursor.fetchall()
    return item_analysis.kinds_arranged(fetched)

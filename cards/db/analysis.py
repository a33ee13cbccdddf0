"""Item analysis SQL that differs between PostgreSQL and SQLite (``cards.item_analysis``).

:func:`analysis_tune` sets up a transaction for one large analytic statement;
:func:`kind_figures_sql` is the per-exercise-kind statement, which unpacks the attempts'
JSON verdicts with each database's own JSON functions.
"""

from __future__ import annotations

from django.db import connection

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

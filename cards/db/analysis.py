"""The exercise attempts' verdicts, unpacked into counts for the item analysis, per database.

``ExerciseKindFigures`` counts per exercise kind: the ``attempts``, the ``correct`` ones,
each diagnosed ``mistake`` (``item``: its code), each wrong ``part`` (``item``: its name)
and each wrong ``cell`` of a part (``item``: the part, ``cell``: the cell as JSON text),
read from ``exercises.Attempt.result`` (per-part ``correct`` and ``wrong_cells``, and the
``diagnosis``) with each database's own JSON functions. The triggers declared in
``cards.db.counts`` (``KIND_FIGURES``) run these queries over the attempts a statement
wrote or deleted. A verdict of an unexpected shape counts what it holds and never fails
the write.
"""

from __future__ import annotations

KIND_FIGURES_TABLE = "cards_exercisekindfigures"
KIND_FIGURES_KEY = "kind, section, item, cell"


def pg_attempt_rows(attempts: str, d: str) -> str:
    """PostgreSQL: rows ``(kind, section, item, cell, d)`` for the attempts ``attempts``
    (a transition table), each counting ``d``."""
    base = f"FROM {attempts} a JOIN exercises_exercise e ON e.id = a.exercise_id"
    diagnosis = (
        "CROSS JOIN LATERAL jsonb_array_elements(CASE WHEN jsonb_typeof(a.result->'diagnosis')"
        " = 'array' THEN a.result->'diagnosis' ELSE '[]'::jsonb END) dg"
    )
    parts = (
        "CROSS JOIN LATERAL jsonb_each(CASE WHEN jsonb_typeof(a.result->'parts') = 'object'"
        " THEN a.result->'parts' ELSE '{}'::jsonb END) p"
    )
    cells = (
        "CROSS JOIN LATERAL jsonb_array_elements(CASE WHEN jsonb_typeof(p.value->'wrong_cells')"
        " = 'array' THEN p.value->'wrong_cells' ELSE '[]'::jsonb END) c"
    )
    code = (
        "CASE WHEN jsonb_typeof(dg.value) = 'object' THEN COALESCE(dg.value->>'code', '') "
        "ELSE '' END"
    )
    return f"""
        SELECT e.kind, 'attempts' AS section, '' AS item, '' AS cell, {d} AS d {base}
        UNION ALL SELECT e.kind, 'correct', '', '', {d} {base} WHERE a.correct
        UNION ALL SELECT e.kind, 'mistake', {code}, '', {d} {base} {diagnosis}
        UNION ALL SELECT e.kind, 'part', p.key, '', {d} {base} {parts}
            WHERE jsonb_typeof(p.value) = 'object' AND p.value->>'correct' = 'false'
        UNION ALL SELECT e.kind, 'cell', p.key, c.value::text, {d} {base} {parts} {cells}
            WHERE jsonb_typeof(p.value) = 'object'
    """


def sqlite_attempt_rows(row: str, *, every: bool = False) -> str:
    """SQLite: rows ``(kind, section, item, cell)`` for the attempt ``row`` (NEW or OLD), or
    with ``every`` for each attempt ``row`` of the table."""
    if every:
        base, own = (
            f"FROM exercises_attempt {row} JOIN exercises_exercise e",
            f"e.id = {row}.exercise_id",
        )
    else:
        base, own = "FROM exercises_exercise e", f"e.id = {row}.exercise_id"
    code = (
        "CASE WHEN dg.type = 'object' "
        "THEN COALESCE(CAST(json_extract(dg.value, '$.code') AS TEXT), '') ELSE '' END"
    )
    parts = (
        f"json_each(CASE WHEN json_type({row}.result, '$.parts') = 'object' "
        f"THEN json_extract({row}.result, '$.parts') ELSE '{{}}' END) p"
    )
    diagnosis = (
        f"json_each(CASE WHEN json_type({row}.result, '$.diagnosis') = 'array' "
        f"THEN json_extract({row}.result, '$.diagnosis') ELSE '[]' END) dg"
    )
    # CASE, not AND: SQLite evaluates only the branch taken, and a part that is not an
    # object is no JSON text to read.
    cells = (
        "json_each(CASE WHEN p.type <> 'object' THEN '[]' "
        "WHEN json_type(p.value, '$.wrong_cells') = 'array' "
        "THEN json_extract(p.value, '$.wrong_cells') ELSE '[]' END) c"
    )
    wrong = "CASE WHEN p.type = 'object' THEN json_extract(p.value, '$.correct') END = 0"
    return f"""
        SELECT e.kind AS kind, 'attempts' AS section, '' AS item, '' AS cell {base} WHERE {own}
        UNION ALL SELECT e.kind, 'correct', '', '' {base} WHERE {own} AND {row}.correct
        UNION ALL SELECT e.kind, 'mistake', {code}, '' {base}, {diagnosis} WHERE {own}
        UNION ALL SELECT e.kind, 'part', p.key, '' {base}, {parts}
            WHERE {own} AND {wrong}
        UNION ALL SELECT e.kind, 'cell', p.key, CAST(c.value AS TEXT) {base}, {parts}, {cells}
            WHERE {own}
    """

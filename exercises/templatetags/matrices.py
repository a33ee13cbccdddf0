"""Matrices as HTML tables: read-only inputs, weight heat maps and answer grids.

A heat map is a table whose cells are tinted by value, so screen readers get the
numbers with their row (query) and column (key) headers while sighted readers
get the picture; static/js/playground.js builds the same markup.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from django import template
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from exercises.cells import Index, cell_name, cell_words, shape_words

register = template.Library()


def fmt(value, decimals: int = 3) -> str:
    if isinstance(value, bool):
        return "blocked" if value else "open"
    if value is None:
        return ""
    if isinstance(value, int):
        return str(value)  # counts in full, however large
    number = float(value)
    if math.isinf(number):
        return "\N{MINUS SIGN}∞" if number < 0 else "∞"
    if number.is_integer() and abs(number) < 1e12:
        return str(int(number))
    text = f"{number:.{decimals}f}"
    return "0" if text.strip("-0.") == "" else text.replace("-", "\N{MINUS SIGN}")


def heat_style(value) -> str:
    """Background and ink for a weight in [0, 1]: white to deep blue, ink flips for contrast."""
    try:
        w = min(max(float(value), 0.0), 1.0)
    except (TypeError, ValueError):
        return ""
    lightness = heat_lightness(w)
    ink = "#ffffff" if lightness <= HEAT_WHITE_INK_MAX else "#1d2430"
    return f"background:hsl(214,70%,{lightness}%);color:{ink}"


# Lightness of hsl(214, 70%, L) that keeps 4.5:1 text contrast: dark ink from 60 up,
# white ink from 50 down; shades between would fail with either ink, so they are skipped.
HEAT_DARK_INK_MIN = 60
HEAT_WHITE_INK_MAX = 50


def heat_lightness(weight: float) -> int:
    """98 (weight 0) to 24 (weight 1), darker for more weight, never in (50, 60)."""
    lightness = round(98 - 74 * weight)
    if HEAT_WHITE_INK_MAX < lightness < HEAT_DARK_INK_MIN:
        return HEAT_DARK_INK_MIN if lightness >= 55 else HEAT_WHITE_INK_MAX
    return lightness


def _rows(matrix) -> list[list]:
    if not isinstance(matrix, Sequence) or isinstance(matrix, str):
        return [[matrix]]
    if matrix and not isinstance(matrix[0], Sequence):
        return [list(matrix)]
    return [list(row) for row in matrix]


def _labels(labels, count: int, fallback: str) -> list[str]:
    labels = list(labels or [])
    return [
        str(labels[i]) if i < len(labels) and str(labels[i]) else f"{fallback} {i + 1}"
        for i in range(count)
    ]


@register.simple_tag
def matrix_table(
    matrix,
    caption: str,
    row_labels=None,
    col_labels=None,
    heat: bool = False,
    row_axis: str = "row",
    col_axis: str = "column",
    table_id: str = "",
) -> SafeString:
    rows = _rows(matrix)
    n_cols = max((len(r) for r in rows), default=0)
    rlabels = _labels(row_labels, len(rows), row_axis)
    clabels = _labels(col_labels, n_cols, col_axis)
    head = format_html(
        '<tr><th scope="col" class="axis">{} ↓ · {} →</th>{}</tr>',
        row_axis,
        col_axis,
        format_html_join("", '<th scope="col">{}</th>', ((c,) for c in clabels)),
    )
    body = []
    for label, row in zip(rlabels, rows, strict=True):
        cells = []
        for col, value in enumerate(row):
            title = f"{row_axis} {label}, {col_axis} {clabels[col]}: {fmt(value)}"
            if heat:
                cells.append(
                    format_html(
                        '<td style="{}" title="{}">{}</td>', heat_style(value), title, fmt(value)
                    )
                )
            else:
                cells.append(format_html("<td>{}</td>", fmt(value)))
        body.append(
            format_html('<tr><th scope="row">{}</th>{}</tr>', label, mark_safe("".join(cells)))
        )
    # In a sideways scroller: exercise.js and playground.js make it focusable when it overflows.
    return format_html(
        '<div class="scroll-x"><table class="data{}"{}><caption>{}</caption><thead>{}</thead>'
        "<tbody>{}</tbody></table></div>",
        " heatmap" if heat else "",
        format_html(' id="{}"', table_id) if table_id else "",
        caption,
        head,
        mark_safe("".join(str(b) for b in body)),
    )


CELL_MARKS = {"right": "✓", "wrong": "✗", "follows": "↪"}


@register.filter
def answer_cell_name(part: str) -> str:
    """The form field of a part answered in one input (a number or a choice)."""
    return cell_name(part)


# A text keyboard: phone decimal keypads (iOS's among them) may have no minus sign.
NUMBER_INPUT_ATTRS = mark_safe(
    'inputmode="text" pattern="[+\\-\u2212]?[0-9.,eE+\\-\u2212]*" autocapitalize="off" '
    'spellcheck="false"'
)


def _pick(values, index: tuple[int, ...]):
    try:
        for i in index:
            values = values[i]
    except (IndexError, KeyError, TypeError):
        return ""
    return values


def _shown(raw: Any) -> str:
    """A submitted number as the learner typed it, without padding zeros; whole numbers
    (counts) in full."""
    if raw is None or isinstance(raw, bool):
        return ""
    if isinstance(raw, str):
        return raw
    if isinstance(raw, int) or (float(raw).is_integer() and abs(raw) < 1e21):
        return str(int(raw))
    return f"{float(raw):.6g}"


@dataclass(frozen=True)
class _Marking:
    """How the cells of one part are marked once it is checked."""

    wrong: frozenset[Index]
    invalid: frozenset[Index]
    checked: bool
    follows: bool
    follows_from: str

    def state(self, index: Index) -> tuple[str, str]:
        """``(class, mark)`` of one cell: right, wrong or follows, and its symbol."""
        bad = index in self.wrong or index in self.invalid
        if index in self.invalid:
            return "wrong", ""
        if bad and self.follows and self.checked:
            return "follows", CELL_MARKS["follows"]
        if bad:
            return "wrong", CELL_MARKS["wrong"] if self.checked else ""
        return ("right", CELL_MARKS["right"]) if self.checked else ("", "")


def _answer_cell(
    part: str, index: Index, shown: str, marking: _Marking, disabled: bool, describedby: str
) -> SafeString:
    state, mark = marking.state(index)
    bad = index in marking.wrong or index in marking.invalid
    name = cell_name(part, index)
    mark_html: SafeString | str = ""
    described = [describedby] if describedby else []
    if mark:
        words = f"follows from {marking.follows_from}" if state == "follows" else state
        mark_id = "mark-" + name
        mark_html = format_html(
            '<span class="cell-mark" id="{}" role="img" aria-label="{}" title="{}">{}</span>',
            mark_id,
            words,
            words,
            mark,
        )
        described.append(mark_id)  # the verdict is read with the cell
    return format_html(
        '<td class="{}"><input type="text" {} autocomplete="off" '
        'name="{}" id="{}" value="{}" aria-label="{}"{}{}{}{}>{}</td>',
        state,
        NUMBER_INPUT_ATTRS,
        name,
        "id_" + name,
        shown,
        cell_words(part, index),
        mark_safe(' aria-invalid="true"') if bad and state != "follows" else "",
        mark_safe(" disabled") if disabled else "",
        format_html(' aria-describedby="{}"', " ".join(described)) if described else "",
        # A long count stays readable in full.
        format_html(' class="wide" size="{}"', len(shown) + 1) if len(shown) > 8 else "",
        mark_html,
    )


def _grid_table(shape: list[int], cell: Callable[[Index], SafeString]) -> SafeString:
    """The part's cells laid out: one input, a row of a vector, or rows of a matrix."""
    if not shape:
        return format_html(
            '<table class="answer-grid" role="presentation"><tr>{}</tr></table>', cell(())
        )
    # Rows and columns beyond the panel's width scroll sideways, inside the part.
    if len(shape) == 1:
        cells = mark_safe("".join(str(cell((i,))) for i in range(shape[0])))
        header = format_html_join(
            "", '<th scope="col">{}</th>', ((i + 1,) for i in range(shape[0]))
        )
        return format_html(
            '<div class="scroll-x"><table class="answer-grid"><thead><tr>{}</tr></thead>'
            "<tbody><tr>{}</tr></tbody></table></div>",
            header,
            cells,
        )
    rows = []
    for r in range(shape[0]):
        cells = mark_safe("".join(str(cell((r, c))) for c in range(shape[1])))
        rows.append(format_html('<tr><th scope="row">{}</th>{}</tr>', r + 1, cells))
    header = format_html_join("", '<th scope="col">{}</th>', ((c + 1,) for c in range(shape[1])))
    return format_html(
        '<div class="scroll-x"><table class="answer-grid"><thead><tr><td></td>{}</tr></thead>'
        "<tbody>{}</tbody></table></div>",
        header,
        mark_safe("".join(str(r) for r in rows)),
    )


@register.simple_tag
def answer_grid(
    part: str,
    shape: Any,
    values: Any = None,
    wrong_cells: Any = None,
    checked: Any = False,
    disabled: bool = False,
    invalid_cells: Any = None,
    describedby: str = "",
    follows: bool = False,
    follows_from: str = "your earlier answers",
) -> SafeString:
    """Inputs for one asked part: a table of the part's shape, a single input for shape [].

    Once checked, every cell carries a mark that does not rely on colour: a symbol with
    the accessible name "right", "wrong" or "follows from your ..." (a wrong cell of a
    part that follows from the learner's own earlier parts).
    """
    marking = _Marking(
        wrong=frozenset(tuple(c) for c in (wrong_cells or [])),
        invalid=frozenset(tuple(c) for c in (invalid_cells or [])),
        checked=bool(checked),
        follows=follows,
        follows_from=follows_from,
    )

    def cell(index: Index) -> SafeString:
        shown = _shown(_pick(values, index) if values is not None else "")
        return _answer_cell(part, index, shown, marking, disabled, describedby)

    return _grid_table(list(shape or []), cell)


register.filter("shape_words", shape_words)

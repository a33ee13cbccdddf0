"""The attention playground page: its query string parsed into matrix editors, one
head computed by ``exercises.playground``, and the result rendered.

Each editor cell is named ``<matrix>-<row>-<col>`` (``exercises.cells``); an empty cell
counts as 0, and a cell that holds no number is named in the errors and marked.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from exercises.cells import MAX_CELL_CHARS, cell_words, grid_cell_name, parse_number
from exercises.playground import PlaygroundError, as_matrices, attention_playground, scores_caption
from exercises.presets import DEFAULT_PRESET, PRESETS, preset_question

MAX_GRID = 8  # the page edits small matrices; the API itself accepts up to 256
MODES = {"qkv": ("Q", "K", "V"), "xw": ("X", "W_Q", "W_K", "W_V")}
TIMES = "\N{MULTIPLICATION SIGN}"
MATRIX_HELP = {
    "Q": f"(n_q {TIMES} d_k) queries",
    "K": f"(n_k {TIMES} d_k) keys",
    "V": f"(n_k {TIMES} d_v) values",
    "X": f"(n {TIMES} d_model) tokens",
    "W_Q": f"(d_model {TIMES} d_k)",
    "W_K": f"(d_model {TIMES} d_k)",
    "W_V": f"(d_model {TIMES} d_v)",
}


def _preset_entry(name: str) -> dict[str, Any]:
    preset = PRESETS[name]
    return {
        "mode": preset["mode"],
        "tokens": list(preset["tokens"]),
        "matrices": {k: [list(r) for r in v] for k, v in preset["matrices"].items()},
        "scale": preset["scale"],
        "causal": preset["causal"],
        "preset": name,
        "errors": [],
        "invalid": {},
    }


def _grid_size(data, key: str, default: int, errors: list[str]) -> int:
    raw = data.get(key, "")
    if raw in ("", None):
        return default
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if not 1 <= value <= MAX_GRID:
        errors.append(
            f"{key.replace('-', ' ')}: expected a whole number from 1 to {MAX_GRID}, got {raw!r}."
        )
        return min(max(value, 1), MAX_GRID)
    return value


def _grid_cells(
    data: Mapping[str, Any], name: str, rows: int, cols: int, errors: list[str]
) -> tuple[list[list[float | str]], list[tuple[int, int]]]:
    """One matrix editor's cells (an empty cell is 0) and the cells that hold no number;
    each of those adds a message to ``errors`` and keeps its text, cut to length."""
    grid: list[list[float | str]] = []
    invalid: list[tuple[int, int]] = []
    for i in range(rows):
        row: list[float | str] = []
        for j in range(cols):
            text = str(data.get(grid_cell_name(name, i, j), ""))
            value = 0.0 if not text.strip() else parse_number(text)
            if value is None:
                text = text[:MAX_CELL_CHARS]
                errors.append(
                    f"{name} row {i + 1}, column {j + 1}: expected a number, got {text!r}."
                )
                invalid.append((i, j))
                row.append(text)
            else:
                row.append(value)
        grid.append(row)
    return grid, invalid


def playground_entry(data: Mapping[str, Any]) -> dict[str, Any]:
    """The playground's state from its query string; a preset (default ``bag``) when none."""
    preset = str(data.get("preset", ""))
    if preset in PRESETS or "mode" not in data:
        return _preset_entry(preset if preset in PRESETS else DEFAULT_PRESET)
    errors: list[str] = []
    mode = data.get("mode")
    if mode not in MODES:
        errors.append(f"mode: expected 'qkv' or 'xw', got {mode!r}.")
        mode = "qkv"
    fallback = _preset_entry("bag" if mode == "xw" else "abc")["matrices"]
    matrices: dict[str, list[list[float | str]]] = {}
    invalid: dict[str, list[tuple[int, int]]] = {}
    for name in MODES[mode]:
        rows = _grid_size(data, f"{name}-rows", len(fallback[name]), errors)
        cols = _grid_size(data, f"{name}-cols", len(fallback[name][0]), errors)
        matrices[name], bad = _grid_cells(data, name, rows, cols, errors)
        if bad:
            invalid[name] = bad
    tokens = [t.strip()[:40] for t in str(data.get("tokens", "")).split(",") if t.strip()][
        : MAX_GRID * 4
    ]
    return {
        "mode": mode,
        "tokens": tokens,
        "matrices": matrices,
        "scale": data.get("scale") in ("on", "true", "1"),
        "causal": data.get("causal") in ("on", "true", "1"),
        "preset": "",
        "errors": errors,
        "invalid": invalid,
    }


def _editors(entry: dict[str, Any]) -> list[dict[str, Any]]:
    groups = []
    for mode, names in MODES.items():
        source = (
            entry["matrices"]
            if mode == entry["mode"]
            else _preset_entry("bag" if mode == "xw" else "abc")["matrices"]
        )
        invalid = entry["invalid"] if mode == entry["mode"] else {}
        matrices = []
        for name in names:
            grid = source[name]
            bad = set(map(tuple, invalid.get(name, [])))
            cells = [
                [
                    {
                        "name": grid_cell_name(name, i, j),
                        "label": cell_words(name, (i, j)),
                        "value": v if isinstance(v, str) else _plain(v),
                        "invalid": (i, j) in bad,
                    }
                    for j, v in enumerate(row)
                ]
                for i, row in enumerate(grid)
            ]
            base, _, sub = name.partition("_")
            matrices.append(
                {
                    "name": name,
                    "label": base,
                    "sub": sub,
                    "help": MATRIX_HELP[name],
                    "rows": len(grid),
                    "cols": len(grid[0]),
                    "cells": cells,
                }
            )
        groups.append({"mode": mode, "matrices": matrices})
    return groups


def _plain(value: float) -> str:
    number = float(value)
    return str(int(number)) if number.is_integer() else repr(number)


@login_required
@require_GET
def playground(request: HttpRequest) -> HttpResponse:
    entry = playground_entry(request.GET)
    errors = list(entry["errors"])
    result = None
    if not errors:
        try:
            result = attention_playground(
                **as_matrices(entry["matrices"]),
                mask="causal" if entry["causal"] else "none",
                scale=entry["scale"],
            )
        except PlaygroundError as exc:
            errors = exc.lines()
    tokens = entry["tokens"]
    context = {
        "entry": entry,
        "presets": PRESETS,
        "preset_note": PRESETS[entry["preset"]]["note"] if entry["preset"] else "",
        "editors": _editors(entry),
        "max_grid": MAX_GRID,
        "errors": errors,
        "result": result,
        "scores_caption": scores_caption(entry["scale"]),
        "query_labels": tokens[: len(result["Q"])] if result else tokens,
        "key_labels": tokens[: len(result["K"])] if result else tokens,
        "prediction": preset_question(entry["preset"]) if entry["preset"] else None,
    }
    return render(request, "exercises/playground.html", context, status=400 if errors else 200)

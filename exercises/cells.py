"""Answer cells: how a cell is named, how it is read out, and the number typed into it.

Pure: no Django. An exercise page has one text input per cell of an asked part, named
``answer-<part>-<row>-<col>`` (``answer-<part>-<i>`` for a vector, ``answer-<part>`` for a
number or a choice) and labelled "<part> row 1 column 2" ("<part> entry 1", "<part>"),
the part in a learner's words (``part_words``: ``weights_head_0`` is "weights of head 1").
The playground's matrix editors name their cells ``<matrix>-<row>-<col>`` with the same
words; static/js/playground.js builds the same names and labels in the browser.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from exercises import predictions

ANSWER_PREFIX = "answer"
MAX_CELL_CHARS = 64  # far more than any hand-typed number needs
MAX_CHOICE_CHARS = 200

Index = tuple[int, ...]


def cell_indices(shape: Sequence[int]) -> list[Index]:
    """Every cell of ``shape`` in row-major order; ``[()]`` for a number."""
    return list(itertools.product(*(range(n) for n in shape)))


def cell_name(part: str, index: Index = ()) -> str:
    """The form field of one answer cell: ``answer-weights-0-1``."""
    return "-".join([ANSWER_PREFIX, part, *(str(i) for i in index)])


def grid_cell_name(matrix: str, row: int, col: int) -> str:
    """The form field of one playground matrix cell: ``W_Q-0-1``."""
    return f"{matrix}-{row}-{col}"


# A part name that carries an index counted from 0 (an API name): ``weights_head_0``.
_HEAD_PART = re.compile(r"^weights_head_(\d+)$")


def part_words(part: str) -> str:
    """A part as a person reads it, counting from 1 as the prompts and tables do: the
    part ``weights_head_0`` is "weights of head 1"; any other name reads as itself."""
    head = _HEAD_PART.match(part)
    if head:
        return f"weights of head {int(head.group(1)) + 1}"
    return part


def cell_words(part: str, index: Index = ()) -> str:
    """A cell as a person reads it: "weights row 1 column 2", counting from 1."""
    words = part_words(part)
    if len(index) == 2:
        return f"{words} row {index[0] + 1} column {index[1] + 1}"
    if len(index) == 1:
        return f"{words} entry {index[0] + 1}"
    return words


def shape_words(shape: Sequence[int] | None) -> str:
    """An asked part's shape in words: "a number", "a vector of 3", "a 2 \N{MULTIPLICATION SIGN} 3 matrix"."""
    dims = list(shape or [])
    if not dims:
        return "a number"
    if len(dims) == 1:
        return f"a vector of {dims[0]}"
    return f"a {dims[0]} \N{MULTIPLICATION SIGN} {dims[1]} matrix"


def parse_number(text: str) -> float | int | None:
    """A typed number; a comma decimal and the minus sign U+2212 are accepted.

    A whole number typed without a point stays an ``int``, so a count is checked exactly
    however large it is. None for anything else, an over-long entry among them.
    """
    cleaned = text.strip().replace("\N{MINUS SIGN}", "-").replace(",", ".")
    if len(cleaned) > MAX_CELL_CHARS:
        return None  # never read a prefix of an over-long entry as the number meant
    if cleaned.lstrip("+-").isdigit() and cleaned.isascii():
        return int(cleaned)
    try:
        value = float(cleaned)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def not_a_number(text: str) -> str:
    """What is wrong with ``text``, which did not parse: "is empty", "is 'abc'"..."""
    if not text.strip():
        return "is empty"
    if len(text.strip()) > MAX_CELL_CHARS:
        return f"is longer than {MAX_CELL_CHARS} characters"
    return f"is {text!r}"


def nest(flat: Mapping[Index, Any], shape: Sequence[int]) -> Any:
    """Cells by index back into the part's JSON shape: a value, a list or a list of rows."""
    if not shape:
        return flat[()]
    if len(shape) == 1:
        return [flat[(i,)] for i in range(shape[0])]
    return [[flat[(r, c)] for c in range(shape[1])] for r in range(shape[0])]


# --- A submitted answer form ------------------------------------------------------------

Asks = Sequence[Mapping[str, Any]]


def asks_in_form(asks: Asks, data: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The asks one submitted form answers: the prediction alone (``phase=prediction``),
    else the numeric parts; every ask for an exercise without a prediction."""
    if not predictions.first_prediction(asks):
        return list(asks)
    if data.get("phase") == "prediction":
        return [asks[0]]
    return predictions.numeric_asks(asks)


def _choice_cell(ask: Mapping[str, Any], data: Mapping[str, Any]) -> tuple[str, str | None]:
    """``(typed, problem)`` for a part answered by one of its choices."""
    name = ask["name"]
    text = str(data.get(cell_name(name), ""))[:MAX_CHOICE_CHARS]
    if text in ask["choices"]:
        return text, None
    got = f"; got {text!r}." if text else "."
    return text, f"{part_words(name)}: choose one of {', '.join(ask['choices'])}{got}"


def _number_cells(
    name: str, shape: Sequence[int], data: Mapping[str, Any]
) -> tuple[Any, Any, list[str]]:
    """``(numbers, typed, problems)`` for a numeric part; numbers is None with problems."""
    numbers: dict[Index, float | int] = {}
    raw: dict[Index, str] = {}
    problems: list[str] = []
    for index in cell_indices(shape):
        text = str(data.get(cell_name(name, index), ""))
        raw[index] = text[:MAX_CELL_CHARS]
        value = parse_number(text)
        if value is None:
            problems.append(
                f"{cell_words(name, index)} {not_a_number(text)}; enter a number such as 0.25."
            )
        else:
            numbers[index] = value
    return (None if problems else nest(numbers, shape)), nest(raw, shape), problems


def parse_answer_cells(
    asks: Asks, data: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, Any], dict[str, list[str]]]:
    """``(answers, typed, problems)``: numbers by part, the raw text by part, messages by part."""
    answers: dict[str, Any] = {}
    typed: dict[str, Any] = {}
    problems: dict[str, list[str]] = {}
    for ask in asks_in_form(asks, data):
        name = ask["name"]
        if ask.get("choices"):
            typed[name], problem = _choice_cell(ask, data)
            if problem is None:
                answers[name] = typed[name]
            else:
                problems[name] = [problem]
            continue
        numbers, typed[name], messages = _number_cells(name, list(ask["shape"]), data)
        if messages:
            problems[name] = messages
        else:
            answers[name] = numbers
    return answers, typed, problems


def invalid_cells(
    asks: Asks, data: Mapping[str, Any], problems: Mapping[str, Any]
) -> dict[str, list[list[int]]]:
    """The cells of each part with problems that hold no number, as ``[row, col]`` lists."""
    return {
        ask["name"]: [
            list(index)
            for index in cell_indices(list(ask["shape"]))
            if parse_number(str(data.get(cell_name(ask["name"], index), ""))) is None
        ]
        for ask in asks
        if ask["name"] in problems
    }

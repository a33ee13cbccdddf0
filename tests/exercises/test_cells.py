"""Answer cells: their names, their words and the numbers typed in them (no database)."""

from __future__ import annotations

import pytest
from django.http import QueryDict

from exercises.cells import (
    MAX_CELL_CHARS,
    cell_indices,
    cell_name,
    cell_words,
    grid_cell_name,
    invalid_cells,
    parse_answer_cells,
    parse_number,
    shape_words,
)
from exercises.predictions import prediction_ask


def test_cells_are_named_and_read_out_by_part_and_position():
    assert cell_name("weights", (0, 1)) == "answer-weights-0-1"
    assert cell_name("p_with", (2,)) == "answer-p_with-2"
    assert cell_name("variance") == "answer-variance"
    assert grid_cell_name("W_Q", 1, 0) == "W_Q-1-0"
    assert cell_words("weights", (0, 1)) == "weights row 1 column 2"
    assert cell_words("p_with", (2,)) == "p_with entry 3"
    assert cell_words("variance") == "variance"


def test_cells_run_row_by_row():
    assert cell_indices([2, 2]) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert cell_indices([3]) == [(0,), (1,), (2,)]
    assert cell_indices([]) == [()]


@pytest.mark.parametrize(
    ("shape", "words"),
    [([], "a number"), (None, "a number"), ([3], "a vector of 3"), ([2, 3], "a 2 × 3 matrix")],
)
def test_shapes_in_words(shape, words):
    assert shape_words(shape) == words


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("0.25", 0.25),
        (" 0,25 ", 0.25),  # a comma decimal
        ("\u22121.5", -1.5),  # the minus sign U+2212
        ("12345678901234567890", 12345678901234567890),  # a count stays exact
        ("-3", -3),
        ("1e-3", 0.001),
    ],
)
def test_typed_numbers(text, number):
    value = parse_number(text)
    assert value == number and type(value) is type(number)


@pytest.mark.parametrize("text", ["", "abc", "nan", "inf", "1e400", "1" * (MAX_CELL_CHARS + 1)])
def test_what_is_not_a_typed_number(text):
    assert parse_number(text) is None


def _form(**fields: str) -> QueryDict:
    data = QueryDict(mutable=True)
    data.update(fields)
    return data


ASKS = [{"name": "weights", "shape": [1, 2]}, {"name": "n", "shape": []}]


def test_a_form_of_numbers_gives_answers_in_the_parts_shapes():
    data = _form(**{"answer-weights-0-0": "0,5", "answer-weights-0-1": "0.5", "answer-n": "3"})
    answers, typed, problems = parse_answer_cells(ASKS, data)
    assert answers == {"weights": [[0.5, 0.5]], "n": 3}
    assert typed == {"weights": [["0,5", "0.5"]], "n": "3"}
    assert problems == {}


def test_cells_that_hold_no_number_are_named_in_words_and_marked():
    data = _form(**{"answer-weights-0-0": "abc", "answer-n": "7" * 70})
    answers, _typed, problems = parse_answer_cells(ASKS, data)
    assert answers == {}
    assert problems == {
        "weights": [
            "weights row 1 column 1 is 'abc'; enter a number such as 0.25.",
            "weights row 1 column 2 is empty; enter a number such as 0.25.",
        ],
        "n": ["n is longer than 64 characters; enter a number such as 0.25."],
    }
    assert invalid_cells(ASKS, data, problems) == {"weights": [[0, 0], [0, 1]], "n": [[]]}


def test_a_prediction_is_answered_alone_and_only_by_a_choice():
    asks = [prediction_ask("Which key?", ["key 0", "key 1"]), *ASKS]
    answers, _typed, problems = parse_answer_cells(
        asks, _form(phase="prediction", **{"answer-prediction": "key 1"})
    )
    assert answers == {"prediction": "key 1"} and problems == {}
    answers, _typed, problems = parse_answer_cells(
        asks, _form(phase="prediction", **{"answer-prediction": "key 9"})
    )
    assert answers == {}
    assert problems == {"prediction": ["prediction: choose one of key 0, key 1; got 'key 9'."]}
    # Without the phase, the form answers the numeric parts only.
    answers, _typed, problems = parse_answer_cells(asks, _form(**{"answer-n": "1"}))
    assert set(problems) == {"weights"} and "prediction" not in answers

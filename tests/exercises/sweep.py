"""Parameter sets the variant guarantees are proved at: each kind at the starter deck's
parameters (its cards in cards/content/, with and without a prediction) and at the largest
allowed (``largest`` of its cases, in tests/exercises/kinds/)."""

from tests.exercises.kind_cases import deck_sets, kind_cases, parameter_id

DECK_SETS: list[tuple[str, dict]] = list(deck_sets())
LARGEST_SETS: list[tuple[str, dict]] = [
    (name, raw) for name, cases in kind_cases().items() for raw in cases.largest
]
PARAMETER_SETS: list[tuple[str, dict]] = DECK_SETS + LARGEST_SETS
IDS = [parameter_id(name, raw) for name, raw in PARAMETER_SETS]

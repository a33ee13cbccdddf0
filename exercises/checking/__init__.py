"""Checking a learner's answers against an exercise's solution, with a diagnosis.

Pure: no Django. One concept to a module:

- ``answers``: parsing a submission (``validate_answers``, ``AnswerError``, choices);
- ``marking``: per-part verdicts within tolerance, error carried forward, the score
  (``mark``, ``PartResult``, ``CheckResult``);
- ``mistakes``: the registry of named mistakes (``MISTAKES``);
- ``diagnosis``: which mistake explains the first wrong step (``diagnose_step``);
- ``check``: the three together, the entry points (``check_answers``, ``check_given``).

What every generated variant promises (it tells right from wrong) is checked with this
marking by ``exercises.variants``.
"""

from exercises.checking.answers import (
    AnswerError,
    answer_cells,
    choice_index,
    describe_choices,
    describe_shape,
    parse_answer,
    validate_answers,
)
from exercises.checking.check import check_answers, check_given
from exercises.checking.diagnosis import diagnose_step
from exercises.checking.marking import (
    FOLLOW_CREDIT,
    CheckResult,
    PartResult,
    cells_ok,
    follow_on,
    mark,
)
from exercises.checking.mistakes import MISTAKES, Mistake

__all__ = [
    "FOLLOW_CREDIT",
    "MISTAKES",
    "AnswerError",
    "CheckResult",
    "Mistake",
    "PartResult",
    "answer_cells",
    "cells_ok",
    "check_answers",
    "check_given",
    "choice_index",
    "describe_choices",
    "describe_shape",
    "diagnose_step",
    "follow_on",
    "mark",
    "parse_answer",
    "validate_answers",
]

"""Ids from URLs and queries: what a bigint primary key can hold, and nothing else."""

import pytest

from studyapp.common.ids import BIGINT_MAX, parse_id


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("1", 1),
        ("0007", 7),
        (str(BIGINT_MAX), BIGINT_MAX),
        ("0" * 40 + "12", 12),
        (42, 42),
        (BIGINT_MAX, BIGINT_MAX),
    ],
)
def test_ids_a_row_can_have_are_read(raw, expected):
    assert parse_id(raw) == expected


@pytest.mark.parametrize(
    "raw",
    [
        "",
        "0",
        "000",
        "-5",
        "-0",
        "+5",
        " 5",
        "5a",
        "٣",  # a digit, but not an ASCII one
        str(BIGINT_MAX + 1),
        "9" * 5000,  # beyond what int() parses from text
        0,
        -1,
        BIGINT_MAX + 1,
        True,
    ],
)
def test_ids_no_row_can_have_are_none(raw):
    assert parse_id(raw) is None

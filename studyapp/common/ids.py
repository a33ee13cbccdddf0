"""Ids from a URL or a query: a primary key a row could have, or nothing.

Ids are bigints, so anything outside 1 to 2**63 - 1 can match no row; passing it on would
make the database overflow instead of answering "not found".
"""

from __future__ import annotations

BIGINT_MAX = 2**63 - 1  # the largest id a bigint primary key holds
_BIGINT_DIGITS = len(str(BIGINT_MAX))


def parse_id(raw: str | int) -> int | None:
    """``raw`` as an id from 1 to ``BIGINT_MAX``, or ``None`` when no row can have it.

    Text must be decimal digits (leading zeros allowed). Its length is checked before
    ``int()``, which refuses strings of more than 4300 digits.
    """
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int):
        return raw if 1 <= raw <= BIGINT_MAX else None
    digits = raw.lstrip("0")
    if not digits or len(digits) > _BIGINT_DIGITS or not (digits.isascii() and digits.isdigit()):
        return None
    pk = int(digits)
    return pk if pk <= BIGINT_MAX else None

"""How deep a JSON text nests, in time linear in its length, whatever its shape.

The scan reads the bytes as a JSON parser would up to its first error, in three
vectorised passes per block of bytes:

1. a byte is escaped when the run of backslashes just before it has odd length;
2. a byte lies inside a string when an odd number of unescaped quotes precede it
   (counting the one that opens the string);
3. outside strings, ``[`` and ``{`` go one level down and ``]`` and ``}`` one up.

On valid JSON this is the nesting a parser meets; on invalid JSON it is exact up to
the parser's first error, which is as far as any parser recurses. No pass looks back
or ahead, so a run of ``"\\`` costs what any other bytes cost (a regex over strings
backtracks on such runs and takes time quadratic in their length).

The text must be UTF-8 or another encoding in which these six characters are
single bytes that no other character contains; callers transcode anything else.
"""

from __future__ import annotations

import numpy as np

# Bytes per block: the passes hold a few arrays of this many elements, so an 8 MiB
# body needs a few MiB of scratch memory rather than several times its size.
BLOCK_BYTES = 1 << 20

_QUOTE = ord('"')
_BACKSLASH = ord("\\")


def _escaped(backslashes: np.ndarray, n: int, *, carried_odd: bool) -> tuple[np.ndarray, bool]:
    """Positions (< n) of the bytes that an odd run of backslashes escapes, and whether
    the block ends in an odd run. ``backslashes`` holds the block's backslash positions
    in ascending order; an odd run carried in from the block before counts as one
    backslash at position -1 (only a run's parity matters)."""
    if carried_odd:
        backslashes = np.concatenate(([-1], backslashes))
    if backslashes.size == 0:
        return backslashes, False
    # Index (into backslashes) of each run's last and first backslash.
    ends = np.flatnonzero(np.concatenate((np.diff(backslashes) != 1, [True])))
    starts = np.concatenate(([0], ends[:-1] + 1))
    odd = ((ends - starts) & 1) == 0
    escaped = backslashes[ends[odd]] + 1
    ends_odd = bool(backslashes[-1] == n - 1 and odd[-1])
    return escaped[escaped < n], ends_odd


def json_depth(body: bytes | bytearray) -> int:
    """The deepest nesting of arrays and objects in a JSON text (strings ignored)."""
    if body.count(b"[") + body.count(b"{") == 0:
        return 0
    codes = np.frombuffer(body, dtype=np.uint8)
    odd_backslashes = False  # the text so far ends in an odd run of backslashes
    in_string = False  # the text so far ends inside a string
    depth = 0  # nesting at the end of the text so far
    deepest = 0
    for start in range(0, codes.size, BLOCK_BYTES):
        block = codes[start : start + BLOCK_BYTES]
        quotes = block == _QUOTE
        escaped, odd_backslashes = _escaped(
            np.flatnonzero(block == _BACKSLASH), block.size, carried_odd=odd_backslashes
        )
        quotes[escaped] = False
        # +1 for [ and {, -1 for ] and }, as int8.
        step = ((block == ord("[")) | (block == ord("{"))).view(np.int8) - (
            (block == ord("]")) | (block == ord("}"))
        ).view(np.int8)
        if in_string or quotes.any():
            inside = np.logical_xor.accumulate(quotes)
            if in_string:
                np.logical_not(inside, out=inside)
            in_string = bool(inside[-1])
            step &= inside.view(np.int8) - 1  # 0 inside strings, all ones outside
        if not step.any():
            continue
        levels = np.cumsum(step, dtype=np.int32)
        deepest = max(deepest, depth + int(levels.max()))
        depth += int(levels[-1])
    return deepest

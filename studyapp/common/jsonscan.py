"""How deep a JSON text nests and how many values it holds, in time linear in its
length, whatever its shape.

The scan reads the bytes as a JSON parser would up to its first error, in three
vectorised passes:

1. a byte is escaped when the run of backslashes just before it has odd length
   (one pass over the whole text, ``escaped_bytes``);
2. a byte lies inside a string when an odd number of unescaped quotes precede it,
   counting the one that opens the string (a running XOR, block by block);
3. outside strings, ``[`` and ``{`` go one level down and ``]`` and ``}`` one up
   (a running sum, block by block), and every ``[``, ``{``, ``,`` and ``:`` counts as an
   element (``json_shape``).

The element count is what a parser's work grows with, more than the bytes: 8 MB of
``[[],[],...]`` is 2.8 million lists, 1.4 s of ``json.loads``, where 8 MB of one string
takes milliseconds. Each value in a container but its first follows a ``,``, each key a
``:`` and each container its opening bracket, so a text holds at most ``elements + 1``
values (keys included), and the scan counts them at no extra pass.

On valid JSON this is the nesting a parser meets; on invalid JSON it is exact up to
the parser's first error, which is as far as any parser recurses. Every pass costs
the same per byte whatever the bytes are, so a run of ``"\\`` costs what any other
text costs (a regex over strings backtracks on such runs and takes time quadratic in
their length).

The text is given as its bytes (UTF-8, ASCII, Latin-1) or as an array of its code
units (UTF-16 or UTF-32, ``studyapp.common.charsets.code_units``): in each of these
the six characters are single code units that no other character contains, so the
scan reads the text in place, without decoding it.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

# Bytes per block: the passes hold a few arrays of this many elements, so an 8 MiB
# body needs a few MiB of scratch memory rather than several times its size.
BLOCK_BYTES = 1 << 20

_QUOTE = ord('"')
_BACKSLASH = ord("\\")


class Shape(NamedTuple):
    """What a JSON text costs its parser: its deepest nesting of arrays and objects, and
    its structural characters outside strings (``[``, ``{``, ``,`` and ``:``)."""

    depth: int
    elements: int


def escaped_bytes(codes: np.ndarray) -> np.ndarray | None:
    """Which code units other than backslashes an odd run of backslashes just before
    them escapes, or None when the text holds no backslash. (n,) unsigned -> (n,) bool.

    simdjson's carry trick on one big integer (bit i is byte i): adding a run's first
    bit to the run carries to the bit just after it, and that bit's parity against the
    start's gives the run's length parity. A handful of integer operations over n bits,
    whatever the runs look like.
    """
    backslashes = codes == _BACKSLASH
    if not backslashes.any():
        return None
    size = codes.size // 8 + 2  # room for the carry out of a run that ends the text
    b = int.from_bytes(np.packbits(backslashes, bitorder="little").tobytes(), "little")
    even = int.from_bytes(b"\x55" * size, "little")  # bits 0, 2, 4, ...
    odd = even << 1
    starts = b & ~(b << 1)
    after_even_starts = (b + (starts & even)) & ~b
    after_odd_starts = (b + (starts & odd)) & ~b
    escaped = (after_even_starts & odd) | (after_odd_starts & even)
    bits = np.frombuffer(escaped.to_bytes(size, "little"), dtype=np.uint8)
    return np.unpackbits(bits, bitorder="little")[: codes.size].view(bool)


def json_depth(body: bytes | bytearray | np.ndarray) -> int:
    """The deepest nesting of arrays and objects in a JSON text (strings ignored): its
    bytes, or an array of its code units (unsigned integers of any width and order)."""
    return json_shape(body).depth


def _structural(block: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """# (n,) -> step (n,) int8: +1 at [ and {, -1 at ] and }; separators (n,) bool: , and :"""
    step = ((block == ord("[")) | (block == ord("{"))).view(np.int8) - (
        (block == ord("]")) | (block == ord("}"))
    ).view(np.int8)
    return step, (block == ord(",")) | (block == ord(":"))


def json_shape(body: bytes | bytearray | np.ndarray) -> Shape:
    """The nesting and the element count of a JSON text (strings ignored), as
    ``json_depth`` reads it; on invalid JSON both are exact up to the first error."""
    if isinstance(body, np.ndarray):
        codes = body if body.dtype.isnative else body.astype(body.dtype.newbyteorder("="))
    elif not any(body.count(char) for char in (b"[", b"{", b",", b":")):
        return Shape(0, 0)
    else:
        codes = np.frombuffer(body, dtype=np.uint8)
    escaped = escaped_bytes(codes)
    in_string = False  # the text so far ends inside a string
    depth = 0  # nesting at the end of the text so far
    deepest = 0
    elements = 0
    for start in range(0, codes.size, BLOCK_BYTES):
        block = codes[start : start + BLOCK_BYTES]
        quotes = block == _QUOTE
        if escaped is not None:
            quotes &= ~escaped[start : start + BLOCK_BYTES]
        step, separators = _structural(block)
        if in_string or quotes.any():
            inside = np.logical_xor.accumulate(quotes)
            if in_string:
                np.logical_not(inside, out=inside)
            in_string = bool(inside[-1])
            step &= inside.view(np.int8) - 1  # 0 inside strings, all ones outside
            separators &= ~inside
        elements += int(np.count_nonzero(separators))
        brackets = np.count_nonzero(step)
        if not brackets:
            continue
        if brackets * 8 < step.size:
            # The level only changes at brackets: summing those alone is the same walk.
            step = step[np.flatnonzero(step)]
        elements += int(np.count_nonzero(step > 0))
        levels = np.cumsum(step, dtype=np.int32)
        deepest = max(deepest, depth + int(levels.max()))
        depth += int(levels[-1])
    return Shape(deepest, elements)

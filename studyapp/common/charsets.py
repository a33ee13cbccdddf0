"""Which charsets a request body may be in, and how a JSON body in one is read.

One decision for the API (DRF's parsers) and the pages (Django's ``request.POST``): a
body is decoded only in a charset clients really send and whose decoder takes time
linear in the body. Those are UTF-8, UTF-16 and UTF-32 (with or without a byte order
mark, in either byte order), US-ASCII and Latin-1, under any alias ``codecs.lookup``
resolves to one of them (``utf8``, ``UTF-16LE``, ``latin1``, ``us-ascii``, ...). Any
other name is refused before a byte is decoded: ``punycode`` decodes in time quadratic
in the body, ``utf-7``, ``idna`` and ``unicode_escape`` are no charsets a client sends,
``rot13`` and ``bz2_codec`` are no text codecs at all, and an unknown name would
otherwise be ignored in silence.

A JSON body is decoded once, by the parser. The depth guard reads the same text without
decoding it (:func:`code_units`): in each accepted charset the six characters JSON
structure is made of are single code units that no other character contains, so the
guard scans the code units in place and the parser decodes with :func:`json_reading`'s
codec, which also drops a leading byte order mark.
"""

from __future__ import annotations

import codecs
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

# Canonical names (``codecs.lookup(name).name``) of the charsets a body may be in.
ACCEPTED = frozenset(
    codecs.lookup(name).name
    for name in (
        "utf-8",
        "utf-8-sig",
        "utf-16",
        "utf-16-le",
        "utf-16-be",
        "utf-32",
        "utf-32-le",
        "utf-32-be",
        "ascii",
        "latin-1",
    )
)
ACCEPTED_TEXT = (
    "utf-8, utf-16 or utf-32 (with or without a byte order mark; utf-16le, utf-16be, "
    "utf-32le, utf-32be), us-ascii or iso-8859-1; a body that names none is utf-8"
)
# A refused name is quoted back up to this many characters.
SHOWN_NAME_CHARS = 60

# A byte order mark each label may start with: the codec that drops it and the code
# unit it announces. A mark against the label (FE FF under utf-16le) is no mark but a
# character, which the parser refuses.
_MARKS: dict[str, tuple[tuple[bytes, str, str], ...]] = {
    "utf-8": ((codecs.BOM_UTF8, "utf-8-sig", "u1"),),
    "utf-8-sig": ((codecs.BOM_UTF8, "utf-8-sig", "u1"),),
    "utf-16": ((codecs.BOM_UTF16_LE, "utf-16", "<u2"), (codecs.BOM_UTF16_BE, "utf-16", ">u2")),
    "utf-16-le": ((codecs.BOM_UTF16_LE, "utf-16", "<u2"),),
    "utf-16-be": ((codecs.BOM_UTF16_BE, "utf-16", ">u2"),),
    "utf-32": ((codecs.BOM_UTF32_LE, "utf-32", "<u4"), (codecs.BOM_UTF32_BE, "utf-32", ">u4")),
    "utf-32-le": ((codecs.BOM_UTF32_LE, "utf-32", "<u4"),),
    "utf-32-be": ((codecs.BOM_UTF32_BE, "utf-32", ">u4"),),
}
# The code unit of each accepted charset whose byte order is known without a mark.
_UNITS = {
    "utf-8": "u1",
    "utf-8-sig": "u1",
    "ascii": "u1",
    "iso8859-1": "u1",
    "utf-16-le": "<u2",
    "utf-16-be": ">u2",
    "utf-32-le": "<u4",
    "utf-32-be": ">u4",
}


def canonical(name: str) -> str | None:
    """The codec's own name for ``name`` (``"UTF8"`` -> ``"utf-8"``), or None when Python
    has no codec by that name (or the name cannot be one, holding a NUL, say)."""
    try:
        return codecs.lookup(name).name
    except (LookupError, ValueError, UnicodeError):
        return None


def refusal(content_params: Mapping[str, str]) -> str | None:
    """Why the charset a Content-Type names (Django's ``request.content_params``) is
    refused, or None when it is accepted or none is named."""
    if "charset" not in content_params:
        return None
    name = content_params["charset"]
    if canonical(name) in ACCEPTED:
        return None
    shown = name if len(name) <= SHOWN_NAME_CHARS else name[:SHOWN_NAME_CHARS] + "…"
    return (
        f"The charset {shown!r} in the Content-Type is not accepted; nothing was read. "
        f"Send the body in {ACCEPTED_TEXT}."
    )


@dataclass(frozen=True)
class Reading:
    """How to read a JSON body: the codec that decodes it (a byte order mark dropped),
    and its code units for the depth guard: a NumPy dtype and the bytes to skip."""

    codec: str
    unit: str
    offset: int = 0


def json_reading(charset: str | None, head: bytes) -> Reading:
    """How to read a JSON body in an accepted ``charset`` (None: UTF-8) that starts with
    the bytes ``head`` (four suffice).

    A byte order mark that agrees with the charset is dropped, whatever the label
    (``utf-8`` included, as RFC 8259 allows a parser to). Without one, ``utf-16`` and
    ``utf-32`` are read in the byte order the text's first character shows: JSON text
    starts with an ASCII character, whose first byte is zero in big-endian order only
    (RFC 4627's detection), rather than the machine's own order Python's decoder takes.
    """
    name = canonical(charset or "utf-8")
    if name is None or name not in ACCEPTED:
        raise ValueError(f"{charset!r} is not an accepted charset")
    for mark, codec, unit in _MARKS.get(name, ()):
        if head.startswith(mark):
            return Reading(codec, unit, len(mark))
    if name in ("utf-16", "utf-32"):
        name += "-be" if head[:1] == b"\x00" else "-le"
    return Reading(name, _UNITS[name])


def code_units(body: bytes, reading: Reading) -> np.ndarray:
    """The body's code units as ``reading`` reads them, without decoding or copying; a
    trailing partial unit (which the decoder refuses) is left out."""
    width = np.dtype(reading.unit).itemsize
    count = max(len(body) - reading.offset, 0) // width
    return np.frombuffer(body, dtype=reading.unit, count=count, offset=reading.offset)

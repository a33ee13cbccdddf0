"""A request body on its way to a JSON parser: whether the view's parser is one, and
the body's code units in its charset for the depth guard (``RequestGuardMiddleware``).

The parser decodes the body, once; the guard reads the code units in place and tells
the parser which codec to decode with (``request.encoding``): the charset's, a byte
order mark dropped, the byte order of a bare ``utf-16`` or ``utf-32`` found
(``studyapp.common.charsets.json_reading``).
"""

from __future__ import annotations

import functools

import numpy as np
from django.conf import settings
from django.http import HttpRequest
from rest_framework.parsers import JSONParser
from rest_framework.request import Request
from rest_framework.views import APIView

from studyapp.common import charsets


class NotText(ValueError):
    """The body cannot be text in its charset; the message is the start of a 400."""


def parser_reads(request, view_func) -> bool:
    """Whether the view would hand this request's body to a JSON parser.

    DRF views name their parsers and content negotiation on the class that
    ``as_view()`` leaves on the view function; other views fall back to the
    configured defaults (``APIView``'s). The choice is DRF's own: the first parser
    whose media type matches the Content-Type header.
    """
    view_class = getattr(view_func, "cls", None)
    if not (isinstance(view_class, type) and issubclass(view_class, APIView)):
        view_class = APIView
    meta = request.META  # the header as DRF's Request.content_type reads it
    return _parser_chosen(view_class, meta.get("CONTENT_TYPE", meta.get("HTTP_CONTENT_TYPE", "")))


@functools.lru_cache(maxsize=512)
def _parser_chosen(view_class: type[APIView], content_type: str) -> bool:
    """DRF's choice for a view class and a Content-Type, made once per process for each
    pair: it depends on nothing else (the negotiation reads the header alone)."""
    parsers = [parser() for parser in view_class.parser_classes]
    negotiation = view_class.content_negotiation_class()
    stand_in = HttpRequest()
    stand_in.META["CONTENT_TYPE"] = content_type
    chosen = negotiation.select_parser(Request(stand_in, parsers=parsers), parsers)
    return isinstance(chosen, JSONParser)


def code_units(request) -> np.ndarray:
    """The body's code units, a view of ``request.body``; sets the codec the parser will
    decode with. Raises ``NotText`` when the body ends inside a code unit, which a
    codec's stream reader would drop without a word."""
    body = request.body
    reading = charsets.json_reading(request.encoding, body[:4])
    if reading.codec != charsets.canonical(request.encoding or settings.DEFAULT_CHARSET):
        request.encoding = reading.codec
    units = charsets.code_units(body, reading)
    if reading.offset + units.nbytes != len(body):
        named = request.content_params.get("charset", reading.codec)
        raise NotText(
            f"JSON parse error: the body is not text in the charset {named!r} that its "
            f"Content-Type names: its {len(body):,} bytes end inside a "
            f"{units.itemsize}-byte code unit."
        )
    return units

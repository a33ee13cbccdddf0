"""Markdown with ``$...$`` / ``$$...$$`` math, rendered to sanitised HTML with MathML.

Math is cut out before Markdown runs (so ``_`` and ``*`` inside formulas are not
read as emphasis), converted on the server with latex2mathml, and put back; the
whole result then goes through nh3 so card text can never inject markup.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from functools import lru_cache

import markdown
import nh3
from latex2mathml.converter import convert as latex_to_mathml

_MATH = re.compile(r"(?<!\\)\$\$(.+?)(?<!\\)\$\$|(?<![\\$])\$(?!\s)([^$\n]+?)(?<![\s\\])\$", re.S)
_TOKEN = "\x00MATH{}\x00"

MATHML_TAGS = {
    "math",
    "mrow",
    "mi",
    "mn",
    "mo",
    "ms",
    "mtext",
    "mspace",
    "msup",
    "msub",
    "msubsup",
    "mfrac",
    "msqrt",
    "mroot",
    "mover",
    "munder",
    "munderover",
    "mtable",
    "mtr",
    "mtd",
    "mstyle",
    "mpadded",
    "mphantom",
    "menclose",
    "semantics",
    "annotation",
    "mfenced",
}
MATHML_ATTRS = {
    "xmlns",
    "display",
    "mathvariant",
    "stretchy",
    "fence",
    "separator",
    "accent",
    "accentunder",
    "lspace",
    "rspace",
    "width",
    "height",
    "depth",
    "linethickness",
    "columnalign",
    "rowalign",
    "displaystyle",
    "scriptlevel",
    "movablelimits",
    "minsize",
    "maxsize",
    "notation",
    "open",
    "close",
    "separators",
    "form",
    "symmetric",
    "largeop",
}


# latex2mathml writes the brackets of pmatrix, bmatrix, vmatrix ... as plain <mo>s, which
# browsers draw at text height; marked as stretchy fences they span the whole matrix.
_MATRIX_OPEN = re.compile(r"<mo>([^<]{1,10})</mo>(?=<mtable)")
_MATRIX_CLOSE = re.compile(r"(?<=</mtable>)<mo>([^<]{1,10})</mo>")


def _stretch_matrix_fences(mathml: str) -> str:
    mathml = _MATRIX_OPEN.sub(r'<mo stretchy="true" fence="true" form="prefix">\1</mo>', mathml)
    return _MATRIX_CLOSE.sub(r'<mo stretchy="true" fence="true" form="postfix">\1</mo>', mathml)


def _math_html(tex: str, display: bool) -> str:
    try:
        mathml = latex_to_mathml(tex.strip(), display="block" if display else "inline")
    except Exception:  # latex2mathml raises many types on bad TeX: show the source instead
        return f'<code class="math-error">{html.escape(tex)}</code>'
    return _stretch_matrix_fences(mathml)


def formulas(text: str):
    """Yield ``(tex, display)`` for each ``$...$`` / ``$$...$$`` formula in ``text``."""
    for match in _MATH.finditer(text or ""):
        display = match.group(1) is not None
        yield (match.group(1) if display else match.group(2)), display


@lru_cache(maxsize=8192)
def formula_renders(tex: str, display: bool) -> bool:
    """Whether the server-side converter turns this formula into MathML."""
    return "math-error" not in _math_html(tex, display)


def markdown_with_math(text: str, math: Callable[[str, bool], str]) -> str:
    """Card Markdown to HTML, each formula replaced by ``math(tex, display)``; not sanitised.

    The formulas are cut out before Markdown runs and put back after, so Markdown
    never reads ``_`` or ``*`` inside them. The caller sanitises the result.
    """
    pieces: list[str] = []

    def stash(match: re.Match) -> str:
        display, inline = match.group(1), match.group(2)
        pieces.append(math(display if display is not None else inline, display is not None))
        return _TOKEN.format(len(pieces) - 1)

    body = _MATH.sub(stash, text or "")
    rendered = markdown.markdown(body, extensions=["fenced_code", "tables", "sane_lists"])
    rendered = rendered.replace("\\$", "$")
    for index, piece in enumerate(pieces):
        rendered = rendered.replace(_TOKEN.format(index), piece)
    return rendered


@lru_cache(maxsize=2048)
def render_markdown(text: str) -> str:
    """Card Markdown to safe HTML (a plain ``str``; mark it safe at the template edge)."""
    attributes = {tag: MATHML_ATTRS for tag in MATHML_TAGS}
    attributes.update({"a": {"href", "title"}, "code": {"class"}, "th": {"align"}, "td": {"align"}})
    return nh3.clean(
        markdown_with_math(text, _math_html),
        tags=set(nh3.ALLOWED_TAGS) | MATHML_TAGS,
        attributes=attributes,
        link_rel="noopener noreferrer",
    )

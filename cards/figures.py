"""The lesson's figures, drawn by the engine from the numbers the lesson's text uses.

A line of a section body that holds only ``{{figure:NAME}}`` is replaced, when the body
is rendered (``cards.lesson``), by the figure of that name. Each figure computes its
numbers with ``exercises.engine`` from the worked example of the playground's ``bag``
preset (``exercises.presets``), so a figure can never disagree with the exercises.

Every figure reads without colour: weights are written in their cells, mask cells say
"open" or "blocked", and the lines of the sinusoid chart differ by dash and carry their
names. Ink is ``currentColor`` or the page's CSS variables, so a dark theme keeps them
readable; the heat map's cells carry their own background and ink pair.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import lru_cache

import numpy as np
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from exercises import engine
from exercises.presets import PRESETS
from exercises.templatetags.matrices import fmt, matrix_table

# A figure line: only ``{{figure:NAME}}`` on it, spaces around allowed.
FIGURE_LINE = re.compile(r"^[ \t]*\{\{figure:([A-Za-z0-9_-]+)\}\}[ \t]*$", re.M)
# Anything that looks like a figure, to name a figure written where it cannot be drawn.
_FIGURE_LIKE = re.compile(r"\{\{\s*figure\b[^}\n]*\}\}")

WORKED_PRESET = "bag"
# The padding example: the worked example's tokens in a batch of two, the second one
# token shorter and padded to the first one's length.
PADDED_BATCH = (("bag", "delayed", "refund"), ("refund", "delayed"))
PAD = "pad"
# The sinusoid chart: these dimensions of the encodings of positions 0 .. n - 1.
SINUSOID_POSITIONS = 32
SINUSOID_D_MODEL = 16
SINUSOID_DIMENSIONS = (0, 2, 4)
_DASHES = ("", "8 5", "2 4")


def worked_example(*, causal: bool = False) -> tuple[list[str], engine.AttentionTrace]:
    """The worked example's tokens and every step of its attention, from the engine."""
    preset = PRESETS[WORKED_PRESET]
    m = preset["matrices"]
    Q, K, V = engine.project(m["X"], m["W_Q"], m["W_K"], m["W_V"])
    mask = engine.causal_mask(len(preset["tokens"])) if causal else None
    trace = engine.scaled_dot_product_attention(
        Q, K, V, mask=mask, scale=preset["scale"], return_intermediates=True
    )
    return list(preset["tokens"]), trace


def padded_batch() -> tuple[list[list[str]], np.ndarray, engine.AttentionTrace]:
    """The padding example: the batch's tokens (padding named ``pad``), its mask
    (batch, n, n; True = blocked) and the attention of the batch under that mask.

    A padding position's token vector is all zeros.
    """
    preset = PRESETS[WORKED_PRESET]
    vocabulary = list(preset["tokens"])
    m = preset["matrices"]
    n = max(len(sequence) for sequence in PADDED_BATCH)
    tokens = [list(s) + [PAD] * (n - len(s)) for s in PADDED_BATCH]
    valid = np.array([[token != PAD for token in row] for row in tokens])
    eye = np.asarray(m["X"], dtype=float)
    X = np.array(
        [[eye[vocabulary.index(t)] if t != PAD else 0 * eye[0] for t in row] for row in tokens]
    )
    Q, K, V = engine.project(X, m["W_Q"], m["W_K"], m["W_V"])
    mask = engine.padding_mask(valid)
    trace = engine.scaled_dot_product_attention(
        Q, K, V, mask=mask, scale=True, return_intermediates=True
    )
    return tokens, mask, trace


def sinusoids() -> np.ndarray:
    """(SINUSOID_POSITIONS, SINUSOID_D_MODEL) sinusoidal encodings, from the engine."""
    return engine.sinusoidal_positions(SINUSOID_POSITIONS, SINUSOID_D_MODEL)


# --- Drawing ------------------------------------------------------------------------------


def _figure(body: SafeString | str, caption: str, name: str) -> SafeString:
    return format_html(
        '<figure class="lesson-figure" data-figure="{}">{}<figcaption>{}</figcaption></figure>',
        name,
        body,
        caption,
    )


_HEAT_LEGEND = mark_safe(
    '<p class="figure-legend"><span class="heat-scale" aria-hidden="true"></span> '
    "Lighter cells carry less weight, darker cells more; every cell shows its weight, "
    "and each row sums to 1.</p>"
)


def _weights_figure(causal: bool) -> SafeString:
    tokens, trace = worked_example(causal=causal)
    caption = "Weights after the causal mask" if causal else "Weights of the worked example, scaled"
    table = matrix_table(
        np.round(trace.weights, 3).tolist(),
        caption,
        tokens,
        tokens,
        True,
        "query",
        "key",
    )
    return format_html("{}{}", table, _HEAT_LEGEND)


def worked_example_weights() -> SafeString:
    tokens = worked_example()[0]
    return _figure(
        _weights_figure(causal=False),
        f"softmax(QK\N{MODIFIER LETTER CAPITAL T}/\N{SQUARE ROOT}2) for {', '.join(tokens)}: "
        "one row per query, one column per key. Computed by the attention engine.",
        "worked-example-weights",
    )


def _mask_table(mask: np.ndarray, caption: str, rows: Sequence[str], cols: Sequence[str]):
    """A boolean mask (True = blocked) as a table whose cells say open or blocked."""
    head = format_html(
        '<tr><th scope="col" class="axis">query ↓ · key →</th>{}</tr>',
        format_html_join("", '<th scope="col">{}</th>', ((c,) for c in cols)),
    )
    body = format_html_join(
        "",
        '<tr><th scope="row">{}</th>{}</tr>',
        (
            (
                label,
                format_html_join(
                    "",
                    '<td class="{}">{}</td>',
                    (
                        ("mask-blocked", "blocked") if blocked else ("mask-open", "open")
                        for blocked in row
                    ),
                ),
            )
            for label, row in zip(rows, mask.tolist(), strict=True)
        ),
    )
    return format_html(
        '<div class="scroll-x"><table class="data mask"><caption>{}</caption>'
        "<thead>{}</thead><tbody>{}</tbody></table></div>",
        caption,
        head,
        body,
    )


def causal_mask_figure() -> SafeString:
    tokens, _ = worked_example(causal=True)
    mask = engine.causal_mask(len(tokens))
    body = format_html(
        '<div class="figure-pair">{}<div>{}</div></div>',
        _mask_table(mask, "The causal mask", tokens, tokens),
        _weights_figure(causal=True),
    )
    return _figure(
        body,
        "A query may read itself and the keys before it; a blocked score becomes "
        "\N{MINUS SIGN}\N{INFINITY} before the softmax, so its weight is exactly 0 and "
        "every row still sums to 1.",
        "causal-mask",
    )


def padding_mask_figure() -> SafeString:
    tokens, mask, trace = padded_batch()
    tables = [
        _mask_table(mask[b], f"Sequence {b + 1}: {' '.join(row)}", row, row)
        for b, row in enumerate(tokens)
    ]
    last = len(tokens) - 1
    weights = matrix_table(
        np.round(trace.weights[last], 3).tolist(),
        f"Weights of sequence {last + 1}",
        tokens[last],
        tokens[last],
        True,
        "query",
        "key",
    )
    body = format_html(
        '<div class="figure-pair">{}</div>{}{}',
        mark_safe("".join(str(t) for t in tables)),
        weights,
        _HEAT_LEGEND,
    )
    return _figure(
        body,
        "A batch of two sequences padded to the same length: only padded keys are blocked, "
        "in every query row, so the real tokens' weights ignore the padding and a padded "
        "query still reads the real tokens.",
        "padding-mask",
    )


# The chart's frame, in SVG units.
_W, _H, _LEFT, _RIGHT, _TOP, _BOTTOM = 640, 260, 44, 70, 14, 40


def _x(position: float) -> float:
    return _LEFT + position * (_W - _LEFT - _RIGHT) / (SINUSOID_POSITIONS - 1)


def _y(value: float) -> float:
    return _TOP + (1 - value) * (_H - _TOP - _BOTTOM) / 2


def _sinusoid_lines(pe: np.ndarray) -> list[SafeString]:
    lines = []
    for index, dim in enumerate(SINUSOID_DIMENSIONS):
        points = " ".join(f"{_x(p):.1f},{_y(v):.1f}" for p, v in enumerate(pe[:, dim]))
        dash = _DASHES[index % len(_DASHES)]
        lines.append(
            format_html(
                '<polyline class="line-{}" points="{}" fill="none" stroke="currentColor" '
                'stroke-width="{}"{}/>',
                index,
                points,
                2.5 if index == 0 else 2,
                format_html(' stroke-dasharray="{}"', dash) if dash else "",
            )
        )
    for dim, y in _label_heights(pe):
        lines.append(
            format_html(
                '<text x="{}" y="{}" fill="currentColor">dim {}</text>',
                f"{_x(SINUSOID_POSITIONS - 1) + 6:.1f}",
                f"{y + 5:.1f}",
                dim,
            )
        )
    return lines


def _label_heights(pe: np.ndarray, gap: float = 16) -> list[tuple[int, float]]:
    """Each line's name at its last point, moved apart where two would overlap."""
    ends = sorted((_y(pe[-1, dim]), dim) for dim in SINUSOID_DIMENSIONS)
    placed: list[tuple[int, float]] = []
    for y, dim in ends:
        if placed and y < placed[-1][1] + gap:
            y = placed[-1][1] + gap
        placed.append((dim, y))
    return placed


def _sinusoid_axes() -> list[SafeString]:
    parts = []
    for value in (-1, 0, 1):
        parts.append(
            format_html(
                '<line x1="{}" x2="{}" y1="{}" y2="{}" stroke="currentColor" '
                'stroke-opacity="0.3"/><text x="{}" y="{}" text-anchor="end" '
                'fill="currentColor">{}</text>',
                _LEFT,
                _W - _RIGHT,
                f"{_y(value):.1f}",
                f"{_y(value):.1f}",
                _LEFT - 6,
                f"{_y(value) + 5:.1f}",
                fmt(value),
            )
        )
    for position in range(0, SINUSOID_POSITIONS, 8):
        parts.append(
            format_html(
                '<text x="{}" y="{}" text-anchor="middle" fill="currentColor">{}</text>',
                f"{_x(position):.1f}",
                _H - _BOTTOM + 18,
                position,
            )
        )
    parts.append(
        format_html(
            '<text x="{}" y="{}" text-anchor="middle" fill="currentColor">position</text>',
            f"{(_LEFT + _W - _RIGHT) / 2:.1f}",
            _H - 4,
        )
    )
    return parts


def _sinusoid_legend() -> SafeString:
    items = format_html_join(
        "",
        '<li><svg width="36" height="10" aria-hidden="true"><line x1="0" x2="36" y1="5" y2="5" '
        'stroke="currentColor" stroke-width="2"{}/></svg> dimension {} (period {} positions)</li>',
        (
            (
                format_html(' stroke-dasharray="{}"', _DASHES[i]) if _DASHES[i] else "",
                dim + 1,
                fmt(2 * np.pi * 10000 ** (dim / SINUSOID_D_MODEL), 1),
            )
            for i, dim in enumerate(SINUSOID_DIMENSIONS)
        ),
    )
    return format_html('<ul class="figure-legend lines">{}</ul>', items)


def _sinusoid_table(pe: np.ndarray) -> SafeString:
    rows = [
        [float(round(pe[p, dim], 3)) for dim in SINUSOID_DIMENSIONS]
        for p in range(0, SINUSOID_POSITIONS, 4)
    ]
    return matrix_table(
        rows,
        "Every fourth position",
        [str(p) for p in range(0, SINUSOID_POSITIONS, 4)],
        [f"dim {dim + 1}" for dim in SINUSOID_DIMENSIONS],
        False,
        "position",
        "dimension",
    )


def sinusoids_figure() -> SafeString:
    pe = sinusoids()
    dims = ", ".join(str(d + 1) for d in SINUSOID_DIMENSIONS)
    label = (
        f"Line chart: sinusoidal position encodings, dimensions {dims} of "
        f"d_model = {SINUSOID_D_MODEL}, over positions 0 to {SINUSOID_POSITIONS - 1}. "
        "Each higher dimension turns more slowly."
    )
    svg = format_html(
        '<svg class="sinusoids" role="img" aria-label="{}" viewBox="0 0 {} {}" '
        'xmlns="http://www.w3.org/2000/svg" font-size="14" font-family="system-ui, sans-serif">'
        "{}{}</svg>",
        label,
        _W,
        _H,
        mark_safe("".join(str(p) for p in _sinusoid_axes())),
        mark_safe("".join(str(p) for p in _sinusoid_lines(pe))),
    )
    numbers = format_html(
        '<details class="figure-numbers"><summary>The numbers</summary>{}</details>',
        _sinusoid_table(pe),
    )
    return _figure(
        format_html("{}{}{}", svg, _sinusoid_legend(), numbers),
        f"Dimension 2i + 1 (counting from 1) is the sine of pos divided by 10000 to the power "
        f"2i/{SINUSOID_D_MODEL}: the first dimensions turn fast, later ones slowly, so every "
        "position gets its own pattern. Computed by the attention engine.",
        "sinusoids",
    )


FIGURES: dict[str, Callable[[], SafeString]] = {
    "worked-example-weights": worked_example_weights,
    "causal-mask": causal_mask_figure,
    "padding-mask": padding_mask_figure,
    "sinusoids": sinusoids_figure,
}


@lru_cache(maxsize=len(FIGURES))
def figure_html(name: str) -> SafeString:
    """The figure ``name`` as HTML; the numbers never change, so each is drawn once."""
    return FIGURES[name]()


def figure_names(text: str) -> list[str]:
    """The names of the figure lines of ``text``, in order."""
    return FIGURE_LINE.findall(text or "")


def figure_problems(text: str) -> list[str]:
    """What is wrong with the figures of ``text``: unknown names, and figures written
    where they cannot be drawn (inside a line of text)."""
    problems = []
    lines = {m.start(1) for m in FIGURE_LINE.finditer(text)}
    for match in _FIGURE_LIKE.finditer(text):
        strict = FIGURE_LINE.match(text, text.rfind("\n", 0, match.start()) + 1)
        if strict is None or strict.start(1) not in lines:
            problems.append(
                f"A figure goes on a line of its own, written {{{{figure:NAME}}}}; "
                f"got {match.group(0)!r}."
            )
    for name in figure_names(text):
        if name not in FIGURES:
            problems.append(f"Unknown figure {name!r}; expected one of {', '.join(FIGURES)}.")
    return problems

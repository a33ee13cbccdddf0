"""The server-drawn charts are labelled for screen readers, and heat maps meet contrast."""

import colorsys
import datetime as dt
import re
from pathlib import Path

from cards.templatetags.study import (
    FORECAST_LATER,
    FORECAST_TODAY,
    HEAT_COLORS,
    HEAT_EMPTY_STROKE,
    forecast_chart,
    review_heatmap,
)
from exercises.templatetags.matrices import heat_style

DAY = dt.date(2026, 3, 2)


def _labelled(svg: str, chart_id: str) -> str:
    opening = re.match(r"<svg [^>]*>", svg).group(0)
    assert f'aria-labelledby="{chart_id}-title {chart_id}-desc"' in opening
    assert 'role="img"' in opening
    assert f'<title id="{chart_id}-title">' in svg and f'<desc id="{chart_id}-desc">' in svg
    return re.search(rf'<desc id="{chart_id}-desc">(.*?)</desc>', svg).group(1)


def test_forecast_chart_is_labelled_and_summarised():
    days = [{"date": DAY + dt.timedelta(days=i), "count": 2 if i == 3 else 0} for i in range(30)]
    summary = _labelled(str(forecast_chart(days)), "forecast")
    assert summary.startswith("2 cards due over the next 30 days")


def test_review_heatmap_is_labelled_and_summarised():
    svg = str(review_heatmap({DAY: 3, DAY - dt.timedelta(days=1): 1}, DAY))
    summary = _labelled(svg, "history")
    assert summary.startswith("4 reviews on 2 days")


def _luminance(color: str) -> float:
    if color.startswith("hsl("):
        h, s, l_ = (float(v.strip("%")) for v in color[4:-1].split(","))
        r, g, b = colorsys.hls_to_rgb(h / 360, l_ / 100, s / 100)
        channels = [round(c * 255) / 255 for c in (r, g, b)]
    else:
        channels = [int(color[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def _contrast(a: str, b: str) -> float:
    la, lb = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def test_calendar_levels_stand_out_from_the_panel():
    # Non-text contrast (WCAG 1.4.11): each level with reviews is 3:1 against white,
    # and an empty day's outline too.
    for color in HEAT_COLORS[1:]:
        assert _contrast(color, "#ffffff") >= 3, color
    assert _contrast(HEAT_EMPTY_STROKE, "#ffffff") >= 3
    svg = str(review_heatmap({}, DAY))
    assert f'stroke="{HEAT_EMPTY_STROKE}"' in svg


def test_heat_map_text_meets_contrast_at_every_weight():
    for step in range(101):
        style = dict(part.split(":", 1) for part in heat_style(step / 100).split(";"))
        assert _contrast(style["background"], style["color"]) >= 4.5, (step, style)


# --- Both themes: the stylesheet recolours the server-drawn charts -----------------------

SITE_CSS = (Path(__file__).resolve().parents[2] / "static" / "css" / "site.css").read_text()


def _theme_vars(selector: str) -> dict[str, str]:
    block = re.search(re.escape(selector) + r"\s*\{(.*?)\}", SITE_CSS, re.S).group(1)
    return dict(re.findall(r"--([\w-]+):\s*(#[0-9a-fA-F]{6})\s*;", block))


LIGHT = _theme_vars(":root")
DARK = _theme_vars(':root[data-theme="dark"]')


def test_the_dark_colours_are_one_set_for_the_choice_and_the_device():
    assert _theme_vars(':root:not([data-theme="light"])') == DARK
    assert set(DARK) <= set(LIGHT)


def test_every_colour_the_charts_name_is_recoloured_by_the_stylesheet():
    # The SVG's presentation attributes are the light theme; a rule per colour maps each
    # to its variable, so a constant changed in study.py without its rule fails here.
    levels = {color: f"--heat-{level}" for level, color in enumerate(HEAT_COLORS)}
    named = {
        **levels,
        FORECAST_TODAY: "--chart-today",
        FORECAST_LATER: "--chart-later",
    }
    for color, variable in named.items():
        assert f'rect[fill="{color}"] {{ fill: var({variable}); }}' in SITE_CSS, color
        assert LIGHT[variable.lstrip("-")].lower() == color.lower(), variable
    assert f'[stroke="{HEAT_EMPTY_STROKE}"] {{ stroke: var(--chart-line); }}' in SITE_CSS
    assert LIGHT["chart-line"].lower() == HEAT_EMPTY_STROKE.lower()


def test_dark_calendar_and_forecast_stand_out_from_the_dark_panel():
    paper = DARK["paper"]
    for level in range(1, len(HEAT_COLORS)):
        assert _contrast(DARK[f"heat-{level}"], paper) >= 3, level
    # More reviews, more contrast: the scale still reads in order.
    ratios = [_contrast(DARK[f"heat-{level}"], paper) for level in range(1, len(HEAT_COLORS))]
    assert ratios == sorted(ratios)
    assert _contrast(DARK["chart-line"], paper) >= 3
    assert _contrast(DARK["chart-line"], DARK["heat-0"]) >= 3
    for name in ("chart-today", "chart-later", "bar-learned", "bar-mastered"):
        assert _contrast(DARK[name], paper) >= 3, name
    assert _contrast(DARK["bar-mastered"], DARK["bar-learned"]) >= 3
    assert _contrast(LIGHT["bar-mastered"], LIGHT["bar-learned"]) >= 3
    assert _contrast(LIGHT["bar-learned"], LIGHT["paper"]) >= 3


def test_dark_text_meets_contrast():
    for ink, ground, ratio in [
        ("ink", "paper", 7),
        ("ink", "wash", 7),
        ("muted", "paper", 4.5),
        ("muted", "wash", 4.5),
        ("accent", "paper", 4.5),
        ("accent-ink", "accent", 4.5),
        ("bad", "bad-wash", 4.5),
        ("good", "good-wash", 4.5),
        ("on-status", "good", 4.5),
        ("on-status", "bad", 4.5),
        ("ink", "field", 7),
        ("focus-ring", "paper", 3),
    ]:
        assert _contrast(DARK[ink], DARK[ground]) >= ratio, (ink, ground)

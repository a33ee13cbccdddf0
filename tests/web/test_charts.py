"""The server-drawn charts are labelled for screen readers, and heat maps meet contrast."""

import colorsys
import datetime as dt
import re

from cards.templatetags.study import (
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

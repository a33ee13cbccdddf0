"""The server-drawn charts are labelled for screen readers."""

import datetime as dt
import re

from cards.templatetags.study import forecast_chart, review_heatmap

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

"""Template helpers of the study pages: the due badge, the offline queue and the dashboard's
SVG charts (card Markdown is the ``markdown`` filter of ``studyapp.common``'s ``markup``).

Charts are drawn on the server as plain SVG (no script), each with a <title> and
<desc> for screen readers and a <title> per mark for pointer tooltips; the pages
also offer the same numbers as a table.
"""

from __future__ import annotations

import datetime as dt
import html
import re
from collections.abc import Iterable, Mapping

from django import template
from django.conf import settings
from django.templatetags.static import static
from django.utils import timezone
from django.utils.html import escape, format_html, strip_tags
from django.utils.safestring import SafeString, mark_safe

from cards import selectors
from cards.due import due_count, due_reviews
from cards.models import Card
from studyapp.common.rendering import markdown_with_math, render_markdown

register = template.Library()

# Five steps of one hue, light to dark; level 0 means no reviews. Levels 1-4 keep at
# least 3:1 against the white panel (3.1, 4.6, 7.0, 11.0); level 0 cells get an outline
# of that contrast instead.
HEAT_COLORS = ("#ebedf0", "#5a95e2", "#2674d9", "#1d58a5", "#143c71")
HEAT_EMPTY_STROKE = "#8a94a6"
# Chart text in user units. Both charts are about 430 units wide and shrink to ~330 px
# on a 390 px phone, so 16 units stay at or above 12 px there.
CHART_FONT_SIZE = 16


def _svg_open(chart_id: str, width, height, title: str, summary: str) -> list[str]:
    """The opening of an accessible chart: the <svg> element, its title and description."""
    return [
        format_html(
            '<svg id="{0}" role="img" aria-labelledby="{0}-title {0}-desc" viewBox="0 0 {1} {2}" '
            'width="{1}" height="{2}" xmlns="http://www.w3.org/2000/svg" font-size="{3}" '
            'font-family="system-ui, sans-serif">',
            chart_id,
            width,
            height,
            CHART_FONT_SIZE,
        ),
        format_html('<title id="{}-title">{}</title>', chart_id, title),
        format_html('<desc id="{}-desc">{}</desc>', chart_id, summary),
    ]


@register.simple_tag
def asset(path: str) -> str:
    """The URL of a static file; its plain name when the manifest lacks it (collectstatic not
    run), so the error pages that link their stylesheet this way never fail on it."""
    try:
        return static(path)
    except ValueError:
        return f"{settings.STATIC_URL}{path}"


@register.simple_tag(takes_context=True)
def nav_due_count(context) -> int:
    request = context.get("request")
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return 0
    # Computed once per request even if the nav is rendered twice.
    cached = getattr(request, "_study_due_count", None)
    if cached is None:
        today = selectors.learner_today(learner=user, at=timezone.now())
        cached = due_count(learner=user, today=today)
        request._study_due_count = cached
    return cached


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _day_label(day: dt.date) -> str:
    return f"{day:%a} {day.day} {day:%b %Y}"


# The forecast's geometry in user units: bar width and gap, the margins, the plot height.
FORECAST_BAR, FORECAST_GAP = 10, 3
FORECAST_LEFT, FORECAST_TOP, FORECAST_BOTTOM = 36, 12, 28
FORECAST_HEIGHT = 120
# The bar colours: today (overdue cards count on it) and the days after; see forecast_legend.
FORECAST_TODAY, FORECAST_LATER = "#b3261e", "#1f5fbf"


@register.simple_tag
def forecast_chart(forecast: Iterable[Mapping], chart_id: str = "forecast") -> SafeString:
    """A bar per day: ``forecast`` is ``[{date, count}]`` (dates or ISO strings), today first."""
    days = [(_as_date(item["date"]), int(item["count"])) for item in forecast]
    if not days:
        return mark_safe("")
    # Room on the right for half of a label centred under the last labelled bar.
    width = FORECAST_LEFT + len(days) * (FORECAST_BAR + FORECAST_GAP) + 10
    scale_max = max(max(count for _, count in days), 1)
    parts = [
        *_svg_open(
            chart_id,
            width,
            FORECAST_HEIGHT + FORECAST_TOP + FORECAST_BOTTOM,
            f"Cards due per day, next {len(days)} days",
            _forecast_summary(days),
        ),
        *_forecast_axis(width, scale_max),
    ]
    for index, (day, count) in enumerate(days):
        parts.extend(_forecast_day(index, day, count, scale_max))
    parts.append("</svg>")
    return mark_safe("".join(str(p) for p in parts))


def _forecast_summary(days: list[tuple[dt.date, int]]) -> str:
    total = sum(count for _, count in days)
    busiest = max(days, key=lambda d: d[1])
    return f"{_plural(total, 'card')} due over the next {len(days)} days" + (
        f"; the busiest day is {_day_label(busiest[0])} with {busiest[1]}." if busiest[1] else "."
    )


def _forecast_axis(width: int, scale_max: int) -> list[SafeString]:
    """The zero line and the peak value."""
    left, baseline = FORECAST_LEFT, FORECAST_TOP + FORECAST_HEIGHT
    return [
        format_html(
            '<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="#8a94a6"/>',
            left - 2,
            baseline,
            width,
            baseline,
        ),
        format_html(
            '<text x="{}" y="{}" text-anchor="end" fill="#5b6576">{}</text>',
            left - 5,
            FORECAST_TOP + 12,
            scale_max,
        ),
        format_html(
            '<text x="{}" y="{}" text-anchor="end" fill="#5b6576">0</text>', left - 5, baseline
        ),
    ]


def _forecast_day(index: int, day: dt.date, count: int, scale_max: int) -> list[SafeString]:
    """One day's bar, its tooltip target and, every seventh day, a tick with the date."""
    bar, top, height = FORECAST_BAR, FORECAST_TOP, FORECAST_HEIGHT
    x = FORECAST_LEFT + index * (bar + FORECAST_GAP)
    h = round(height * count / scale_max, 1)
    label = f"{_day_label(day)}: {_plural(count, 'card')} due"
    parts = [
        format_html(
            '<rect x="{}" y="{}" width="{}" height="{}" rx="2" fill="{}"><title>{}</title></rect>',
            x,
            top + height - h,
            bar,
            max(h, 0.0),
            FORECAST_LATER if index else FORECAST_TODAY,
            label,
        ),
        # An invisible full-height target so every day has a tooltip, even at zero.
        format_html(
            '<rect x="{}" y="{}" width="{}" height="{}" fill="transparent"><title>{}</title></rect>',
            x,
            top,
            bar,
            height,
            label,
        ),
    ]
    if index % 7 == 0:
        # A tick and a label centred under the day's own bar.
        parts.append(
            format_html(
                '<line x1="{0}" y1="{1}" x2="{0}" y2="{2}" stroke="#8a94a6"/>'
                '<text x="{0}" y="{3}" text-anchor="middle" fill="#5b6576">{4}</text>',
                x + bar / 2,
                top + height,
                top + height + 4,
                top + height + 20,
                f"{day:%b} {day.day}",
            )
        )
    return parts


def _as_date(value) -> dt.date:
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    return dt.date.fromisoformat(str(value))


def heat_level(count: int, peak: int) -> int:
    """0 for no reviews, else 1..4 by share of the busiest day."""
    if count <= 0:
        return 0
    if peak <= 0:
        return 1
    return min(4, 1 + (4 * (count - 1)) // max(peak, 1))


@register.simple_tag
def review_heatmap(
    calendar: Mapping, today: dt.date, weeks: int = 26, chart_id: str = "history"
) -> SafeString:
    """A GitHub-style calendar: one column per week (Monday on top), one cell per study day."""
    counts = {_as_date(k): int(v) for k, v in calendar.items()}
    start = today - dt.timedelta(days=today.weekday()) - dt.timedelta(weeks=weeks - 1)
    cell, gap, left, top = 12, 3, 36, 22
    width = left + weeks * (cell + gap)
    height = top + 7 * (cell + gap)
    days_in_range = [start + dt.timedelta(days=i) for i in range((today - start).days + 1)]
    in_range = {d: counts.get(d, 0) for d in days_in_range}
    peak = max(in_range.values(), default=0)
    total = sum(in_range.values())
    active = sum(1 for c in in_range.values() if c)
    summary = f"{_plural(total, 'review')} on {_plural(active, 'day')} since {_day_label(start)}."
    if peak:
        busiest = max(in_range, key=lambda d: (in_range[d], d))
        summary += f" Busiest day: {_day_label(busiest)} with {_plural(peak, 'review')}."
    parts = [
        *_svg_open(chart_id, width, height, f"Reviews per day, last {weeks} weeks", summary),
    ]
    for row, name in ((0, "Mon"), (2, "Wed"), (4, "Fri")):
        parts.append(
            format_html(
                '<text x="0" y="{}" fill="#5b6576">{}</text>',
                top + row * (cell + gap) + cell + 1,
                name,
            )
        )
    last_month = None
    for day in days_in_range:
        column, row = (day - start).days // 7, day.weekday()
        x, y = left + column * (cell + gap), top + row * (cell + gap)
        if row == 0 and day.month != last_month:
            last_month = day.month
            if column < weeks - 1:
                parts.append(
                    format_html('<text x="{}" y="15" fill="#5b6576">{}</text>', x, f"{day:%b}")
                )
        count = in_range[day]
        parts.append(
            format_html(
                '<rect x="{}" y="{}" width="{}" height="{}" rx="2" fill="{}"{}><title>{}</title></rect>',
                x,
                y,
                cell,
                cell,
                HEAT_COLORS[heat_level(count, peak)],
                _cell_outline(count, day == today),
                f"{_day_label(day)}: {_plural(count, 'review')}",
            )
        )
    parts.append("</svg>")
    return mark_safe("".join(str(p) for p in parts))


def _cell_outline(count: int, is_today: bool) -> SafeString:
    if is_today:
        return mark_safe(' stroke="#1d2430" stroke-width="1.5"')
    if count <= 0:
        return format_html(' stroke="{}" stroke-width="1"', HEAT_EMPTY_STROKE)
    return mark_safe("")


@register.simple_tag
def heat_legend() -> SafeString:
    swatches = "".join(
        str(format_html('<span class="swatch level-{}"></span>', level))
        for level in range(len(HEAT_COLORS))
    )
    return mark_safe(f'<div class="legend" aria-hidden="true">Fewer {swatches} More</div>')


@register.simple_tag
def forecast_legend() -> SafeString:
    """What the forecast's two bar colours mean, in words beside a swatch of each."""
    return format_html(
        '<ul class="legend" id="forecast-legend">'
        '<li><span class="swatch" style="background:{}"></span>Today, with overdue cards</li>'
        '<li><span class="swatch" style="background:{}"></span>Later days</li></ul>',
        FORECAST_TODAY,
        FORECAST_LATER,
    )


@register.filter
def nonzero_days(calendar: Mapping) -> list[tuple[dt.date, int]]:
    """Days with at least one review, newest first, for the table alternative."""
    return sorted(((_as_date(k), int(v)) for k, v in calendar.items() if int(v)), reverse=True)


# How many further due cards the review page carries for answering offline.
OFFLINE_CARDS = 20


@register.simple_tag(takes_context=True)
def offline_review_cards(context) -> list:
    """The next due recall and interview cards after the one shown, for the offline queue.

    Exercise and lab cards are left out: each review of one needs the server (a fresh
    exercise, or a lab submission run in the sandbox).
    """
    request, state, today = context.get("request"), context.get("state"), context.get("today")
    if request is None or state is None or today is None:
        return []
    due = (
        due_reviews(learner=request.user, today=today)
        .exclude(card__kind__in=[Card.Kind.EXERCISE, Card.Kind.LAB])
        .exclude(pk=state.pk)
        .prefetch_related(None)  # one query whatever is due; the label leaves tags out
    )
    return [s.card for s in due[:OFFLINE_CARDS]]


# Private-use characters mark where a formula stood once the Markdown is reduced to text.
_FORMULA_MARK = re.compile("\ue000(\\d+)\ue001")


@register.filter
def excerpt(text: str, limit: int = 90) -> SafeString:
    """A one-line excerpt of card Markdown: its text without markup, its formulas rendered.

    A formula is kept whole or left out, never cut; text is cut at a word. Each formula
    counts by its source length toward ``limit`` (characters).
    """
    formulas: list[str] = []

    def mark(tex: str, display: bool) -> str:
        formulas.append(tex)
        return f"\ue000{len(formulas) - 1}\ue001"

    plain = html.unescape(strip_tags(markdown_with_math(text or "", mark)))
    plain = " ".join(plain.split())
    pieces: list[str] = []
    used = 0
    cut = False
    for index, chunk in enumerate(_FORMULA_MARK.split(plain)):
        if index % 2:  # a formula
            tex = formulas[int(chunk)]
            if used + len(tex) > limit:
                cut = True
                break
            pieces.append(_inline_formula(tex))
            used += len(tex)
            continue
        room = limit - used
        if len(chunk) > room:
            words = chunk[:room].rsplit(" ", 1)[0] if " " in chunk[:room] else ""
            pieces.append(str(escape(words.rstrip())))
            cut = True
            break
        pieces.append(str(escape(chunk)))
        used += len(chunk)
    shown = "".join(pieces).strip()
    return mark_safe(shown + "\N{HORIZONTAL ELLIPSIS}" if cut else shown)


def _inline_formula(tex: str) -> str:
    """One formula as inline MathML; its source in <code> (without dollars) if it will not convert."""
    source = " ".join(tex.split())
    rendered = render_markdown(f"${source}$").removeprefix("<p>").removesuffix("</p>")
    if rendered.startswith("<math") or rendered.startswith('<code class="math-error">'):
        return rendered
    return str(format_html('<code class="math-error">{}</code>', source))

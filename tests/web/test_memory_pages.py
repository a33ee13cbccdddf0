"""The memory section of the progress page and the staff deck memory page in a browser:
axe-clean at WCAG 2.2 AA in both themes and at both widths, charts drawn in the text colour."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from cards import services
from cards.models import Card, Deck, ReviewLog

from .conftest import WIDTHS, axe_check, log_in, open_view

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture(
    params=[(width, theme) for theme in ("light", "dark") for width in WIDTHS],
    ids=lambda param: "-".join(param),
)
def themed(request, browser):
    width, theme = request.param
    for page in open_view(
        browser, width, WIDTHS[width], service_workers="block", color_scheme=theme
    ):
        page.width_name = f"{width}-{theme}"
        yield page


def _history(learner) -> Deck:
    """A deck with a few weeks of reviews: every rung, calibration bins and workload."""
    deck = Deck.objects.create(slug="memory", title="Memory")
    cards = Card.objects.bulk_create(
        Card(deck=deck, kind="recall", prompt=f"P{i}", answer=f"A{i}", position=i)
        for i in range(12)
    )
    services.enroll(learner=learner, deck=deck, at=timezone.now() - dt.timedelta(days=90))
    today = timezone.localdate()
    rows = []
    for i, card in enumerate(cards):
        day = today - dt.timedelta(days=80)
        for gap in (0, 3, 7, 14, 30, 1):
            day += dt.timedelta(days=gap)
            rows.append(
                ReviewLog(
                    learner=learner,
                    card=card,
                    reviewed_at=dt.datetime.combine(day, dt.time(12), tzinfo=dt.UTC),
                    study_day=day,
                    result="fail" if (i + gap) % 5 == 0 else "pass",
                    step_before=0,
                    step_after=0,
                    interval_days=1,
                    due_before=day,
                    due_after=day,
                )
            )
    ReviewLog.objects.bulk_create(rows)
    return deck


def _stroke_is_text_colour(page, selector: str) -> bool:
    return page.evaluate(
        """s => { const g = document.querySelector(s);
                  return getComputedStyle(g).stroke === getComputedStyle(g).color; }""",
        selector,
    )


def test_progress_memory_section_in_both_themes(live_server, themed, axe, screenshot, learner):
    _history(learner)
    log_in(themed.context, live_server, learner)
    themed.goto(f"{live_server.url}/progress/")
    themed.wait_for_selector("#memory-rungs")
    assert themed.locator("#calibration-chart circle").count() >= 2
    assert themed.locator("#workload-chart polyline").count() == 4
    assert _stroke_is_text_colour(themed, "#workload-chart svg g")
    themed.get_by_text("Calibration as a table").click()
    axe_check(axe, screenshot, themed, f"memory-progress-{themed.width_name}", "progress memory")


def test_staff_deck_memory_page(live_server, themed, axe, screenshot, learner, staff):
    deck = _history(learner)
    log_in(themed.context, live_server, staff)
    themed.goto(f"{live_server.url}/admin/cards/memoryparameters/decks/{deck.slug}/")
    themed.wait_for_selector("#memory-cards")
    assert themed.locator("#workload-chart polyline").count() == 4
    axe_check(axe, screenshot, themed, f"memory-deck-{themed.width_name}", "deck memory")

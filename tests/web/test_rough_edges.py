"""Smaller fixes of the learner pages: chart labels, deck text, exercise and playground pages."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import numpy as np
import pytest
from django.conf import settings
from django.test import Client
from django.utils import timezone

from cards import services as card_services
from cards.models import Card
from cards.templatetags.study import forecast_chart
from exercises import services as exercise_services
from exercises.kinds import KINDS
from studyapp.common.rendering import render_markdown

from .conftest import log_in, wait_until

DAY = dt.date(2026, 11, 30)
browser_test = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def signed_in(learner) -> Client:
    client = Client()
    client.force_login(learner)
    return client


def test_forecast_labels_sit_centred_under_their_own_bar():
    days = [{"date": DAY + dt.timedelta(days=i), "count": i % 3} for i in range(30)]
    svg = str(forecast_chart(days))
    bars = [
        (float(x), float(w))
        for x, w in re.findall(
            r'<rect x="([\d.]+)" y="[\d.]+" width="([\d.]+)" height="[\d.]+" rx', svg
        )
    ]
    labels = re.findall(
        r'<text x="([\d.]+)" y="[\d.]+" text-anchor="middle"[^>]*>([^<]+)</text>', svg
    )
    assert [text for _, text in labels] == ["Nov 30", "Dec 7", "Dec 14", "Dec 21", "Dec 28"]
    for index, (x, _) in enumerate(labels):
        bar_x, bar_width = bars[index * 7]
        assert float(x) == bar_x + bar_width / 2


def test_deck_descriptions_are_rendered_like_cards(signed_in, deck):
    deck.description = "Attention costs $n^2$ in the sequence length, **per head**."
    deck.save()
    page = signed_in.get("/").content.decode()
    assert "<math" in page and "<strong>per head</strong>" in page
    assert "$n^2$" not in page


def test_matrix_brackets_are_stretchy_fences():
    html = render_markdown(
        r"$\begin{pmatrix}1 & 2\\3 & 4\end{pmatrix}$ and $\begin{bmatrix}1\\2\end{bmatrix}$"
    )
    assert html.count('stretchy="true" fence="true" form="prefix"') == 2
    assert html.count('stretchy="true" fence="true" form="postfix"') == 2


def test_exercise_list_shows_titles(signed_in, learner):
    exercise = exercise_services.exercise_create(owner=learner, kind="multi_head", params={})
    page = signed_in.get("/exercises/").content.decode()
    assert KINDS["multi_head"].title in page
    assert f"multi_head #{exercise.pk}" not in page


def _review_exercise(client, learner, deck):
    card_services.enroll(learner=learner, deck=deck, at=timezone.now())
    learner.review_states.filter(card__kind=Card.Kind.RECALL).delete()
    learner.review_states.update(due_on=timezone.localdate() - dt.timedelta(days=1))
    return client.get("/review/").context["exercise"]


def _zero_answers(exercise) -> dict[str, str]:
    data = {}
    for ask in exercise.asks:
        for index in np.ndindex(*ask["shape"]):
            data["-".join(["answer", ask["name"], *(str(i) for i in index)])] = "0"
    return data


def test_continue_reviewing_stays_after_a_second_submit(signed_in, learner, deck):
    exercise = _review_exercise(signed_in, learner, deck)
    first = signed_in.post(f"/exercises/{exercise.pk}/submit/", _zero_answers(exercise))
    assert first["Location"] == f"/exercises/{exercise.pk}/?from=review"
    page = signed_in.get(first["Location"]).content.decode()
    assert "Continue reviewing" in page
    assert f'action="/exercises/{exercise.pk}/submit/?from=review"' in page
    second = signed_in.post(
        f"/exercises/{exercise.pk}/submit/?from=review", _zero_answers(exercise)
    )
    assert second["Location"] == f"/exercises/{exercise.pk}/?from=review"
    page = signed_in.get(second["Location"]).content.decode()
    assert "Continue reviewing" in page
    # During a review the nav marks Review, not Exercises.
    current = re.findall(r'<a href="([^"]+)" aria-current="page">', page)
    assert current == ["/review/"]
    # A practice exercise still marks Exercises.
    practice = exercise_services.exercise_create(owner=learner, kind="attention", params={})
    page = signed_in.get(f"/exercises/{practice.pk}/").content.decode()
    assert re.findall(r'<a href="([^"]+)" aria-current="page">', page) == ["/exercises/"]
    assert "Continue reviewing" not in page


def test_playground_form_keeps_the_csrf_token_out_of_the_url(signed_in):
    page = signed_in.get("/playground/").content.decode()
    form = re.search(r'<form method="get"[^>]*id="playground-form".*?</form>', page, re.S).group(0)
    assert "csrfmiddlewaretoken" not in form
    assert re.search(r'data-csrf="[^"]+"', form)


def test_playground_server_messages_name_positions_one_way(signed_in):
    response = signed_in.get("/playground/", {"mode": "qkv", "Q-0-1": "oops"})
    assert "Q row 1, column 2: expected a number" in response.content.decode()
    response = signed_in.get("/playground/", {"mode": "qkv", "K-cols": "500"})
    assert (
        "K cols: expected a whole number from 1 to 8, got &#x27;500&#x27;"
        in response.content.decode()
    )


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_chart_text_is_at_least_12px_on_a_phone(live_server, phone, learner, deck):
    log_in(phone.context, live_server, learner)
    phone.goto(f"{live_server.url}/")
    sizes = phone.evaluate(
        """() => Array.from(document.querySelectorAll('.chart svg text')).map(t => {
            const svg = t.ownerSVGElement;
            const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
            return parseFloat(getComputedStyle(t).fontSize) * scale;
        })"""
    )
    assert sizes and min(sizes) >= 12, sizes
    # No label is cut off at either edge of its chart.
    outside = phone.evaluate(
        """() => Array.from(document.querySelectorAll('.chart svg text')).filter(t => {
            const box = t.getBBox(), view = t.ownerSVGElement.viewBox.baseVal;
            return box.x < 0 || box.x + box.width > view.width;
        }).map(t => t.textContent)"""
    )
    assert outside == []


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_exercise_pages_on_a_phone(live_server, phone, learner):
    log_in(phone.context, live_server, learner)
    exercise = exercise_services.exercise_create(owner=learner, kind="cost", params={})
    phone.goto(f"{live_server.url}/exercises/")
    status = phone.get_by_role("columnheader", name="Status").bounding_box()
    assert status["x"] + status["width"] <= phone.viewport_size["width"]
    assert phone.get_by_role("link", name=KINDS["cost"].title).is_visible()
    phone.goto(f"{live_server.url}/exercises/{exercise.pk}/")
    cell = phone.locator("table.answer-grid input").first
    cell.fill("123456789012345")
    assert cell.evaluate("input => input.scrollWidth <= input.clientWidth")


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_playground_says_what_it_clamps_and_marks_stale_results(live_server, phone, learner):
    log_in(phone.context, live_server, learner)
    phone.goto(f"{live_server.url}/playground/?preset=abc")
    # The preset asks a prediction first; skipping it shows the weights.
    phone.wait_for_selector("#pg-predict", state="visible")
    phone.get_by_role("button", name="Skip").click()
    phone.wait_for_selector("#weights-table", state="visible")
    # On a phone the weights stay in view while the top of the form is edited.
    phone.get_by_label("Q row 1 column 1", exact=True).focus()
    box = phone.locator("#weights-table").bounding_box()
    assert box["y"] < phone.viewport_size["height"]
    phone.locator("#K-cols").fill("500")
    phone.wait_for_selector(".size-note:has-text('using 8')")
    assert "K columns: expected a whole number from 1 to 8" in phone.inner_text(".size-note")
    phone.wait_for_selector("#pg-error li")
    assert phone.is_visible("#pg-stale")
    assert "stale" in phone.get_attribute("#pg-results", "class")
    phone.locator("#K-cols").fill("2")
    wait_until(phone, "document.querySelector('#pg-error').textContent.trim() === ''")
    assert phone.is_hidden("#pg-stale")
    assert phone.is_hidden(".size-note")


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_playground_without_javascript_sends_no_token_in_the_url(live_server, browser, learner):
    context = browser.new_context(java_script_enabled=False)
    try:
        page = context.new_page()
        log_in(context, live_server, learner)
        page.goto(f"{live_server.url}/playground/?preset=abc")
        page.get_by_role("button", name="Compute").click()
        page.wait_for_load_state()
        assert "mode=qkv" in page.url
        assert "csrfmiddlewaretoken" not in page.url
        assert page.locator("#weights-table").is_visible()
    finally:
        context.close()


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_matrix_parentheses_stretch_to_the_matrix(live_server, page):
    html = render_markdown(r"$$\begin{pmatrix}1 & 2\\3 & 4\\5 & 6\end{pmatrix}$$")
    page.set_content(f"<!doctype html><html><body>{html}</body></html>")
    page.add_style_tag(path=str(Path(settings.BASE_DIR) / "static" / "css" / "site.css"))
    heights = page.evaluate(
        """() => ({
            fence: document.querySelector('mo').getBoundingClientRect().height,
            table: document.querySelector('mtable').getBoundingClientRect().height,
        })"""
    )
    assert heights["fence"] >= 0.9 * heights["table"], heights

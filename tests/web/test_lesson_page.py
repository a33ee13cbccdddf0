"""The lesson page: readable by visitors and learners before enrolling, anchored sections
with what practises each, the next step at its end; axe-clean at both widths; and the
review page's link back to a card's section once its answer shows."""

from __future__ import annotations

import datetime as dt
import io
import re

import pytest
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from cards import services
from cards.decks import deck_import
from cards.lesson import deck_lesson
from cards.models import Card, Deck, Enrollment
from studyapp.cache_control import PRIVATE
from tests.cards.test_lesson_deck_file import lesson_doc

from .conftest import WIDTHS, axe_check, go_offline, go_online, log_in, open_view, wait_until

PAGE = "/decks/heads/lesson/"
# The page-weight budget the learner pages keep (HTML, before compression).
MAX_PAGE_BYTES = 44_000


def _import() -> Deck:
    doc = lesson_doc()
    doc["cards"].append(
        {
            "key": "lab-attention",
            "kind": "lab",
            "prompt": "Write attention with a mask.",
            "lab": "attention",
            "lesson_section": "masks",
        }
    )
    doc["cards"].append(
        {
            "key": "projection",
            "kind": "exercise",
            "prompt": "Project the tokens.",
            "exercise": {"kind": "projection", "params": {"preset": "lesson", "mask": "causal"}},
            "lesson_section": "masks",
        }
    )
    deck_import(data=doc)
    return Deck.objects.get(slug="heads")


@pytest.fixture
def heads(db) -> Deck:
    return _import()


def _signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _page(client: Client) -> str:
    response = client.get(PAGE)
    assert response.status_code == 200
    assert response["Cache-Control"] == PRIVATE
    return response.content.decode()


@pytest.mark.django_db
def test_a_visitor_reads_the_whole_lesson_and_is_offered_sign_up(heads):
    page = _page(Client())
    for key, title in (("objective", "The objective"), ("masks", "Masks")):
        assert f'<section class="panel lesson-section" id="{key}">' in page
        assert f'<a href="#{key}">{title}</a>' in page
    assert 'data-figure="worked-example-weights"' in page and 'data-figure="causal-mask"' in page
    assert 'href="/signup/"' in page and 'href="/login/?next=/decks/heads/lesson/"' in page
    assert "lesson-enrol" not in page
    # Visitors see the prompts, not links to notes they could not open.
    assert "Why divide by" in page and "/cards/" not in page


@pytest.mark.django_db
def test_a_learner_not_enrolled_gets_the_enrol_button_and_practise_links(heads, learner):
    page = _page(_signed_in(learner))
    form = re.search(r'<form method="post" action="([^"]+)" class="actions">', page)
    assert form is not None and form.group(1) == "/decks/heads/enroll/"
    assert 'id="lesson-enrol"' in page and "Go to review" not in page
    masks = page[page.index('id="masks"') :]
    practise = masks[masks.index('data-practice="masks"') :]
    for key in ("mask-by-hand", "lab-attention", "projection"):
        card = Card.objects.get(key=key)
        assert f'href="/cards/{card.pk}/notes/"' in practise
    assert 'href="/playground/?preset=causal"' in practise
    assert 'href="/exercises/?kind=attention"' in practise
    assert 'href="/exercises/?kind=projection"' in practise
    assert 'href="/labs/attention/"' in practise
    # The objective has no card pointing to it: nothing to practise there.
    objective = page[page.index('id="objective"') : page.index('id="worked-example"')]
    assert "Practise this" not in objective


@pytest.mark.django_db
def test_the_enrol_button_enrols_and_then_the_page_says_go_to_review(heads, learner):
    client = _signed_in(learner)
    response = client.post("/decks/heads/enroll/")
    assert response.status_code == 302
    assert Enrollment.objects.filter(learner=learner, deck=heads).exists()
    page = _page(client)
    assert 'id="lesson-review"' in page and 'href="/review/"' in page
    assert "lesson-enrol" not in page


@pytest.mark.django_db
def test_an_unknown_deck_is_a_404_and_a_deck_without_sections_says_so(learner):
    assert Client().get("/decks/nope/lesson/").status_code == 404
    Deck.objects.create(slug="heads", title="Heads")
    page = _page(_signed_in(learner))
    assert 'id="lesson-empty"' in page and 'id="lesson-enrol"' in page


@pytest.mark.django_db
def test_the_page_keeps_the_weight_budget(heads, learner):
    body = _signed_in(learner).get(PAGE).content
    assert len(body) < MAX_PAGE_BYTES, len(body)


@pytest.mark.django_db
def test_the_starter_lesson_page_is_its_sections_and_little_else(learner):
    """The starter lesson's own text and formulas are over the budget by themselves; what
    the page adds (the site's frame, contents, practise lists) stays within it."""
    call_command("load_starter_content", stdout=io.StringIO())
    deck = Deck.objects.get(slug="attention-and-transformers")
    found = deck_lesson(deck=deck)
    assert found.sections, "the starter deck ships a lesson"
    bodies = sum(len(str(section.html).encode()) for section in found.sections)
    body = _signed_in(learner).get(f"/decks/{deck.slug}/lesson/").content
    assert len(body) - bodies < MAX_PAGE_BYTES, (len(body), bodies)


# --- In a browser ----------------------------------------------------------------------------


@pytest.fixture(params=list(WIDTHS))
def view(request, browser):
    yield from open_view(browser, request.param, WIDTHS[request.param], service_workers="block")


@pytest.fixture
def check(axe, screenshot):
    def run(page, name: str) -> None:
        axe_check(axe, screenshot, page, f"a11y-{name}-{page.width_name}", name)

    return run


def _no_sideways_scroll(page) -> None:
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_lesson_page_passes_axe_signed_out_and_in(live_server, view, check, learner):
    _import()
    view.goto(f"{live_server.url}{PAGE}")
    check(view, "lesson-visitor")
    _no_sideways_scroll(view)
    log_in(view.context, live_server, learner)
    view.goto(f"{live_server.url}/")
    view.goto(f"{live_server.url}{PAGE}#masks")
    view.get_by_role("button", name="Enrol in Heads").wait_for()
    check(view, "lesson-learner")
    _no_sideways_scroll(view)
    view.get_by_role("button", name="Enrol in Heads").click()
    view.wait_for_url(f"{live_server.url}/")
    view.goto(f"{live_server.url}{PAGE}")
    view.locator("#lesson-review").wait_for()
    check(view, "lesson-enrolled")


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_review_page_links_to_the_cards_section_once_the_answer_shows(
    live_server, page, learner
):
    deck = _import()
    services.enroll(learner=learner, deck=deck, at=timezone.now())
    learner.review_states.exclude(card__key__in=["why-scale", "no-section"]).delete()
    learner.review_states.update(due_on=timezone.localdate() - dt.timedelta(days=1))
    learner.review_states.filter(card__key="no-section").update(due_on=timezone.localdate())
    log_in(page.context, live_server, learner)
    page.goto(f"{live_server.url}/review/")
    link = page.get_by_role("link", name="Read it again in the lesson")
    assert page.inner_text("#card-prompt").startswith("Why divide")
    assert not link.is_visible(), "hidden until the answer shows"
    page.get_by_text("Show answer").click()
    link.wait_for(state="visible")
    assert link.get_attribute("href") == "/decks/heads/lesson/#worked-example"
    with page.expect_navigation():
        page.get_by_role("button", name="Good").click()
    wait_until(page, "document.querySelector('#card-prompt').innerText.trim() === 'P'")
    page.get_by_text("Show answer").click()
    page.wait_for_selector("#answer-body", state="visible")
    assert page.is_hidden("#lesson-link"), "a card without a section shows no link"
    # The link leads to the section.
    page.goto(f"{live_server.url}/decks/heads/lesson/#worked-example")
    assert page.evaluate("document.querySelector(':target').id") == "worked-example"


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_starter_lesson_passes_axe_and_fits_the_screen(live_server, view, check):
    call_command("load_starter_content", stdout=io.StringIO())
    view.goto(f"{live_server.url}/decks/attention-and-transformers/lesson/")
    check(view, "lesson-starter")
    _no_sideways_scroll(view)
    # Every figure of the starter lesson is drawn, none left as its source line.
    assert view.locator("figure.lesson-figure").count() >= 3
    assert "{{figure:" not in view.inner_text("main")


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_offline_a_carried_card_links_its_own_section(live_server, page, learner):
    deck = _import()
    services.enroll(learner=learner, deck=deck, at=timezone.now())
    learner.review_states.exclude(card__kind="recall").delete()
    order = {"no-section": 3, "why-scale": 2}
    for key, days in order.items():
        learner.review_states.filter(card__key=key).update(
            due_on=timezone.localdate() - dt.timedelta(days=days)
        )
    log_in(page.context, live_server, learner)
    page.goto(f"{live_server.url}/review/")
    assert page.inner_text("#card-prompt").strip() == "P"
    go_offline(page.context)
    page.click("#show-answer")
    assert page.is_hidden("#lesson-link")
    page.click("#grade-good")
    page.wait_for_selector("#offline-status:has-text('1 answer is waiting')")
    # The next card comes from the page itself, and its section's link with it.
    assert page.inner_text("#card-prompt").startswith("Why divide")
    page.click("#show-answer")
    link = page.get_by_role("link", name="Read it again in the lesson")
    link.wait_for(state="visible")
    assert link.get_attribute("href") == "/decks/heads/lesson/#worked-example"
    go_online(page.context)
    page.wait_for_selector("#offline-status:has-text('All answers given offline have been sent')")

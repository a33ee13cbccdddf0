"""Study controls in headless Chromium: undo with U, bury, suspend and resume, the
leech warning, a problem report, the pause, the CSV download and the admin's analysis."""

from __future__ import annotations

import datetime as dt

import pytest
from django.test import Client
from django.utils import timezone

from cards import selectors, services
from cards.models import Card, Report, ReviewLog, ReviewState

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _log_in(context, live_server, user) -> None:
    client = Client()
    client.force_login(user)
    context.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}]
    )


@pytest.fixture
def due_now(learner, deck):
    """The learner enrolled in the deck, its recall card due today, the exercise set aside."""
    Card.objects.filter(deck=deck, kind=Card.Kind.EXERCISE).update(is_active=False)
    services.enroll(learner=learner, deck=deck, at=timezone.now())
    today = selectors.learner_today(learner=learner, at=timezone.now())
    ReviewState.objects.filter(learner=learner).update(due_on=today)
    return deck.cards.get(key="why-scale")


def test_undo_a_grade_with_the_u_key(live_server, page, learner, due_now, screenshot):
    _log_in(page.context, live_server, learner)
    page.goto(f"{live_server.url}/review/")
    page.keyboard.press("Space")
    page.keyboard.press("1")
    page.wait_for_selector("text=All done for today")
    page.wait_for_selector("#undo-button")
    page.wait_for_load_state()  # the next page's scripts have run: U is heard
    screenshot(page, "controls-undo-offered")
    page.keyboard.press("u")
    page.wait_for_selector("text=Undone")
    page.wait_for_selector(f"article[data-card='{due_now.pk}']")
    assert ReviewLog.objects.filter(undo_of__isnull=False).count() == 1
    state = ReviewState.objects.get(learner=learner, card=due_now)
    assert state.step == 0 and state.due_on == selectors.learner_today(
        learner=learner, at=timezone.now()
    )
    # Grade again with the mouse and undo with the button.
    page.keyboard.press("Space")
    page.get_by_role("button", name="Good").click()
    page.get_by_role("button", name="Undo last grade").click()
    page.wait_for_selector("text=Undone")
    assert ReviewLog.objects.filter(undo_of__isnull=False).count() == 2


def test_bury_then_suspend_and_resume_from_the_dashboard(
    live_server, page, learner, due_now, screenshot
):
    _log_in(page.context, live_server, learner)
    page.goto(f"{live_server.url}/review/")
    page.get_by_role("button", name="Bury until tomorrow").click()
    page.wait_for_selector("text=All done for today")
    ReviewState.objects.filter(learner=learner).update(buried_on=None)

    page.goto(f"{live_server.url}/review/")
    page.get_by_role("button", name="Suspend", exact=True).click()
    page.wait_for_selector("text=Card suspended")
    page.goto(f"{live_server.url}/")
    suspended = page.locator("#suspended-cards")
    assert "Why divide the scores" in suspended.inner_text()
    screenshot(page, "controls-suspended-list")
    suspended.get_by_role("button", name="Resume").click()
    page.wait_for_selector("text=Card resumed")
    assert page.locator("#suspended-cards").count() == 0
    assert not ReviewState.objects.get(learner=learner, card=due_now).suspended


def test_a_leech_offers_its_notes_and_suspending(
    live_server, page, learner, due_now, settings, screenshot
):
    settings.STUDY_LEECH_LAPSES = 2
    today = selectors.learner_today(learner=learner, at=timezone.now())
    ReviewLog.objects.bulk_create(
        [
            ReviewLog(
                learner=learner,
                card=due_now,
                reviewed_at=timezone.now() - dt.timedelta(days=d),
                study_day=today - dt.timedelta(days=d),
                result="fail",
                step_before=0,
                step_after=0,
                interval_days=1,
                due_before=today - dt.timedelta(days=d),
                due_after=today,
            )
            for d in (1, 2)
        ]
    )
    _log_in(page.context, live_server, learner)
    page.goto(f"{live_server.url}/review/")
    warning = page.locator("#leech-warning")
    assert "leech" in warning.inner_text()
    screenshot(page, "controls-leech")
    warning.get_by_role("link", name="its notes and hint").click()
    page.wait_for_selector("text=Answer and notes")
    assert "one-hot" in page.locator("#card-notes-answer").inner_text()
    page.go_back()
    page.locator("#leech-warning").get_by_role("button", name="Suspend this card").click()
    page.wait_for_selector("text=All done for today")
    assert ReviewState.objects.get(learner=learner, card=due_now).suspended


def test_report_a_problem_from_the_review_page(live_server, page, learner, due_now, screenshot):
    _log_in(page.context, live_server, learner)
    page.goto(f"{live_server.url}/review/")
    page.get_by_text("Report a problem").click()
    page.get_by_label("What is wrong with this card?").fill("The answer misses a factor.")
    screenshot(page, "controls-report")
    page.get_by_role("button", name="Send report").click()
    page.wait_for_selector("text=your report was received")
    report = Report.objects.get()
    assert (report.card_id, report.learner_id) == (due_now.pk, learner.pk)
    page.goto(f"{live_server.url}/profile/")
    row = page.locator("#my-reports tbody tr").first.inner_text()
    assert "The answer misses a factor." in row and "Received" in row


def test_pause_from_the_profile_and_download_the_log(
    live_server, page, learner, due_now, screenshot
):
    _log_in(page.context, live_server, learner)
    page.goto(f"{live_server.url}/profile/")
    page.get_by_label("For how many days").fill("5")
    page.get_by_role("button", name="Pause", exact=True).click()
    page.wait_for_selector("#pause-status")
    screenshot(page, "controls-paused")
    page.goto(f"{live_server.url}/review/")
    page.wait_for_selector("text=All done for today")
    page.goto(f"{live_server.url}/profile/")
    page.get_by_role("button", name="End the pause now").click()
    page.wait_for_selector("text=Pause ended")
    page.goto(f"{live_server.url}/review/")
    page.wait_for_selector(f"article[data-card='{due_now.pk}']")

    page.goto(f"{live_server.url}/profile/")
    with page.expect_download() as download:
        page.get_by_role("link", name="Download your review log").click()
    path = download.value.path()
    with open(path, encoding="utf-8") as f:
        assert f.readline().strip() == (
            "card_id,review_time,review_rating,review_state,review_duration"
        )


def test_staff_sort_the_item_analysis(live_server, page, staff, due_now, learner, screenshot):
    staff.is_superuser = True
    staff.save()
    services.review_record(learner=learner, card=due_now, result="fail", at=timezone.now())
    _log_in(page.context, live_server, staff)
    page.goto(f"{live_server.url}/admin/cards/cardanalysis/?o=card")
    page.get_by_role("link", name="Lapses").click()
    page.wait_for_url("**o=-lapses")
    first = page.locator("#item-analysis tbody tr").first
    assert first.get_attribute("data-card") == str(due_now.pk)
    screenshot(page, "controls-item-analysis")
    page.get_by_role("link", name="Exercise kinds").click()
    page.wait_for_selector("text=Item analysis: exercise kinds")


def test_staff_export_a_deck_for_anki_from_the_admin(live_server, page, staff, deck, tmp_path):
    import sqlite3
    import zipfile

    staff.is_superuser = True
    staff.save()
    _log_in(page.context, live_server, staff)
    page.goto(f"{live_server.url}/admin/cards/deck/")
    page.locator(f"input[name='_selected_action'][value='{deck.pk}']").check()
    page.select_option("select[name='action']", "export_apkg")
    with page.expect_download() as download:
        page.get_by_role("button", name="Go").click()
    assert download.value.suggested_filename == f"{deck.slug}.apkg"
    with zipfile.ZipFile(download.value.path()) as archive:
        (tmp_path / "collection.anki2").write_bytes(archive.read("collection.anki2"))
    db = sqlite3.connect(tmp_path / "collection.anki2")
    fronts = [row[0].split("\x1f")[0] for row in db.execute("SELECT flds FROM notes")]
    assert len(fronts) == 2
    assert any(r"\(\sqrt{d_k}\)" in front for front in fronts)
    assert any("Worked example" in front for front in fronts)

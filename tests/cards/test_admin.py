"""The staff's screens: cards editable with filters and a preview; progress read-only."""

import datetime as dt

import pytest
from django.urls import reverse

from cards.models import Card, ReviewLog, ReviewState, Tag
from cards.services import enroll, review_record

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client, staff):
    staff.is_superuser = True
    staff.save()
    client.force_login(staff)
    return client


@pytest.fixture
def tagged(deck):
    card = deck.cards.first()
    card.prompt = "Why divide by $\\sqrt{d_k}$?"
    card.save()
    card.tags.add(Tag.objects.create(name="scaling"))
    return card


def test_card_list_searches_and_filters(admin_client, deck, tagged):
    url = reverse("admin:cards_card_changelist")
    assert admin_client.get(url).status_code == 200
    by_tag = admin_client.get(url, {"tags__id__exact": tagged.tags.get().pk})
    assert by_tag.status_code == 200
    assert list(by_tag.context["cl"].queryset) == [tagged]
    by_kind = admin_client.get(url, {"kind__exact": "interview"})
    assert [c.kind for c in by_kind.context["cl"].queryset] == ["interview"]
    by_deck = admin_client.get(url, {"deck__id__exact": deck.pk})
    assert by_deck.context["cl"].result_count == 4
    found = admin_client.get(url, {"q": "sqrt"})
    assert list(found.context["cl"].queryset) == [tagged]


def test_card_change_page_shows_a_rendered_preview(admin_client, tagged):
    page = admin_client.get(reverse("admin:cards_card_change", args=[tagged.pk]))
    assert page.status_code == 200
    html = page.content.decode()
    assert "<math" in html and "<msqrt>" in html


def test_bulk_deactivate_and_activate(admin_client, deck):
    url = reverse("admin:cards_card_changelist")
    ids = list(deck.cards.values_list("pk", flat=True)[:2])
    response = admin_client.post(url, {"action": "deactivate", "_selected_action": ids})
    assert response.status_code == 302
    assert Card.objects.filter(pk__in=ids, is_active=False).count() == 2
    admin_client.post(url, {"action": "activate", "_selected_action": ids})
    assert Card.objects.filter(pk__in=ids, is_active=True).count() == 2


def test_review_states_and_logs_are_read_only(admin_client, deck, learner):
    at = dt.datetime(2026, 3, 2, 12, tzinfo=dt.UTC)
    enroll(learner=learner, deck=deck, at=at)
    review_record(
        learner=learner, card=deck.cards.first(), result="pass", at=at + dt.timedelta(days=1)
    )
    state = ReviewState.objects.filter(learner=learner).first()
    log = ReviewLog.objects.get()
    for model, obj in (("reviewstate", state), ("reviewlog", log)):
        assert admin_client.get(reverse(f"admin:cards_{model}_changelist")).status_code == 200
        assert admin_client.get(reverse(f"admin:cards_{model}_add")).status_code == 403
        change = admin_client.post(reverse(f"admin:cards_{model}_change", args=[obj.pk]), {})
        assert change.status_code == 403
        delete = admin_client.post(
            reverse(f"admin:cards_{model}_delete", args=[obj.pk]), {"post": "yes"}
        )
        assert delete.status_code == 403
    assert ReviewLog.objects.count() == 1


def test_beat_schedules_are_editable_in_the_admin(admin_client):
    from django_celery_beat.models import PeriodicTask

    names = set(PeriodicTask.objects.values_list("name", flat=True))
    assert {"schedule-new-cards", "send-due-reminders", "housekeeping"} <= names
    task = PeriodicTask.objects.get(name="send-due-reminders")
    page = admin_client.get(reverse("admin:django_celery_beat_periodictask_change", args=[task.pk]))
    assert page.status_code == 200


def test_learners_cannot_reach_the_admin(client, learner):
    client.force_login(learner)
    response = client.get(reverse("admin:cards_card_changelist"))
    assert response.status_code == 302 and "/admin/login/" in response["Location"]


def test_profile_admin_accepts_only_real_time_zones(admin_client, learner):
    url = reverse("admin:cards_learnerprofile_change", args=[learner.profile.pk])
    form = {"user": learner.pk, "day_starts_at": 4, "reminders": "on", "reminder_hour": 9}
    refused = admin_client.post(url, {**form, "timezone": "America"})
    assert refused.status_code == 200  # the form comes back with its error
    assert "timezone" in refused.context["adminform"].form.errors
    learner.profile.refresh_from_db()
    assert learner.profile.timezone == "UTC"
    accepted = admin_client.post(url, {**form, "timezone": "America/Chicago"})
    assert accepted.status_code == 302
    learner.profile.refresh_from_db()
    assert learner.profile.timezone == "America/Chicago"

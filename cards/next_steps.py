"""What a learner could do next, for the dashboard and the "All done" page.

Each step is a sentence and a link: the next reviews (from the forecast), the lesson
sections behind the cards missed most lately, the lab not yet passed, a practice
exercise of the weakest kind, and the interview question due soonest. A step with
nothing to say is left out. The reads are few and fixed in number (the topics' five,
one for the fails, one for the sections, one for the interview card, the labs' one).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from django.db.models import Count
from django.urls import reverse
from django.utils.http import urlencode

from labs.selectors import catalogue, lab_progress

from . import topics
from .models import Card, LessonSection, ReviewLog
from .selectors import scheduled_states
from .stats import learner_stats

# "Missed most lately": fails among the kept reviews of the last 30 study days.
MISSED_DAYS = 30
MISSED_SECTIONS = 3


@dataclass(frozen=True)
class NextStep:
    key: str  # reviews, lesson, lab, exercise, interview
    text: str
    link_text: str
    url: str
    # A card's prompt (Markdown with math) the link shows as a one-line excerpt instead.
    prompt: str = ""


def next_steps(
    *, learner, today: dt.date, forecast: Sequence[Mapping] | None = None
) -> list[NextStep]:
    """The learner's next steps, in the order above.

    ``forecast`` is ``stats/``'s (``[{date, count}]``, today first) where the caller has
    it; without it ``stats/``'s own is read.
    """
    facts = topics.card_facts(learner=learner, today=today)
    steps = [
        _next_reviews(learner=learner, today=today, forecast=forecast),
        *_missed_sections(learner=learner, today=today, card_ids=[f.id for f in facts]),
        _lab_not_passed(learner=learner, facts=facts),
        _weakest_kind(facts),
        _interview_soonest(learner=learner, today=today),
    ]
    return [step for step in steps if step is not None]


def _day(day: dt.date) -> str:
    return f"{day:%a} {day.day} {day:%b}"


def _cards(n: int) -> str:
    return f"{n} card{'' if n == 1 else 's'}"


def _next_reviews(*, learner, today: dt.date, forecast) -> NextStep | None:
    if forecast is None:
        forecast = learner_stats(learner=learner, today=today)["forecast"]
    first = next((day for day in forecast if day["count"]), None)
    if first is None:
        return None
    date = first["date"]
    if not isinstance(date, dt.date):
        date = dt.date.fromisoformat(str(date))
    if date <= today:
        return NextStep(
            "reviews", f"{_cards(first['count'])} due today.", "Review them now", reverse("review")
        )
    return NextStep(
        "reviews",
        f"Next reviews: {_cards(first['count'])} on {_day(date)}.",
        "See the forecast",
        reverse("dashboard") + "#forecast-heading",
    )


def _missed_sections(*, learner, today: dt.date, card_ids: list[int]) -> list[NextStep]:
    """The lesson sections whose cards the learner failed most in the last 30 study days."""
    if not card_ids:
        return []
    start = today - dt.timedelta(days=MISSED_DAYS - 1)
    rows = list(
        ReviewLog.objects.kept()
        .filter(
            learner=learner,
            result=ReviewLog.Result.FAIL,
            study_day__gte=start,
            card_id__in=card_ids,
            card__lesson_section__isnull=False,
        )
        .values("card__deck_id", "card__deck__slug", "card__lesson_section")
        .annotate(fails=Count("id"))
        .order_by("-fails", "card__deck__slug", "card__lesson_section")[:MISSED_SECTIONS]
    )
    if not rows:
        return []
    titles = {
        (deck_id, key): title
        for deck_id, key, title in LessonSection.objects.filter(
            deck_id__in={row["card__deck_id"] for row in rows},
            key__in={row["card__lesson_section"] for row in rows},
        ).values_list("deck_id", "key", "title")
    }
    steps = []
    for row in rows:
        title = titles.get((row["card__deck_id"], row["card__lesson_section"]))
        if title is None:
            continue  # a key no section has: nothing to link to
        url = (
            reverse("deck-lesson", kwargs={"slug": row["card__deck__slug"]})
            + f"#{row['card__lesson_section']}"
        )
        fails = row["fails"]
        steps.append(
            NextStep(
                "lesson",
                f"Missed {fails} time{'' if fails == 1 else 's'} lately:",
                f"read “{title}” again",
                url,
            )
        )
    return steps


def _lab_not_passed(*, learner, facts) -> NextStep | None:
    """The first lab of the learner's decks (deck order) no submission of theirs passed."""
    slugs = list(dict.fromkeys(fact.lab for fact in facts if fact.lab))
    if not slugs:
        return None
    progress = lab_progress(learner=learner)
    labs = catalogue()
    for slug in slugs:
        standing = progress.get(slug)
        if slug not in labs or (standing is not None and standing.passed):
            continue
        if standing is None:
            text = "A lab you have not tried yet:"
        elif standing.pending:
            text = "A lab being graded:"
        else:
            text = "A lab not passed yet:"
        return NextStep("lab", text, labs[slug].title, reverse("lab-page", args=[slug]))
    return None


def _weakest_kind(facts: list[topics.CardFacts]) -> NextStep | None:
    """A practice exercise of a kind not reviewed in the last 30 days, or else of the
    lowest recall there (under 100 %), among the learner's exercise cards."""
    kinds = topics.kind_topics(facts)
    untried = [t for t in kinds if not t.reviews_30d]
    if untried:
        weakest, text = untried[0], "An exercise kind you have not practised lately:"
    else:
        scored = [t for t in kinds if t.recall_30d is not None and t.recall_30d < 1]
        if not scored:
            return None
        weakest = min(scored, key=lambda t: (t.recall_30d, -t.reviews_30d))
        text = f"Your weakest exercise kind ({round(100 * (weakest.recall_30d or 0))} % passed):"
    url = reverse("exercise-index") + "?" + urlencode({"kind": weakest.topic})
    return NextStep("exercise", text, f"practise {weakest.title}", url)


def _interview_soonest(*, learner, today: dt.date) -> NextStep | None:
    state = (
        scheduled_states(learner=learner)
        .filter(suspended=False, card__kind=Card.Kind.INTERVIEW)
        .select_related("card", "card__deck")
        .order_by("due_on", "card__position", "card_id")
        .first()
    )
    if state is None:
        return None
    card = state.card
    if state.due_on <= today:
        return NextStep(
            "interview", "An interview question is due today:", "", reverse("review"), card.prompt
        )
    if card.lesson_section:
        url = reverse("deck-lesson", kwargs={"slug": card.deck.slug}) + f"#{card.lesson_section}"
    else:
        url = reverse("card-notes", args=[card.pk])
    return NextStep(
        "interview", f"The next interview question, due {_day(state.due_on)}:", "", url, card.prompt
    )

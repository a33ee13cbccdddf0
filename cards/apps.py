"""The study core's app. At start-up it connects its signals, keeps the default beat
schedules in the database, and registers the review side of exercises
(``exercises.reviews``): where the exercise pages submit, the review page, and the card
an exercise was handed out for. ``exercises`` learns of ``cards`` through nothing else.
It registers the review side of labs too (``labs.reviews``): which submission reviews a
lab card, and recording that review."""

from django.apps import AppConfig
from django.db.models.signals import post_migrate
from django.urls import reverse

from exercises.reviews import ReviewSide, register
from labs import reviews as lab_reviews


def exercise_submit_url(exercise_id: int) -> str:
    return reverse("exercise-page-submit", args=[exercise_id])


def review_page_url() -> str:
    return reverse("review")


def restore_count_triggers(sender, using, **kwargs) -> None:
    from .db.count_checks import restore_dropped_sqlite_triggers

    restore_dropped_sqlite_triggers(using=using)


class CardsConfig(AppConfig):
    name = "cards"
    verbose_name = "Study cards"

    def ready(self) -> None:
        from . import checks, signals  # noqa: F401
        from .beat import sync_default_schedule_on_migrate
        from .exercise_lessons import exercise_lesson_url
        from .services.exercise_reviews import bound_card_id
        from .services.lab_reviews import lab_due, lab_graded, lab_review_of, lab_submitted

        # Default beat schedules reach the database on every migrate (cards.beat: the missing
        # ones, and changed defaults of jobs staff did not edit in the admin).
        post_migrate.connect(
            sync_default_schedule_on_migrate,
            sender=self,
            dispatch_uid="cards.beat.sync_default_schedule",
        )
        # SQLite drops a table's triggers when a migration rebuilds the table: the count
        # triggers are put back, and their tables recounted, after every migrate.
        post_migrate.connect(
            restore_count_triggers,
            sender=self,
            dispatch_uid="cards.db.count_checks.restore_dropped_sqlite_triggers",
        )
        # The exercise pages submit here and link back to the review page.
        register(
            ReviewSide(
                submit_url=exercise_submit_url,
                review_page_url=review_page_url,
                bound_card_id=bound_card_id,
                lesson_url=exercise_lesson_url,
            )
        )
        # A lab submission binds and records the review of its lab card (labs.reviews).
        lab_reviews.register(
            lab_reviews.ReviewSide(
                submitted=lab_submitted, graded=lab_graded, due=lab_due, review_of=lab_review_of
            )
        )

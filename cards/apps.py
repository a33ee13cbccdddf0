from django.apps import AppConfig
from django.db.models.signals import post_migrate


class CardsConfig(AppConfig):
    name = "cards"
    verbose_name = "Study cards"

    def ready(self) -> None:
        from . import signals  # noqa: F401
        from .beat import sync_default_schedule_on_migrate

        # Default beat schedules reach the database on every migrate (missing ones only).
        post_migrate.connect(
            sync_default_schedule_on_migrate,
            sender=self,
            dispatch_uid="cards.beat.sync_default_schedule",
        )

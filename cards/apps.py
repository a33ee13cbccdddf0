from django.apps import AppConfig


class CardsConfig(AppConfig):
    name = "cards"
    verbose_name = "Study cards"

    def ready(self) -> None:
        from . import signals  # noqa: F401

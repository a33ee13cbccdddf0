from django.apps import AppConfig


class CommonConfig(AppConfig):
    """Installed for its template library (``{% load markup %}``); it has no models."""

    name = "studyapp.common"
    label = "common"
    verbose_name = "Shared plumbing"

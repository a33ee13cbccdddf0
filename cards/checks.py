"""System checks of the study core's settings (``manage.py check``, ``migrate``, ``runserver``).

``STUDY_LADDER_DAYS`` read from the environment is checked where the settings read it,
so a bad value stops every process at start; this check covers a ladder written into a
settings module of its own (a tuple, not text), which nothing parses.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core import checks

from .ladder import ladder_problem


@checks.register(checks.Tags.compatibility)
def ladder_setting_check(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    days = getattr(settings, "STUDY_LADDER_DAYS", None)
    problem: str | None
    if isinstance(days, tuple | list):
        problem = ladder_problem(days)
    else:
        problem = f"it is {type(days).__name__}, not a tuple of days"
    if problem is None:
        return []
    return [
        checks.Error(
            f"STUDY_LADDER_DAYS={days!r} is not a ladder: {problem}.",
            hint="Set it to whole days, each longer than the one before, e.g. (1, 3, 7, 14, 30).",
            id="cards.E001",
        )
    ]

"""The ladder as the pages name it, from ``STUDY_LADDER_DAYS``: ``{% ladder_days %}``."""

from __future__ import annotations

from django import template
from django.conf import settings

from cards import ladder

register = template.Library()


@register.simple_tag
def ladder_days() -> str:
    """The ladder's days, e.g. ``1, 3, 7, 14, 30`` (auto-escaped: plain digits and commas)."""
    return ladder.describe(settings.STUDY_LADDER_DAYS)

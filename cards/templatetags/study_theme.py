"""The colour theme a page is drawn in: the signed-in learner's choice (``LearnerProfile.theme``)."""

from __future__ import annotations

from django import template

from cards.models import LearnerProfile
from cards.selectors import learner_profile

register = template.Library()


@register.simple_tag(takes_context=True)
def page_theme(context) -> str:
    """``auto``, ``light`` or ``dark``: ``auto`` (the device's setting) for nobody signed in."""
    request = context.get("request")
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return LearnerProfile.Theme.AUTO
    theme = learner_profile(user).theme
    return theme if theme in LearnerProfile.Theme.values else LearnerProfile.Theme.AUTO


@register.simple_tag
def theme_choices() -> list[tuple[str, str]]:
    """The switch's buttons: each theme's value and a short label."""
    return [("auto", "Auto"), ("light", "Light"), ("dark", "Dark")]

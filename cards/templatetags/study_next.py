"""The learner's next steps for pages whose view does not compute them (the "All done" page)."""

from __future__ import annotations

from django import template

from cards.next_steps import NextStep, next_steps

register = template.Library()


@register.simple_tag(takes_context=True)
def next_steps_for(context) -> list[NextStep]:
    """``next_steps`` of the signed-in learner on the page's study day (``today``)."""
    request, today = context.get("request"), context.get("today")
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated or today is None:
        return []
    return next_steps(learner=user, today=today)

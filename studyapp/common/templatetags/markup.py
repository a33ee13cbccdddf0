"""Template filters both apps' pages use: Markdown with math, rendered to safe HTML."""

from __future__ import annotations

from django import template
from django.utils.safestring import SafeString, mark_safe

from studyapp.common.rendering import render_markdown

register = template.Library()


@register.filter(name="markdown")
def markdown_filter(text: str) -> SafeString:
    # render_markdown sanitises with nh3, so its output is safe to mark here.
    return mark_safe(render_markdown(text or ""))

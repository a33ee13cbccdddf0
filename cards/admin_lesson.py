"""Staff screens of the lesson: its sections, each with a rendered preview (figures
included), and the outline shown on the deck's own page."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from . import lesson, rules
from .models import Deck, LessonSection
from .services import lessons as lesson_services


class LessonSectionForm(forms.ModelForm):
    """A section under the lesson rules of ``cards.rules``, as deck files apply them."""

    class Meta:
        model = LessonSection
        fields = ["deck", "position", "key", "title", "body"]

    def clean(self):
        cleaned = super().clean()
        fields = ("key", "title", "body")
        if any(name in self.errors for name in fields):
            return cleaned
        for field, messages_ in rules.section_problems(
            key=cleaned.get("key"), title=cleaned.get("title"), body=cleaned.get("body")
        ).items():
            self.add_error(field, messages_)
        deck, key = cleaned.get("deck"), cleaned.get("key")
        if deck is not None and key and "key" not in self.errors:
            clash = LessonSection.objects.filter(deck=deck, key=key).exclude(pk=self.instance.pk)
            if clash.exists():
                self.add_error(
                    "key",
                    f"Another section of this deck's lesson already has the key {key!r}; "
                    "keys are unique within a lesson, so choose another one.",
                )
        return cleaned


@admin.register(LessonSection)
class LessonSectionAdmin(admin.ModelAdmin):
    form = LessonSectionForm
    list_display = ["title", "key", "deck", "position", "card_total"]
    list_filter = ["deck"]
    list_select_related = ["deck"]
    ordering = ["deck", "position", "id"]
    search_fields = ["title", "key", "body"]
    readonly_fields = ["preview"]
    fieldsets = [
        (None, {"fields": ["deck", "position", "key", "title"]}),
        ("Content", {"fields": ["body"]}),
        ("Preview", {"fields": ["preview"]}),
    ]

    class Media:
        css = {"all": ["css/admin-card-preview.css", "css/lesson.css"]}

    @admin.display(description="Cards")
    def card_total(self, section: LessonSection) -> int:
        return section.deck.cards.filter(lesson_section=section.key).count()

    @admin.display(description="Rendered")
    def preview(self, section: LessonSection) -> SafeString | str:
        if not section.pk:
            return "Save the section to see its preview."
        warnings = rules.math_warnings(body=section.body)
        return format_html(
            '<div class="card-preview lesson-preview">{}<h4>{}</h4>{}</div>',
            format_html_join(
                "",
                '<p class="math-warning" role="alert">Body: {}</p>',
                ((message,) for ms in warnings.values() for message in ms),
            ),
            section.title,
            lesson.render_body(section.body),
        )

    def save_model(self, request, obj, form, change):
        previous = form.initial.get("key") if change else None
        lesson_services.section_save(section=obj, previous_key=previous)
        for message in rules.math_warnings(body=obj.body).get("body", []):
            self.message_user(
                request,
                f"Saved, but check the body: {message}. Learners see the TeX source in place "
                "of the formula.",
                messages.WARNING,
            )

    def delete_model(self, request, obj):
        lesson_services.section_delete(section=obj)

    def delete_queryset(self, request, queryset):
        for section in queryset:
            lesson_services.section_delete(section=section)


def lesson_outline(deck: Deck) -> SafeString | str:
    """The deck's lesson on its admin page: its sections in order, each linked to its editor."""
    if not deck.pk:
        return "Save the deck to add its lesson."
    sections = LessonSection.objects.filter(deck=deck).order_by("position", "id")
    add = format_html(
        '<a href="{}?deck={}">Add a section</a> · <a href="{}?deck__id__exact={}">All sections</a>'
        ' · <a href="{}">The lesson page</a>',
        reverse("admin:cards_lessonsection_add"),
        deck.pk,
        reverse("admin:cards_lessonsection_changelist"),
        deck.pk,
        reverse("deck-lesson", args=[deck.slug]),
    )
    if not sections:
        return format_html("<p>No sections yet.</p><p>{}</p>", add)
    return format_html(
        "<ol>{}</ol><p>{}</p>",
        format_html_join(
            "",
            '<li><a href="{}">{}</a> <code>#{}</code></li>',
            (
                (reverse("admin:cards_lessonsection_change", args=[s.pk]), s.title, s.key)
                for s in sections
            ),
        ),
        add,
    )

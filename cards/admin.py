"""Staff screens: decks and cards editable, learner progress read-only."""

from django import forms
from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

# Learners' records are shown, never edited, in the admin.
from studyapp.common.admin import ReadOnlyAdmin
from studyapp.common.rendering import render_markdown

from . import (
    admin_analysis,  # item analysis, reports, Anki export
    admin_beat,  # noqa: F401  (reminders sent)
    admin_labels,
    admin_lesson,  # the lesson's sections
    admin_memory,  # noqa: F401  (deck memory figures)
    rules,
    services,
)
from .forms import CardAdminForm
from .models import Card, Deck, Enrollment, LearnerProfile, ReviewLog, ReviewState, Tag
from .services import privacy


class CardInline(admin.TabularInline):
    model = Card
    # Each row's fields are named after their column and card (cards.admin_labels).
    form = admin_labels.RowLabelledForm
    formset = admin_labels.RowLabelledInlineFormSet
    fields = ["position", "kind", "prompt", "is_active"]
    extra = 0
    show_change_link = True


@admin.register(Deck)
class DeckAdmin(admin.ModelAdmin):
    list_display = ["title", "slug", "card_total", "updated_at"]
    search_fields = ["title", "slug", "description"]
    prepopulated_fields = {"slug": ["title"]}
    inlines = [CardInline]
    actions = [admin_analysis.export_apkg]
    readonly_fields = ["lesson_sections"]

    @admin.display(description="Cards")
    def card_total(self, deck):
        return deck.cards.count()

    @admin.display(description="Lesson sections")
    def lesson_sections(self, deck):
        return admin_lesson.lesson_outline(deck)

    def save_related(self, request, form, formsets, change):
        super().save_related(request, form, formsets, change)
        # Cards (de)activated inline join or leave learners' queues.
        services.sync_scheduled(deck_ids=[form.instance.pk])


@admin.register(Tag)
class TagAdmin(admin.ModelAdmin):
    search_fields = ["name"]


class GeneratesFilter(admin.SimpleListFilter):
    title = "exercise generates"
    parameter_name = "generates"

    def lookups(self, request, model_admin):
        return [("no", "No: failed at a review"), ("yes", "Yes")]

    def queryset(self, request, queryset):
        if self.value() == "no":
            return queryset.exclude(generation_error="")
        if self.value() == "yes":
            return queryset.filter(kind=Card.Kind.EXERCISE, generation_error="")
        return queryset


@admin.register(Card)
class CardAdmin(admin.ModelAdmin):
    form = CardAdminForm
    list_display = [
        "short_prompt",
        "deck",
        "kind",
        "tag_list",
        "position",
        "is_active",
        "generates",
        "updated_at",
    ]
    list_filter = [
        "deck",
        "kind",
        "is_active",
        GeneratesFilter,
        ("tags", admin.RelatedOnlyFieldListFilter),
    ]
    list_editable = ["position"]
    list_select_related = ["deck"]

    def get_changelist_form(self, request, **kwargs):
        # The editable "position" column: each box named after its card.
        return admin_labels.row_labelled(super().get_changelist_form(request, **kwargs))

    search_fields = ["prompt", "answer", "key", "tags__name"]
    filter_horizontal = ["tags"]
    readonly_fields = ["preview", "generation_problem", "created_at", "updated_at"]
    actions = ["activate", "deactivate"]
    fieldsets = [
        (None, {"fields": ["deck", "key", "kind", "position", "is_active", "tags"]}),
        (
            "Content",
            {
                "fields": [
                    "prompt",
                    "answer",
                    "points",
                    "exercise",
                    "lab",
                    "lesson_section",
                    "generation_problem",
                ]
            },
        ),
        ("Preview", {"fields": ["preview"]}),
        ("History", {"fields": ["created_at", "updated_at"], "classes": ["collapse"]}),
    ]

    class Media:
        css = {"all": ["css/admin-card-preview.css"]}

    def get_queryset(self, request):
        return super().get_queryset(request).prefetch_related("tags")

    def save_related(self, request, form, formsets, change):
        super().save_related(request, form, formsets, change)
        # A card (de)activated or moved to another deck joins or leaves queues.
        services.sync_scheduled(card_ids=[form.instance.pk])

    @admin.display(description="Prompt")
    def short_prompt(self, card):
        text = card.prompt.strip().splitlines()[0] if card.prompt.strip() else "(empty)"
        return text[:90] + ("…" if len(text) > 90 else "")

    @admin.display(description="Tags")
    def tag_list(self, card):
        return ", ".join(tag.name for tag in card.tags.all())

    @admin.display(description="Generates", boolean=True)
    def generates(self, card):
        if card.kind != Card.Kind.EXERCISE:
            return None
        return not card.generation_error

    @admin.display(description="Generation problem")
    def generation_problem(self, card):
        if not card.generation_error:
            return "None: reviews generate this card's exercise." if card.pk else "-"
        return format_html(
            '<strong class="errornote">{}</strong><br>Learners pass over this card until it '
            "generates again. Fix the parameters and save; the flag is cleared.",
            card.generation_error,
        )

    @admin.display(description="Rendered")
    def preview(self, card):
        if not card.pk:
            return "Save the card to see its preview."
        warnings = rules.math_warnings(prompt=card.prompt, answer=card.answer)
        # render_markdown returns sanitised HTML (nh3), so it is safe to mark.
        points = (
            format_html(
                "<h4>Key points</h4><ul>{}</ul>",
                format_html_join("", "<li>{}</li>", ((point,) for point in card.points)),
            )
            if card.points
            else ""
        )
        return format_html(
            '<div class="card-preview">{}<h4>Prompt</h4>{}<h4>Answer</h4>{}{}</div>',
            format_html_join(
                "",
                '<p class="math-warning" role="alert">{}: {}</p>',
                ((field.capitalize(), message) for field, ms in warnings.items() for message in ms),
            ),
            mark_safe(render_markdown(card.prompt)),
            mark_safe(render_markdown(card.answer)),
            points,
        )

    def save_model(self, request, obj, form, change):
        # Staff saving the card is the fix for a flagged generation failure; a card
        # that still fails is flagged again at its next review.
        obj.generation_error = ""
        super().save_model(request, obj, form, change)
        for field, messages_ in rules.math_warnings(prompt=obj.prompt, answer=obj.answer).items():
            for message in messages_:
                self.message_user(
                    request,
                    f"Saved, but check the {field}: {message}. Learners see the TeX source "
                    "in place of the formula.",
                    messages.WARNING,
                )

    @admin.action(description="Activate selected cards (they join learners' ladders)")
    def activate(self, request, queryset):
        count = services.cards_set_active(
            card_ids=list(queryset.values_list("id", flat=True)), active=True
        )
        self.message_user(request, f"Activated {count} card(s).", messages.SUCCESS)

    @admin.action(description="Deactivate selected cards (they leave queues; history stays)")
    def deactivate(self, request, queryset):
        count = services.cards_set_active(
            card_ids=list(queryset.values_list("id", flat=True)), active=False
        )
        self.message_user(request, f"Deactivated {count} card(s).", messages.SUCCESS)


@admin.register(ReviewState)
class ReviewStateAdmin(ReadOnlyAdmin):
    list_display = ["learner", "card", "step", "due_on", "last_reviewed_at"]
    list_filter = ["step", "card__deck"]
    list_select_related = ["learner", "card"]
    search_fields = ["learner__username", "card__prompt"]
    date_hierarchy = "due_on"
    show_full_result_count = False


@admin.register(ReviewLog)
class ReviewLogAdmin(ReadOnlyAdmin):
    list_display = [
        "reviewed_at",
        "learner",
        "card_id",
        "result",
        "step_before",
        "step_after",
        "due_after",
        "written_answer",
    ]
    list_filter = ["result", "study_day"]
    list_select_related = ["learner"]
    search_fields = ["learner__username"]
    date_hierarchy = "reviewed_at"
    show_full_result_count = False

    @admin.display(description="Written answer")
    def written_answer(self, log):
        text = " ".join(log.answer_text.split())
        return text[:80] + ("…" if len(text) > 80 else "")


@admin.register(Enrollment)
class EnrollmentAdmin(ReadOnlyAdmin):
    list_display = ["learner", "deck", "created_at"]
    list_filter = ["deck"]
    search_fields = ["learner__username"]


class LearnerProfileForm(forms.ModelForm):
    timezone = forms.ChoiceField(
        choices=[(name, name) for name in sorted(services.timezone_names())],
        help_text="IANA time zone name.",
    )

    class Meta:
        model = LearnerProfile
        fields = ["user", "timezone", "day_starts_at", "reminders", "reminder_hour"]


@admin.register(LearnerProfile)
class LearnerProfileAdmin(admin.ModelAdmin):
    form = LearnerProfileForm
    list_display = ["user", "timezone", "day_starts_at", "reminders", "reminder_hour"]
    list_filter = ["reminders", "day_starts_at"]
    search_fields = ["user__username", "timezone"]


# --- Deleting a learner -------------------------------------------------------------
# The learner's records have read-only admins that refuse deletion one by one; a
# superuser deleting the account removes them through the privacy service instead
# (the review log is kept for statistics, unlinked from the person).

User = get_user_model()
if admin.site.is_registered(User):
    admin.site.unregister(User)


@admin.register(User)
class LearnerUserAdmin(UserAdmin):
    def get_deleted_objects(self, objs, request):
        deleted, counts, perms_needed, protected = super().get_deleted_objects(objs, request)
        if request.user.is_superuser:
            perms_needed = set()
        return deleted, counts, perms_needed, protected

    def delete_model(self, request, obj):
        privacy.account_delete(user=obj)

    def delete_queryset(self, request, queryset):
        for user in queryset:
            privacy.account_delete(user=user)

"""Read-only screens: exercises, attempts and predictions are the learners' records, not staff
content."""

from django.contrib import admin

from exercises.kinds import KINDS
from exercises.models import Attempt, Exercise, Prediction
from studyapp.common.admin import ReadOnlyAdmin


class KindFilter(admin.SimpleListFilter):
    """The registered kinds by title, in the catalogue's order; a kind stored on older rows
    and no longer registered follows by its name."""

    title = "kind"
    parameter_name = "kind"  # the query parameter of the field's own filter, kept

    def lookups(self, request, model_admin):
        stored = (
            model_admin.get_queryset(request)
            .order_by()
            .values_list(self.parameter_name, flat=True)
            .distinct()
        )
        gone = sorted(set(stored) - set(KINDS))
        return [(name, kind.title) for name, kind in KINDS.items()] + [(n, n) for n in gone]

    def queryset(self, request, queryset):
        value = self.value()
        return queryset.filter(**{self.parameter_name: value}) if value else queryset


class ExerciseKindFilter(KindFilter):
    parameter_name = "exercise__kind"


class AttemptInline(admin.TabularInline):
    model = Attempt
    extra = 0
    fields = ("number", "correct", "score", "created_at")
    readonly_fields = fields
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(Exercise)
class ExerciseAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "owner",
        "kind",
        "seed",
        "attempts_used",
        "max_attempts",
        "solved",
        "created_at",
    )
    list_filter = (KindFilter, "solved", "created_at")
    search_fields = ("owner__username",)
    list_select_related = ("owner",)
    date_hierarchy = "created_at"
    readonly_fields = [f.name for f in Exercise._meta.fields]
    inlines = [AttemptInline]


@admin.register(Attempt)
class AttemptAdmin(ReadOnlyAdmin):
    list_display = ("id", "exercise", "number", "correct", "score", "created_at")
    list_filter = ("correct", ExerciseKindFilter, "created_at")
    search_fields = ("exercise__owner__username",)
    list_select_related = ("exercise",)
    readonly_fields = [f.name for f in Attempt._meta.fields]


@admin.register(Prediction)
class PredictionAdmin(ReadOnlyAdmin):
    list_display = ("id", "owner", "exercise", "ask", "answer", "expected", "correct", "created_at")
    list_filter = ("correct", ExerciseKindFilter, "created_at")
    search_fields = ("owner__username", "ask")
    list_select_related = ("owner", "exercise")
    date_hierarchy = "created_at"
    readonly_fields = [f.name for f in Prediction._meta.fields]

"""Read-only admin list of the reminders sent (periodic tasks are django-celery-beat's admin)."""

from django.contrib import admin

from studyapp.common.admin import ReadOnlyAdmin

from .models import Reminder


class SentFilter(admin.SimpleListFilter):
    title = "delivery"
    parameter_name = "delivery"

    def lookups(self, request, model_admin):
        return [("sent", "Sent"), ("pending", "Claimed, not sent yet")]

    def queryset(self, request, queryset):
        if self.value() == "sent":
            return queryset.filter(sent_at__isnull=False)
        if self.value() == "pending":
            return queryset.filter(sent_at__isnull=True)
        return queryset


@admin.register(Reminder)
class ReminderAdmin(ReadOnlyAdmin):
    list_display = ["learner", "study_day", "due_count", "sent_at"]
    list_filter = [SentFilter, "study_day"]
    search_fields = ["learner__username"]
    date_hierarchy = "study_day"
    list_select_related = ["learner"]
    ordering = ["-study_day", "learner__username"]

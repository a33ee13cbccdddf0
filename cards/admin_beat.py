"""Read-only admin list of the reminders sent (periodic tasks are django-celery-beat's admin)."""

from django.contrib import admin

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
class ReminderAdmin(admin.ModelAdmin):
    list_display = ["learner", "study_day", "due_count", "sent_at"]
    list_filter = [SentFilter, "study_day"]
    search_fields = ["learner__username"]
    date_hierarchy = "study_day"
    list_select_related = ["learner"]
    ordering = ["-study_day", "learner__username"]

    # A reminder is a record of an e-mail that went out: nothing to add, edit or delete.
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

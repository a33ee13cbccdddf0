"""The admin base for records learners made: staff read them, nobody adds, edits or deletes."""

from django.contrib import admin


class ReadOnlyAdmin(admin.ModelAdmin):
    """Records that learners made: staff read them, nobody adds, edits or deletes them."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

"""Lab submissions for staff: read-only, filtered by lab, status and result."""

from django.contrib import admin

from studyapp.common.admin import ReadOnlyAdmin

from .models import Submission


@admin.register(Submission)
class SubmissionAdmin(ReadOnlyAdmin):
    list_display = ["id", "created_at", "learner", "lab", "status", "passed", "duration_ms"]
    list_filter = ["lab", "status", "passed"]
    search_fields = ["learner__username"]
    list_select_related = ["learner"]
    date_hierarchy = "created_at"
    fields = readonly_fields = (
        "learner",
        "lab",
        "status",
        "passed",
        "tests",
        "diagnosis",
        "output",
        "duration_ms",
        "seed",
        "code",
        "created_at",
        "started_at",
        "finished_at",
    )

from django.urls import path, re_path

from . import api

urlpatterns = [
    path("labs/", api.LabListView.as_view(), name="lab-list"),
    # Any signed integer reaches the view, so an impossible id is a JSON 404.
    re_path(
        r"^labs/submissions/(?P<submission_id>-?[0-9]+)/$",
        api.SubmissionDetailView.as_view(),
        name="lab-submission-detail",
    ),
    path("labs/<slug:slug>/", api.LabDetailView.as_view(), name="lab-detail"),
    path(
        "labs/<slug:slug>/submissions/",
        api.LabSubmissionsView.as_view(),
        name="lab-submissions",
    ),
]

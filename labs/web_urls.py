from django.urls import path

from . import views

urlpatterns = [
    path("labs/", views.lab_list, name="lab-index"),
    path("labs/<slug:slug>/", views.lab_detail, name="lab-page"),
    path("labs/<slug:slug>/submissions/<int:pk>/", views.submission_detail, name="lab-submission"),
    path(
        "labs/<slug:slug>/submissions/<int:pk>/result/",
        views.submission_result,
        name="lab-submission-result",
    ),
]

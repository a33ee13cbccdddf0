from django.urls import path

from exercises import api

urlpatterns = [
    path("exercises/kinds/", api.ExerciseKindListView.as_view(), name="exercise-kinds"),
    path("exercises/", api.ExerciseListCreateView.as_view(), name="exercise-list"),
    path("exercises/<int:exercise_id>/", api.ExerciseDetailView.as_view(), name="exercise-detail"),
    path(
        "exercises/<int:exercise_id>/submit/",
        api.ExerciseSubmitView.as_view(),
        name="exercise-submit",
    ),
    path("attention/", api.AttentionPlaygroundView.as_view(), name="attention-playground"),
]

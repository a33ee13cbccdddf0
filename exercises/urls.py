from django.urls import path, re_path

from exercises import api

urlpatterns = [
    path("exercises/kinds/", api.ExerciseKindListView.as_view(), name="exercise-kinds"),
    path("exercises/", api.ExerciseListCreateView.as_view(), name="exercise-list"),
    # Any signed integer reaches the view, so an impossible id is a JSON 404, not an HTML page.
    re_path(
        r"^exercises/(?P<exercise_id>-?[0-9]+)/$",
        api.ExerciseDetailView.as_view(),
        name="exercise-detail",
    ),
    # exercises/{id}/submit/ is routed by cards.urls, which also records reviews
    # (the review side: exercises.reviews).
    path("attention/", api.AttentionPlaygroundView.as_view(), name="attention-playground"),
    path(
        "attention/predictions/",
        api.PlaygroundPredictionView.as_view(),
        name="attention-predictions",
    ),
]

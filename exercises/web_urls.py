from django.urls import path

from . import playground_views, views

urlpatterns = [
    path("exercises/", views.exercise_list, name="exercise-index"),
    path("exercises/<int:pk>/", views.exercise_detail, name="exercise-page"),
    path("playground/", playground_views.playground, name="playground"),
]

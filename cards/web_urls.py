from django.contrib.auth import views as auth_views
from django.urls import path

from . import views

urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    path("signup/", views.signup, name="signup"),
    path(
        "login/",
        auth_views.LoginView.as_view(redirect_authenticated_user=True),
        name="login",
    ),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("profile/", views.profile, name="profile"),
    path("decks/<slug:slug>/enroll/", views.deck_enroll, name="dashboard-enroll"),
    path("decks/<slug:slug>/unenroll/", views.deck_unenroll, name="dashboard-unenroll"),
    path("review/", views.review, name="review"),
    path("exercises/<int:pk>/submit/", views.exercise_submit, name="exercise-page-submit"),
    # Study controls
    path("review/undo/", views.review_undo, name="review-undo"),
    path("cards/<int:pk>/notes/", views.card_notes, name="card-notes"),
    path("cards/<int:pk>/suspend/", views.card_suspend, name="card-suspend-page"),
    path("cards/<int:pk>/bury/", views.card_bury, name="card-bury-page"),
    path("reports/new/", views.report_create, name="report-create"),
    path("profile/pause/", views.pause_set, name="profile-pause"),
]

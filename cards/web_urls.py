from django.contrib.auth import views as auth_views
from django.urls import path, reverse_lazy

from . import views

urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    path("signup/", views.signup, name="signup"),
    path(
        "login/",
        auth_views.LoginView.as_view(redirect_authenticated_user=True),
        name="login",
    ),
    # --- account lifecycle
    path("password/change/", views.password_change, name="password-change"),
    path(
        "password/reset/",
        views.accounts.PasswordResetView.as_view(),
        name="password_reset",
    ),
    path(
        "password/reset/sent/",
        auth_views.PasswordResetDoneView.as_view(),
        name="password_reset_done",
    ),
    path(
        "password/reset/<uidb64>/<token>/",
        views.PasswordResetConfirmView.as_view(success_url=reverse_lazy("password_reset_complete")),
        name="password_reset_confirm",
    ),
    path(
        "password/reset/done/",
        auth_views.PasswordResetCompleteView.as_view(),
        name="password_reset_complete",
    ),
    path("profile/email/confirm/<str:token>/", views.email_confirm, name="email-confirm"),
    path("profile/email/send/", views.email_confirm_send, name="email-confirm-send"),
    path("profile/export/", views.account_export, name="account-export"),
    path("profile/delete/", views.account_delete, name="account-delete"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("profile/", views.profile, name="profile"),
    path("progress/", views.progress, name="progress"),
    path("profile/theme/", views.theme_set, name="profile-theme"),
    path("decks/<slug:slug>/enroll/", views.deck_enroll, name="dashboard-enroll"),
    path("decks/<slug:slug>/unenroll/", views.deck_unenroll, name="dashboard-unenroll"),
    path("decks/<slug:slug>/lesson/", views.deck_lesson, name="deck-lesson"),
    path("decks/<slug:slug>/learn-more/", views.deck_learn_more, name="dashboard-learn-more"),
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

from django.urls import path, re_path
from rest_framework.routers import SimpleRouter

from . import api

router = SimpleRouter()
router.register("decks", api.DeckViewSet, basename="deck")
router.register("cards", api.CardViewSet, basename="card")
router.register("reviews", api.ReviewViewSet, basename="review")
router.register("reports", api.ReportViewSet, basename="report")

urlpatterns = [
    path("auth/register/", api.RegisterView.as_view(), name="register"),
    path("auth/token/", api.TokenView.as_view(), name="token"),
    path("me/", api.MeView.as_view(), name="me"),
    path("auth/logout/", api.LogoutView.as_view(), name="logout-api"),
    path("auth/password-reset/", api.PasswordResetView.as_view(), name="password-reset-api"),
    path(
        "auth/password-reset/confirm/",
        api.PasswordResetConfirmView.as_view(),
        name="password-reset-confirm-api",
    ),
    path("me/password/", api.PasswordChangeView.as_view(), name="me-password"),
    path("me/export/", api.ExportView.as_view(), name="me-export"),
    path("reviews/due/", api.DueView.as_view(), name="reviews-due"),
    path("stats/", api.StatsView.as_view(), name="stats"),
    re_path(
        r"^exercises/(?P<exercise_id>-?[0-9]+)/submit/$",
        api.ExerciseReviewSubmitView.as_view(),
        name="exercise-submit",
    ),
    # Study controls and exports
    re_path(
        r"^reviews/(?P<review_id>[0-9]+)/undo/$", api.ReviewUndoView.as_view(), name="review-undo"
    ),
    re_path(
        r"^cards/(?P<card_id>[0-9]+)/suspend/$", api.CardSuspendView.as_view(), name="card-suspend"
    ),
    re_path(r"^cards/(?P<card_id>[0-9]+)/bury/$", api.CardBuryView.as_view(), name="card-bury"),
    path("me/pause/", api.PauseView.as_view(), name="me-pause"),
    path("me/reviews.csv", api.ReviewsCsvView.as_view(), name="me-reviews-csv"),
    re_path(
        r"^decks/(?P<slug>[-a-zA-Z0-9_]+)/export\.apkg$",
        api.DeckApkgView.as_view(),
        name="deck-apkg",
    ),
    *router.urls,
]

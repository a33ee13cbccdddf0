from django.urls import path, re_path
from rest_framework.routers import SimpleRouter

from .api import accounts, controls, decks, memory, reviews, topics

router = SimpleRouter()
router.register("decks", decks.DeckViewSet, basename="deck")
router.register("cards", decks.CardViewSet, basename="card")
router.register("reviews", reviews.ReviewViewSet, basename="review")
router.register("reports", controls.ReportViewSet, basename="report")

urlpatterns = [
    path("auth/register/", accounts.RegisterView.as_view(), name="register"),
    path("auth/token/", accounts.TokenView.as_view(), name="token"),
    path("me/", accounts.MeView.as_view(), name="me"),
    path("auth/logout/", accounts.LogoutView.as_view(), name="logout-api"),
    path("auth/password-reset/", accounts.PasswordResetView.as_view(), name="password-reset-api"),
    path(
        "auth/password-reset/confirm/",
        accounts.PasswordResetConfirmView.as_view(),
        name="password-reset-confirm-api",
    ),
    path("me/password/", accounts.PasswordChangeView.as_view(), name="me-password"),
    path(
        "me/email-confirmation/",
        accounts.EmailConfirmationView.as_view(),
        name="me-email-confirmation",
    ),
    path("me/export/", accounts.ExportView.as_view(), name="me-export"),
    path("reviews/due/", reviews.DueView.as_view(), name="reviews-due"),
    path("stats/", reviews.StatsView.as_view(), name="stats"),
    path("stats/topics/", topics.TopicsView.as_view(), name="stats-topics"),
    path("stats/memory/", memory.MemoryStatsView.as_view(), name="stats-memory"),
    re_path(
        r"^decks/(?P<slug>[-a-zA-Z0-9_]+)/memory/$",
        memory.DeckMemoryView.as_view(),
        name="deck-memory",
    ),
    re_path(
        r"^exercises/(?P<exercise_id>-?[0-9]+)/submit/$",
        reviews.ExerciseReviewSubmitView.as_view(),
        name="exercise-submit",
    ),
    # Study controls and exports
    re_path(
        r"^reviews/(?P<review_id>[0-9]+)/undo/$",
        controls.ReviewUndoView.as_view(),
        name="review-undo",
    ),
    re_path(
        r"^cards/(?P<card_id>[0-9]+)/suspend/$",
        controls.CardSuspendView.as_view(),
        name="card-suspend",
    ),
    re_path(
        r"^cards/(?P<card_id>[0-9]+)/bury/$", controls.CardBuryView.as_view(), name="card-bury"
    ),
    path("me/pause/", controls.PauseView.as_view(), name="me-pause"),
    path("me/reviews.csv", reviews.ReviewsCsvView.as_view(), name="me-reviews-csv"),
    re_path(
        r"^decks/(?P<slug>[-a-zA-Z0-9_]+)/export\.apkg$",
        decks.DeckApkgView.as_view(),
        name="deck-apkg",
    ),
    re_path(
        r"^decks/(?P<slug>[-a-zA-Z0-9_]+)/lesson/$",
        decks.DeckLessonView.as_view(),
        name="deck-lesson-api",
    ),
    *router.urls,
]

"""Reviews: the due queue, recording and listing reviews, statistics and the CSV log."""

from __future__ import annotations

import re

from django.http import HttpResponse
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from exercises.api import ExerciseSubmitView
from exercises.serializers import ExerciseSerializer
from studyapp.common.ids import parse_id
from studyapp.common.pagination import DuePagination

from .. import anki, due, selectors, services, stats
from ..models import ReviewLog
from ..renderers import due_items, review_item
from ..serializers import (
    DueQueueSerializer,
    NotDueSerializer,
    ReviewCreateSerializer,
    ReviewSerializer,
    StatsSerializer,
)
from ..services import due_exercises
from ..services import reviews as review_services
from ..services.memory import page_retrievability
from .common import DETAIL, NOT_SCHEDULED, NOT_SCHEDULED_DETAIL, int_param

IDEMPOTENCY_KEY_RE = re.compile(r"^[!-~]{1,255}$")


IDEMPOTENCY_HEADER = OpenApiParameter(
    "Idempotency-Key",
    {"type": "string", "pattern": IDEMPOTENCY_KEY_RE.pattern, "maxLength": 255},
    OpenApiParameter.HEADER,
    required=False,
    description=(
        "Any unique string of up to 255 visible ASCII characters. The same key with the same body "
        "answers the first response again for 24 hours; with a different body, 422."
    ),
)


class DueView(APIView):
    """The due queue. A read: its exercise cards' exercises are bound by the writes and
    the beat that fill the queue (``cards.services.due_exercises``), never here."""

    @extend_schema(
        tags=["reviews"],
        parameters=[
            OpenApiParameter(
                "page", {"type": "integer", "minimum": 1}, description="Page number (from 1)."
            ),
            OpenApiParameter(
                "page_size",
                {"type": "integer", "minimum": 1, "maximum": 100},
                description="Items per page, 1 to 100 (default 20).",
            ),
        ],
        responses={200: DueQueueSerializer},
        summary="Cards due today, oldest due first",
    )
    def get(self, request):
        today = selectors.learner_today(learner=request.user, at=timezone.now())
        paginator = DuePagination()
        offset, limit = paginator.start(request, due.due_count(learner=request.user, today=today))
        rows = due.due_page(
            learner=request.user, today=today, offset=offset, limit=limit, count=paginator.count
        )
        recall = page_retrievability(
            learner=request.user, card_ids=[row["card_id"] for row in rows], today=today
        )
        results = due_items(rows, exercises=_bound_exercises(rows), retrievability=recall)
        return Response(
            {
                "today": today,
                "count": paginator.count,
                "next": paginator.get_next_link(),
                "previous": paginator.get_previous_link(),
                "results": results,
            }
        )


def _bound_exercises(rows) -> dict:
    """The exercise bound today to each exercise card's review on the page, serialized;
    a card without one (its exercise not bound yet, or not generated) carries none."""
    ids = {row["card_id"]: row["bound_exercise_id"] for row in rows if row["bound_exercise_id"]}
    if not ids:
        return {}
    exercises = due_exercises.bound_exercises(exercise_ids=ids.values())
    return {
        card_id: ExerciseSerializer(exercises[pk]).data
        for card_id, pk in ids.items()
        if pk in exercises
    }


class ReviewViewSet(mixins.ListModelMixin, viewsets.GenericViewSet):
    serializer_class = ReviewSerializer

    def get_queryset(self):
        card_id = int_param(self.request, "card")
        if card_id is not None and parse_id(card_id) is None:
            return ReviewLog.objects.none()  # no card has such an id
        return selectors.review_history(learner=self.request.user, card_id=card_id)

    @extend_schema(
        tags=["reviews"],
        parameters=[
            OpenApiParameter("card", OpenApiTypes.INT, description="Only this card's reviews.")
        ],
        summary="The learner's review log, newest first",
    )
    def list(self, request, *args, **kwargs):
        return super().list(request, *args, **kwargs)

    @extend_schema(
        tags=["reviews"],
        request=ReviewCreateSerializer,
        parameters=[IDEMPOTENCY_HEADER],
        responses={
            201: ReviewSerializer,
            404: NOT_SCHEDULED,
            409: OpenApiResponse(
                NotDueSerializer,
                description="Not due yet (with its due date), or the same Idempotency-Key is in flight.",
            ),
            422: DETAIL,
        },
        summary="Record a pass or fail for a due card",
    )
    def create(self, request):
        key = _idempotency_key(request)
        data = ReviewCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            recorded = review_services.review_submit(
                learner=request.user,
                card=data.validated_data["card"],
                result=data.validated_data["result"],
                at=timezone.now(),
                present=review_item,
                idempotency_key=key,
                path=request.path,
                answer_text=data.validated_data["answer_text"],
            )
        except (
            services.NotScheduled,
            services.ExerciseCardReview,
            services.WrittenAnswerRefused,
            services.NotDue,
            services.IdempotencyConflict,
        ) as exc:
            return _review_refused(exc)
        # A replay answers as the key's first request did: the review it recorded, 201.
        return Response(recorded.body, status=status.HTTP_201_CREATED)


def _idempotency_key(request) -> str:
    """The request's Idempotency-Key, "" without one; a malformed key is a 400."""
    key = request.headers.get("Idempotency-Key", "")
    if "Idempotency-Key" in request.headers and not IDEMPOTENCY_KEY_RE.match(key):
        raise ValidationError(
            {"Idempotency-Key": ["Expected 1 to 255 visible ASCII characters (no spaces)."]}
        )
    return key


def _review_refused(exc: Exception) -> Response:
    """The answer to a review submission a service refused, by the error's type."""
    if isinstance(exc, services.IdempotencyConflict):
        code = status.HTTP_409_CONFLICT if exc.in_flight else status.HTTP_422_UNPROCESSABLE_ENTITY
        return Response({"detail": str(exc)}, status=code)
    if isinstance(exc, services.NotDue):
        return Response({"detail": str(exc), "due_on": exc.due_on}, status=status.HTTP_409_CONFLICT)
    if isinstance(exc, services.LabCardReview):
        return Response(
            {"card": ["This is a lab card: submit its lab (labs/{slug}/submissions/) instead."]},
            status=status.HTTP_400_BAD_REQUEST,
        )
    if isinstance(exc, services.WrittenAnswerRefused):
        return Response({"answer_text": [str(exc)]}, status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, services.ExerciseCardReview):
        return Response(
            {
                "card": [
                    "This is an exercise card: submit the exercise that reviews/due/ "
                    "gave you for it instead."
                ]
            },
            status=status.HTTP_400_BAD_REQUEST,
        )
    return Response(
        {"detail": NOT_SCHEDULED_DETAIL},
        status=status.HTTP_404_NOT_FOUND,
    )


class StatsView(APIView):
    @extend_schema(tags=["reviews"], responses={200: StatsSerializer}, summary="Study statistics")
    def get(self, request):
        today = selectors.learner_today(learner=request.user, at=timezone.now())
        return Response(
            StatsSerializer(stats.learner_stats(learner=request.user, today=today)).data
        )


class ExerciseReviewSubmitView(ExerciseSubmitView):
    """Submitting an exercise; the first answer to one bound to a review records it."""

    def attempt(self, request, exercise_id: int, answers: dict):
        return services.exercise_review_submit(
            learner=request.user, exercise_id=exercise_id, answers=answers, at=timezone.now()
        )


class ReviewsCsvView(APIView):
    @extend_schema(
        tags=["reviews"],
        responses={
            (200, "text/csv"): OpenApiResponse(
                OpenApiTypes.STR,
                description=(
                    "card_id, review_time (ms since the epoch), review_rating (1 Again, 3 Good), "
                    "review_state (0 new, 2 review, 3 relearning), review_duration (ms; 0), "
                    "oldest first, net of undos: the layout Anki's FSRS optimizer reads."
                ),
            )
        },
        summary="Your review log as CSV for Anki's FSRS tools",
    )
    def get(self, request):
        text = anki.reviews_csv(selectors.net_review_log(learner=request.user))
        response = HttpResponse(text, content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = 'attachment; filename="reviews.csv"'
        return response

"""Study controls: undo a review, suspend and bury cards, reports, pausing study."""

from __future__ import annotations

from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from studyapp.common.ids import parse_id

from .. import selectors, services
from ..models import ReviewLog
from ..serializers import (
    BuriedSerializer,
    CardStateSerializer,
    PauseEndedSerializer,
    PauseSerializer,
    ReportCreateSerializer,
    ReportSerializer,
    SuspendedSerializer,
)
from .common import CONFLICT, DETAIL, NOT_SCHEDULED, NOT_SCHEDULED_DETAIL


class ReviewUndoView(APIView):
    @extend_schema(
        tags=["reviews"],
        request=None,
        responses={200: CardStateSerializer, 404: DETAIL, 409: CONFLICT},
        summary="Undo a review: the card goes back to where it was",
        description=(
            "Only your latest review of a card, on the study day it was made, and only once. "
            "The log keeps the review and gains a compensating entry (`undo_of`); statistics, "
            "streaks and leeches count the net result. Otherwise 409."
        ),
    )
    def post(self, request, review_id: str):
        pk = parse_id(review_id)
        try:
            if pk is None:
                raise ReviewLog.DoesNotExist
            state = services.review_undo(learner=request.user, review_id=pk, at=timezone.now())
        except ReviewLog.DoesNotExist:
            return Response(
                {"detail": "No such review of yours."}, status=status.HTTP_404_NOT_FOUND
            )
        except services.UndoRefused as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        return Response(CardStateSerializer(state).data)


def _card_pk(card_id: str) -> int:
    """The path's card id; one no card can have is a card not on the learner's ladder."""
    pk = parse_id(card_id)
    if pk is None:
        raise services.NotScheduled()
    return pk


def _not_scheduled() -> Response:
    return Response({"detail": NOT_SCHEDULED_DETAIL}, status=status.HTTP_404_NOT_FOUND)


class CardSuspendView(APIView):
    @extend_schema(
        tags=["cards"],
        request=None,
        responses={200: SuspendedSerializer, 404: NOT_SCHEDULED},
        summary="Suspend the card for yourself: it leaves your queue and forecast",
    )
    def post(self, request, card_id: str):
        try:
            state = services.card_suspend(learner=request.user, card_id=_card_pk(card_id))
        except services.NotScheduled:
            return _not_scheduled()
        return Response(SuspendedSerializer(state).data)

    @extend_schema(
        tags=["cards"],
        request=None,
        responses={204: None, 404: NOT_SCHEDULED},
        summary="Resume a suspended card: it returns with the state it had",
    )
    def delete(self, request, card_id: str):
        try:
            services.card_resume(learner=request.user, card_id=_card_pk(card_id))
        except services.NotScheduled:
            return _not_scheduled()
        return Response(status=status.HTTP_204_NO_CONTENT)


class CardBuryView(APIView):
    @extend_schema(
        tags=["cards"],
        request=None,
        responses={200: BuriedSerializer, 404: NOT_SCHEDULED},
        summary="Bury the card: out of today's queue, back tomorrow, state unchanged",
    )
    def post(self, request, card_id: str):
        today = selectors.learner_today(learner=request.user, at=timezone.now())
        try:
            state = services.card_bury(learner=request.user, card_id=_card_pk(card_id), today=today)
        except services.NotScheduled:
            return _not_scheduled()
        return Response(BuriedSerializer(state).data)


class ReportViewSet(mixins.ListModelMixin, viewsets.GenericViewSet):
    serializer_class = ReportSerializer

    def get_queryset(self):
        return selectors.reports_of(learner=self.request.user)

    @extend_schema(tags=["reports"], summary="Your reports, newest first")
    def list(self, request, *args, **kwargs):
        return super().list(request, *args, **kwargs)

    @extend_schema(
        tags=["reports"],
        request=ReportCreateSerializer,
        responses={201: ReportSerializer},
        summary="Report a problem with a card or one of its exercises",
    )
    def create(self, request):
        data = ReportCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        try:
            report = services.report_create(
                learner=request.user,
                card_id=values["card"],
                exercise_id=values.get("exercise"),
                text=values["text"],
            )
        except services.ReportTargetMissing as exc:
            what = "card" if exc.field == "card" else "exercise of yours"
            raise ValidationError(
                {exc.field: [f"Expected the id of an existing {what}."]}
            ) from None
        return Response(ReportSerializer(report).data, status=status.HTTP_201_CREATED)


class PauseView(APIView):
    @extend_schema(
        tags=["profile"],
        request=PauseSerializer,
        responses={200: PauseSerializer, 409: CONFLICT},
        summary="Pause study from a date for 1 to 90 days",
        description=(
            "While paused the due queue is empty (overdue cards included), no reminders go "
            "out and the streak is kept. Every scheduled card's due date moves on by `days` "
            "now. 409 while another pause is planned or running."
        ),
    )
    def post(self, request):
        data = PauseSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        start, days = data.validated_data["start"], data.validated_data["days"]
        today = selectors.learner_today(learner=request.user, at=timezone.now())
        if start < today:
            raise ValidationError(
                {"start": [f"Expected today ({today.isoformat()}) or a later date."]}
            )
        try:
            services.pause_begin(learner=request.user, start=start, days=days, today=today)
        except services.PauseRefused as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        return Response({"start": start, "days": days})

    @extend_schema(
        tags=["profile"],
        request=None,
        responses={200: PauseEndedSerializer, 409: CONFLICT},
        summary="End the pause early",
        description=(
            "Due dates move back by the days not used; the answer gives the pause as it "
            "ran (`days` used, 0 when it had not started). 409 without a pause to end."
        ),
    )
    def delete(self, request):
        today = selectors.learner_today(learner=request.user, at=timezone.now())
        try:
            start, used = services.pause_finish(learner=request.user, today=today)
        except services.PauseRefused as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        return Response({"start": start, "days": used})

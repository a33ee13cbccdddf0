"""REST endpoints of the study core: parse, call one service or selector, serialize."""

from __future__ import annotations

import re

from django.conf import settings
from django.contrib.auth import authenticate
from django.db.models import Q
from django.http import HttpResponse
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from rest_framework import mixins, permissions, status, viewsets
from rest_framework.authtoken.models import Token
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.fields import DateTimeField
from rest_framework.response import Response
from rest_framework.views import APIView

from exercises.api import ExerciseSubmitView
from exercises.serializers import ExerciseSerializer
from studyapp.common.ids import parse_id
from studyapp.common.pagination import DuePagination

from . import anki, selectors, services
from .models import Card, Deck, ReviewLog, Tag
from .serializers import (
    AccountDeleteSerializer,
    BuriedSerializer,
    CardSerializer,
    CardStateSerializer,
    DeckSerializer,
    DueQueueSerializer,
    EnrollResultSerializer,
    NotDueSerializer,
    PasswordChangeSerializer,
    PasswordResetConfirmSerializer,
    PasswordResetSerializer,
    PauseEndedSerializer,
    PauseSerializer,
    ProfileSerializer,
    RegisteredSerializer,
    RegisterSerializer,
    ReportCreateSerializer,
    ReportSerializer,
    ReviewCreateSerializer,
    ReviewSerializer,
    StatsSerializer,
    SuspendedSerializer,
    TokenRequestSerializer,
    TokenSerializer,
)
from .services import accounts as account_services
from .services import privacy
from .services import reviews as review_services

DETAIL = OpenApiResponse(
    response={"type": "object", "properties": {"detail": {"type": "string"}}},
    description="An error with a message.",
)
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


def _int_param(request, name: str) -> int | None:
    raw = request.query_params.get(name)
    if raw is None:
        return None
    try:
        return int(raw)
    except ValueError:
        raise ValidationError({name: [f"Expected an integer id, got {raw!r}."]}) from None


# --- Accounts --------------------------------------------------------------------


class RegisterView(APIView):
    permission_classes = [permissions.AllowAny]
    authentication_classes: list = []
    throttle_scope = "register"

    @extend_schema(
        tags=["auth"],
        request=RegisterSerializer,
        responses={201: RegisteredSerializer},
        summary="Create a learner account and its API token",
    )
    def post(self, request):
        data = RegisterSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        user, token = services.register(**data.validated_data)
        return Response({"username": user.username, "token": token}, status=status.HTTP_201_CREATED)


class TokenView(APIView):
    permission_classes = [permissions.AllowAny]
    authentication_classes: list = []
    throttle_scope = "login"

    @extend_schema(
        tags=["auth"],
        request=TokenRequestSerializer,
        responses={200: TokenSerializer},
        summary="Exchange a username and password for the API token",
        description=(
            "Failed log-ins for one username (here and on the web log-in together) lock it "
            "for a while after too many, the right password included: 429 with Retry-After. "
            "A password reset ends the lockout."
        ),
    )
    def post(self, request):
        data = TokenRequestSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        # The plain HttpRequest: the lockout check flags it, and its middleware answers 429.
        user = authenticate(
            request._request,
            username=data.validated_data["username"],
            password=data.validated_data["password"],
        )
        if user is None:
            raise ValidationError(
                {"non_field_errors": ["Unable to log in with these credentials."]}
            )
        return Response(
            {"token": account_services.token_for_login(user=user, request=request._request)}
        )


class LogoutView(APIView):
    @extend_schema(
        tags=["auth"],
        request=None,
        responses={204: None},
        summary="Log out: the token used is deleted",
    )
    def post(self, request):
        if isinstance(request.auth, Token):
            account_services.token_delete(key=request.auth.key)
        return Response(status=status.HTTP_204_NO_CONTENT)


class PasswordResetView(APIView):
    permission_classes = [permissions.AllowAny]
    authentication_classes: list = []
    throttle_scope = "password_reset"

    @extend_schema(
        tags=["auth"],
        request=PasswordResetSerializer,
        responses={202: None},
        summary="Mail a one-time password reset link",
        description="Answers 202 whether or not the address belongs to an account.",
    )
    def post(self, request):
        data = PasswordResetSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        account_services.password_reset_request(
            email=data.validated_data["email"], request=request._request
        )
        return Response(status=status.HTTP_202_ACCEPTED)


class PasswordResetConfirmView(APIView):
    permission_classes = [permissions.AllowAny]
    authentication_classes: list = []
    throttle_scope = "password_reset"

    @extend_schema(
        tags=["auth"],
        request=PasswordResetConfirmSerializer,
        responses={204: None},
        summary="Set a new password with the uid and token of a reset link",
        description="Every API token of the account stops working and a lockout ends.",
    )
    def post(self, request):
        data = PasswordResetConfirmSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        account_services.password_reset_confirm(**data.validated_data)
        return Response(status=status.HTTP_204_NO_CONTENT)


class PasswordChangeView(APIView):
    @extend_schema(
        tags=["profile"],
        request=PasswordChangeSerializer,
        responses={200: TokenSerializer},
        summary="Change the password; answers a new token and the old one stops working",
    )
    def post(self, request):
        data = PasswordChangeSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        token = account_services.password_change(user=request.user, **data.validated_data)
        return Response({"token": token})


class ExportView(APIView):
    @extend_schema(
        tags=["profile"],
        responses={
            200: OpenApiResponse(
                {
                    "type": "object",
                    "properties": {
                        name: {"type": "object" if name == "profile" else "array"}
                        for name in privacy.EXPORT_SECTIONS
                    },
                },
                description="Everything held about the learner, one section per source.",
            )
        },
        summary="Download everything the service holds about you",
    )
    def get(self, request):
        response = Response(privacy.account_export(user=request.user))
        response["Content-Disposition"] = (
            f'attachment; filename="study-export-{request.user.get_username()}.json"'
        )
        return response


class MeView(APIView):
    @extend_schema(tags=["profile"], responses={200: ProfileSerializer})
    def get(self, request):
        return Response(ProfileSerializer(selectors.learner_profile(request.user)).data)

    @extend_schema(
        tags=["profile"],
        request=ProfileSerializer,
        responses={200: ProfileSerializer},
        summary="Change the time zone, day start, reminders or email",
    )
    def patch(self, request):
        profile = selectors.learner_profile(request.user)
        data = ProfileSerializer(profile, data=request.data, partial=True)
        data.is_valid(raise_exception=True)
        fields = dict(data.validated_data)
        if "user" in fields:
            fields.update(fields.pop("user"))
        profile = services.profile_update(user=request.user, **fields)
        return Response(ProfileSerializer(profile).data)

    @extend_schema(
        tags=["profile"],
        request=AccountDeleteSerializer,
        responses={204: None},
        summary="Delete the account and its personal data (needs the password)",
        description=(
            "Afterwards the token answers 401 and the username is free. The review log is "
            "kept for card statistics without any link to the account."
        ),
    )
    def delete(self, request):
        data = AccountDeleteSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        privacy.account_delete(user=request.user, password=data.validated_data["password"])
        return Response(status=status.HTTP_204_NO_CONTENT)


# --- Decks -----------------------------------------------------------------------


class DeckViewSet(viewsets.ReadOnlyModelViewSet):
    serializer_class = DeckSerializer
    lookup_field = "slug"
    lookup_value_regex = "[-a-zA-Z0-9_]+"

    def get_queryset(self):
        return selectors.decks_for(learner=self.request.user)

    @extend_schema(
        tags=["decks"],
        request=None,
        responses={200: EnrollResultSerializer},
        summary="Enrol in the deck (idempotent; never resets progress)",
        methods=["POST"],
    )
    @extend_schema(
        tags=["decks"],
        request=None,
        responses={204: None},
        summary="Leave the deck: its cards leave the queue, history stays",
        methods=["DELETE"],
    )
    @action(detail=True, methods=["post", "delete"])
    def enroll(self, request, slug=None):
        deck = self.get_object()
        if request.method == "DELETE":
            services.unenroll(learner=request.user, deck=deck)
            return Response(status=status.HTTP_204_NO_CONTENT)
        result = services.enroll(learner=request.user, deck=deck, at=timezone.now())
        return Response(
            {
                "deck": deck.slug,
                "scheduled": result.scheduled,
                "first_due_on": result.first_due_on,
            }
        )


# --- Cards -----------------------------------------------------------------------


class IsStaffOrReadOnly(permissions.BasePermission):
    message = "Only staff may change cards."

    def has_permission(self, request, view):
        return request.method in permissions.SAFE_METHODS or bool(request.user.is_staff)


@extend_schema_view(
    list=extend_schema(
        parameters=[
            OpenApiParameter("deck", OpenApiTypes.STR, description="A deck's slug."),
            OpenApiParameter("kind", OpenApiTypes.STR, enum=Card.Kind.values),
            OpenApiParameter("tag", OpenApiTypes.STR, description="A tag name."),
            OpenApiParameter(
                "search", OpenApiTypes.STR, description="Words in the prompt or answer."
            ),
        ]
    )
)
@extend_schema(tags=["cards"])
class CardViewSet(viewsets.ModelViewSet):
    serializer_class = CardSerializer
    permission_classes = [permissions.IsAuthenticated, IsStaffOrReadOnly]
    lookup_value_regex = "[0-9]+"

    def get_queryset(self):
        cards = selectors.cards_visible_to(user=self.request.user)
        if self.action != "list":
            return cards
        params = self.request.query_params
        if deck := params.get("deck"):
            cards = cards.filter(deck__slug=deck)
        if "kind" in params:
            kind = params["kind"]
            if kind not in Card.Kind.values:
                raise ValidationError(
                    {"kind": [f"Expected one of {', '.join(Card.Kind.values)}; got {kind!r}."]}
                )
            cards = cards.filter(kind=kind)
        if tag := params.get("tag"):
            cards = cards.filter(tags__in=Tag.objects.filter(name=tag))
        if search := params.get("search"):
            for word in search.split()[:10]:
                cards = cards.filter(Q(prompt__icontains=word) | Q(answer__icontains=word))
        return cards

    def get_object(self):
        if parse_id(self.kwargs["pk"]) is None:
            raise NotFound()
        return super().get_object()


# --- Reviews ---------------------------------------------------------------------


class DueView(APIView):
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
        offset, limit = paginator.start(
            request, selectors.due_count(learner=request.user, today=today)
        )
        rows = selectors.due_page(
            learner=request.user, today=today, offset=offset, limit=limit, count=paginator.count
        )
        exercises = _bound_exercises(request, rows, today)
        ladder_days = settings.STUDY_LADDER_DAYS
        datetimes = _datetime_field()
        results = []
        for row in rows:
            item = {
                "card": _due_card(row, datetimes),
                "step": row["step"],
                "interval_days": ladder_days[row["step"]],
                "due_on": row["due_on"],
                "leech": row["leech"],
            }
            if row["card__kind"] == Card.Kind.EXERCISE:
                item["exercise"] = exercises.get(row["card_id"])
            results.append(item)
        return Response(
            {
                "today": today,
                "count": paginator.count,
                "next": paginator.get_next_link(),
                "previous": paginator.get_previous_link(),
                "results": results,
            }
        )


def _datetime_field() -> DateTimeField:
    """``CardSerializer``'s datetime output, with the request's time zone looked up once."""
    return DateTimeField(
        default_timezone=timezone.get_current_timezone() if settings.USE_TZ else None
    )


def _due_card(row: dict, datetimes: DateTimeField) -> dict:
    """The card object of ``CardSerializer`` from a due-page row, without a serializer pass."""
    spec = row["card__exercise"]
    return {
        "id": row["card_id"],
        "deck": row["card__deck__slug"],
        "key": row["card__key"],
        "kind": row["card__kind"],
        "prompt": row["card__prompt"],
        "answer": row["card__answer"],
        "tags": row["tag_names"],
        "exercise": None
        if spec is None
        else {"kind": spec.get("kind"), "params": spec.get("params") or {}},
        "position": row["card__position"],
        "active": row["card__is_active"],
        "created_at": datetimes.to_representation(row["card__created_at"]),
        "updated_at": datetimes.to_representation(row["card__updated_at"]),
    }


def _bound_exercises(request, rows, today) -> dict:
    items = [
        services.DueExercise(
            card_id=row["card_id"],
            spec=row["card__exercise"],
            binding_id=row["binding_id"],
            bound_exercise_id=row["bound_exercise_id"],
            flagged=bool(row["card__generation_error"]),
        )
        for row in rows
        if row["card__kind"] == Card.Kind.EXERCISE
    ]
    if not items:
        return {}
    bound = services.due_exercises_bind(learner=request.user, items=items, today=today)
    return {card_id: ExerciseSerializer(ex).data for card_id, ex in bound.items()}


class ReviewViewSet(mixins.ListModelMixin, viewsets.GenericViewSet):
    serializer_class = ReviewSerializer

    def get_queryset(self):
        card_id = _int_param(self.request, "card")
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
            404: OpenApiResponse(DETAIL.response, description="No such card on your ladder."),
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
            answer = review_services.review_submit(
                learner=request.user,
                card=data.validated_data["card"],
                result=data.validated_data["result"],
                at=timezone.now(),
                present=lambda log: ReviewSerializer(log).data,
                idempotency_key=key,
                path=request.path,
            )
        except (
            services.NotScheduled,
            services.ExerciseCardReview,
            services.NotDue,
            services.IdempotencyConflict,
        ) as exc:
            return _review_refused(exc)
        return Response(answer.body, status=answer.status)


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
        {"detail": "No such card on your ladder (unknown, inactive, or deck not enrolled)."},
        status=status.HTTP_404_NOT_FOUND,
    )


class StatsView(APIView):
    @extend_schema(tags=["reviews"], responses={200: StatsSerializer}, summary="Study statistics")
    def get(self, request):
        today = selectors.learner_today(learner=request.user, at=timezone.now())
        return Response(
            StatsSerializer(selectors.learner_stats(learner=request.user, today=today)).data
        )


class ExerciseReviewSubmitView(ExerciseSubmitView):
    """Submitting an exercise; the first answer to one bound to a review records it."""

    def attempt(self, request, exercise_id: int, answers: dict):
        return services.exercise_review_submit(
            learner=request.user, exercise_id=exercise_id, answers=answers, at=timezone.now()
        )


# --- Study controls: undo, suspend, bury, reports, pause, exports ------------------

CONFLICT = OpenApiResponse(DETAIL.response, description="Refused, with the reason.")
NOT_SCHEDULED = OpenApiResponse(DETAIL.response, description="No such card on your ladder.")
NOT_SCHEDULED_DETAIL = "No such card on your ladder (unknown, inactive, or deck not enrolled)."


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


class CardSuspendView(APIView):
    @extend_schema(
        tags=["cards"],
        request=None,
        responses={200: SuspendedSerializer, 404: NOT_SCHEDULED},
        summary="Suspend the card for yourself: it leaves your queue and forecast",
    )
    def post(self, request, card_id: str):
        pk = parse_id(card_id)
        try:
            if pk is None:
                raise services.NotScheduled()
            state = services.card_suspend(learner=request.user, card_id=pk)
        except services.NotScheduled:
            return Response({"detail": NOT_SCHEDULED_DETAIL}, status=status.HTTP_404_NOT_FOUND)
        return Response(SuspendedSerializer(state).data)

    @extend_schema(
        tags=["cards"],
        request=None,
        responses={204: None, 404: NOT_SCHEDULED},
        summary="Resume a suspended card: it returns with the state it had",
    )
    def delete(self, request, card_id: str):
        pk = parse_id(card_id)
        try:
            if pk is None:
                raise services.NotScheduled()
            services.card_resume(learner=request.user, card_id=pk)
        except services.NotScheduled:
            return Response({"detail": NOT_SCHEDULED_DETAIL}, status=status.HTTP_404_NOT_FOUND)
        return Response(status=status.HTTP_204_NO_CONTENT)


class CardBuryView(APIView):
    @extend_schema(
        tags=["cards"],
        request=None,
        responses={200: BuriedSerializer, 404: NOT_SCHEDULED},
        summary="Bury the card: out of today's queue, back tomorrow, state unchanged",
    )
    def post(self, request, card_id: str):
        pk = parse_id(card_id)
        today = selectors.learner_today(learner=request.user, at=timezone.now())
        try:
            if pk is None:
                raise services.NotScheduled()
            state = services.card_bury(learner=request.user, card_id=pk, today=today)
        except services.NotScheduled:
            return Response({"detail": NOT_SCHEDULED_DETAIL}, status=status.HTTP_404_NOT_FOUND)
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


class DeckApkgView(APIView):
    @extend_schema(
        tags=["decks"],
        responses={
            (200, "application/apkg"): OpenApiResponse(
                OpenApiTypes.BINARY, description="An Anki package of the deck's active cards."
            ),
            404: DETAIL,
        },
        summary="The deck as an Anki package (.apkg); a re-export updates the notes",
    )
    def get(self, request, slug: str):
        deck = Deck.objects.filter(slug=slug).first()
        if deck is None:
            raise NotFound("No such deck.")
        response = HttpResponse(anki.deck_apkg(deck=deck), content_type="application/apkg")
        response["Content-Disposition"] = f'attachment; filename="{deck.slug}.apkg"'
        return response


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

"""Decks and cards: browsing, enrolment, staff edits and the Anki package."""

from __future__ import annotations

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
from rest_framework import permissions, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from studyapp.common.ids import parse_id

from .. import anki, lesson, selectors, services
from ..models import Card, Deck, Tag
from ..serializers import (
    CardSerializer,
    DeckSerializer,
    EnrollResultSerializer,
    LearnMoreSerializer,
    LessonSerializer,
)
from .common import DETAIL


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
        return Response(EnrollResultSerializer(_placed(result)).data)

    @extend_schema(
        tags=["decks"],
        request=LearnMoreSerializer,
        responses={200: EnrollResultSerializer, 400: DETAIL, 404: DETAIL},
        summary="Learn more today: place the next waiting cards of the deck, due today",
        description=(
            "Places the next `count` waiting cards of the deck (default: your "
            "`new_cards_per_day`, or 20 when that is 0) at step 0, due today, beyond the "
            "day's pace. You must be enrolled in the deck (400 otherwise). `scheduled` counts "
            "the cards placed (0 when none wait)."
        ),
        methods=["POST"],
    )
    @action(detail=True, methods=["post"], url_path="learn-more")
    def learn_more(self, request, slug=None):
        deck = self.get_object()
        body = LearnMoreSerializer(data=request.data if request.data is not None else {})
        body.is_valid(raise_exception=True)
        try:
            result = services.learn_more(
                learner=request.user,
                deck=deck,
                at=timezone.now(),
                count=body.validated_data.get("count"),
            )
        except services.NotEnrolled as exc:
            raise ValidationError({"deck": [str(exc)]}) from exc
        return Response(EnrollResultSerializer(_placed(result)).data)


def _placed(result: services.EnrollResult) -> dict:
    return {
        "deck": result.deck.slug,
        "scheduled": result.scheduled,
        "waiting": result.waiting,
        "first_due_on": result.first_due_on,
    }


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
        description=(
            "Built once per deck version and then served from the cache: any change to the "
            "deck, its active cards or their tags gives a fresh file."
        ),
    )
    def get(self, request, slug: str):
        deck = Deck.objects.filter(slug=slug).first()
        if deck is None:
            raise NotFound("No such deck.")
        response = HttpResponse(anki.deck_apkg_cached(deck=deck), content_type="application/apkg")
        response["Content-Disposition"] = f'attachment; filename="{deck.slug}.apkg"'
        return response


class DeckLessonView(APIView):
    @extend_schema(
        tags=["decks"],
        responses={200: LessonSerializer, 404: DETAIL},
        summary="The deck's lesson: its sections in order, each with what practises it",
        description=(
            "Open to every learner, enrolled or not. Each section's `body` is Markdown with "
            "math, like the cards; `practice` lists the deck's active cards whose "
            "`lesson_section` is the section's key, and through them the exercise kinds, "
            "playground presets and labs. A deck without a lesson answers no sections."
        ),
    )
    def get(self, request, slug: str):
        deck = Deck.objects.filter(slug=slug).first()
        if deck is None:
            raise NotFound("No such deck.")
        found = lesson.deck_lesson(deck=deck)
        return Response(
            LessonSerializer(
                {
                    "deck": deck.slug,
                    "title": found.title,
                    "sections": [
                        {
                            "key": section.key,
                            "title": section.title,
                            "body": section.body,
                            "practice": section.practice.as_json(),
                        }
                        for section in found.sections
                    ],
                }
            ).data
        )

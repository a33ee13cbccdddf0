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

from .. import anki, selectors, services
from ..models import Card, Deck, Tag
from ..serializers import CardSerializer, DeckSerializer, EnrollResultSerializer
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
        return Response(
            {
                "deck": deck.slug,
                "scheduled": result.scheduled,
                "first_due_on": result.first_due_on,
            }
        )


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

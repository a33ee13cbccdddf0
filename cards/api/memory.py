"""Memory beside the ladder: the learner's figures (stats/memory/) and a deck's, for staff."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import permissions
from rest_framework.response import Response
from rest_framework.views import APIView

from .. import selectors
from ..models import Deck
from ..serializers import DeckMemorySerializer, MemoryStatsSerializer
from ..services.memory import memory_stats
from ..services.memory_deck import deck_memory
from .common import DETAIL


class MemoryStatsView(APIView):
    @extend_schema(
        tags=["stats"],
        responses={200: MemoryStatsSerializer},
        summary="Does the ladder fit your memory: recall per rung, FSRS, calibration, workload",
        description=(
            "Recall per ladder interval with 95 % Wilson intervals (kept reviews only, binned by "
            "the days that really elapsed; a card's first review is left out), your FSRS "
            "parameters (the defaults until the weekly fit has enough of your reviews), the "
            "calibration of FSRS's predictions over a time-series split, and the next 365 days "
            "simulated under the ladder and under FSRS at desired retention 0.80, 0.90 and "
            "0.95. Nothing is fitted during the request."
        ),
    )
    def get(self, request):
        today = selectors.learner_today(learner=request.user, at=timezone.now())
        return Response(memory_stats(learner=request.user, today=today))


class DeckMemoryView(APIView):
    permission_classes = [permissions.IsAdminUser]

    @extend_schema(
        tags=["decks"],
        responses={200: DeckMemorySerializer, 403: DETAIL, 404: DETAIL},
        summary="Staff: the deck's memory figures over all its learners, per rung and per card",
        description=(
            "As stats/memory/ over every learner's reviews of the deck's cards (each learner "
            "with their own FSRS parameters), with each card's recall and the ladder that "
            "would hold the target retention. Reviews per day are per learner, over at most "
            "200 learners. Staff only (403 otherwise)."
        ),
    )
    def get(self, request, slug: str):
        deck = get_object_or_404(Deck, slug=slug)
        return Response(deck_memory(deck=deck, today=timezone.localdate()))

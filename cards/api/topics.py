"""Progress by topic: per tag, exercise kind and lab of the learner's decks."""

from __future__ import annotations

from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from .. import selectors, topics


class TopicSerializer(serializers.Serializer):
    topic = serializers.CharField(
        help_text="The tag's name, the exercise kind's name or the lab's slug."
    )
    type = serializers.ChoiceField(
        choices=topics.TOPIC_TYPES, help_text="What the topic is: a tag, an exercise kind or a lab."
    )
    title = serializers.CharField(help_text="How the pages name it.")
    cards = serializers.IntegerField(help_text="Active cards of your enrolled decks in the topic.")
    learned = serializers.IntegerField(help_text="Of those, the cards placed on your ladder.")
    mastered = serializers.IntegerField(
        help_text="Of those, the cards on the ladder's top rung whose last review passed."
    )
    recall_30d = serializers.FloatField(
        allow_null=True,
        help_text="Share of passes among your reviews of the topic's cards in the last 30 "
        "study days, undone ones left out; null with none.",
    )
    reviews_30d = serializers.IntegerField(help_text="How many reviews that share is over.")


class TopicsView(APIView):
    @extend_schema(
        tags=["reviews"],
        responses={200: TopicSerializer(many=True)},
        summary="Progress by topic",
        description=(
            "One row per tag (by name), then per exercise kind, then per lab, over the active "
            "cards of the decks you are enrolled in. A topic none of your cards has is absent."
        ),
    )
    def get(self, request):
        today = selectors.learner_today(learner=request.user, at=timezone.now())
        rows = [topic.as_dict() for topic in topics.topics_of(learner=request.user, today=today)]
        return Response(TopicSerializer(rows, many=True).data)

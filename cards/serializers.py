from __future__ import annotations

import re

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from . import services
from .fields import StrictBooleanField, StrictCharField, StrictChoiceField, StrictIntegerField
from .models import Card, Deck, LearnerProfile, ReviewLog

TAG_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,49}$")


class RegisterSerializer(serializers.Serializer):
    username = StrictCharField(max_length=150)
    password = StrictCharField(max_length=128, trim_whitespace=False)
    email = serializers.EmailField(required=False, allow_blank=True, max_length=254)
    timezone = StrictChoiceField(
        choices=sorted(services.timezone_names()),
        required=False,
        default="UTC",
        expected_description="an IANA time zone name such as 'Europe/Berlin'",
    )

    def validate_username(self, value):
        if not re.fullmatch(r"[\w.@+-]+", value):
            raise serializers.ValidationError(
                "Expected letters, digits and @ . + - _ only (no spaces)."
            )
        return value


class RegisteredSerializer(serializers.Serializer):
    username = serializers.CharField()
    token = serializers.CharField()


class TokenRequestSerializer(serializers.Serializer):
    username = StrictCharField(max_length=150)
    password = StrictCharField(max_length=128, trim_whitespace=False)


class TokenSerializer(serializers.Serializer):
    token = serializers.CharField()


class ProfileSerializer(serializers.ModelSerializer):
    username = serializers.CharField(source="user.username", read_only=True)
    email = serializers.EmailField(source="user.email", required=False, allow_blank=True)
    timezone = StrictChoiceField(
        choices=sorted(services.timezone_names()),
        required=False,
        expected_description="an IANA time zone name such as 'Europe/Berlin'",
    )
    day_starts_at = StrictIntegerField(min_value=0, max_value=23, required=False)
    reminders = StrictBooleanField(required=False)
    reminder_hour = StrictIntegerField(min_value=0, max_value=23, required=False)

    class Meta:
        model = LearnerProfile
        fields = ["username", "email", "timezone", "day_starts_at", "reminders", "reminder_hour"]


class DeckSerializer(serializers.ModelSerializer):
    card_count = serializers.IntegerField(read_only=True)
    enrolled = serializers.BooleanField(read_only=True)

    class Meta:
        model = Deck
        fields = ["slug", "title", "description", "card_count", "enrolled"]


class EnrollResultSerializer(serializers.Serializer):
    deck = serializers.CharField(help_text="The deck's slug.")
    scheduled = serializers.IntegerField(
        help_text="Cards newly placed on the ladder (0 on a repeat)."
    )
    first_due_on = serializers.DateField(allow_null=True)


class ExerciseSpecSerializer(serializers.Serializer):
    kind = StrictCharField(max_length=40)
    params = serializers.DictField(required=False, default=dict)

    def validate(self, attrs):
        from exercises.kinds import ParamError, get_kind

        try:
            kind = get_kind(attrs["kind"])
        except KeyError as exc:
            raise serializers.ValidationError(
                {"kind": [f"Unknown exercise kind {attrs['kind']!r}."]}
            ) from exc
        params = dict(attrs.get("params") or {})
        params.pop("seed", None)  # exercise cards always get a server-chosen seed
        try:
            kind.normalize_params(params)
        except ParamError as exc:
            raise serializers.ValidationError({f"params.{exc.field}": [str(exc)]}) from exc
        return {"kind": attrs["kind"], "params": params}


@extend_schema_field(
    {
        "type": "array",
        "items": {"type": "string", "pattern": TAG_RE.pattern},
        "maxItems": 20,
    }
)
class TagListField(serializers.Field):
    def to_representation(self, tags):
        return [tag.name for tag in tags.all()]

    def to_internal_value(self, data):
        if not isinstance(data, list) or not all(isinstance(t, str) for t in data):
            raise serializers.ValidationError("Expected a list of tag names.")
        if len(data) > 20:
            raise serializers.ValidationError("Expected at most 20 tags.")
        bad = [t for t in data if not TAG_RE.match(t)]
        if bad:
            raise serializers.ValidationError(
                f"Tags are lowercase letters, digits and hyphens (1-50 characters); got {bad[0]!r}."
            )
        return list(dict.fromkeys(data))


class CardSerializer(serializers.ModelSerializer):
    deck = serializers.SlugRelatedField(slug_field="slug", queryset=Deck.objects.all())
    kind = StrictChoiceField(choices=Card.Kind.values)
    prompt = StrictCharField(max_length=20000)
    answer = StrictCharField(max_length=20000, allow_blank=True, required=False, default="")
    tags = TagListField(required=False)
    exercise = ExerciseSpecSerializer(allow_null=True, required=False, default=None)
    key = serializers.SlugField(max_length=100, required=False, allow_blank=True)
    position = StrictIntegerField(min_value=0, max_value=1_000_000, required=False)
    active = StrictBooleanField(source="is_active", required=False, default=True)

    class Meta:
        model = Card
        fields = [
            "id",
            "deck",
            "key",
            "kind",
            "prompt",
            "answer",
            "tags",
            "exercise",
            "position",
            "active",
            "created_at",
            "updated_at",
        ]
        read_only_fields = ["id", "created_at", "updated_at"]
        validators = []  # the unique (deck, key) constraint is checked in validate()

    def validate(self, attrs):
        instance = self.instance
        kind = attrs.get("kind", instance.kind if instance else None)
        exercise = attrs.get("exercise", instance.exercise if instance else None)
        if kind == Card.Kind.EXERCISE and not exercise:
            raise serializers.ValidationError({"exercise": ["Exercise cards need {kind, params}."]})
        if kind != Card.Kind.EXERCISE and exercise:
            raise serializers.ValidationError(
                {"exercise": ["Only cards of kind 'exercise' carry an exercise; send null."]}
            )
        answer = attrs.get("answer", instance.answer if instance else "")
        if kind != Card.Kind.EXERCISE and not answer.strip():
            # A recall or interview card is graded against its answer (and deck files
            # require one, so every card the API makes can be exported and re-imported).
            raise serializers.ValidationError(
                {"answer": [f"A {kind} card needs an answer (Markdown)."]}
            )
        deck = attrs.get("deck", instance.deck if instance else None)
        key = attrs.get("key", instance.key if instance else "")
        if key:
            clash = Card.objects.filter(deck=deck, key=key)
            if instance:
                clash = clash.exclude(pk=instance.pk)
            if clash.exists():
                raise serializers.ValidationError(
                    {"key": ["Another card in this deck has this key."]}
                )
        return attrs

    def create(self, validated_data):
        tags = validated_data.pop("tags", None)
        return services.card_create(tags=tags, **validated_data)

    def update(self, instance, validated_data):
        tags = validated_data.pop("tags", None)
        return services.card_update(card=instance, tags=tags, **validated_data)


class DueItemSerializer(serializers.Serializer):
    card = CardSerializer()
    step = serializers.IntegerField()
    interval_days = serializers.IntegerField()
    due_on = serializers.DateField()
    exercise = serializers.JSONField(
        required=False,
        allow_null=True,
        help_text="For exercise cards: a fresh exercise bound to this review.",
    )


class DueQueueSerializer(serializers.Serializer):
    today = serializers.DateField()
    count = serializers.IntegerField(help_text="All cards due today, not just this page.")
    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)
    results = DueItemSerializer(many=True)


class ReviewCreateSerializer(serializers.Serializer):
    card = StrictIntegerField(min_value=1, max_value=2**63 - 1)
    result = StrictChoiceField(choices=ReviewLog.Result.values)


class ReviewSerializer(serializers.ModelSerializer):
    card = serializers.IntegerField(source="card_id")
    step = serializers.IntegerField(source="step_after")
    due_on = serializers.DateField(source="due_after")

    class Meta:
        model = ReviewLog
        fields = [
            "id",
            "card",
            "result",
            "reviewed_at",
            "study_day",
            "step_before",
            "step",
            "interval_days",
            "due_before",
            "due_on",
        ]


class NotDueSerializer(serializers.Serializer):
    detail = serializers.CharField()
    due_on = serializers.DateField()


class ForecastDaySerializer(serializers.Serializer):
    date = serializers.DateField()
    count = serializers.IntegerField()


class PredictionAccuracySerializer(serializers.Serializer):
    made = serializers.IntegerField()
    right = serializers.IntegerField()
    accuracy = serializers.FloatField(allow_null=True)


class StatsSerializer(serializers.Serializer):
    today = serializers.DateField()
    due_today = serializers.IntegerField()
    reviewed_today = serializers.IntegerField()
    streak_days = serializers.IntegerField()
    retention_30d = serializers.FloatField(allow_null=True)
    by_step = serializers.DictField(child=serializers.IntegerField())
    forecast = ForecastDaySerializer(many=True)
    predictions_30d = PredictionAccuracySerializer(
        help_text="Predictions made before the numbers (exercises and the playground) in the "
        "last 30 study days: how many, how many right, and the share right (null with none)."
    )

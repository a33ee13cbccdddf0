# One module on purpose: every request and response shape of the study API, as the house layout keeps them.
from __future__ import annotations

import re

from django.conf import settings
from django.utils import timezone
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from exercises.serializers import RefusesUnknownFields
from studyapp.common.fields import (
    StrictBooleanField,
    StrictCharField,
    StrictChoiceField,
    StrictIntegerField,
)

from . import ladder, lesson, rules, services
from .models import MAX_NEW_CARDS_PER_DAY, Card, Deck, LearnerProfile, Report, ReviewLog
from .selectors import learner_today
from .services.memory import card_retrievability

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
    new_cards_per_day = StrictIntegerField(
        min_value=0,
        max_value=MAX_NEW_CARDS_PER_DAY,
        required=False,
        help_text="The pace: new cards placed on each study day on which the learner "
        "reviews (0: none).",
    )
    theme = StrictChoiceField(
        choices=LearnerProfile.Theme.values,
        required=False,
        expected_description="auto, light or dark",
        help_text="The pages' colours: `auto` follows the device's setting.",
    )
    password = StrictCharField(
        max_length=128,
        trim_whitespace=False,
        write_only=True,
        required=False,
        help_text="The current password; needed to change `email`.",
    )
    email_confirmed = serializers.SerializerMethodField(
        help_text="Whether `email` was confirmed through its link; reminders go only to a "
        "confirmed address."
    )

    class Meta:
        model = LearnerProfile
        fields = [
            "username",
            "email",
            "email_confirmed",
            "timezone",
            "day_starts_at",
            "reminders",
            "reminder_hour",
            "new_cards_per_day",
            "theme",
            "password",
        ]

    def get_email_confirmed(self, profile) -> bool:
        return profile.email_confirmed


# --- Account lifecycle --------------------------------------------------------------


class PasswordChangeSerializer(serializers.Serializer):
    old_password = StrictCharField(max_length=128, trim_whitespace=False)
    new_password = StrictCharField(max_length=128, trim_whitespace=False)


class PasswordResetSerializer(serializers.Serializer):
    email = serializers.EmailField(max_length=254)


class PasswordResetConfirmSerializer(serializers.Serializer):
    uid = StrictCharField(max_length=64, help_text="The `uid` part of the e-mailed link.")
    token = StrictCharField(max_length=128, help_text="The `token` part of the e-mailed link.")
    new_password = StrictCharField(max_length=128, trim_whitespace=False)


class AccountDeleteSerializer(serializers.Serializer):
    password = StrictCharField(max_length=128, trim_whitespace=False)


class DeckSerializer(serializers.ModelSerializer):
    card_count = serializers.IntegerField(read_only=True)
    enrolled = serializers.BooleanField(read_only=True)
    waiting = serializers.IntegerField(
        read_only=True,
        help_text="Your cards of this deck that wait for the pace (0 when not enrolled).",
    )

    class Meta:
        model = Deck
        fields = ["slug", "title", "description", "card_count", "enrolled", "waiting"]


class EnrollResultSerializer(serializers.Serializer):
    deck = serializers.CharField(help_text="The deck's slug.")
    scheduled = serializers.IntegerField(
        help_text="Cards newly placed on the ladder (0 on a repeat)."
    )
    waiting = serializers.IntegerField(
        help_text="The deck's cards not yet placed: the pace places them on later study days."
    )
    first_due_on = serializers.DateField(allow_null=True)


class LearnMoreSerializer(RefusesUnknownFields):
    count = StrictIntegerField(
        min_value=1,
        max_value=MAX_NEW_CARDS_PER_DAY,
        required=False,
        help_text="How many waiting cards to place now (default: your `new_cards_per_day`, "
        "or 20 when that is 0).",
    )


class ExerciseSpecSerializer(serializers.Serializer):
    kind = StrictCharField(max_length=40)
    params = serializers.DictField(required=False, default=dict)

    def validate(self, attrs):
        if "kind" not in attrs:
            # A PATCH makes a nested serializer's fields optional; a spec still needs its kind.
            raise serializers.ValidationError(
                {"kind": ["This field is required: an exercise is {kind, params}."]}
            )
        # The card rules (cards.rules): a known kind, parameters it accepts, no seed.
        spec = {"kind": attrs["kind"], "params": dict(attrs.get("params") or {})}
        problems = rules.exercise_problems(spec)
        if problems:
            raise serializers.ValidationError(problems)
        return spec


@extend_schema_field(
    {
        "type": "object",
        "nullable": True,
        "properties": {"slug": {"type": "string", "description": "The lab's slug (labs/)."}},
        "required": ["slug"],
        "description": "For lab cards: the lab that reviews the card; null for the others.",
    }
)
class LabRefField(serializers.Field):
    """A lab card's lab as ``{slug}``; the slug itself is checked by the card rules."""

    def to_representation(self, slug):
        return {"slug": slug}

    def to_internal_value(self, data):
        if not isinstance(data, dict) or set(data) != {"slug"}:
            raise serializers.ValidationError(
                f"Expected {{slug}} naming a lab, got {rules.type_name(data)}."
            )
        return data["slug"]


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


@extend_schema_field({"type": "array", "maxItems": rules.MAX_POINTS, "items": {"type": "string"}})
class PointListField(serializers.Field):
    """Key points as given; the card rules (``cards.rules``) check them with the card's kind."""

    def to_representation(self, points):
        return list(points or [])

    def to_internal_value(self, data):
        return data


class CardSerializer(serializers.ModelSerializer):
    deck = serializers.SlugRelatedField(slug_field="slug", queryset=Deck.objects.all())
    kind = StrictChoiceField(choices=Card.Kind.values)
    prompt = StrictCharField(max_length=20000)
    answer = StrictCharField(max_length=20000, allow_blank=True, required=False, default="")
    tags = TagListField(required=False)
    exercise = ExerciseSpecSerializer(allow_null=True, required=False, default=None)
    lab = LabRefField(allow_null=True, required=False, default=None)
    points = PointListField(required=False, help_text="Interview cards: the key points to tick.")
    lesson_section = StrictCharField(
        max_length=80,
        allow_null=True,
        required=False,
        default=None,
        help_text="The key of the section of the deck's lesson (decks/{slug}/lesson/) that "
        "teaches this card, or null.",
    )
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
            "lab",
            "points",
            "lesson_section",
            "position",
            "active",
            "created_at",
            "updated_at",
        ]
        read_only_fields = ["id", "created_at", "updated_at"]
        validators: list[object] = []  # the unique (deck, key) constraint is checked in validate()

    def validate(self, attrs):
        # The card rules shared with the admin and deck files (cards.rules).
        instance = self.instance

        def current(name, default):
            return attrs.get(name, getattr(instance, name) if instance else default)

        problems = rules.card_problems(
            kind=current("kind", None),
            prompt=current("prompt", ""),
            answer=current("answer", ""),
            exercise=current("exercise", None),
            lab=current("lab", None),
            points=current("points", []),
        )
        deck, key = current("deck", None), current("key", "")
        if key and not problems:
            clash = Card.objects.filter(deck=deck, key=key)
            if instance:
                clash = clash.exclude(pk=instance.pk)
            problems = rules.key_problems(key, taken=clash.exists())
        section = current("lesson_section", None)
        if section is not None and not problems:
            problems = rules.lesson_section_problems(section, lesson.section_keys(deck))
        if problems:
            raise serializers.ValidationError(problems)
        if "points" in attrs:
            attrs["points"] = rules.clean_points(attrs["points"])
        return attrs

    def create(self, validated_data):
        tags = validated_data.pop("tags", None)
        return services.card_create(tags=tags, **validated_data)

    def update(self, instance, validated_data):
        tags = validated_data.pop("tags", None)
        # The card passed the card rules: a generation failure recorded earlier is cleared
        # (a card that still fails is flagged again at its next review).
        validated_data["generation_error"] = ""
        return services.card_update(card=instance, tags=tags, **validated_data)


# --- The lesson ---------------------------------------------------------------------


class LessonCardSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    key = serializers.CharField()
    kind = serializers.CharField()


class LessonPracticeSerializer(serializers.Serializer):
    cards = LessonCardSerializer(
        many=True, help_text="The deck's active cards that point to this section, in deck order."
    )
    exercise_kinds = serializers.ListField(
        child=serializers.CharField(), help_text="Exercise kinds of those cards (exercises/kinds/)."
    )
    presets = serializers.ListField(
        child=serializers.CharField(),
        help_text="Playground presets those exercises start from (/playground/?preset=NAME).",
    )
    labs = serializers.ListField(
        child=serializers.CharField(), help_text="Slugs of the labs of those cards (labs/)."
    )


class LessonSectionSerializer(serializers.Serializer):
    key = serializers.CharField(help_text="Stable within the deck; a card's `lesson_section`.")
    title = serializers.CharField()
    body = serializers.CharField(
        help_text="Markdown with $...$ and $$...$$ math, like the cards; a line holding only "
        "{{figure:NAME}} stands for a figure the page draws."
    )
    practice = LessonPracticeSerializer()


class LessonSerializer(serializers.Serializer):
    deck = serializers.CharField(help_text="The deck's slug.")
    title = serializers.CharField(help_text="The lesson's title (the deck's when it has none).")
    sections = LessonSectionSerializer(many=True)


# reviews/due/ renders this with cards.renderers.due_items (a test holds the two equal).
class DueItemSerializer(serializers.Serializer):
    card = CardSerializer()
    step = serializers.IntegerField()
    interval_days = serializers.IntegerField()
    due_on = serializers.DateField()
    leech = serializers.BooleanField(
        help_text="True once you have failed this card STUDY_LEECH_LAPSES times (net of undos)."
    )
    retrievability = serializers.FloatField(
        allow_null=True,
        help_text="Today's predicted recall of the card (FSRS over your review log, 0 to 1); "
        "null for a card never reviewed.",
    )
    exercise = serializers.JSONField(
        required=False,
        allow_null=True,
        help_text="For exercise cards: a fresh exercise bound to this review (bound before "
        "the study day begins, and when a change brings the card into today's queue); null "
        "while none is bound or the card cannot generate one: pass the card over.",
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
    answer_text = StrictCharField(
        max_length=ReviewLog.MAX_ANSWER_TEXT_CHARS,
        required=False,
        allow_blank=True,
        default="",
        help_text="Interview cards only: the answer written before the model answer was shown, "
        f"at most {ReviewLog.MAX_ANSWER_TEXT_CHARS:,} characters; kept with the review. A "
        "non-empty one for another kind of card is a 400.",
    )


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
            "undo_of",
            "answer_text",
        ]


class NotDueSerializer(serializers.Serializer):
    detail = serializers.CharField()
    due_on = serializers.DateField()


class ForecastDaySerializer(serializers.Serializer):
    date = serializers.DateField()
    count = serializers.IntegerField(help_text="Cards already on the ladder due that day.")
    new = serializers.IntegerField(
        help_text="Waiting cards the pace would bring that day if you study every day "
        "(not counted in `count`)."
    )


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
    leech = serializers.BooleanField(help_text="True when any of your scheduled cards is a leech.")
    leech_count = serializers.IntegerField()
    leech_cards = serializers.ListField(
        child=serializers.IntegerField(), help_text="Ids of your leech cards."
    )
    paused = serializers.BooleanField(help_text="True while your study is paused.")
    waiting = serializers.IntegerField(
        help_text="Cards of your decks not yet placed on the ladder: the pace places "
        "`new_cards_per_day` of them on each study day on which you review."
    )
    new_cards_per_day = serializers.IntegerField(help_text="Your pace (see `me/`).")
    placed_today = serializers.IntegerField(help_text="New cards placed on today's study day.")


# --- Study controls ----------------------------------------------------------------


class CardStateSerializer(serializers.Serializer):
    """Where a card sits on the learner's ladder, e.g. after an undo."""

    card = serializers.IntegerField(source="card_id")
    step = serializers.IntegerField()
    interval_days = serializers.SerializerMethodField()
    due_on = serializers.DateField()

    retrievability = serializers.SerializerMethodField(
        help_text="Today's predicted recall of the card (FSRS); null for a card never reviewed."
    )

    def get_interval_days(self, state) -> int:
        return ladder.interval_days(state.step, settings.STUDY_LADDER_DAYS)

    def get_retrievability(self, state) -> float | None:
        today = learner_today(learner=state.learner, at=timezone.now())
        return card_retrievability(learner=state.learner, card_id=state.card_id, today=today)


class SuspendedSerializer(CardStateSerializer):
    suspended = serializers.BooleanField()


class BuriedSerializer(CardStateSerializer):
    buried_on = serializers.DateField()


class ReportCreateSerializer(serializers.Serializer):
    card = StrictIntegerField(min_value=1, max_value=2**63 - 1)
    exercise = StrictIntegerField(min_value=1, max_value=2**63 - 1, required=False, allow_null=True)
    text = StrictCharField(min_length=1, max_length=services.MAX_REPORT_CHARS)


class ReportSerializer(serializers.ModelSerializer):
    card = serializers.IntegerField(source="card_id")
    exercise = serializers.IntegerField(source="exercise_id", allow_null=True)

    class Meta:
        model = Report
        fields = ["id", "card", "exercise", "text", "created_at", "resolved"]


class PauseSerializer(serializers.Serializer):
    start = serializers.DateField(help_text="The first paused study day: today or later.")
    days = StrictIntegerField(min_value=1, max_value=services.MAX_PAUSE_DAYS)


class PauseEndedSerializer(serializers.Serializer):
    start = serializers.DateField()
    days = serializers.IntegerField(
        min_value=0,
        max_value=services.MAX_PAUSE_DAYS,
        help_text="The days the pause ran: 0 when it had not started.",
    )


# --- Memory beside the ladder: stats/memory/ and decks/{slug}/memory/ --------------------


class MemoryRungSerializer(serializers.Serializer):
    interval_days = serializers.IntegerField(help_text="The ladder interval (days elapsed bin).")
    reviews = serializers.IntegerField(help_text="Reviews whose elapsed days fall on this rung.")
    passed = serializers.IntegerField()
    recall = serializers.FloatField(
        allow_null=True, help_text="passed / reviews; null below minimum_reviews."
    )
    low = serializers.FloatField(help_text="95 % Wilson interval, lower bound (0 with no reviews).")
    high = serializers.FloatField(
        help_text="95 % Wilson interval, upper bound (1 with no reviews)."
    )


class MemoryFsrsSerializer(serializers.Serializer):
    parameters = serializers.ListField(
        child=serializers.FloatField(), help_text="The FSRS-6 parameters in force (21 numbers)."
    )
    fitted = serializers.BooleanField(help_text="False: FSRS's defaults, not fitted to you yet.")
    reviews_used = serializers.IntegerField(
        help_text="Reviews after cards' first that the last weekly fit counted."
    )
    fitted_at = serializers.DateTimeField(allow_null=True)
    fit_minimum = serializers.IntegerField(help_text="Reviews needed before a fit.")


class CalibrationBinSerializer(serializers.Serializer):
    predicted = serializers.FloatField(help_text="Mean predicted recall of the bin's reviews.")
    observed = serializers.FloatField(help_text="Share of them passed.")
    count = serializers.IntegerField()


class CalibrationSerializer(serializers.Serializer):
    reviews = serializers.IntegerField(help_text="Reviews predicted (every one after a first).")
    log_loss = serializers.FloatField(allow_null=True, help_text="Null below 100 reviews.")
    rmse_bins = serializers.FloatField(allow_null=True, help_text="Null below 100 reviews.")
    bins = CalibrationBinSerializer(many=True)


class SimulationSerializer(serializers.Serializer):
    policy = serializers.ChoiceField(choices=["ladder", "fsrs"])
    desired_retention = serializers.FloatField(allow_null=True, help_text="Null for the ladder.")
    reviews_per_day = serializers.FloatField(help_text="Mean over the next 365 days.")
    recall = serializers.FloatField(
        allow_null=True, help_text="Expected share passed of reviews after a card's first."
    )
    reviews = serializers.FloatField(help_text="Expected reviews over the 365 days.")
    daily_reviews = serializers.ListField(
        child=serializers.FloatField(), help_text="Expected reviews on each of the 365 days."
    )


class MemoryStatsSerializer(serializers.Serializer):
    today = serializers.DateField()
    target_retention = serializers.FloatField(help_text="STUDY_TARGET_RETENTION.")
    minimum_reviews = serializers.IntegerField(
        help_text="Reviews before a rung's recall is stated."
    )
    rungs = MemoryRungSerializer(many=True)
    fsrs = MemoryFsrsSerializer()
    calibration = CalibrationSerializer()
    simulation_cards = serializers.IntegerField(help_text="Cards on your ladder simulated.")
    simulation = SimulationSerializer(many=True)


class DeckMemoryFsrsSerializer(serializers.Serializer):
    fitted_learners = serializers.IntegerField()
    fit_minimum = serializers.IntegerField()


class SuggestedLadderSerializer(serializers.Serializer):
    intervals = serializers.ListField(
        child=serializers.IntegerField(),
        allow_null=True,
        help_text="Days per rung that would hold target_retention; null with no fitted learner.",
    )
    learners = serializers.IntegerField(help_text="Fitted learners it rests on.")


class CardMemorySerializer(serializers.Serializer):
    card = serializers.IntegerField()
    key = serializers.CharField()
    prompt = serializers.CharField()
    reviews = serializers.IntegerField()
    passed = serializers.IntegerField()
    recall = serializers.FloatField(allow_null=True)
    low = serializers.FloatField()
    high = serializers.FloatField()


class DeckMemorySerializer(serializers.Serializer):
    deck = serializers.CharField()
    today = serializers.DateField()
    target_retention = serializers.FloatField()
    minimum_reviews = serializers.IntegerField()
    learners = serializers.IntegerField(help_text="Learners with reviews of the deck.")
    rungs = MemoryRungSerializer(many=True)
    fsrs = DeckMemoryFsrsSerializer()
    calibration = CalibrationSerializer()
    simulation_learners = serializers.IntegerField(help_text="Learners simulated (at most 200).")
    simulation = SimulationSerializer(many=True, help_text="Reviews are per learner.")
    suggested_ladder = SuggestedLadderSerializer()
    cards = CardMemorySerializer(many=True)

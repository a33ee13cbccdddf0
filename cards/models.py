# One module on purpose: the study core's tables, whose constraints and indexes refer to one another.
"""Tables of the study core. Rules live in ``ladder.py`` and ``services/``."""

from __future__ import annotations

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q


class Deck(models.Model):
    slug = models.SlugField(max_length=80, unique=True)
    title = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    # The deck's lesson: its title (the deck's own when blank) and its sections
    # (``LessonSection``), read before enrolling and pointed to by cards.
    lesson_title = models.CharField(
        max_length=200, blank=True, default="", db_default="", help_text="Blank: the deck's title."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["title"]

    def __str__(self) -> str:
        return self.title


class LessonSection(models.Model):
    """One section of a deck's lesson, in the order of ``position``; cards name it by ``key``."""

    deck = models.ForeignKey(Deck, on_delete=models.CASCADE, related_name="lesson_sections")
    key = models.SlugField(
        max_length=80, help_text="Stable identifier within the deck; cards point to it."
    )
    title = models.CharField(max_length=200)
    body = models.TextField(
        help_text="Markdown; $...$ for inline math, $$...$$ for display math; "
        "{{figure:name}} on a line of its own draws a figure."
    )
    position = models.PositiveIntegerField(default=0, help_text="Order within the lesson.")

    class Meta:
        ordering = ["deck", "position", "id"]
        constraints = [
            models.UniqueConstraint(fields=["deck", "key"], name="lessonsection_key_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.deck.slug}: {self.title}"


class Tag(models.Model):
    name = models.SlugField(max_length=50, unique=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Card(models.Model):
    class Kind(models.TextChoices):
        RECALL = "recall", "Recall"
        INTERVIEW = "interview", "Interview question"
        EXERCISE = "exercise", "Exercise"
        LAB = "lab", "Lab"

    deck = models.ForeignKey(Deck, on_delete=models.CASCADE, related_name="cards")
    key = models.SlugField(
        max_length=100,
        blank=True,
        help_text="Stable identifier within the deck, used to match cards on re-import.",
    )
    kind = models.CharField(max_length=12, choices=Kind.choices, default=Kind.RECALL)
    prompt = models.TextField(
        help_text="Markdown; $...$ for inline math, $$...$$ for display math."
    )
    answer = models.TextField(blank=True, help_text="Markdown; the model answer or outline.")
    tags = models.ManyToManyField(Tag, blank=True, related_name="cards")
    exercise = models.JSONField(
        null=True,
        blank=True,
        help_text='For exercise cards: {"kind": ..., "params": {...}}.',
    )
    # Null, not "", for the cards that name no lab: the constraint below and the API's
    # `lab: null` read it as the exercise spec is read.
    lab = models.SlugField(  # noqa: DJ001
        max_length=80,
        db_index=False,
        null=True,
        blank=True,
        help_text="For lab cards: the slug of the lab (GET /api/v1/labs/) that reviews it.",
    )
    # Interview cards: the model answer's key points, ticked against a written answer
    # (``cards.rules`` checks them). Database default too: benchmarks insert cards in SQL.
    points = models.JSONField(
        default=list,
        db_default=[],
        blank=True,
        help_text="Interview cards: the model answer's key points, one short text each.",
    )
    position = models.PositiveIntegerField(default=0, help_text="Order within the deck.")
    # The key of the lesson section (of this card's deck) that teaches it; null for none.
    lesson_section = models.SlugField(  # noqa: DJ001
        max_length=80,
        null=True,
        blank=True,
        db_index=False,
        help_text="Key of the section of the deck's lesson that teaches this card.",
    )
    is_active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    # Set when a review could not generate this exercise card's exercise (the card is
    # passed over in queues); cleared when it generates again or staff save the card.
    generation_error = models.TextField(
        blank=True,
        default="",
        db_default="",
        editable=False,
        help_text="Why the last attempt to generate this card's exercise failed.",
    )

    class Meta:
        ordering = ["deck", "position", "id"]
        indexes = [models.Index(fields=["deck", "is_active"])]
        constraints = [
            models.UniqueConstraint(
                fields=["deck", "key"], condition=~Q(key=""), name="card_key_unique_in_deck"
            ),
            models.CheckConstraint(
                condition=Q(kind="exercise", exercise__isnull=False)
                | (~Q(kind="exercise") & Q(exercise__isnull=True)),
                name="card_exercise_iff_kind_exercise",
            ),
            models.CheckConstraint(
                condition=(Q(kind="lab", lab__isnull=False) & ~Q(lab=""))
                | (~Q(kind="lab") & Q(lab__isnull=True)),
                name="card_lab_iff_kind_lab",
            ),
        ]

    def __str__(self) -> str:
        first_line = self.prompt.strip().splitlines()[0] if self.prompt.strip() else ""
        return f"{self.get_kind_display()}: {first_line[:70]}"


class Enrollment(models.Model):
    learner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="enrollments"
    )
    deck = models.ForeignKey(Deck, on_delete=models.CASCADE, related_name="enrollments")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["learner", "deck"], name="enrollment_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.learner} in {self.deck}"


class ReviewState(models.Model):
    """Where one learner's card sits on the ladder."""

    learner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="review_states"
    )
    card = models.ForeignKey(Card, on_delete=models.CASCADE, related_name="review_states")
    step = models.PositiveSmallIntegerField(default=0)
    due_on = models.DateField()
    last_reviewed_at = models.DateTimeField(null=True, blank=True)
    # The card's FSRS memory after its last kept review, under the learner's parameters in
    # force: what a replay of its log gives (``cards.memory.replay``), kept by each review
    # and by each new fit (``cards.services.memory``); null while nothing is kept.
    # ``memory_as_of`` is ``last_reviewed_at`` as it stood when the memory was stored:
    # while the two are equal the memory is current, and once a review or an undo has
    # moved ``last_reviewed_at`` without it, readers replay the log instead.
    stability = models.FloatField(null=True, blank=True)
    difficulty = models.FloatField(null=True, blank=True)
    last_review_day = models.DateField(null=True, blank=True)
    memory_as_of = models.DateTimeField(null=True, blank=True)
    # Learner's controls: a suspended card leaves the queue and forecast until
    # resumed; a buried one leaves the queue for the study day ``buried_on`` only.
    # Database defaults too: the beat jobs insert states with raw SQL.
    suspended = models.BooleanField(default=False, db_default=False)
    buried_on = models.DateField(null=True, blank=True)
    # The learner's study day on which the pace placed this card (enrolment, the
    # placement job, "learn more"); null for states placed before the pace existed.
    # The day's placements count against ``LearnerProfile.new_cards_per_day``.
    placed_on = models.DateField(null=True, blank=True)
    # On the learner's ladder: the card is active and its deck enrolled. Kept by the
    # services that change either (enrolment, card activation, deck import, admin);
    # states are only ever created for scheduled cards, hence the default.
    scheduled = models.BooleanField(default=True, db_default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["learner", "card"], name="reviewstate_unique"),
            # No upper bound: the ladder is a setting (STUDY_LADDER_DAYS), and a step it
            # lacks stands on its top rung (cards.ladder.rung). The field keeps step >= 0.
        ]
        # Serves the due queue: WHERE learner = ? AND due_on <= ? ORDER BY due_on, id.
        indexes = [
            models.Index(fields=["learner", "due_on", "id"], name="reviewstate_due"),
            # The queue: filter, count and order of scheduled, unsuspended states
            # without touching cards or enrolments (buried_on read from the index).
            models.Index(
                fields=["learner", "due_on", "id"],
                name="reviewstate_queue",
                condition=Q(scheduled=True, suspended=False),
                include=["buried_on"],
            ),
            # The pace: how many cards were placed on one study day.
            models.Index(
                fields=["learner", "placed_on"],
                name="reviewstate_placed",
                condition=Q(placed_on__isnull=False),
            ),
            # stats/ takes today's buried states out of the counts: the few of one day.
            models.Index(
                fields=["learner", "buried_on"],
                name="reviewstate_buried",
                condition=Q(buried_on__isnull=False),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.learner} / card {self.card_id}: step {self.step}, due {self.due_on}"


class KeptByDatabase(models.Model):
    """A table its database triggers keep: Django reads it and never writes it.

    The triggers of each such table are declared once, in ``cards.db.counts``.
    """

    class Meta:
        abstract = True

    def save(self, *args, **kwargs):
        raise TypeError(f"{type(self).__name__} rows are kept by the database; read-only.")

    def delete(self, *args, **kwargs):
        raise TypeError(f"{type(self).__name__} rows are kept by the database; read-only.")


class ReviewStateCount(KeptByDatabase):
    """How many of a learner's scheduled states share a due date, a rung and ``suspended``.

    Kept by the database: triggers on the review-state table apply
    every insert, update and delete, whoever writes it (services, the raw SQL of the
    beat jobs, cascades, bulk loads). A count that reaches zero is deleted by the same
    trigger, so the rows are exactly ``GROUP BY`` of the scheduled states. stats/ reads
    its forecast, due count and ``by_step`` here, in time that follows the learner's
    days rather than their cards. Read-only from Django. The triggers are declared in
    ``cards.db.counts`` (``REVIEW_STATE_COUNTS``) and created by the migrations.

    ``learner`` carries no database constraint: deleting an account deletes its states,
    and their trigger deletes these rows, in whichever order Django deletes the tables.
    """

    learner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        db_index=False,
        related_name="+",
    )
    due_on = models.DateField()
    step = models.PositiveSmallIntegerField()
    suspended = models.BooleanField()
    n = models.IntegerField()

    class Meta:
        constraints = [
            # The triggers' ON CONFLICT target, and the index of a learner's rows.
            models.UniqueConstraint(
                fields=["learner", "due_on", "step", "suspended"], name="reviewstatecount_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.learner_id} due {self.due_on} at step {self.step}: {self.n}"


class LapseCount(KeptByDatabase):
    """How many times a learner has failed a card, net of undos: their lapses of it.

    The review log's failed entries summed per (learner, card), an undo entry counting
    -1. Kept by the database: triggers on the review log apply every
    insert, update and delete, whoever writes it (the review, undo and exercise services,
    account deletion moving the log, bulk loads, psql). A count that reaches zero is
    deleted, so the rows are exactly the non-zero sums of the log. Leeches
    (``cards.lapses.is_leech``: ``n >= STUDY_LEECH_LAPSES``) are read through ``(learner, n)``, in time that follows
    the learner's leeches rather than their log. Read-only from Django. The triggers are
    declared in ``cards.db.counts`` (``LAPSE_COUNTS``), the undo-net count too (``net``).

    ``learner`` and ``card`` carry no database constraint: the log outlives deleted
    cards, and an account's log rows and counts go in whichever order Django deletes them.
    """

    learner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        db_index=False,
        related_name="+",
    )
    card = models.ForeignKey(
        Card,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        db_index=False,
        related_name="+",
    )
    n = models.IntegerField()

    class Meta:
        constraints = [
            # The triggers' ON CONFLICT target, and the due page's lookup per row.
            models.UniqueConstraint(fields=["learner", "card"], name="lapsecount_unique"),
        ]
        indexes = [
            # A learner's leeches, from the index alone.
            models.Index(fields=["learner", "n"], name="lapsecount_leeches", include=["card"]),
        ]

    def __str__(self) -> str:
        return f"{self.learner_id} / card {self.card_id}: {self.n} lapses"


class ReviewLogQuerySet(models.QuerySet["ReviewLog"]):
    def kept(self) -> ReviewLogQuerySet:
        """The reviews that no undo cancelled: neither an undo entry nor undone.

        The one ORM form of the rule; its SQL form is ``cards.db.counts.kept``.
        """
        return self.filter(undo_of__isnull=True, undone_by__isnull=True)


class ReviewLog(models.Model):
    """Append-only history of reviews, in the spirit of Anki's revlog.

    ``card`` carries no database constraint so that deleting a card keeps its log.
    """

    class Result(models.TextChoices):
        PASS = "pass", "Pass"
        FAIL = "fail", "Fail"

    MAX_ANSWER_TEXT_CHARS = 10_000

    learner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="review_logs"
    )
    card = models.ForeignKey(
        Card,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="review_logs",
    )
    reviewed_at = models.DateTimeField()
    study_day = models.DateField()
    result = models.CharField(max_length=4, choices=Result.choices)
    step_before = models.PositiveSmallIntegerField()
    step_after = models.PositiveSmallIntegerField()
    interval_days = models.PositiveSmallIntegerField()
    due_before = models.DateField()
    due_after = models.DateField()
    idempotency_key = models.CharField(max_length=255, blank=True, default="")
    # What the learner wrote before seeing an interview card's model answer (at most
    # MAX_ANSWER_TEXT_CHARS, checked by the review service). Database default: bulk
    # loads insert the log in SQL.
    answer_text = models.TextField(blank=True, default="", db_default="")
    # Set on a compensating entry: it cancels that review (same result, steps and
    # dates reversed). Counts net of undos subtract entries that carry it.
    undo_of = models.OneToOneField(
        "self",
        null=True,
        blank=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="undone_by",
    )

    objects = ReviewLogQuerySet.as_manager()

    class Meta:
        ordering = ["-reviewed_at", "-id"]
        indexes = [
            models.Index(fields=["learner", "-reviewed_at"], name="reviewlog_history"),
            models.Index(fields=["learner", "study_day"], name="reviewlog_day"),
            # Item analysis and leeches read the log per card.
            models.Index(fields=["card", "learner"], name="reviewlog_card"),
            # Leeches: a learner's fails per card, net of undos, from the index alone.
            models.Index(
                fields=["learner", "card"],
                name="reviewlog_fails",
                condition=Q(result="fail"),
                include=["undo_of"],
            ),
        ]

    def __str__(self) -> str:
        return (
            f"{self.learner} {self.result} card {self.card_id} at {self.reviewed_at:%Y-%m-%d %H:%M}"
        )


class ReviewDay(models.Model):
    """One learner's reviews on one study day, net of undos: the log summed per day.

    The streak, retention and review calendar read these rows instead of the log, so
    their cost follows the days studied, not the reviews. Kept in the same statement
    or transaction as the log by the review and undo services (not by triggers: the
    SQL is in ``cards.db.counts``, its writers in ``cards.services.review_days`` and
    ``cards.db.reviews``), and merged into the deleted learners' account with their log.
    """

    learner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="review_days"
    )
    study_day = models.DateField()
    reviews = models.IntegerField(default=0)
    passes = models.IntegerField(default=0)
    # The earliest ``due_before`` among the day's reviews that were not undone: every
    # card reviewed that day had been waiting since then (what the streak asks).
    min_due_before = models.DateField(null=True, blank=True)

    class Meta:
        constraints = [
            # Also the index of the per-learner range reads (ON CONFLICT's target).
            models.UniqueConstraint(fields=["learner", "study_day"], name="reviewday_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.learner} on {self.study_day}: {self.passes}/{self.reviews} passed"


class IdempotencyKey(models.Model):
    """The first answer to a request sent with ``Idempotency-Key``, kept 24 hours."""

    class Status(models.TextChoices):
        IN_FLIGHT = "in_flight", "In flight"
        DONE = "done", "Done"

    learner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    key = models.CharField(max_length=255)
    request_hash = models.CharField(max_length=64)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.IN_FLIGHT)
    response_status = models.PositiveSmallIntegerField(null=True, blank=True)
    response_body = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["learner", "key"], name="idempotency_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.learner_id}:{self.key} ({self.status})"


# The pace's upper bound (``LearnerProfile.new_cards_per_day``), one definition for the
# model, its constraint, the API and the profile form.
MAX_NEW_CARDS_PER_DAY = 1000


class LearnerProfile(models.Model):
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="profile"
    )
    timezone = models.CharField(max_length=64, default="UTC", help_text="IANA time zone name.")
    day_starts_at = models.PositiveSmallIntegerField(
        default=4, validators=[MinValueValidator(0), MaxValueValidator(23)]
    )
    reminders = models.BooleanField(default=True)
    reminder_hour = models.PositiveSmallIntegerField(
        default=9,
        validators=[MinValueValidator(0), MaxValueValidator(23)],
        help_text="Local hour after which the day's reminder may be sent.",
    )
    # The address the learner proved they read, through a link sent to it. Reminders
    # go out only while it equals user.email.
    # db_default: rows written in raw SQL (bulk loads, benchmarks) start unconfirmed.
    confirmed_email = models.EmailField(blank=True, default="", db_default="")
    # A pause (vacation): study days pause_start .. pause_start + pause_days - 1.
    pause_start = models.DateField(null=True, blank=True)
    pause_days = models.PositiveSmallIntegerField(default=0, db_default=0)
    # The pace: at most this many new cards are placed on one study day (0: none).
    new_cards_per_day = models.PositiveSmallIntegerField(
        default=20,
        db_default=20,
        validators=[MinValueValidator(0), MaxValueValidator(MAX_NEW_CARDS_PER_DAY)],
        help_text="New cards placed per study day on which the learner reviews.",
    )

    class Theme(models.TextChoices):
        AUTO = "auto", "As the device"
        LIGHT = "light", "Light"
        DARK = "dark", "Dark"

    theme = models.CharField(
        max_length=5, choices=Theme.choices, default=Theme.AUTO, db_default=Theme.AUTO
    )

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(new_cards_per_day__lte=MAX_NEW_CARDS_PER_DAY),
                name="profile_new_cards_range",
            ),
            models.CheckConstraint(
                condition=Q(day_starts_at__lte=23), name="profile_day_start_range"
            ),
            models.CheckConstraint(
                condition=Q(reminder_hour__lte=23), name="profile_reminder_hour_range"
            ),
        ]

    def __str__(self) -> str:
        return f"Profile of {self.user}"

    @property
    def email_confirmed(self) -> bool:
        """Whether the learner's current address is the one they confirmed."""
        return bool(self.user.email) and self.confirmed_email == self.user.email


class Reminder(models.Model):
    """One reminder per learner per study day; the unique row makes resends harmless."""

    learner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="reminders_sent"
    )
    study_day = models.DateField()
    due_count = models.PositiveIntegerField()
    sent_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-study_day", "learner_id"]
        constraints = [
            models.UniqueConstraint(fields=["learner", "study_day"], name="reminder_once_per_day"),
        ]

    def __str__(self) -> str:
        return f"Reminder to {self.learner} for {self.study_day}"


class ExerciseBindingQuerySet(models.QuerySet["ExerciseBinding"]):
    def spent(self) -> ExerciseBindingQuerySet:
        return self.filter(ExerciseBinding.SPENT)

    def usable(self) -> ExerciseBindingQuerySet:
        """Bindings whose exercise's first submission can still record the review."""
        return self.exclude(ExerciseBinding.SPENT)


class ExerciseBinding(models.Model):
    """Ties a generated exercise to the review of an exercise card on one study day.

    The exercise's first submission records the review (``review``). A binding is
    *spent* (``SPENT``) when its exercise was answered with no review recorded: practice,
    while the card was out of the queue. Its first submission is gone, so the card, due
    again, gets a fresh exercise in its place (``cards.db.bindings`` replaces it).
    """

    # The one definition of "spent"; ``is_spent`` is the same for a loaded row.
    SPENT = Q(review__isnull=True, exercise__attempts_used__gt=0)

    exercise = models.OneToOneField(
        "exercises.Exercise", on_delete=models.CASCADE, related_name="binding"
    )
    learner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    card = models.ForeignKey(Card, on_delete=models.CASCADE, related_name="exercise_bindings")
    study_day = models.DateField()
    review = models.OneToOneField(
        ReviewLog, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    objects = ExerciseBindingQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["learner", "card", "study_day"], name="binding_once_per_card_day"
            ),
        ]

    def __str__(self) -> str:
        return f"Exercise {self.exercise_id} for card {self.card_id} on {self.study_day}"

    @property
    def is_spent(self) -> bool:
        """``SPENT`` for this row (reads its exercise)."""
        return self.review_id is None and self.exercise.attempts_used > 0


class LabBinding(models.Model):
    """Ties a lab submission to the review of a lab card on one study day.

    The first submission of a lab on a study day while its card is due is bound here
    (one binding per learner, card and day); when it is judged, its result records the
    card's review (``review``). A submission the sandbox could not run frees its
    binding, so the next submission counts (``cards.services.lab_reviews``).
    """

    learner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    card = models.ForeignKey(Card, on_delete=models.CASCADE, related_name="lab_bindings")
    study_day = models.DateField()
    submission = models.ForeignKey(
        "labs.Submission", on_delete=models.CASCADE, related_name="bindings"
    )
    review = models.OneToOneField(
        ReviewLog, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["learner", "card", "study_day"], name="lab_binding_once_per_card_day"
            ),
        ]

    def __str__(self) -> str:
        return f"Lab submission {self.submission_id} for card {self.card_id} on {self.study_day}"


class Report(models.Model):
    """A learner's report of a problem with a card or one of its exercises."""

    learner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="reports"
    )
    card = models.ForeignKey(Card, on_delete=models.CASCADE, related_name="reports")
    exercise = models.ForeignKey(
        "exercises.Exercise",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="reports",
    )
    text = models.TextField(max_length=2000)
    resolved = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["card", "resolved"], name="report_card_open")]

    def __str__(self) -> str:
        return f"Report {self.pk} on card {self.card_id} by {self.learner}"


class CardAnalysis(Card):
    """Cards seen by staff through the item analysis in the admin (no table of its own)."""

    class Meta:
        proxy = True
        verbose_name = "item analysis"
        verbose_name_plural = "item analysis"


class LearnerCardFigures(KeptByDatabase):
    """One learner's reviews of one card that no undo cancelled: the item analysis per pair.

    ``reviews``, ``passes`` and ``lapses`` (fails) count the pair's kept reviews;
    ``first_pass`` is 1 when the earliest of them (the lowest log id) passed. Kept by the
    database: triggers on the review log recount the pairs a statement touched (and the
    pair of a review an undo entry names), whoever writes the log (the review, undo and
    exercise services, account deletion moving the log, bulk loads, psql). A pair left
    with no kept review is deleted. Read-only from Django; the triggers are declared in
    ``cards.db.counts`` (``LEARNER_CARD_FIGURES``). ``CardFigures`` sums these rows.

    ``learner`` and ``card`` carry no database constraint, as for ``LapseCount``.
    """

    learner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        db_index=False,
        related_name="+",
    )
    card = models.ForeignKey(
        Card,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        db_index=False,
        related_name="+",
    )
    reviews = models.IntegerField()
    passes = models.IntegerField()
    lapses = models.IntegerField()
    first_pass = models.IntegerField()

    class Meta:
        constraints = [
            # The triggers' ON CONFLICT target.
            models.UniqueConstraint(fields=["learner", "card"], name="learnercardfigures_unique"),
        ]
        indexes = [
            # The pairs of one card at one lapse count, summed into CardFigures.
            models.Index(
                fields=["card", "lapses"],
                name="learnercardfigures_card",
                include=["reviews", "passes", "first_pass"],
            ),
        ]

    def __str__(self) -> str:
        return f"{self.learner_id} / card {self.card_id}: {self.reviews} reviews"


class CardFigures(KeptByDatabase):
    """The learners of a card who share a lapse count, and their reviews, summed.

    ``LearnerCardFigures`` grouped by (card, lapses): ``learners`` pairs, their
    ``reviews``, ``passes`` and ``first_passes``. Keyed by the lapse count so that the
    leeches of any threshold (``STUDY_LEECH_LAPSES``) are a sum of a card's few rows.
    The staff's item analysis reads these rows, in time that follows the cards rather
    than the log. Kept by the database (triggers on ``LearnerCardFigures``, declared in
    ``cards.db.counts``: ``CARD_FIGURES``); read-only from Django.
    """

    card = models.ForeignKey(
        Card,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        db_index=False,
        related_name="+",
    )
    lapses = models.IntegerField()
    learners = models.IntegerField()
    reviews = models.IntegerField()
    passes = models.IntegerField()
    first_passes = models.IntegerField()

    class Meta:
        constraints = [
            # The triggers' ON CONFLICT target, and the page's read per card.
            models.UniqueConstraint(fields=["card", "lapses"], name="cardfigures_unique"),
        ]

    def __str__(self) -> str:
        return f"card {self.card_id} at {self.lapses} lapses: {self.learners} learners"


class ExerciseKindFigures(KeptByDatabase):
    """The exercise attempts' verdicts counted per kind: the item analysis of the kinds.

    ``section`` is ``attempts``, ``correct``, ``mistake`` (``item``: the diagnosis code),
    ``part`` (``item``: a part answered wrong) or ``cell`` (``item``: the part, ``cell``:
    a wrong cell as JSON text); ``n`` counts them over every attempt. Kept by the database:
    triggers on the attempts unpack each verdict as it is written or deleted (declared in
    ``cards.db.counts``: ``KIND_FIGURES``, the JSON per database in ``cards.db.analysis``).
    Read-only from Django.
    """

    kind = models.TextField()
    section = models.TextField()
    item = models.TextField()
    cell = models.TextField()
    n = models.IntegerField()

    class Meta:
        constraints = [
            # The triggers' ON CONFLICT target.
            models.UniqueConstraint(
                fields=["kind", "section", "item", "cell"], name="exercisekindfigures_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.section} {self.item} {self.cell}: {self.n}"


class MemoryParameters(models.Model):
    """A learner's FSRS parameters, fitted from their review log by the weekly beat job.

    Absent, or ``fitted`` false, until the learner has enough reviews to fit
    (``cards.memory``); requests read these rows and never fit.
    """

    learner = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memory_parameters"
    )
    parameters = models.JSONField(default=list)
    fitted = models.BooleanField(default=False)
    reviews_used = models.PositiveIntegerField(default=0)
    fitted_at = models.DateTimeField(null=True, blank=True)
    # Every fit kept, oldest first: ``{"since": <epoch seconds of the last review it saw>,
    # "parameters": [...], "reviews": n}``. Each predicts only the reviews after its
    # ``since`` (the calibration's time-series split, ``cards.memory.predictions``).
    history = models.JSONField(default=list, blank=True)

    class Meta:
        verbose_name_plural = "memory parameters"

    def __str__(self) -> str:
        return f"FSRS parameters of {self.learner} ({self.reviews_used} reviews)"

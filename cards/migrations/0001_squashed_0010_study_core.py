# The cards app's migrations 0001-0010 in one, for fresh installs; a database that applied
# them sees this one as applied (``replaces``), and one part of the way finishes the old
# chain. Squashed before the first release: each table created as the chain leaves it.
#
# Left out, because a fresh database has no rows for them to fix: 0004's marking of the
# states off the ladder as unscheduled, and 0008's filling of cards_reviewday from the log.
# The counts tables' triggers come from their one declaration, cards/db/counts.py, as in
# 0009 and 0010 (their backfill counts nothing here).

import django.core.validators
import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

from cards.db.counts import LAPSE_COUNTS, REVIEW_STATE_COUNTS


class Migration(migrations.Migration):
    replaces = [
        ("cards", "0001_initial"),
        ("cards", "0002_learnerprofile_confirmed_email"),
        ("cards", "0002_learner_controls_reports_pause"),
        ("cards", "0003_merge_controls_and_confirmed_email"),
        ("cards", "0004_review_state_scheduled_flag"),
        ("cards", "0005_review_log_fails_index"),
        ("cards", "0002_card_generation_error"),
        ("cards", "0004_merge_card_generation_error"),
        ("cards", "0006_merge_scheduled_flag"),
        ("cards", "0007_database_defaults_for_raw_inserts"),
        ("cards", "0008_review_day"),
        ("cards", "0009_review_state_counts"),
        ("cards", "0010_lapse_counts"),
    ]

    initial = True

    dependencies = [
        ("exercises", "0001_squashed_0003_exercises_and_predictions"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="Deck",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("slug", models.SlugField(max_length=80, unique=True)),
                ("title", models.CharField(max_length=200)),
                ("description", models.TextField(blank=True)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("updated_at", models.DateTimeField(auto_now=True)),
            ],
            options={
                "ordering": ["title"],
            },
        ),
        migrations.CreateModel(
            name="Tag",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("name", models.SlugField(unique=True)),
            ],
            options={
                "ordering": ["name"],
            },
        ),
        migrations.CreateModel(
            name="Card",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "key",
                    models.SlugField(
                        blank=True,
                        help_text="Stable identifier within the deck, used to match cards on re-import.",
                        max_length=100,
                    ),
                ),
                (
                    "kind",
                    models.CharField(
                        choices=[
                            ("recall", "Recall"),
                            ("interview", "Interview question"),
                            ("exercise", "Exercise"),
                        ],
                        default="recall",
                        max_length=12,
                    ),
                ),
                (
                    "prompt",
                    models.TextField(
                        help_text="Markdown; $...$ for inline math, $$...$$ for display math."
                    ),
                ),
                (
                    "answer",
                    models.TextField(
                        blank=True, help_text="Markdown; the model answer or outline."
                    ),
                ),
                (
                    "exercise",
                    models.JSONField(
                        blank=True,
                        help_text='For exercise cards: {"kind": ..., "params": {...}}.',
                        null=True,
                    ),
                ),
                (
                    "position",
                    models.PositiveIntegerField(default=0, help_text="Order within the deck."),
                ),
                ("is_active", models.BooleanField(default=True)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("updated_at", models.DateTimeField(auto_now=True)),
                (
                    "deck",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="cards",
                        to="cards.deck",
                    ),
                ),
                ("tags", models.ManyToManyField(blank=True, related_name="cards", to="cards.tag")),
                (
                    "generation_error",
                    models.TextField(
                        blank=True,
                        db_default="",
                        default="",
                        editable=False,
                        help_text="Why the last attempt to generate this card's exercise failed.",
                    ),
                ),
            ],
            options={
                "ordering": ["deck", "position", "id"],
                "indexes": [
                    models.Index(fields=["deck", "is_active"], name="cards_card_deck_id_4b2778_idx")
                ],
                "constraints": [
                    models.UniqueConstraint(
                        condition=models.Q(("key", ""), _negated=True),
                        fields=("deck", "key"),
                        name="card_key_unique_in_deck",
                    ),
                    models.CheckConstraint(
                        condition=models.Q(
                            models.Q(("exercise__isnull", False), ("kind", "exercise")),
                            models.Q(
                                models.Q(("kind", "exercise"), _negated=True),
                                ("exercise__isnull", True),
                            ),
                            _connector="OR",
                        ),
                        name="card_exercise_iff_kind_exercise",
                    ),
                ],
            },
        ),
        migrations.CreateModel(
            name="ReviewLog",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("reviewed_at", models.DateTimeField()),
                ("study_day", models.DateField()),
                (
                    "result",
                    models.CharField(choices=[("pass", "Pass"), ("fail", "Fail")], max_length=4),
                ),
                ("step_before", models.PositiveSmallIntegerField()),
                ("step_after", models.PositiveSmallIntegerField()),
                ("interval_days", models.PositiveSmallIntegerField()),
                ("due_before", models.DateField()),
                ("due_after", models.DateField()),
                ("idempotency_key", models.CharField(blank=True, default="", max_length=255)),
                (
                    "card",
                    models.ForeignKey(
                        db_constraint=False,
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        related_name="review_logs",
                        to="cards.card",
                    ),
                ),
                (
                    "learner",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="review_logs",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "undo_of",
                    models.OneToOneField(
                        blank=True,
                        db_constraint=False,
                        null=True,
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        related_name="undone_by",
                        to="cards.reviewlog",
                    ),
                ),
            ],
            options={
                "ordering": ["-reviewed_at", "-id"],
                "indexes": [
                    models.Index(fields=["learner", "-reviewed_at"], name="reviewlog_history"),
                    models.Index(fields=["learner", "study_day"], name="reviewlog_day"),
                    models.Index(fields=["card", "learner"], name="reviewlog_card"),
                    models.Index(
                        condition=models.Q(("result", "fail")),
                        fields=["learner", "card"],
                        include=("undo_of",),
                        name="reviewlog_fails",
                    ),
                ],
            },
        ),
        migrations.CreateModel(
            name="ExerciseBinding",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("study_day", models.DateField()),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                (
                    "card",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="exercise_bindings",
                        to="cards.card",
                    ),
                ),
                (
                    "exercise",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="binding",
                        to="exercises.exercise",
                    ),
                ),
                (
                    "learner",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, to=settings.AUTH_USER_MODEL
                    ),
                ),
                (
                    "review",
                    models.OneToOneField(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to="cards.reviewlog",
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(
                        fields=("learner", "card", "study_day"), name="binding_once_per_card_day"
                    )
                ],
            },
        ),
        migrations.CreateModel(
            name="ReviewState",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("step", models.PositiveSmallIntegerField(default=0)),
                ("due_on", models.DateField()),
                ("last_reviewed_at", models.DateTimeField(blank=True, null=True)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("updated_at", models.DateTimeField(auto_now=True)),
                (
                    "card",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="review_states",
                        to="cards.card",
                    ),
                ),
                (
                    "learner",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="review_states",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                ("buried_on", models.DateField(blank=True, null=True)),
                ("suspended", models.BooleanField(db_default=False, default=False)),
                ("scheduled", models.BooleanField(db_default=True, default=True)),
            ],
            options={
                "indexes": [
                    models.Index(fields=["learner", "due_on", "id"], name="reviewstate_due"),
                    models.Index(
                        condition=models.Q(("scheduled", True), ("suspended", False)),
                        fields=["learner", "due_on", "id"],
                        include=("buried_on",),
                        name="reviewstate_queue",
                    ),
                    models.Index(
                        condition=models.Q(("buried_on__isnull", False)),
                        fields=["learner", "buried_on"],
                        name="reviewstate_buried",
                    ),
                ],
                "constraints": [
                    models.UniqueConstraint(fields=("learner", "card"), name="reviewstate_unique"),
                    models.CheckConstraint(
                        condition=models.Q(("step__lte", 4)), name="reviewstate_step_range"
                    ),
                ],
            },
        ),
        migrations.CreateModel(
            name="Enrollment",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                (
                    "deck",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="enrollments",
                        to="cards.deck",
                    ),
                ),
                (
                    "learner",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="enrollments",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(fields=("learner", "deck"), name="enrollment_unique")
                ],
            },
        ),
        migrations.CreateModel(
            name="IdempotencyKey",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("key", models.CharField(max_length=255)),
                ("request_hash", models.CharField(max_length=64)),
                (
                    "status",
                    models.CharField(
                        choices=[("in_flight", "In flight"), ("done", "Done")],
                        default="in_flight",
                        max_length=10,
                    ),
                ),
                ("response_status", models.PositiveSmallIntegerField(blank=True, null=True)),
                ("response_body", models.JSONField(blank=True, null=True)),
                ("created_at", models.DateTimeField(auto_now_add=True, db_index=True)),
                (
                    "learner",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, to=settings.AUTH_USER_MODEL
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(fields=("learner", "key"), name="idempotency_unique")
                ],
            },
        ),
        migrations.CreateModel(
            name="LearnerProfile",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "timezone",
                    models.CharField(
                        default="UTC", help_text="IANA time zone name.", max_length=64
                    ),
                ),
                (
                    "day_starts_at",
                    models.PositiveSmallIntegerField(
                        default=4,
                        validators=[
                            django.core.validators.MinValueValidator(0),
                            django.core.validators.MaxValueValidator(23),
                        ],
                    ),
                ),
                ("reminders", models.BooleanField(default=True)),
                (
                    "reminder_hour",
                    models.PositiveSmallIntegerField(
                        default=9,
                        help_text="Local hour after which the day's reminder may be sent.",
                        validators=[
                            django.core.validators.MinValueValidator(0),
                            django.core.validators.MaxValueValidator(23),
                        ],
                    ),
                ),
                (
                    "user",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="profile",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "confirmed_email",
                    models.EmailField(blank=True, db_default="", default="", max_length=254),
                ),
                ("pause_days", models.PositiveSmallIntegerField(db_default=0, default=0)),
                ("pause_start", models.DateField(blank=True, null=True)),
            ],
            options={
                "constraints": [
                    models.CheckConstraint(
                        condition=models.Q(("day_starts_at__lte", 23)),
                        name="profile_day_start_range",
                    ),
                    models.CheckConstraint(
                        condition=models.Q(("reminder_hour__lte", 23)),
                        name="profile_reminder_hour_range",
                    ),
                ],
            },
        ),
        migrations.CreateModel(
            name="Reminder",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("study_day", models.DateField()),
                ("due_count", models.PositiveIntegerField()),
                ("sent_at", models.DateTimeField(blank=True, null=True)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                (
                    "learner",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="reminders_sent",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "ordering": ["-study_day", "learner_id"],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("learner", "study_day"), name="reminder_once_per_day"
                    )
                ],
            },
        ),
        migrations.CreateModel(
            name="Report",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("text", models.TextField(max_length=2000)),
                ("resolved", models.BooleanField(default=False)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                (
                    "card",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="reports",
                        to="cards.card",
                    ),
                ),
                (
                    "exercise",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="reports",
                        to="exercises.exercise",
                    ),
                ),
                (
                    "learner",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="reports",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "ordering": ["-created_at", "-id"],
                "indexes": [models.Index(fields=["card", "resolved"], name="report_card_open")],
            },
        ),
        migrations.CreateModel(
            name="CardAnalysis",
            fields=[],
            options={
                "verbose_name": "item analysis",
                "verbose_name_plural": "item analysis",
                "proxy": True,
                "indexes": [],
                "constraints": [],
            },
            bases=("cards.card",),
        ),
        migrations.CreateModel(
            name="ReviewDay",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("study_day", models.DateField()),
                ("reviews", models.IntegerField(default=0)),
                ("passes", models.IntegerField(default=0)),
                ("min_due_before", models.DateField(blank=True, null=True)),
                (
                    "learner",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="review_days",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(
                        fields=("learner", "study_day"), name="reviewday_unique"
                    )
                ],
            },
        ),
        migrations.CreateModel(
            name="ReviewStateCount",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("due_on", models.DateField()),
                ("step", models.PositiveSmallIntegerField()),
                ("suspended", models.BooleanField()),
                ("n", models.IntegerField()),
                (
                    "learner",
                    models.ForeignKey(
                        db_constraint=False,
                        db_index=False,
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(
                        fields=("learner", "due_on", "step", "suspended"),
                        name="reviewstatecount_unique",
                    )
                ],
            },
        ),
        migrations.CreateModel(
            name="LapseCount",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("n", models.IntegerField()),
                (
                    "card",
                    models.ForeignKey(
                        db_constraint=False,
                        db_index=False,
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        related_name="+",
                        to="cards.card",
                    ),
                ),
                (
                    "learner",
                    models.ForeignKey(
                        db_constraint=False,
                        db_index=False,
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "indexes": [
                    models.Index(
                        fields=["learner", "n"], include=("card",), name="lapsecount_leeches"
                    )
                ],
                "constraints": [
                    models.UniqueConstraint(fields=("learner", "card"), name="lapsecount_unique")
                ],
            },
        ),
        migrations.RunPython(REVIEW_STATE_COUNTS.create, REVIEW_STATE_COUNTS.drop),
        migrations.RunPython(LAPSE_COUNTS.create, LAPSE_COUNTS.drop),
    ]

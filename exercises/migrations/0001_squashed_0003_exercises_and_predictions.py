# The exercises app's migrations 0001-0003 in one, for fresh installs; a database that
# applied them sees this one as applied (``replaces``). Squashed before the first release.

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    replaces = [
        ("exercises", "0001_initial"),
        ("exercises", "0002_exercise_prompt"),
        ("exercises", "0003_prediction"),
    ]

    initial = True

    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="Exercise",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("kind", models.CharField(max_length=40)),
                (
                    "params",
                    models.JSONField(help_text="Normalised parameters, including the seed."),
                ),
                ("seed", models.BigIntegerField()),
                ("inputs", models.JSONField()),
                (
                    "asks",
                    models.JSONField(help_text="[{name, shape}] in the order they are asked."),
                ),
                ("solution", models.JSONField(help_text="Expected answers by part.")),
                ("rtol", models.FloatField(default=0.01)),
                ("atol", models.FloatField(default=0.005)),
                ("max_attempts", models.PositiveSmallIntegerField(default=3)),
                ("attempts_used", models.PositiveSmallIntegerField(default=0)),
                ("solved", models.BooleanField(default=False)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("last_attempt_at", models.DateTimeField(blank=True, null=True)),
                (
                    "owner",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="exercises",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "prompt",
                    models.TextField(blank=True, default="", help_text="Markdown with $...$ math."),
                ),
            ],
            options={
                "ordering": ["-created_at", "-id"],
                "indexes": [
                    models.Index(fields=["owner", "-created_at"], name="exercise_owner_recent"),
                    models.Index(
                        fields=["attempts_used", "created_at"], name="exercise_housekeeping"
                    ),
                ],
                "constraints": [
                    models.CheckConstraint(
                        condition=models.Q(("attempts_used__lte", models.F("max_attempts"))),
                        name="exercise_attempts_bound",
                    )
                ],
            },
        ),
        migrations.CreateModel(
            name="Attempt",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("number", models.PositiveSmallIntegerField()),
                ("answers", models.JSONField()),
                ("correct", models.BooleanField()),
                ("score", models.FloatField()),
                (
                    "result",
                    models.JSONField(help_text="The per-part verdicts sent back to the learner."),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                (
                    "exercise",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="attempt_set",
                        to="exercises.exercise",
                    ),
                ),
            ],
            options={
                "ordering": ["exercise", "number"],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("exercise", "number"), name="attempt_number_unique"
                    )
                ],
            },
        ),
        migrations.CreateModel(
            name="Prediction",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("ask", models.CharField(max_length=80)),
                ("answer", models.CharField(max_length=200)),
                ("expected", models.CharField(max_length=200)),
                ("correct", models.BooleanField()),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                (
                    "exercise",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="predictions",
                        to="exercises.exercise",
                    ),
                ),
                (
                    "owner",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="predictions",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "ordering": ["-created_at", "-id"],
                "indexes": [
                    models.Index(fields=["owner", "created_at"], name="prediction_owner_recent")
                ],
                "constraints": [
                    models.UniqueConstraint(
                        condition=models.Q(("exercise__isnull", False)),
                        fields=("exercise", "ask"),
                        name="prediction_once_per_exercise_ask",
                    )
                ],
            },
        ),
    ]

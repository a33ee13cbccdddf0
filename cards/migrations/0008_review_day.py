import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

from cards.db.counts import REVIEW_DAY_COLUMNS, REVIEW_DAY_TABLE, review_days_from_log

# The log summed per learner and study day, net of undos (as the review and undo
# services keep it from here on): the definition in cards/db/counts.py.
BACKFILL = (
    f"INSERT INTO {REVIEW_DAY_TABLE} ({REVIEW_DAY_COLUMNS}) {review_days_from_log()} "
    "GROUP BY l.learner_id, l.study_day"
)


class Migration(migrations.Migration):
    dependencies = [
        ("cards", "0007_database_defaults_for_raw_inserts"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
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
        migrations.RunSQL(BACKFILL, reverse_sql=f"DELETE FROM {REVIEW_DAY_TABLE}"),
    ]

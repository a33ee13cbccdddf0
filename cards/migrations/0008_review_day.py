import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

# The log summed per learner and study day, net of undos (as the review and undo
# services keep it from here on). Written out: a migration does not import the app.
BACKFILL = """
    INSERT INTO cards_reviewday (learner_id, study_day, reviews, passes, min_due_before)
    SELECT l.learner_id, l.study_day,
        SUM(CASE WHEN l.undo_of_id IS NULL THEN 1 ELSE -1 END),
        SUM(CASE WHEN l.result = 'pass'
            THEN (CASE WHEN l.undo_of_id IS NULL THEN 1 ELSE -1 END) ELSE 0 END),
        MIN(CASE WHEN l.undo_of_id IS NULL AND u.id IS NULL THEN l.due_before END)
    FROM cards_reviewlog l LEFT JOIN cards_reviewlog u ON u.undo_of_id = l.id
    GROUP BY l.learner_id, l.study_day
"""


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
        migrations.RunSQL(BACKFILL, reverse_sql="DELETE FROM cards_reviewday"),
    ]

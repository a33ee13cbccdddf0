import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

from cards.db.counts import REVIEW_STATE_COUNTS

# The counts of scheduled review states per (learner, due_on, step, suspended), kept by
# triggers on cards_reviewstate: declared once, in cards/db/counts.py.


class Migration(migrations.Migration):
    dependencies = [
        ("cards", "0008_review_day"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
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
        # by_step is read from the counts now; the index only cost the writes.
        migrations.RemoveIndex(model_name="reviewstate", name="reviewstate_steps"),
        migrations.AddIndex(
            model_name="reviewstate",
            index=models.Index(
                condition=models.Q(("buried_on__isnull", False)),
                fields=["learner", "buried_on"],
                name="reviewstate_buried",
            ),
        ),
        migrations.RunPython(REVIEW_STATE_COUNTS.create, REVIEW_STATE_COUNTS.drop),
    ]

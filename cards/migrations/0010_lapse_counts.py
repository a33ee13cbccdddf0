import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

from cards.db.counts import LAPSE_COUNTS

# The lapses per (learner, card), net of undos, kept by triggers on cards_reviewlog:
# declared once, in cards/db/counts.py.


class Migration(migrations.Migration):
    dependencies = [
        ("cards", "0009_review_state_counts"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
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
                    models.UniqueConstraint(
                        fields=("learner", "card"), name="lapsecount_unique"
                    )
                ],
            },
        ),
        migrations.RunPython(LAPSE_COUNTS.create, LAPSE_COUNTS.drop),
    ]

from django.conf import settings
from django.db import migrations, models


def store_memories(apps, schema_editor):
    """Every state's memory from a replay of its learner's kept log, a range of learners
    at a time (nullable columns: PostgreSQL and SQLite add them in place)."""
    from cards.services.memory import memory_states_rebuild_for

    User = apps.get_model(*settings.AUTH_USER_MODEL.split("."))
    memory_states_rebuild_for(list(User.objects.values_list("id", flat=True)))


class Migration(migrations.Migration):
    dependencies = [
        ("cards", "0016_memoryparameters_history"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="reviewstate",
            name="stability",
            field=models.FloatField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="reviewstate",
            name="difficulty",
            field=models.FloatField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="reviewstate",
            name="last_review_day",
            field=models.DateField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="reviewstate",
            name="memory_as_of",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunPython(store_memories, migrations.RunPython.noop),
    ]

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("cards", "0015_lessons_pace_memory"),
    ]

    operations = [
        migrations.AddField(
            model_name="memoryparameters",
            name="history",
            field=models.JSONField(blank=True, default=list),
        ),
    ]

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("exercises", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="exercise",
            name="prompt",
            field=models.TextField(blank=True, default="", help_text="Markdown with $...$ math."),
        ),
    ]

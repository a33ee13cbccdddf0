import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

from cards.db.counts import CARD_FIGURES, KIND_FIGURES, LEARNER_CARD_FIGURES

# The staff's item analysis, kept as the log and the attempts are written: per (learner,
# card) by triggers on cards_reviewlog, summed per (card, lapses) by triggers on those
# rows, and per exercise kind by triggers on exercises_attempt. Declared once, in
# cards/db/counts.py; the pairs are backfilled from the log before the card sums' triggers
# exist, and the card sums from the pairs.


class Migration(migrations.Migration):

    dependencies = [
        ('cards', '0012_card_interview_points_answer_text'),
        ('exercises', '0001_squashed_0003_exercises_and_predictions'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='ExerciseKindFigures',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('kind', models.TextField()),
                ('section', models.TextField()),
                ('item', models.TextField()),
                ('cell', models.TextField()),
                ('n', models.IntegerField()),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('kind', 'section', 'item', 'cell'), name='exercisekindfigures_unique')],
            },
        ),
        migrations.CreateModel(
            name='CardFigures',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('lapses', models.IntegerField()),
                ('learners', models.IntegerField()),
                ('reviews', models.IntegerField()),
                ('passes', models.IntegerField()),
                ('first_passes', models.IntegerField()),
                ('card', models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='cards.card')),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('card', 'lapses'), name='cardfigures_unique')],
            },
        ),
        migrations.CreateModel(
            name='LearnerCardFigures',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('reviews', models.IntegerField()),
                ('passes', models.IntegerField()),
                ('lapses', models.IntegerField()),
                ('first_pass', models.IntegerField()),
                ('card', models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='cards.card')),
                ('learner', models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'indexes': [models.Index(fields=['card', 'lapses'], include=('reviews', 'passes', 'first_pass'), name='learnercardfigures_card')],
                'constraints': [models.UniqueConstraint(fields=('learner', 'card'), name='learnercardfigures_unique')],
            },
        ),
        migrations.RunPython(LEARNER_CARD_FIGURES.create, LEARNER_CARD_FIGURES.drop),
        migrations.RunPython(CARD_FIGURES.create, CARD_FIGURES.drop),
        migrations.RunPython(KIND_FIGURES.create, KIND_FIGURES.drop),
    ]

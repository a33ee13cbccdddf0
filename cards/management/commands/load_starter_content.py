"""``manage.py load_starter_content``: import the decks shipped in cards/content/.

Safe to run on every start: cards are matched by key, so a second run changes
nothing, and edited text updates cards without resetting anyone's progress.
"""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from cards.decks import DeckFileError, deck_import

CONTENT_DIR = Path(__file__).resolve().parents[2] / "content"


def starter_files() -> list[Path]:
    return sorted(
        path for pattern in ("*.yaml", "*.yml", "*.json") for path in CONTENT_DIR.glob(pattern)
    )


class Command(BaseCommand):
    help = "Import (or update) the starter decks shipped in cards/content/."

    def add_arguments(self, parser):
        parser.add_argument(
            "--dry-run", action="store_true", help="Report what would change; save nothing."
        )
        parser.add_argument(
            "--deactivate-missing",
            action="store_true",
            help="Deactivate cards of a starter deck that its file no longer lists.",
        )

    def handle(self, *args, **options):
        files = starter_files()
        if not files:
            raise CommandError(f"No deck files in {CONTENT_DIR}.")
        for path in files:
            try:
                report = deck_import(
                    data=path,
                    dry_run=options["dry_run"],
                    deactivate_missing=options["deactivate_missing"],
                )
            except DeckFileError as exc:
                problems = "\n".join(f"  {error}" for error in exc.errors)
                raise CommandError(f"{path.name}: nothing was imported.\n{problems}") from exc
            self.stdout.write(f"{path.name}: {report.summary()}")

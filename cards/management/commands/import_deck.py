"""``manage.py import_deck FILE``: create or update a deck from a YAML or JSON deck file."""

from __future__ import annotations

import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from cards.decks import DeckFileError, deck_import, deck_load, deck_validate

# Small files import in a blink; a bar would only add noise.
PROGRESS_MIN_CARDS = 200


class _RawWriter:
    """Lets tqdm write ``\\r`` updates through a command's OutputWrapper without added newlines."""

    def __init__(self, wrapper):
        self._wrapper = wrapper

    def write(self, text: str) -> None:
        self._wrapper.write(text, ending="")

    def flush(self) -> None:
        self._wrapper.flush()


class Command(BaseCommand):
    help = (
        "Import a deck file (YAML or JSON, format 1; see docs/deck-format.md). The whole file "
        "is checked first: on any error nothing is imported and every problem is listed."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", help="Path to the deck file, or - for standard input.")
        parser.add_argument(
            "--dry-run",
            action="store_true",
            help="Check the file and report what would change, without saving anything.",
        )
        parser.add_argument(
            "--deactivate-missing",
            action="store_true",
            help="Deactivate cards of the deck that the file does not list (history is kept).",
        )
        bar = parser.add_mutually_exclusive_group()
        bar.add_argument("--no-progress", action="store_true", help="Never show a progress bar.")
        bar.add_argument(
            "--progress",
            action="store_true",
            help=f"Show a progress bar even when not on a terminal (files over {PROGRESS_MIN_CARDS} cards).",
        )

    def handle(self, *args, **options):
        path = options["file"]
        try:
            document = deck_load(sys.stdin if path == "-" else Path(path))
            if not isinstance(document, dict):
                deck_validate(document)  # names what the file holds instead of a mapping
        except FileNotFoundError as exc:
            raise CommandError(f"{path}: no such file") from exc
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(f"{path}: cannot read the file: {exc}") from exc
        except DeckFileError as exc:
            raise CommandError(self._errors(path, exc)) from exc

        cards = document.get("cards") if isinstance(document, dict) else None
        count = len(cards) if isinstance(cards, list) else 0
        show = (
            count > PROGRESS_MIN_CARDS
            and not options["no_progress"]
            and (options["progress"] or self.stderr.isatty())
        )
        bar = tqdm(
            total=count,
            unit="card",
            desc="Importing",
            file=_RawWriter(self.stderr),
            disable=not show,
            mininterval=0.2,
        )
        try:
            report = deck_import(
                data=document,
                dry_run=options["dry_run"],
                deactivate_missing=options["deactivate_missing"],
                progress=bar.update,
            )
        except DeckFileError as exc:
            raise CommandError(self._errors(path, exc)) from exc
        finally:
            bar.close()

        self.stdout.write(self.style.SUCCESS(report.summary()))
        if report.scheduling == "enqueued":
            self.stdout.write("New cards were queued for placement on enrolled learners' ladders.")

    @staticmethod
    def _errors(path: str, exc: DeckFileError) -> str:
        lines = [f"{path}: {len(exc.errors)} problem(s); nothing was imported."]
        lines += [f"  {error}" for error in exc.errors]
        return "\n".join(lines)

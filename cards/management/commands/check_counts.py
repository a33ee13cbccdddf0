"""``manage.py check_counts [--repair] [--table NAME]``: are the counts and figures the
database keeps by triggers what the review states, the log and the attempts say?

Each table is recounted from its source and compared row for row, and each of its
triggers is looked up (enabled, disabled or missing). Exit status 0 when every table is
sound, 1 when one is not: a monitor can run it. ``--repair`` recreates the triggers of
each table that is not sound and refills it from its source, one transaction a table
(writers to its source wait until it commits), then checks again.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError

from cards.db import count_checks
from cards.db.count_checks import CountCheck


def describe(result: CountCheck) -> str:
    parts = [f"{result.rows:,} rows"]
    if result.missing or result.extra:
        parts.append(
            f"{result.missing:,} missing or different, {result.extra:,} extra "
            f"against a recount of the source"
        )
    parts += [
        f"trigger {name} {state}" for name, state in result.triggers.items() if state != "enabled"
    ]
    return f"{result.table}: " + "; ".join(parts) + ("" if not result.sound else ": sound")


class Command(BaseCommand):
    help = (
        "Compare the counts and figures kept by triggers with a recount of their sources, "
        "and with --repair rebuild the ones that differ."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--repair",
            action="store_true",
            help="Recreate the triggers of each table that is not sound and refill it.",
        )
        parser.add_argument(
            "--table",
            action="append",
            choices=[counts.table for counts in count_checks.KEPT],
            help="Only this table (repeatable); all of them by default.",
        )

    def handle(self, *args, repair: bool = False, table: list[str] | None = None, **options):
        chosen = [c for c in count_checks.KEPT if not table or c.table in table]
        unsound = []
        # In KEPT's order, so a table summed from another (the card figures, from the
        # pair figures) is checked after that one was rebuilt.
        for counts in chosen:
            result = count_checks.check(counts)
            self._report(result)
            if not result.sound and repair:
                try:
                    count_checks.rebuild(counts)
                except DatabaseError as exc:
                    raise CommandError(
                        f"{counts.table} was not rebuilt (nothing changed): {exc}".strip()
                    ) from exc
                self.stdout.write(f"Rebuilt {counts.table} and its triggers.")
                result = count_checks.check(counts)
                self._report(result)
            if not result.sound:
                unsound.append(counts)
        if unsound:
            names = ", ".join(counts.table for counts in unsound)
            hint = "" if repair else " Run again with --repair to rebuild them."
            raise CommandError(f"Not sound: {names}.{hint}")

    def _report(self, result: CountCheck) -> None:
        line = describe(result)
        self.stdout.write(self.style.SUCCESS(line) if result.sound else self.style.WARNING(line))

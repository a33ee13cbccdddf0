"""``manage.py send_email_confirmations``: mail a confirmation link to every learner whose
reminders are on but whose address is not confirmed.

Reminders go only to confirmed addresses. Accounts whose address was set before
confirmation existed get no reminder until they confirm; run this once after such an
upgrade (``--dry-run`` counts them first). Each run mails every learner still waiting.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand

from cards.services import accounts
from cards.services.reminder_claims import awaiting_confirmation


class Command(BaseCommand):
    help = (
        "Mail a confirmation link to every active learner with reminders on whose "
        "address is not confirmed."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--dry-run", action="store_true", help="Count the learners and mail nobody."
        )

    def handle(self, *args, dry_run: bool = False, **options):
        waiting = awaiting_confirmation()
        if dry_run:
            self.stdout.write(f"{waiting.count()} learners would get a confirmation link.")
            return
        sent = 0
        for profile in waiting.iterator(chunk_size=500):
            accounts.email_confirmation_send(user=profile.user)
            sent += 1
        self.stdout.write(self.style.SUCCESS(f"Mailed a confirmation link to {sent} learners."))

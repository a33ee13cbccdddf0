"""An e-mail backend for benchmarks: builds each MIME message as a real one would, sends none."""

from django.core.mail.backends.base import BaseEmailBackend


class BuildOnlyBackend(BaseEmailBackend):
    def send_messages(self, email_messages):
        for message in email_messages:
            message.message().as_bytes()
        return len(email_messages)

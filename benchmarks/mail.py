"""E-mail backends for benchmarks: build each MIME message as a real one would, send none."""

from django.core.mail.backends.base import BaseEmailBackend


class BuildOnlyBackend(BaseEmailBackend):
    def send_messages(self, email_messages):
        for message in email_messages:
            message.message().as_bytes()
        return len(email_messages)


class CountingBackend(BuildOnlyBackend):
    """Builds and drops like ``BuildOnlyBackend``, counting the messages in ``sent``
    (one process: the in-process reminder pass of ``benchmarks/bench_beat.py``)."""

    sent = 0

    def send_messages(self, email_messages):
        count = super().send_messages(email_messages)
        type(self).sent += count
        return count

"""E-mail backends for tests that run a real worker: messages land in files a test can count.

Selected in the worker's environment with ``DJANGO_EMAIL_BACKEND``; the directory
comes from ``DJANGO_EMAIL_FILE_PATH``. ``STUDY_TEST_EMAIL_DELAY`` (seconds) makes
every send slow, so a test can kill a worker in the middle of a batch.
"""

from __future__ import annotations

import os
import time
from email import message_from_bytes
from pathlib import Path

from django.core.mail.backends.filebased import EmailBackend


class FileEmailBackend(EmailBackend):
    def __init__(self, *args, **kwargs):
        kwargs.setdefault("file_path", os.environ["DJANGO_EMAIL_FILE_PATH"])
        super().__init__(*args, **kwargs)

    def send_messages(self, email_messages):
        delay = float(os.environ.get("STUDY_TEST_EMAIL_DELAY", "0"))
        sent = 0
        for message in email_messages:
            # The delay comes before the write: a kill during it loses nothing sent.
            time.sleep(delay)
            sent += super().send_messages([message])
        return sent


def read_mailbox(directory: Path) -> list:
    """Every message the file backend wrote to ``directory``, parsed."""
    separator = b"\n" + b"-" * 79 + b"\n"
    messages = []
    for path in sorted(directory.glob("*.log")):
        for chunk in path.read_bytes().split(separator):
            if chunk.strip():
                messages.append(message_from_bytes(chunk.strip()))
    return messages

"""Password reset answer times for a known and an unknown address, with a slow mail server.

Run::

    .venv/bin/python -m benchmarks.bench_reset_mail --requests 20 --delay 0.05

It starts a local SMTP server that waits ``--delay`` seconds before each reply (a
whole message then takes about seven of them, like a distant server) and configures
Django's SMTP backend for it through ``EMAIL_HOST`` and ``EMAIL_PORT``. Against a
throwaway SQLite database with one learner, it times ``POST auth/password-reset/``
through Django's request stack, alternating the learner's address and an unknown one:

- ``inline``: the task runs in the request (``task_always_eager``), as the reset
  mail was sent before it moved to a worker;
- ``worker``: the request publishes the task to the broker (the filesystem broker in
  a temporary directory) and answers.

It prints medians and p90s per address and the known/unknown difference, then runs
the queued tasks as a worker would and counts the mails the server received.
"""

from __future__ import annotations

import argparse
import os
import socketserver
import statistics
import tempfile
import threading
import time

_VAR = tempfile.mkdtemp(prefix="bench-reset-mail-")
os.environ.update(
    DJANGO_SETTINGS_MODULE="studyapp.settings",
    DATABASE_URL=f"sqlite:///{_VAR}/db.sqlite3",
    STUDY_VAR_DIR=_VAR,
    STUDY_THROTTLE_PASSWORD_RESET="off",
    DJANGO_EMAIL_BACKEND="django.core.mail.backends.smtp.EmailBackend",
    EMAIL_HOST="127.0.0.1",
    SITE_URL="https://study.example.org",
)
os.environ.pop("REDIS_URL", None)


class SlowSMTPHandler(socketserver.StreamRequestHandler):
    """Just enough SMTP for smtplib, each reply after ``server.delay`` seconds."""

    def reply(self, line: str) -> None:
        time.sleep(self.server.delay)  # type: ignore[attr-defined]
        self.wfile.write(line.encode() + b"\r\n")

    def handle(self) -> None:
        self.reply("220 slow.example ESMTP")
        while line := self.rfile.readline():
            command = line.decode(errors="replace").strip().upper()
            if command.startswith(("EHLO", "HELO")):
                self.reply("250 slow.example")
            elif command == "DATA":
                self.reply("354 end with <CRLF>.<CRLF>")
                while self.rfile.readline() not in (b".\r\n", b""):
                    pass
                self.server.received += 1  # type: ignore[attr-defined]
                self.reply("250 queued")
            elif command == "QUIT":
                self.reply("221 bye")
                return
            else:
                self.reply("250 ok")


def start_smtp(delay: float) -> socketserver.ThreadingTCPServer:
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), SlowSMTPHandler)
    server.daemon_threads = True
    server.delay = delay  # type: ignore[attr-defined]
    server.received = 0  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=20, help="per address and mode")
    parser.add_argument("--delay", type=float, default=0.05, help="seconds before each reply")
    args = parser.parse_args()

    smtp = start_smtp(args.delay)
    os.environ["EMAIL_PORT"] = str(smtp.server_address[1])

    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)

    from django.contrib.auth import get_user_model
    from rest_framework.test import APIClient

    from studyapp.celery import app

    get_user_model().objects.create_user("alice", "alice@example.org", "a-long-passphrase")
    client = APIClient()
    addresses = {"known": "alice@example.org", "unknown": "nobody@example.org"}

    def run(mode: str) -> dict[str, list[float]]:
        app.conf.task_always_eager = mode == "inline"
        times: dict[str, list[float]] = {name: [] for name in addresses}
        for _ in range(args.requests):
            for name, email in addresses.items():
                start = time.perf_counter()
                response = client.post(
                    "/api/v1/auth/password-reset/", {"email": email}, format="json"
                )
                times[name].append(time.perf_counter() - start)
                assert response.status_code == 202, response.content
        return times

    print(
        f"POST auth/password-reset/, {args.requests} requests per address, "
        f"SMTP reply delay {args.delay * 1000:.0f} ms"
    )
    print(f"{'mode':<8} {'address':<8} {'median ms':>10} {'p90 ms':>8}")
    for mode in ("inline", "worker"):
        before = smtp.received  # type: ignore[attr-defined]
        times = run(mode)
        medians = {}
        for name, samples in times.items():
            medians[name] = statistics.median(samples) * 1000
            p90 = statistics.quantiles(samples, n=10)[-1] * 1000
            print(f"{mode:<8} {name:<8} {medians[name]:>10.1f} {p90:>8.1f}")
        sent = smtp.received - before  # type: ignore[attr-defined]
        print(
            f"{mode:<8} known - unknown: {medians['known'] - medians['unknown']:+.1f} ms; "
            f"mails sent during the requests: {sent}"
        )

    drain_as_worker(smtp)
    smtp.shutdown()


def drain_as_worker(smtp) -> None:
    """The worker's part: the queued tasks, run one by one as a worker would."""
    from cards import tasks
    from studyapp.celery import app

    app.conf.task_always_eager = False
    before = smtp.received  # type: ignore[attr-defined]
    start = time.perf_counter()
    queued = 0
    with app.connection_for_read() as connection:
        queue = connection.SimpleQueue("celery")
        while True:
            try:
                message = queue.get(block=False)
            except queue.Empty:
                break
            tasks.send_password_reset_mail(**message.payload[1])
            message.ack()
            queued += 1
        queue.close()
    elapsed = time.perf_counter() - start
    print(
        f"worker: {queued} queued tasks in {elapsed:.2f} s, "
        f"{smtp.received - before} mails received by the server"  # type: ignore[attr-defined]
    )


if __name__ == "__main__":
    main()

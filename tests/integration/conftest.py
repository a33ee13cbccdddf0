"""Real Celery workers and beat as subprocesses, against the test's PostgreSQL and Redis.

The test database is created by pytest-django; tests here use
``django_db(transaction=True)`` so what they write is committed and visible to
the subprocesses, which get the database through ``DATABASE_URL``. Each test
has its own queue name, so workers of other tests (or teammates on the same
Redis database) never take its messages.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

import pytest
from django.db import connection
from django_celery_beat.models import IntervalSchedule, PeriodicTask

REPO = Path(__file__).resolve().parents[2]
CELERY = str(Path(sys.executable).with_name("celery"))


def database_url() -> str:
    s = connection.settings_dict
    auth = quote(s["USER"] or "")
    if s.get("PASSWORD"):
        auth += ":" + quote(s["PASSWORD"])
    return f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def serving(tmp_path: Path, redis_url: str) -> Iterator[tuple[str, Callable[[], str]]]:
    """``runserver`` configured as production is, on ``redis_url``, for one test: its base
    URL once it takes connections, and a function that reads its log."""
    port = free_port()
    log_path = tmp_path / "server.log"
    proc = subprocess.Popen(
        [sys.executable, "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"],
        cwd=REPO,
        env=Celery(tmp_path).env(REDIS_URL=redis_url),
        stdout=log_path.open("wb"),
        stderr=subprocess.STDOUT,
    )

    def read_log() -> str:
        return log_path.read_text(errors="replace")

    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"runserver did not start:\n{read_log()}")
                time.sleep(0.2)
        yield f"http://127.0.0.1:{port}", read_log
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def wait_for(condition: Callable[[], object], *, timeout: float, what: str, procs=()) -> object:
    """Poll ``condition`` until it is truthy; fail with the subprocesses' logs otherwise."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        for proc in procs:
            if proc.poll() is not None:
                pytest.fail(f"{proc.args[3]} exited early ({proc.returncode}):\n{proc.log()}")
        time.sleep(0.2)
    logs = "\n".join(f"--- {p.args[3]} ---\n{p.log()}" for p in procs)
    pytest.fail(f"Timed out after {timeout} s waiting for {what}\n{logs}")


class Celery:
    """Starts worker and beat subprocesses for one test and stops them all afterwards."""

    def __init__(self, tmp_path: Path):
        self.tmp = tmp_path
        self.queue = f"test-{uuid.uuid4().hex[:12]}"
        self.mail_dir = tmp_path / "mail"
        self.mail_dir.mkdir()
        self.redis_url = os.environ["REDIS_URL"]
        self.procs: list[subprocess.Popen] = []

    def env(self, **extra: str) -> dict[str, str]:
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("PYTEST_", "CELERY_")) and key != "DJANGO_SETTINGS_MODULE"
        }
        env.update(
            DJANGO_SETTINGS_MODULE="studyapp.settings",
            DATABASE_URL=database_url(),
            DB_CONN_MAX_AGE="0",
            REDIS_URL=self.redis_url,
            DJANGO_EMAIL_BACKEND="tests.integration.mailbox.FileEmailBackend",
            DJANGO_EMAIL_FILE_PATH=str(self.mail_dir),
            STUDY_VAR_DIR=str(self.tmp / "var"),
            PYTHONPATH=str(REPO),
            PYTHONUNBUFFERED="1",
        )
        env.update(extra)
        return env

    def _start(self, name: str, args: list[str], **extra: str) -> subprocess.Popen:
        log = (self.tmp / f"{name}-{len(self.procs)}.log").open("wb")
        proc = subprocess.Popen(
            [CELERY, "-A", "studyapp", *args],
            cwd=REPO,
            env=self.env(**extra),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: a kill takes the pool too
        )
        proc.log = lambda path=Path(log.name): path.read_text(errors="replace")[-6000:]
        self.procs.append(proc)
        return proc

    def worker(self, *, concurrency: int = 2, **extra: str) -> subprocess.Popen:
        return self._start(
            "worker",
            [
                "worker",
                "--pool=prefork",
                f"--concurrency={concurrency}",
                "--loglevel=INFO",
                "-Q",
                self.queue,
                "-n",
                f"{self.queue}-{len(self.procs)}@%h",
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
            ],
            **extra,
        )

    def beat(self) -> subprocess.Popen:
        return self._start(
            "beat",
            [
                "beat",
                "--loglevel=INFO",
                "--scheduler=cards.beat:DefaultsOnceScheduler",
                "--max-interval=1",
                f"--pidfile={self.tmp / 'beat.pid'}",
            ],
        )

    def every_second(self, task: str, **kwargs) -> PeriodicTask:
        """The only enabled periodic task: ``task`` on this test's queue every second."""
        PeriodicTask.objects.update(enabled=False)
        every, _ = IntervalSchedule.objects.get_or_create(every=1, period=IntervalSchedule.SECONDS)
        return PeriodicTask.objects.create(
            name=f"{task} every second",
            task=task,
            interval=every,
            kwargs=json.dumps(kwargs),
            queue=self.queue,
            expire_seconds=5,  # beat keeps firing while no worker runs; let those lapse
        )

    @staticmethod
    def kill(proc: subprocess.Popen, sig: int = signal.SIGKILL) -> None:
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        proc.wait(timeout=10)

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                self.kill(proc, signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill(proc, signal.SIGKILL)
        self._purge_queue()

    def _purge_queue(self) -> None:
        import redis

        client = redis.Redis.from_url(self.redis_url)
        client.delete(
            self.queue, f"_kombu.binding.{self.queue}", f"_kombu.binding_permanent.{self.queue}"
        )
        # Messages a killed worker held stay in the shared unacked hash: drop ours.
        for tag, payload in client.hgetall("unacked").items():
            try:
                _, _, routing_key = json.loads(payload)
            except (ValueError, TypeError):
                continue
            if routing_key == self.queue:
                client.hdel("unacked", tag)
                client.zrem("unacked_index", tag)
        client.close()


@pytest.fixture
def celery_procs(tmp_path):
    procs = Celery(tmp_path)
    try:
        yield procs
    finally:
        procs.stop()

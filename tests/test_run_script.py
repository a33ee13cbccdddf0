"""bin/run, the script behind `make run`: what it hands the processes it starts, and how it
stops them."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def environment_after_the_prelude(**env: str) -> dict[str, str]:
    # Run the script's settings prelude alone (up to the first manage.py call) and print
    # the environment it exports, so no server is started.
    script = (ROOT / "bin" / "run").read_text()
    prelude = script.split("\nmkdir -p var", 1)[0]
    out = subprocess.run(
        ["bash", "-c", prelude + "\nenv -0"],
        env={"PATH": os.environ["PATH"], **env},
        capture_output=True,
        check=True,
        cwd=ROOT,
    ).stdout.decode()
    return dict(item.split("=", 1) for item in out.split("\0") if "=" in item)


def test_mailed_links_follow_the_port_served():
    assert environment_after_the_prelude(PORT="9000")["SITE_URL"] == "http://127.0.0.1:9000"
    assert environment_after_the_prelude()["SITE_URL"] == "http://127.0.0.1:8000"


def test_an_explicit_site_url_wins():
    env = environment_after_the_prelude(PORT="9000", SITE_URL="https://study.example.org")
    assert env["SITE_URL"] == "https://study.example.org"


def test_lab_submissions_have_a_worker_of_their_own():
    # The study core's worker takes the default queue only; the labs worker the labs queue
    # (CELERY_TASK_ROUTES sends labs.tasks.* there).
    workers = [
        line.split()
        for line in (ROOT / "bin" / "run").read_text().splitlines()
        if line.startswith('"$CELERY" -A studyapp worker')
    ]
    queues = sorted(words[words.index("-Q") + 1] for words in workers)
    assert queues == ["celery", "labs"]
    labs = next(words for words in workers if "labs" in words)
    assert "--concurrency=2" in labs and "labs@%h" in labs


def _session(sid: int) -> dict[int, str]:
    """The live processes of session ``sid`` (bin/run's, started in a session of its own),
    by pid with their command lines."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            state, _ppid, _pgrp, session = (
                (entry / "stat").read_text().rsplit(")", 1)[1].split()[:4]
            )
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, ValueError):
            continue  # gone meanwhile
        if int(session) == sid and state != "Z":
            found[int(entry.name)] = command
    return found


def _wait(condition, what: str, timeout: float, details=lambda: "") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, (
            f"timed out after {timeout} s waiting for {what}: {details()}"
        )
        time.sleep(0.1)


# A failure guard: how long the test waits for every process to stop on the TERM. The
# script's KILL after its grace is put off well past it (STOP_GRACE).
STOPPED_WITHIN = 60


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc")
def test_a_term_to_its_process_group_stops_every_process_on_the_term_alone(tmp_path):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL"}}
    env.update(
        PORT=str(port),
        DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
        STUDY_VAR_DIR=str(tmp_path / "var"),
        VENV=str(Path(sys.executable).parent.parent),
        # The grace outlasts this test's patience: the processes the script TERMs stop on
        # the TERM (a worker's warm shutdown) or not at all, never on the KILL after it.
        STOP_GRACE=str(10 * STOPPED_WITHIN),
    )
    output = tmp_path / "run.log"
    with output.open("wb") as log:
        run = subprocess.Popen(
            ["bin/run"],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:

        def up() -> bool:
            assert run.poll() is None, output.read_text()[-3000:]
            text = output.read_text(errors="replace")
            # Serving, both workers ready (their pool children started), beat started.
            return "Serving on" in text and text.count(" ready.") == 2 and "beat: Starting" in text

        _wait(up, "bin/run to serve with both workers ready", timeout=300)
        assert len(_session(run.pid)) >= 8  # the script, 2 workers with 2 children each, ...

        os.killpg(run.pid, signal.SIGTERM)
        _wait(
            lambda: not _session(run.pid),
            "every process to stop on the TERM",
            timeout=STOPPED_WITHIN,
            details=lambda: (_session(run.pid), output.read_text()[-3000:]),
        )
        # The script exits on the TERM it trapped, each worker having shut down warm.
        assert run.wait(timeout=STOPPED_WITHIN) == 128 + signal.SIGTERM
        text = output.read_text(errors="replace")
        assert text.count("worker: Warm shutdown (MainProcess)") == 2, text[-3000:]
    finally:
        for pid in _session(run.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

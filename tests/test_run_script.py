"""bin/run, the script behind `make run`: what it hands the processes it starts."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

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

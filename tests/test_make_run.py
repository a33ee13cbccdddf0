"""`make run` stopped by a TERM to its process group, twice: make passes the signal on to
bin/run after the group's own, so the script meets a second TERM while it stops the
processes it started. It finishes stopping them all the same, and the port is free after.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_run_script import _session, _wait

ROOT = Path(__file__).resolve().parent.parent
STOPPED_WITHIN = 60  # a failure guard, as in tests/test_run_script.py


def _port_is_free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc")
@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_a_second_term_to_the_make_run_group_does_not_cut_the_stop_short(tmp_path):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    venv = Path(sys.executable).parent.parent
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL"}}
    env.update(
        DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
        STUDY_VAR_DIR=str(tmp_path / "var"),
        # Longer than this test waits: whatever stops, stops on the TERM.
        STOP_GRACE=str(10 * STOPPED_WITHIN),
    )
    output = tmp_path / "run.log"
    # `-o` keeps make from reinstalling the environment this test runs in.
    command = ["make", "-o", f"{venv}/.installed", "run", f"PORT={port}", f"VENV={venv}"]
    with output.open("wb") as log:
        run = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:

        def up() -> bool:
            assert run.poll() is None, output.read_text()[-3000:]
            text = output.read_text(errors="replace")
            return "Serving on" in text and text.count(" ready.") == 2 and "beat: Starting" in text

        _wait(up, "make run to serve with both workers ready", timeout=300)
        assert not _port_is_free(port)

        os.killpg(run.pid, signal.SIGTERM)  # make passes it on: bin/run gets two
        _wait(
            lambda: "Stopping..." in output.read_text(errors="replace"),
            "bin/run to start stopping",
            timeout=STOPPED_WITHIN,
        )
        # The workers' warm shutdown takes seconds: this TERM reaches the script while it
        # waits for them, as a second Ctrl-C or a supervisor's repeat would.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(run.pid, signal.SIGTERM)
        _wait(
            lambda: not _session(run.pid),
            "every process to stop",
            timeout=STOPPED_WITHIN,
            details=lambda: (_session(run.pid), output.read_text()[-3000:]),
        )
        text = output.read_text(errors="replace")
        # The script ran its stop to the end instead of dying on the second TERM.
        assert "Stopped." in text, text[-3000:]
        assert "Quit the server with" in text  # runserver served, and is gone now
        assert _port_is_free(port)
    finally:
        for pid in _session(run.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

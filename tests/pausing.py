"""A service paused outright (SIGSTOP), as a hung server is: its socket still takes bytes,
and nothing answers until it is continued.

Used by tests/test_security_faults.py (a paused Redis under a card write) and
tests/integration/test_labs_worker.py (a paused broker under a lab submission).
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import threading
from collections.abc import Iterator


class Pause:
    """Whether the process is still paused: the failure guard has not continued it."""

    def __init__(self) -> None:
        self.guard_fired = threading.Event()

    def held(self) -> bool:
        return not self.guard_fired.is_set()


@contextlib.contextmanager
def paused(process: subprocess.Popen, guard: float) -> Iterator[Pause]:
    """``process`` is stopped for the block and continued after it.

    A failure guard continues it after ``guard`` seconds, so a call that waits for the
    process ends rather than hangs the suite; ``Pause.held()`` read right after the call
    tells an answer given while the process was paused from one that waited for it.
    """
    pause = Pause()

    def resume() -> None:
        pause.guard_fired.set()
        process.send_signal(signal.SIGCONT)

    timer = threading.Timer(guard, resume)
    process.send_signal(signal.SIGSTOP)
    timer.start()
    try:
        yield pause
    finally:
        timer.cancel()
        process.send_signal(signal.SIGCONT)

"""What one lab run may take, and the error for a machine where no sandbox can start."""

from __future__ import annotations

import os
from dataclasses import dataclass

MAX_RESULT_BYTES = 16 * 1024 * 1024  # what the result channel may carry in one run


class SandboxUnavailable(RuntimeError):
    """No sandbox can start here; the reason says why in words."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def env_number(name: str, default: float) -> float:
    try:
        value = float(os.environ.get(name, ""))
    except ValueError:
        return default
    return value if value > 0 else default


@dataclass(frozen=True)
class Limits:
    """What one run may take. These defaults are the service's; the settings'
    ``STUDY_LAB_*`` override them one by one (``labs.grading.lab_limits``)."""

    cpu_seconds: int = 5  # RLIMIT_CPU of each process
    wall_seconds: float = 10.0  # the parent kills the sandbox after this
    memory_bytes: int = 512 * 1024 * 1024  # RLIMIT_AS
    processes: int = 32  # processes and threads together (RLIMIT_NPROC)
    file_bytes: int = 8 * 1024 * 1024  # RLIMIT_FSIZE, and the size of /tmp
    output_bytes: int = 64 * 1024  # stdout and stderr together; past it the run stops


DEFAULT_LIMITS = Limits()

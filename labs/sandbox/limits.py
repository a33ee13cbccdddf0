"""What one lab run may take, and the error for a machine where no sandbox can start.

``LIMITS`` is the one statement of the limits: for each field of ``Limits``, the variable
that sets it, its default in that variable's unit, the unit, and what it bounds. The
defaults of ``Limits`` are read from it, and so are the settings (``STUDY_LAB_*``, through
``studyapp.configuration``), ``labs.grading.lab_limits`` (``limits_from``) and the table
of docs/labs.md, "Limits" (held equal by tests/labs/test_limits.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

MAX_RESULT_BYTES = 16 * 1024 * 1024  # what the result channel may carry in one run


class SandboxUnavailable(RuntimeError):
    """No sandbox can start here; the reason says why in words."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Limit:
    """One limit of a run. ``default`` is in ``unit``, the variable's; ``scale`` is how
    many of the field's own units (bytes, seconds) one of it holds."""

    field: str
    variable: str
    default: int
    unit: str
    scale: int
    meaning: str
    whole: bool = True  # the field holds a whole number

    def value(self, amount: float) -> Any:
        """``amount`` of the variable's unit as the field holds it (at least 1 when whole)."""
        if not self.whole:
            return float(amount * self.scale)
        return max(1, round(amount * self.scale))


LIMITS: tuple[Limit, ...] = (
    Limit("cpu_seconds", "STUDY_LAB_CPU_SECONDS", 5, "s", 1, "CPU time of each process"),
    Limit(
        "wall_seconds", "STUDY_LAB_WALL_SECONDS", 10, "s", 1, "wall time of the whole run", False
    ),
    Limit("memory_bytes", "STUDY_LAB_MEMORY_MB", 512, "MB", 2**20, "memory of the run"),
    Limit("processes", "STUDY_LAB_PROCESSES", 32, "", 1, "processes and threads"),
    Limit("file_bytes", "STUDY_LAB_FILE_MB", 8, "MB", 2**20, "size of a file written, and of /tmp"),
    Limit(
        "output_bytes",
        "STUDY_LAB_OUTPUT_KB",
        64,
        "KB",
        1024,
        "printed output; past it the run stops",
    ),
)
_BY_FIELD = {limit.field: limit for limit in LIMITS}


def _default(field: str) -> Any:
    limit = _BY_FIELD[field]
    return limit.value(limit.default)


@dataclass(frozen=True)
class Limits:
    """What one run may take, in bytes and seconds; each default is its ``LIMITS`` entry's.

    How each is enforced: ``cpu_seconds`` RLIMIT_CPU of each process; ``wall_seconds`` the
    parent kills the sandbox; ``memory_bytes`` the run's cgroup and RLIMIT_AS;
    ``processes`` RLIMIT_NPROC; ``file_bytes`` RLIMIT_FSIZE and the size of /tmp;
    ``output_bytes`` the parent's read of stdout and stderr."""

    cpu_seconds: int = _default("cpu_seconds")
    wall_seconds: float = _default("wall_seconds")
    memory_bytes: int = _default("memory_bytes")
    processes: int = _default("processes")
    file_bytes: int = _default("file_bytes")
    output_bytes: int = _default("output_bytes")


DEFAULT_LIMITS = Limits()


def limits_from(amount: Callable[[str], float]) -> Limits:
    """The limits with each one's amount, in its variable's unit, given by ``amount`` of
    the variable's name (the settings' ``STUDY_LAB_*``)."""
    return Limits(**{limit.field: limit.value(amount(limit.variable)) for limit in LIMITS})

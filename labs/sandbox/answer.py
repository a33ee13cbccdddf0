"""Reading what a run handed back: strictly, never raising, limits named in words."""

from __future__ import annotations

import json
import signal
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from labs import runner as codec
from labs.sandbox.bwrap import Run
from labs.sandbox.limits import MAX_RESULT_BYTES, Limits
from labs.spec import Call, Returned, RunResult

# --- reading what came back -------------------------------------------------------


def _limit_message(limit: str, limits: Limits) -> str:
    return {
        "time": (
            f"Stopped after {limits.wall_seconds:g} s: the code was still running"
            f" (a lab run may take {limits.cpu_seconds} s of CPU time and"
            f" {limits.wall_seconds:g} s in all). Look for a loop that never ends."
        ),
        "cpu": (
            f"Stopped after {limits.cpu_seconds} s of CPU time: the code was still"
            " computing. Look for a loop that never ends."
        ),
        "memory": (
            f"Stopped: the code used more than {limits.memory_bytes // 2**20} MB of memory."
        ),
        "processes": (
            f"Stopped: the code started more than {limits.processes} processes or threads."
        ),
        "output": (
            f"Stopped: the code printed more than {limits.output_bytes // 1024} KB."
            " Print less, or nothing."
        ),
        "results": (
            "Stopped: the functions returned more data than a lab allows"
            f" ({MAX_RESULT_BYTES // 2**20} MB)."
        ),
        "file size": (
            f"Stopped: the code wrote more than {limits.file_bytes // 2**20} MB to files."
        ),
    }[limit]


_PUBLIC_LIMIT = {"cpu": "time", "results": "output"}


class MalformedAnswer(ValueError):
    pass


def _require(condition: bool) -> None:
    if not condition:
        raise ValueError("an event out of order, or with other fields")


class _Reader:
    """Reads the result channel strictly: events in order, known keys, each call once."""

    def __init__(self, calls: Sequence[Call]) -> None:
        self.keys = {call.key for call in calls}
        self.returned: dict[str, Returned] = {}
        self.loading = False
        self.loaded = False
        self.done = False
        self.current: str | None = None
        self.limit: str | None = None
        self.load_error: str | None = None

    def read(self, data: bytes, *, cut: bool) -> None:
        lines = data.split(b"\n")
        last = lines.pop()
        if last and not cut:
            raise MalformedAnswer("the lab runner's answer was cut short")
        for number, line in enumerate(lines, 1):
            try:
                event = json.loads(line.decode("utf-8"))
                if not isinstance(event, dict) or self.done:
                    raise ValueError(line)
                self.event(event)
            except (UnicodeDecodeError, ValueError, TypeError, RecursionError):
                raise MalformedAnswer(
                    f"the lab runner's answer is malformed (line {number})"
                ) from None

    def event(self, event: dict[str, Any]) -> None:
        # An unknown event is refused; an unhashable name (a list) raises TypeError: refused too.
        name: Any = event.get("event")
        handler = self._HANDLERS.get(name)
        if handler is None:
            raise ValueError(name)
        handler(self, event)

    # Each event's handler refuses it (ValueError) out of order or with other fields.

    def _loading(self, event: dict[str, Any]) -> None:
        _require(set(event) == {"event"} and not self.loading)
        self.loading = True

    def _loaded(self, event: dict[str, Any]) -> None:
        _require(set(event) == {"event"} and self.loading and not self.loaded)
        self.loaded = True

    def _load_error(self, event: dict[str, Any]) -> None:
        _require(set(event) == {"event", "message"} and self.loading)
        self.load_error = str(event["message"])[:2000]

    def _call(self, event: dict[str, Any]) -> None:
        key = event.get("key")
        _require(set(event) == {"event", "key"} and self.loaded and self.fresh(key))
        self.current = key

    def _returned(self, event: dict[str, Any]) -> None:
        key = self.current
        if key is None or event.get("key") != key:
            raise ValueError("returned")
        self.returned[key] = self.one_returned(event)
        self.current = None

    def _limit(self, event: dict[str, Any]) -> None:
        _require(event.get("limit") in ("memory", "file size", "processes"))
        self.limit = event["limit"]

    def _done(self, event: dict[str, Any]) -> None:
        _require(set(event) == {"event"})
        self.done = True

    _HANDLERS: ClassVar[dict[str, Callable[[_Reader, dict[str, Any]], None]]] = {
        "loading": _loading,
        "loaded": _loaded,
        "load_error": _load_error,
        "call": _call,
        "returned": _returned,
        "limit": _limit,
        "done": _done,
    }

    def ended(self, what: str) -> None:
        """The process ended, by no limit, before it said it was done: while loading, a
        load error; during a call, that call's error."""
        if not self.loaded and self.load_error is None:
            self.load_error = f"The code ended the process while loading: {what}."
        elif self.current is not None:
            self.returned[self.current] = Returned(error=f"The process ended abruptly: {what}.")

    def fresh(self, key: Any) -> bool:
        return key in self.keys and key not in self.returned

    @staticmethod
    def one_returned(event: dict[str, Any]) -> Returned:
        if set(event) == {"event", "key", "error"} and isinstance(event["error"], str):
            return Returned(error=event["error"][:2000])
        if set(event) == {"event", "key", "value"}:
            try:
                return Returned(value=codec.decode(event["value"]))
            except codec.EncodingError as exc:
                raise ValueError(str(exc)) from None
        raise ValueError("returned")


def parse(run: Run, calls: Sequence[Call], limits: Limits, duration: float) -> RunResult:
    output = run.output[: limits.output_bytes].decode("utf-8", errors="replace")
    duration_ms = int(duration * 1000)
    reader = _Reader(calls)
    try:
        reader.read(bytes(run.results), cut=run.killed_for is not None)
    except MalformedAnswer as exc:  # the learner's code can write this: it counts
        return RunResult(
            output=output, duration_ms=duration_ms, failure=str(exc), malformed=str(exc)
        )
    limit = _stopped_by(run, reader, limits, duration)
    if limit is None and not reader.done:
        if not reader.loading:
            detail = output.strip().splitlines()[-1:] or [exit_words(run.returncode)]
            return RunResult(
                output=output,
                duration_ms=duration_ms,
                failure=f"the sandbox stopped before the code loaded: {detail[0][:300]}",
            )
        reader.ended(exit_words(run.returncode))
    return RunResult(
        returned=reader.returned,
        output=output,
        duration_ms=duration_ms,
        limit=_PUBLIC_LIMIT.get(limit, limit) if limit else None,
        limit_message=_limit_message(limit, limits) if limit else None,
        load_error=reader.load_error,
    )


def _stopped_by(run: Run, reader: _Reader, limits: Limits, duration: float) -> str | None:
    """The limit that stopped the run: the parent's, the runner's, or, when the runner never
    said it was done, the one its exit status names; None for none."""
    limit = run.killed_for or reader.limit
    if limit is None and not reader.done:
        return _exit_limit(run, limits, duration)
    return limit


def _exit_limit(run: Run, limits: Limits, duration: float) -> str | None:
    code = run.returncode
    if code is None:
        return None
    signum = -code if code < 0 else code - 128 if code > 128 else None
    # SIGKILL is RLIMIT_CPU's hard limit only once that much time can have passed;
    # sooner, the code killed itself.
    if signum == signal.SIGXCPU or (signum == signal.SIGKILL and duration >= limits.cpu_seconds):
        return "cpu"
    if signum == signal.SIGXFSZ:
        return "file size"
    return None


def exit_words(code: int | None) -> str:
    if code is None:
        return "no exit status"
    signum = -code if code < 0 else code - 128 if code > 128 else None
    if signum:
        try:
            return f"signal {signal.Signals(signum).name}"
        except ValueError:
            return f"signal {signum}"
    return f"exit status {code}"

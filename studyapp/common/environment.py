"""Reading one variable of the environment as a value of its kind.

A kind is a short name (the configuration table's "type"), what it expects in words,
and a parser that turns the variable's text into a value or raises ``ValueError``
(with a reason, where what was expected does not say it all). :func:`read` applies one:
unset or empty, the variable takes its default (an empty switch is off, as
``DJANGO_DEBUG=`` always was); a value the kind refuses raises ``ImproperlyConfigured``
naming the variable, the value and what was expected, so a process with a bad setting
stops at its start.

The settings read every variable through here (``studyapp.configuration``), and so
does the lab sandbox for what it reads at each run (``env_number``).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ImproperlyConfigured

ON = frozenset({"1", "true", "yes", "on"})
OFF = frozenset({"0", "false", "no", "off", ""})


@dataclass(frozen=True)
class Kind:
    """What a variable holds: ``name`` in the docs, "is not <expected>" in an error."""

    name: str
    expected: str
    parse: Callable[[str], Any]
    # An empty value is the default, except where the kind gives it a meaning of its own.
    empty_is_default: bool = True


def _switch(text: str) -> bool:
    word = text.strip().lower()
    if word in ON:
        return True
    if word in OFF:
        return False
    raise ValueError


def _whole(text: str) -> int:
    # Digits only: int() would also take "-1", "+5" and "1_000".
    word = text.strip()
    if not (word.isascii() and word.isdigit()):
        raise ValueError
    return int(word)


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise ValueError
    return value


def _positive(text: str) -> float:
    value = _number(text)
    if value <= 0:
        raise ValueError
    return value


def between(low: float, high: float, what: str = "number") -> Kind:
    """A number from ``low`` to ``high``, both included."""

    def parse(text: str) -> float:
        value = _number(text)
        if not low <= value <= high:
            raise ValueError
        return value

    return Kind(f"{what}, {low:g}–{high:g}", f"a {what} from {low:g} to {high:g}", parse)


def _words(text: str) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


def _rate(text: str) -> str | None:
    word = text.strip().lower()
    if word == "off":
        return None
    count, _, period = word.partition("/")
    if not count.isdigit() or period[:1] not in {"s", "m", "h", "d"}:
        raise ValueError
    return word


SWITCH = Kind("switch", "a switch (1, true, yes or on; 0, false, no, off or empty)", _switch, False)
WHOLE = Kind("whole number", "a whole number (0 or more)", _whole)
NUMBER = Kind("number", "a number (0 or more)", _number)
POSITIVE = Kind("positive number", "a positive number", _positive)
TEXT = Kind("text", "text", str)
PATH = Kind("path", "a path", str)
WORDS = Kind("list", "a comma-separated list", _words)
RATE = Kind("rate", "a rate ('<n>/<second|minute|hour|day>' or 'off')", _rate)


def read(
    name: str,
    kind: Kind,
    default: str,
    environ: Mapping[str, str] | None = None,
    *,
    also: str = "",
) -> Any:
    """The value of variable ``name`` (else ``also``, an older name) as ``kind`` reads it;
    ``default``, parsed the same way, when neither is set."""
    environ = os.environ if environ is None else environ
    for source in (name, also) if also else (name,):
        raw = environ.get(source)
        if raw is not None and (raw.strip() or not kind.empty_is_default):
            return parse(source, kind, raw)
    return parse(name, kind, default)


def parse(name: str, kind: Kind, raw: str) -> Any:
    """``raw`` as ``kind`` reads it, or ``ImproperlyConfigured`` naming ``name``."""
    try:
        return kind.parse(raw)
    except ValueError as error:
        reason = f": {error}" if str(error) else ""
        raise ImproperlyConfigured(f"{name}={raw!r} is not {kind.expected}{reason}") from None


def env_number(name: str, default: float, environ: Mapping[str, str] | None = None) -> float:
    """A positive number from the environment; ``default`` when unset or empty."""
    value: float = read(name, POSITIVE, repr(default), environ)
    return value

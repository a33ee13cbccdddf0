# One module on purpose: the sandbox binds this one file beside NumPy alone and runs it with
# python -I (its own directory off sys.path), so the codec and the run cannot be split.
"""The script that runs inside the sandbox: load the learner's code, make the calls.

Started by ``labs.sandbox.run`` as ``python -I -S -B runner.py RESULT_FD PROCESSES``
inside bubblewrap, with only the standard library and NumPy importable. It reads one
JSON document from stdin, ``{"code": str, "calls": [{"key", "function", "args",
"kwargs"}]}``, and writes what happens as JSON lines to RESULT_FD, never to stdout:

    {"event": "loading"}                                 (the learner's code starts)
    {"event": "loaded"} | {"event": "load_error", "message": "..."}
    {"event": "call", "key": k}                          (a call starts)
    {"event": "returned", "key": k, "value": <encoded>}  or  ..., "error": "..."}
    {"event": "limit", "limit": "memory", "message": "..."}
    {"event": "done"}

The learner's prints go to stdout and stderr, which the parent reads as ``output``: a
print can never look like a result. The code shares this process, so it could write
to RESULT_FD itself; it could only claim values its functions could have returned,
and the parent checks every line strictly. Nothing here is trusted by the judge.

Values cross the boundary in one encoding (``encode`` / ``decode``), shared with the
parent: arrays as raw little-endian bytes in base64 with dtype and shape, floats as
``float.hex`` (exact, NaN and infinities included). Never pickle.

This module imports only the standard library at the top (NumPy once inside), so
the parent can import it for the codec without running anything of the learner's.
"""

from __future__ import annotations

import base64
import errno
import json
import math
import os
import sys
import traceback
from collections.abc import Callable
from typing import Any

SOLUTION_FILENAME = "solution.py"
NUMPY_DIR = "/sandbox/lib"  # where the sandbox binds NumPy, and nothing else

# Kept out of the learner's reach as defence in depth: bubblewrap already leaves no
# network, no other process and no file worth reading, so the sandbox holds without this.
BLOCKED_MODULES = frozenset(
    {
        "_ctypes",
        "_multiprocessing",
        "_posixsubprocess",
        "_socket",
        "_ssl",
        "asyncio",
        "ctypes",
        "multiprocessing",
        "pty",
        "resource",
        "signal",
        "socket",
        "ssl",
        "subprocess",
    }
)

MAX_DEPTH = 3  # (raw, scaled) pairs are one level deep; a little room beyond
MAX_ITEMS = 64  # items of one tuple or list
MAX_NDIM = 8
MAX_ELEMENTS = 1_000_000  # of one array
MAX_INT_DIGITS = 40
MAX_FOREIGN_CHARS = 120  # of the repr of a value that may not cross, quoted back
# Arrays cross in their own dtype, so a judge can tell float32 from float64 and an int
# mask from a bool one: names as NumPy spells them, and the bytes' layout.
DTYPES = {
    "float64": "<f8",
    "float32": "<f4",
    "float16": "<f2",
    "int64": "<i8",
    "int32": "<i4",
    "int16": "<i2",
    "int8": "|i1",
    "uint64": "<u8",
    "uint32": "<u4",
    "uint16": "<u2",
    "uint8": "|u1",
    "bool": "|b1",
}


class EncodingError(ValueError):
    """A value that may not cross the boundary, in words for the learner."""


class Foreign:
    """What a call returned that may not cross (a str, a dict, a complex array...), named
    so the judge can say "returned str, expected ndarray": ``kind`` is its type's name,
    ``text`` a short quote of it or why it may not cross."""

    __slots__ = ("kind", "text")

    def __init__(self, kind: str, text: str = "") -> None:
        self.kind = str(kind)[:MAX_FOREIGN_CHARS]
        self.text = str(text)[:MAX_FOREIGN_CHARS]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Foreign) and (self.kind, self.text) == (other.kind, other.text)

    def __hash__(self) -> int:
        return hash((self.kind, self.text))

    def __repr__(self) -> str:
        return f"Foreign({self.kind!r}, {self.text!r})"


# --- the codec, used on both sides -------------------------------------------------


def encode(value: Any, *, depth: int = 0) -> Any:
    """A returned or argument value as JSON-ready data; EncodingError if it may not cross."""
    import numpy as np

    if value is None:
        return {"t": "none"}
    if isinstance(value, bool | np.bool_):
        return {"t": "bool", "v": bool(value)}
    if isinstance(value, int | np.integer):
        return {"t": "int", "v": _checked_int(int(value))}
    if isinstance(value, float | np.floating):
        return {"t": "float", "v": float(value).hex()}
    if isinstance(value, np.ndarray):
        return _encode_array(value)
    if isinstance(value, tuple | list):
        return _encode_items(value, depth)
    raise EncodingError(
        f"a {type(value).__name__}; expected an array, a number, a bool, None or a tuple of those"
    )


def _encode_items(value: tuple[Any, ...] | list[Any], depth: int) -> dict[str, Any]:
    if depth >= MAX_DEPTH:
        raise EncodingError(f"tuples nested more than {MAX_DEPTH} deep")
    if len(value) > MAX_ITEMS:
        raise EncodingError(f"a {type(value).__name__} of {len(value)} items; at most {MAX_ITEMS}")
    return {
        "t": "tuple" if isinstance(value, tuple) else "list",
        "items": [encode(item, depth=depth + 1) for item in value],
    }


def encode_returned(value: Any) -> Any:
    """A returned value as ``encode`` makes it, or, when it may not cross, a ``foreign``
    entry naming its type: a str or a dict is what the learner's function returned,
    not an error it raised."""
    try:
        return encode(value)
    except EncodingError as exc:
        kind = type(value).__name__
        try:
            import numpy as np

            if isinstance(value, np.ndarray):
                kind = "ndarray"
            text = repr(value) if isinstance(value, str | bytes) else str(exc)
        except Exception:  # a repr the learner wrote may raise: the type name is enough
            text = str(exc)
        return {"t": "foreign", "type": kind[:MAX_FOREIGN_CHARS], "text": text[:MAX_FOREIGN_CHARS]}


def _checked_int(number: int) -> int:
    if len(str(abs(number))) > MAX_INT_DIGITS:
        raise EncodingError(f"an int with more than {MAX_INT_DIGITS} digits")
    return number


def _encode_array(value: Any) -> dict[str, Any]:
    import numpy as np

    name = value.dtype.name
    if name not in DTYPES:
        raise EncodingError(f"an array of dtype {value.dtype}; expected numbers or bools")
    if value.ndim > MAX_NDIM or value.size > MAX_ELEMENTS:
        raise EncodingError(
            f"an array of shape {value.shape}; at most {MAX_NDIM} dimensions"
            f" and {MAX_ELEMENTS:,} elements"
        )
    array = np.ascontiguousarray(value, dtype=DTYPES[name])
    return {
        "t": "array",
        "dtype": name,
        "shape": list(array.shape),
        "data": base64.b64encode(array.tobytes()).decode("ascii"),
    }


def decode(data: Any, *, depth: int = 0) -> Any:
    """The value ``encode`` made; EncodingError for anything else (never another exception)."""
    if not isinstance(data, dict) or not isinstance(data.get("t"), str):
        raise EncodingError("a value is not an encoded value")
    decoder, keys = _DECODERS.get(data["t"], (None, frozenset()))
    if decoder is None or data.keys() != keys:
        raise EncodingError("a value is not an encoded value")
    return decoder(data, depth)


def _decode_none(data: dict[str, Any], depth: int) -> None:
    return None


def _decode_bool(data: dict[str, Any], depth: int) -> bool:
    if not isinstance(data["v"], bool):
        raise EncodingError("a bool is malformed")
    return data["v"]


def _decode_int(data: dict[str, Any], depth: int) -> int:
    if type(data["v"]) is not int:
        raise EncodingError("an int is malformed")
    return _checked_int(data["v"])


def _decode_float(data: dict[str, Any], depth: int) -> float:
    if not isinstance(data["v"], str) or len(data["v"]) > 40:
        raise EncodingError("a float is malformed")
    try:
        return float.fromhex(data["v"])
    except (ValueError, OverflowError):
        raise EncodingError("a float is malformed") from None


def _decode_array(data: dict[str, Any], depth: int) -> Any:
    import numpy as np

    dtype, shape, raw = data["dtype"], data["shape"], data["data"]
    if not isinstance(dtype, str) or dtype not in DTYPES:
        raise EncodingError(f"an array of dtype {str(dtype)[:20]!r} is not allowed")
    if not _allowed_shape(shape):
        raise EncodingError("an array's shape is malformed or too large")
    if not isinstance(raw, str):
        raise EncodingError("an array's data is malformed")
    try:
        buffer = base64.b64decode(raw.encode("ascii"), validate=True)
    except (ValueError, UnicodeEncodeError):
        raise EncodingError("an array's data is not base64") from None
    if len(buffer) != math.prod(shape) * np.dtype(DTYPES[dtype]).itemsize:
        raise EncodingError("an array's data does not match its shape")
    array = np.frombuffer(buffer, dtype=DTYPES[dtype]).reshape(shape)
    return array.astype(np.dtype(dtype))  # native byte order, and a writable copy


def _allowed_shape(shape: Any) -> bool:
    # A list of at most MAX_NDIM whole numbers, holding at most MAX_ELEMENTS in all.
    if not isinstance(shape, list) or len(shape) > MAX_NDIM:
        return False
    sizes_fit = all(type(n) is int and 0 <= n <= MAX_ELEMENTS for n in shape)
    return sizes_fit and math.prod(shape) <= MAX_ELEMENTS


def _decode_foreign(data: dict[str, Any], depth: int) -> Foreign:
    kind, text = data["type"], data["text"]
    if not isinstance(kind, str) or not isinstance(text, str):
        raise EncodingError("a foreign value is malformed")
    if len(kind) > MAX_FOREIGN_CHARS or len(text) > MAX_FOREIGN_CHARS:
        raise EncodingError("a foreign value is too long")
    return Foreign(kind, text)


def _decode_items(data: dict[str, Any], depth: int) -> tuple[Any, ...] | list[Any]:
    items = data["items"]
    if depth >= MAX_DEPTH or not isinstance(items, list) or len(items) > MAX_ITEMS:
        raise EncodingError("a tuple is malformed, too long or nested too deep")
    decoded = [decode(item, depth=depth + 1) for item in items]
    return tuple(decoded) if data["t"] == "tuple" else decoded


_DECODERS: dict[str, tuple[Callable[[dict[str, Any], int], Any], frozenset[str]]] = {
    "none": (_decode_none, frozenset({"t"})),
    "bool": (_decode_bool, frozenset({"t", "v"})),
    "int": (_decode_int, frozenset({"t", "v"})),
    "float": (_decode_float, frozenset({"t", "v"})),
    "array": (_decode_array, frozenset({"t", "dtype", "shape", "data"})),
    "tuple": (_decode_items, frozenset({"t", "items"})),
    "list": (_decode_items, frozenset({"t", "items"})),
    "foreign": (_decode_foreign, frozenset({"t", "type", "text"})),
}


# --- inside the sandbox -------------------------------------------------------------


class _Refuse:
    """An import hook refusing BLOCKED_MODULES, with a message the learner can act on."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name.partition(".")[0] in BLOCKED_MODULES:
            raise ImportError(f"import of {name} is not allowed in a lab", name=name)
        return None

    def find_module(self, name: str, path: Any = None) -> None:  # older finders' protocol
        return self.find_spec(name, path)


def _learner_line(exc: BaseException) -> int | None:
    if isinstance(exc, SyntaxError) and exc.filename == SOLUTION_FILENAME:
        return exc.lineno
    line = None
    for frame, lineno in traceback.walk_tb(exc.__traceback__):
        if frame.f_code.co_filename == SOLUTION_FILENAME:
            line = lineno
    return line


def describe(exc: BaseException) -> str:
    """``TypeError: message (line 4)``: the exception in the learner's terms."""
    message = exc.msg if isinstance(exc, SyntaxError) else str(exc)
    text = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
    line = _learner_line(exc)
    return (f"{text} (line {line})" if line else text)[:2000]


def _limit_of(exc: BaseException) -> tuple[str, str] | None:
    """The limit an exception shows was reached, with the learner's message, or None."""
    if isinstance(exc, MemoryError):
        return "memory", "Stopped: the code used more memory than a lab allows."
    if isinstance(exc, OSError) and exc.errno in (errno.EFBIG, errno.ENOSPC):
        return "file size", "Stopped: the code wrote a file larger than a lab allows."
    if isinstance(exc, BlockingIOError) and exc.errno == errno.EAGAIN:
        return "processes", "Stopped: the code started more processes than a lab allows."
    if isinstance(exc, RuntimeError) and "can't start new thread" in str(exc):
        return "processes", "Stopped: the code started more threads than a lab allows."
    return None


class Channel:
    """The result channel: one JSON line per event, written by the runner's process only."""

    def __init__(self, fd: int) -> None:
        self.pid = os.getpid()
        self.stream = os.fdopen(fd, "w", encoding="utf-8", closefd=True)

    def emit(self, **event: Any) -> None:
        if os.getpid() != self.pid:  # a fork of the learner's code never speaks for it
            os._exit(0)
        self.stream.write(json.dumps(event, separators=(",", ":")) + "\n")
        self.stream.flush()

    def stopped(self, exc: BaseException, key: str | None) -> bool:
        """Report a limit the exception shows; False when it shows none."""
        found = _limit_of(exc)
        if found is None:
            return False
        self.emit(event="limit", limit=found[0], message=found[1], key=key)
        return True


def _prepare(processes: int) -> None:
    """Lower the process limit, fence off modules, and load NumPy for the learner."""
    try:
        import resource

        # Counted inside this sandbox's user namespace; the parent set the outer limit.
        resource.setrlimit(resource.RLIMIT_NPROC, (processes, processes))
    except (ImportError, ValueError, OSError):
        pass
    for stream in (sys.stdout, sys.stderr):
        stream.reconfigure(encoding="utf-8", errors="backslashreplace")  # type: ignore[union-attr]
    sys.path.insert(0, NUMPY_DIR)
    sys.meta_path.insert(0, _Refuse())  # type: ignore[arg-type]
    for name in list(sys.modules):
        if name.partition(".")[0] in BLOCKED_MODULES:
            del sys.modules[name]
    import numpy  # noqa: F401  (loaded once, after the hook)


def _load(code: str, channel: Channel) -> dict[str, Any] | None:
    namespace: dict[str, Any] = {"__name__": "solution", "__file__": SOLUTION_FILENAME}
    channel.emit(event="loading")
    try:
        compiled = compile(code, SOLUTION_FILENAME, "exec", dont_inherit=True)
        exec(compiled, namespace)  # inside the sandbox: this is what it is for
    except BaseException as exc:
        if not channel.stopped(exc, None):
            channel.emit(event="load_error", message=describe(exc))
        return None
    channel.emit(event="loaded")
    return namespace


def _call(namespace: dict[str, Any], call: dict[str, Any], channel: Channel) -> bool:
    """Make one call and report it; False when a limit stopped the run."""
    key = call["key"]
    channel.emit(event="call", key=key)
    function = namespace.get(call["function"])
    if not callable(function):
        error = f"NameError: the code defines no function named {call['function']!r}"
        channel.emit(event="returned", key=key, error=error)
        return True
    try:
        args = [decode(arg) for arg in call["args"]]
        kwargs = {name: decode(arg) for name, arg in call["kwargs"].items()}
        encoded = encode_returned(function(*args, **kwargs))
    except BaseException as exc:
        if channel.stopped(exc, key):
            return False
        channel.emit(event="returned", key=key, error=describe(exc))
    else:
        channel.emit(event="returned", key=key, value=encoded)
    return True


def main(argv: list[str]) -> None:
    channel = Channel(int(argv[1]))
    request = json.loads(sys.stdin.buffer.read().decode("utf-8"))
    sys.stdin.close()
    _prepare(int(argv[2]))
    namespace = _load(request["code"], channel)
    if namespace is not None:
        for call in request["calls"]:
            if not _call(namespace, call, channel):
                break
    channel.emit(event="done")
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(0)  # threads the code left running do not hold the run open


if __name__ == "__main__":
    main(sys.argv)

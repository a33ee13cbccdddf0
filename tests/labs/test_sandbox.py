"""The lab sandbox: the value codec, the strict reading of what comes back, availability,
and ordinary submissions through the real sandbox (marker ``sandbox``)."""

from __future__ import annotations

import json
import math
import os
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from labs import runner as codec
from labs import sandbox
from labs.sandbox import answer, bwrap, mounts, seccomp
from labs.spec import Call, Returned
from tests.labs import require_sandbox

# --- the codec ------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        None,
        True,
        0,
        -(10**30),
        1.5,
        np.float64(2.25),
        np.arange(12.0).reshape(3, 4),
        np.array([[True, False]]),
        np.zeros((0, 3)),
        (np.ones((2, 2)), 0.5),
        [1, (2.0, None)],
    ],
)
def test_values_cross_the_boundary_unchanged(value):
    back = codec.decode(json.loads(json.dumps(codec.encode(value))))
    assert type(back) is (type(value) if not isinstance(value, np.generic) else float)
    if isinstance(value, np.ndarray):
        assert back.dtype == value.dtype and back.shape == value.shape
        np.testing.assert_array_equal(back, value)
        assert back.flags.writeable
    elif isinstance(value, tuple):
        np.testing.assert_array_equal(back[0], value[0])
        assert back[1] == value[1]
    else:
        assert back == value


def test_nan_and_infinities_are_values_and_arrays_keep_their_dtype():
    back = codec.decode(codec.encode(np.array([np.nan, np.inf, -np.inf], dtype=np.float32)))
    assert back.dtype == np.float32 and np.isnan(back[0]) and back[1] == np.inf
    assert back[2] == -np.inf
    assert math.isnan(codec.decode(codec.encode(float("nan"))))
    for dtype in (np.int64, np.int32, np.uint8, np.float16, np.float64, np.bool_):
        value = np.arange(6).reshape(2, 3).astype(dtype)
        back = codec.decode(json.loads(json.dumps(codec.encode(value))))
        assert back.dtype == dtype and np.array_equal(back, value)
    big_endian = np.arange(3, dtype=">f8")
    assert codec.decode(codec.encode(big_endian)).tolist() == [0.0, 1.0, 2.0]
    assert codec.decode(codec.encode(np.int64(7))) == 7


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        ("done", "str"),
        ({"a": 1}, "dict"),
        (np.array(["x"]), "ndarray"),
        (np.array([1 + 2j]), "ndarray"),
        ({1, 2}, "set"),
        (np.zeros(codec.MAX_ELEMENTS + 1), "ndarray"),
    ],
)
def test_a_returned_value_that_may_not_cross_is_named_by_its_type(value, kind):
    back = codec.decode(json.loads(json.dumps(codec.encode_returned(value))))
    assert isinstance(back, codec.Foreign) and back.kind == kind
    assert len(back.text) <= codec.MAX_FOREIGN_CHARS
    if kind == "str":
        assert back.text == "'done'"


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ({"a": 1}, "a dict; expected an array"),
        (np.array(["x"]), "dtype <U1"),
        (np.array([1 + 2j]), "dtype complex128"),
        (np.zeros(codec.MAX_ELEMENTS + 1), "at most 8 dimensions"),
        (((((1,),),),), "nested more than 3 deep"),
        (tuple(range(codec.MAX_ITEMS + 1)), "at most 64"),
        (10**50, "more than 40 digits"),
        ("text", "a str"),
    ],
)
def test_values_that_may_not_cross_are_named(value, words):
    with pytest.raises(codec.EncodingError, match=words.replace("(", r"\(")):
        codec.encode(value)


GOOD = codec.encode(np.ones((2, 2)))


@pytest.mark.parametrize(
    "data",
    [
        [],
        {"t": "pickle", "v": "gASV"},
        {**GOOD, "dtype": "object"},
        {**GOOD, "dtype": "<f8"},
        {**GOOD, "shape": [2, 3]},
        {**GOOD, "shape": [-1, -4]},
        {**GOOD, "shape": [10**7, 10**7]},
        {**GOOD, "shape": [1] * 9},
        {**GOOD, "data": "***"},
        {**GOOD, "extra": 1},
        {"t": "foreign", "type": 3, "text": ""},
        {"t": "foreign", "type": "str", "text": "x" * 500},
        {"t": "int", "v": 1.5},
        {"t": "int", "v": True},
        {"t": "float", "v": 1.5},
        {"t": "float", "v": "0x1p99999"},
        {"t": "bool", "v": 1},
        {"t": "none", "v": None},
        {"t": "tuple", "items": [{"t": "tuple", "items": [{"t": "tuple", "items": [GOOD]}]}]}
        | {
            "items": [
                {"t": "tuple", "items": [{"t": "tuple", "items": [{"t": "tuple", "items": []}]}]}
            ]
        },
    ],
)
def test_malformed_values_are_refused(data):
    with pytest.raises(codec.EncodingError):
        codec.decode(data)


# --- reading the result channel -------------------------------------------------

CALLS = [Call("a", "f"), Call("b", "f")]


def _line(**event) -> bytes:
    return json.dumps(event).encode() + b"\n"


def _parse(results: bytes, *, killed_for=None, returncode=0, output=b""):
    run = bwrap.Run(
        output=bytearray(output),
        results=bytearray(results),
        killed_for=killed_for,
        returncode=returncode,
    )
    return answer.parse(run, CALLS, sandbox.Limits(), 0.25)


ONE = codec.encode(1)
LOADED = _line(event="loading") + _line(event="loaded")


def test_an_honest_answer_is_read_in_full():
    result = _parse(
        _line(event="loading")
        + _line(event="loaded")
        + _line(event="call", key="a")
        + _line(event="returned", key="a", value=ONE)
        + _line(event="call", key="b")
        + _line(event="returned", key="b", error="ValueError: no")
        + _line(event="done"),
        output=b"printed\n",
    )
    assert result.failure is None and result.limit is None
    assert result.returned == {"a": Returned(value=1), "b": Returned(error="ValueError: no")}
    assert result.output == "printed\n" and result.duration_ms == 250


@pytest.mark.parametrize(
    "results",
    [
        b"not json\n",
        b"[1]\n",
        _line(event="call", key="a"),  # before loading
        _line(event="loading")
        + _line(event="loaded")
        + _line(event="returned", key="a", value=ONE),  # no call
        _line(event="loading")
        + _line(event="loaded")
        + _line(event="call", key="zz"),  # unknown key
        _line(event="loading")
        + _line(event="loaded")
        + _line(event="call", key="a")
        + _line(event="returned", key="a", value=ONE)
        + _line(event="call", key="a"),  # twice
        _line(event="loading")
        + _line(event="loaded")
        + _line(event="call", key="a")
        + _line(event="returned", key="a"),
        _line(event="loading")
        + _line(event="loaded")
        + _line(event="call", key="a")
        + _line(event="returned", key="a", value={"t": "array", "dtype": "object"}),
        _line(event="loading")
        + _line(event="loaded")
        + _line(event="done")
        + _line(event="loading")
        + _line(event="loaded"),
        _line(event="loading")
        + _line(event="loaded")
        + b'{"event": "done"',  # cut short with nobody killing it
        _line(event="loaded", extra=1),
        b"\xff\xfe\n",
    ],
)
def test_anything_malformed_is_a_failure_never_an_exception(results):
    result = _parse(results)
    assert result.failure and "answer" in result.failure
    assert result.returned == {}


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300), st.sampled_from([None, "time", "output"]), st.integers(-20, 300))
def test_no_answer_makes_the_reader_raise(results, killed_for, returncode):
    result = _parse(results, killed_for=killed_for, returncode=returncode)
    assert result.failure or result.limit or result.load_error or result.returned == {}


def test_a_run_ended_by_a_signal_mid_call_names_the_call():
    result = _parse(
        LOADED + _line(event="call", key="a"),
        returncode=-11,
    )
    assert result.returned == {"a": Returned(error="The process ended abruptly: signal SIGSEGV.")}
    assert result.failure is None


def test_limits_are_named_in_words():
    cpu = _parse(
        LOADED + _line(event="call", key="a"),
        returncode=-24,
    )
    assert cpu.limit == "time" and "s of CPU time" in (cpu.limit_message or "")
    wall = _parse(
        LOADED + b'{"event": "ca',
        killed_for="time",
        returncode=-9,
    )
    assert wall.limit == "time" and "Stopped after" in (wall.limit_message or "")
    memory = _parse(
        _line(event="loading")
        + _line(event="loaded")
        + _line(event="limit", limit="memory", key="a")
    )
    assert memory.limit == "memory" and "MB of memory" in (memory.limit_message or "")
    big = _parse(b"", killed_for="results", returncode=-9)
    assert big.limit == "output" and "returned more data" in (big.limit_message or "")


def test_a_kill_sooner_than_the_cpu_limit_is_a_crash_not_a_limit():
    early = _parse(LOADED + _line(event="call", key="a"), returncode=-9)
    assert early.limit is None
    assert early.returned["a"] == Returned(error="The process ended abruptly: signal SIGKILL.")


def test_code_that_ends_the_process_while_loading_is_a_load_error():
    result = _parse(_line(event="loading"), returncode=0)
    assert result.load_error == "The code ended the process while loading: exit status 0."
    assert result.failure is None


def test_a_sandbox_that_never_loaded_is_a_failure():
    result = _parse(b"", returncode=1, output=b"bwrap: No permissions to create new namespace")
    assert result.failure and "No permissions to create new namespace" in result.failure


# --- availability -----------------------------------------------------------------


@pytest.fixture
def fresh_check():
    """No cached answer before the test, and none of the test's left after it."""
    sandbox._checked.update(at=-1e9, reason=None)
    yield
    sandbox._checked.update(at=-1e9, reason=None)


def test_without_bwrap_nothing_runs(monkeypatch, fresh_check):
    monkeypatch.setattr(sandbox.shutil, "which", lambda name, **kw: None)

    def forbidden(*args, **kwargs):
        raise AssertionError("nothing may start without a sandbox")

    monkeypatch.setattr(subprocess, "Popen", forbidden)
    assert sandbox.unavailable() == "bubblewrap (bwrap) is not installed"
    with pytest.raises(sandbox.SandboxUnavailable, match="bwrap"):
        sandbox.run("def f():\n    return 1\n", [Call("a", "f")])


def test_a_sandbox_that_cannot_start_is_unavailable_with_the_reason(monkeypatch, fresh_check):
    require_sandbox()
    monkeypatch.setenv("STUDY_LAB_PYTHON", "/nonexistent/python3")
    sandbox._checked["at"] = -1e9
    reason = sandbox.unavailable()
    assert reason and reason.startswith("the sandbox did not start")
    assert "/nonexistent/python3" in reason
    assert sandbox.unavailable() == reason  # cached: no second start


@pytest.mark.parametrize(
    "said, reason",
    [
        ("bwrap: setting up uid map: Permission denied", "user namespaces are disabled"),
        ("bwrap: No permissions to create new namespace", "user namespaces are disabled"),
        (
            "/sandbox/python/bin/python3.11: can't open file '/sandbox/runner.py': "
            "[Errno 13] Permission denied",
            "the sandbox did not start",
        ),
        ("bwrap: Can't find source path /srv/x: Permission denied", "the sandbox did not start"),
    ],
)
def test_only_bwrap_refusing_its_namespaces_is_called_so(monkeypatch, fresh_check, said, reason):
    monkeypatch.setattr(sandbox.shutil, "which", lambda name, **kw: "/usr/bin/bwrap")
    monkeypatch.setattr(sandbox, "interpreter", lambda: Path("/usr/bin/python3"))
    refused = bwrap.Run(output=bytearray(f"{said}\n".encode()), returncode=1)
    monkeypatch.setattr(sandbox, "start", lambda *args, **kwargs: (refused, 0.1))
    found = sandbox.unavailable()
    assert found is not None and found.startswith(reason) and said in found


def test_the_runtime_directory_copies_what_other_users_may_not_read(tmp_path):
    # The sandbox of a service run as root reads it as another uid: a file of a checkout
    # made under umask 077 is copied and opened to them, a readable one linked.
    private, public = tmp_path / "private.py", tmp_path / "public.py"
    for path, mode in ((private, 0o600), (public, 0o644)):
        path.write_text("x = 1\n")
        path.chmod(mode)
    for path in (private, public):
        mounts._link_or_copy(str(path), str(tmp_path / f"in-{path.name}"))
    copied, linked = (tmp_path / "in-private.py").stat(), (tmp_path / "in-public.py").stat()
    assert copied.st_ino != private.stat().st_ino and copied.st_mode & 0o777 == 0o644
    assert private.stat().st_mode & 0o777 == 0o600  # the source keeps its own mode
    assert linked.st_ino == public.stat().st_ino


def _anyone_enters(directory: Path) -> bool:
    return all(path.stat().st_mode & stat.S_IXOTH for path in (directory, *directory.parents))


def _linked_for_anyone(source: Path, target: Path) -> None:
    # As the sandbox's runtime directory is made: hard links, or copies of the files other
    # users may not read, in directories anyone may enter.
    skip = shutil.ignore_patterns("__pycache__")
    shutil.copytree(source, target, copy_function=mounts._link_or_copy, ignore=skip)
    for path in [target, *target.rglob("*")]:
        if path.is_dir():
            path.chmod(0o755)


@pytest.fixture
def code_anyone_reads():
    """Where another user finds the project's packages and the installed ones: the checkout
    (and its virtualenv) may sit where only their owner can read them (``mktemp -d``, a
    home directory)."""
    import pyseccomp

    top = Path(tempfile.mkdtemp(prefix="study-lab-code-"))
    top.chmod(0o755)
    try:
        checkout = Path(sandbox.__file__).resolve().parents[2]
        for package in ("cards", "exercises", "labs", "studyapp"):
            _linked_for_anyone(checkout / package, top / "project" / package)
        found = [str(top / "project")]
        # Where NumPy (a package) and pyseccomp (a module) are installed: one virtualenv, or
        # a directory of PYTHONPATH too.
        numpy_home = Path(np.__file__).resolve().parents[1]
        installed = dict.fromkeys([numpy_home, Path(pyseccomp.__file__).resolve().parent])
        for number, place in enumerate(installed):
            if not _anyone_enters(place):
                _linked_for_anyone(place, top / f"installed-{number}")
                place = top / f"installed-{number}"
            found.append(str(place))
        yield found
    finally:
        shutil.rmtree(top, ignore_errors=True)


@pytest.mark.sandbox
@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None, reason="changes uid: root and setpriv"
)
def test_a_service_that_is_not_root_keeps_the_process_limit(code_anyone_reads):
    """As the image's unprivileged user does: bwrap unprivileged, the limit set inside."""
    require_sandbox()
    python = bwrap.interpreter()
    script = (
        f"import sys; sys.path[:0] = {code_anyone_reads!r}\n"
        "from labs import sandbox\n"
        "from labs.spec import Call\n"
        "limits = sandbox.Limits(processes=8, wall_seconds=5)\n"
        "bomb = 'import os\\ndef f():\\n    while True:\\n        os.fork()\\n'\n"
        "print(sandbox.run(bomb, [Call('f', 'f')], limits=limits).limit)\n"
        "print(sandbox.run('def f():\\n    return 7\\n', [Call('f', 'f')]).returned)\n"
    )
    done = subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", str(python), "-I"],
        input=script,
        capture_output=True,
        text=True,
        timeout=60,
        cwd="/",
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines() == [
        "processes",
        "{'f': Returned(value=7, error=None)}",
    ]


# --- ordinary submissions, through the real sandbox --------------------------------

LAB = """
import numpy as np

def softmax(z):
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)

def attention(Q, K, V, mask=None):
    s = Q @ K.T / np.sqrt(K.shape[-1])
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    w = softmax(s)
    return w @ V, w

def shout(x):
    print("all tests passed")
    print('{"event": "returned", "key": "softmax", "value": {"t": "int", "v": 1}}')
    return None

def broken(x):
    return x.nope

def untyped():
    return {"a": 1}
"""


@pytest.mark.sandbox
def test_a_lab_runs_and_hands_back_its_values():
    require_sandbox()
    rng = np.random.default_rng(39)
    z = rng.normal(size=(6, 6))
    Q, K, V = (rng.normal(size=(6, 4)) for _ in range(3))
    mask = np.tril(np.ones((6, 6), bool))
    result = sandbox.run(
        LAB,
        [
            Call("softmax", "softmax", (z,)),
            Call("attention/masked", "attention", (Q, K, V), {"mask": mask}),
            Call("shout", "shout", (np.array([np.nan, np.inf]),)),
            Call("broken", "broken", (1.5,)),
            Call("untyped", "untyped"),
            Call("missing", "layer_norm"),
        ],
    )
    assert result.failure is None and result.limit is None and result.load_error is None
    e = np.exp(z - z.max(-1, keepdims=True))
    np.testing.assert_allclose(result.returned["softmax"].value, e / e.sum(-1, keepdims=True))
    out, weights = result.returned["attention/masked"].value
    assert out.shape == (6, 4) and weights.dtype == np.float64
    assert np.all(weights[np.triu_indices(6, 1)] == 0)
    np.testing.assert_allclose(weights.sum(-1), 1)
    # What the code prints is output, never a result, whatever it looks like.
    assert result.returned["shout"] == Returned(value=None)
    assert "all tests passed" in result.output and '"event"' in result.output
    assert result.returned["broken"].error == (
        "AttributeError: 'float' object has no attribute 'nope' (line 22)"
    )
    untyped = result.returned["untyped"]
    assert untyped.error is None and untyped.value == codec.Foreign(
        "dict", "a dict; expected an array, a number, a bool, None or a tuple of those"
    )
    assert result.returned["missing"].error == (
        "NameError: the code defines no function named 'layer_norm'"
    )
    assert 0 < result.duration_ms < 10_000


@pytest.mark.sandbox
@pytest.mark.parametrize(
    ("code", "message"),
    [
        ("def f(:\n    pass\n", "SyntaxError: invalid syntax (line 1)"),
        ("import numpy as np\n\nx = undefined_name\n", "NameError: name 'undefined_name'"),
        ("import scipy\n", "ModuleNotFoundError: No module named 'scipy' (line 1)"),
        ("import django\n", "ModuleNotFoundError: No module named 'django' (line 1)"),
        ("import socket\n", "ImportError: import of socket is not allowed in a lab (line 1)"),
    ],
)
def test_code_that_does_not_load_says_why_and_where(code, message):
    require_sandbox()
    result = sandbox.run(code, [Call("a", "f")])
    assert result.load_error is not None and result.load_error.startswith(message)
    assert result.returned == {} and result.failure is None


@pytest.mark.sandbox
def test_output_keeps_unicode_and_stderr():
    require_sandbox()
    code = "import sys\nprint('softmax → ✓')\nprint('warned', file=sys.stderr)\ndef f():\n    return 1\n"
    result = sandbox.run(code, [Call("a", "f")])
    assert result.returned == {"a": Returned(value=1)}
    assert "softmax → ✓" in result.output and "warned" in result.output


# --- the seccomp filter -----------------------------------------------------------


def test_every_denied_call_is_a_real_system_call_named_once():
    import pyseccomp

    names = seccomp.denied_calls()
    assert len(names) == len(set(names))
    unknown = [name for name in names if pyseccomp.resolve_syscall(pyseccomp.Arch.X86_64, name) < 0]
    assert unknown == []  # a typo would leave the call allowed


def test_the_filter_refuses_with_eperm_and_kills_other_architectures():
    seccomp.program.cache_clear()
    compiled = seccomp.program()
    # struct sock_filter, 8 bytes each: {u16 code, u8 jt, u8 jf, u32 k}, little-endian.
    instructions = [compiled[i : i + 8] for i in range(0, len(compiled), 8)]
    assert len(compiled) % 8 == 0 and len(instructions) > len(seccomp.denied_calls())
    ret = (0x06).to_bytes(2, "little") + b"\0\0"  # BPF_RET | BPF_K
    assert ret + (0x80000000).to_bytes(4, "little") in instructions  # SECCOMP_RET_KILL_PROCESS
    assert ret + (0x00050000 | 1).to_bytes(4, "little") in instructions  # RET_ERRNO | EPERM
    assert ret + (0x7FFF0000).to_bytes(4, "little") in instructions  # RET_ALLOW, the default
    fd = seccomp.program_fd()
    try:
        assert os.read(fd, len(compiled) + 1) == compiled
    finally:
        os.close(fd)


def test_without_libseccomp_there_is_no_sandbox(monkeypatch, fresh_check):
    import sys

    seccomp.program.cache_clear()
    monkeypatch.setitem(sys.modules, "pyseccomp", None)  # import raises ImportError

    def forbidden(*args, **kwargs):
        raise AssertionError("nothing may start without the filter")

    monkeypatch.setattr(subprocess, "Popen", forbidden)
    try:
        reason = sandbox.unavailable() if shutil.which("bwrap") else None
        if reason is not None:
            assert reason.startswith("libseccomp is not available")
        with pytest.raises(sandbox.SandboxUnavailable, match=r"libseccomp|bubblewrap"):
            sandbox.run("def f():\n    return 1\n", [Call("a", "f")])
    finally:
        seccomp.program.cache_clear()

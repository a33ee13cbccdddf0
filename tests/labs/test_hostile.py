"""Hostile submissions, each through the real sandbox: every one ends in a result the
service judges as not passed, with the limit or failure named; nothing of the service
is read, reached or left behind; and the next ordinary run works.

Where the runner's import hook refuses a module, a second case removes the hook first
(as hostile code can): the sandbox must hold without it.
"""

from __future__ import annotations

import dataclasses
import os
import secrets
from pathlib import Path

import pytest
from django.conf import settings

from labs import sandbox
from labs.spec import Call, Returned, RunResult
from tests.labs import require_sandbox

pytestmark = pytest.mark.sandbox

LIMITS = sandbox.Limits(
    cpu_seconds=2,
    wall_seconds=4.0,
    memory_bytes=384 * 2**20,
    processes=16,
    file_bytes=2 * 2**20,
    output_bytes=16 * 1024,
)
CALL = [Call("f", "f")]
AS_ROOT = os.geteuid() == 0
UNHOOK = (
    "import sys\nsys.meta_path[:] = [m for m in sys.meta_path if type(m).__name__ != '_Refuse']\n"
)


def run(code: str, calls=CALL, limits: sandbox.Limits = LIMITS) -> RunResult:
    return sandbox.run(code, calls, limits=limits)


def not_passed(result: RunResult) -> bool:
    """What the judge refuses: a failure, a limit, a load error, or a call without a value."""
    return bool(
        result.failure
        or result.limit
        or result.load_error
        or any(result.returned.get(c.key, Returned(error="missing")).error for c in CALL)
    )


@pytest.fixture(autouse=True, scope="module")
def _uids_of_our_own():
    """Throwaway uids from a range of this test process's own: sandboxes that other test
    processes on the machine run meanwhile are not this module's to count."""
    kept = os.environ.get("STUDY_LAB_UID_BASE")
    os.environ["STUDY_LAB_UID_BASE"] = str(1_800_000_000 + (os.getpid() % 3_000) * 100_000)
    yield
    if kept is None:
        del os.environ["STUDY_LAB_UID_BASE"]
    else:
        os.environ["STUDY_LAB_UID_BASE"] = kept


def sandbox_processes() -> list[int]:
    """Processes still running with a sandbox's throwaway uid, or still running bwrap.

    Zombies do not count: bwrap's pid 1 exits after bwrap has reported, and waits, dead,
    for the host's init to reap it.
    """
    base = int(os.environ.get("STUDY_LAB_UID_BASE", 1_800_000_000))
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
        except OSError:
            continue
        uid = int(status.split("\nUid:")[1].split()[0])
        if "\nState:\tZ" in status:
            continue
        # As root every run, bwrap included, has a throwaway uid from this worker's range;
        # otherwise bwrap runs as the service's own user and is known by its name.
        own_run = base <= uid < base + 100_000
        if own_run or (not AS_ROOT and status.startswith("Name:\tbwrap")):
            found.append(int(entry.name))
    return found


@pytest.fixture(autouse=True)
def then_a_normal_run_works():
    require_sandbox()
    yield
    assert sandbox_processes() == [], "a sandbox process outlived its run"
    result = run("def f():\n    return 41 + 1\n")
    assert result.returned == {"f": Returned(value=42)}, result
    assert result.failure is None and result.limit is None


def test_a_fork_bomb_meets_the_process_limit():
    result = run("import os\ndef f():\n    while True:\n        os.fork()\n")
    assert result.limit == "processes", result
    assert "more than 16 processes" in (result.limit_message or "")
    assert not_passed(result)


def test_a_fork_bomb_that_ignores_failures_ends_on_time():
    code = (
        "import os\ndef f():\n    while True:\n        try:\n            os.fork()\n"
        "        except OSError:\n            pass\n"
    )
    result = run(code)
    assert result.limit == "time" and not_passed(result), result


def test_a_thread_bomb_meets_the_process_limit():
    code = (
        "import threading, time\ndef f():\n    for _ in range(1000):\n"
        "        threading.Thread(target=time.sleep, args=(60,)).start()\n"
    )
    result = run(code)
    assert result.limit == "processes" and not_passed(result), result


@pytest.mark.parametrize(
    "code",
    [
        "def f():\n    hoard = []\n    while True:\n        hoard.append(bytearray(10**7))\n",
        "import numpy as np\ndef f():\n    return np.ones((10**5, 10**5))\n",
        "hoard = ' ' * 10**10\n",
    ],
)
def test_a_memory_bomb_meets_the_memory_limit(code):
    result = run(code)
    assert result.limit == "memory", result
    assert result.limit_message == "Stopped: the code used more than 384 MB of memory."


def test_an_infinite_loop_stops_on_cpu_time():
    # Wall time to spare: on a busy machine CPU time accrues slower than the clock.
    limits = dataclasses.replace(LIMITS, wall_seconds=15.0)
    code = "print('before the loop')\ndef f():\n    while True:\n        pass\n"
    result = run(code, limits=limits)
    # The CPU limit's message: the wall limit's would read "Stopped after 15 s:".
    assert result.limit == "time", result
    assert (result.limit_message or "").startswith("Stopped after 2 s of CPU time")
    assert result.returned == {}
    # What it printed before the limit stopped it still reaches the learner.
    assert "before the loop" in result.output


def test_sleeping_forever_stops_on_wall_time():
    # A minute is for ever here, and a failure guard: were the 4 s limit not to stop the
    # call, it would come back with its value after the minute.
    result = run("import time\ndef f():\n    time.sleep(60)\n    return 1\n")
    assert result.limit == "time", result
    assert (result.limit_message or "").startswith("Stopped after 4 s:")
    assert result.returned == {}  # stopped asleep
    assert result.duration_ms >= 4000  # it had its 4 s


def test_the_service_files_and_environment_are_out_of_sight(monkeypatch, tmp_path):
    canary = f"canary-{secrets.token_hex(8)}"
    monkeypatch.setenv("STUDY_CANARY", canary)
    secret_file = tmp_path / ".env"
    secret_file.write_text(f"DJANGO_SECRET_KEY={canary}\n")
    targets = [
        settings.BASE_DIR / "studyapp" / "settings.py",
        settings.BASE_DIR / ".env",
        settings.BASE_DIR / "db.sqlite3",
        Path(settings.VAR_DIR),
        secret_file,
        Path("/etc/passwd"),
        Path("/etc/postgresql"),
        Path(f"/proc/{os.getpid()}/environ"),
        Path("/proc/1/environ"),
        Path("/proc/self/environ"),
        Path("/root"),
        Path("/work"),
    ]
    code = (
        "import os\n"
        "def f():\n"
        "    seen = []\n"
        f"    for path in {[str(t) for t in targets]!r}:\n"
        "        try:\n"
        "            if os.path.isdir(path):\n"
        "                print(path, os.listdir(path))\n"
        "            else:\n"
        "                print(path, open(path, 'rb').read()[:4000])\n"
        "            seen.append(path)\n"
        "        except OSError as exc:\n"
        "            print(path, type(exc).__name__)\n"
        "    for pid in os.listdir('/proc'):\n"
        "        if pid.isdigit():\n"
        "            print(pid, open(f'/proc/{pid}/environ', 'rb').read(), open(f'/proc/{pid}/cmdline', 'rb').read())\n"
        "    print(dict(os.environ))\n"
        "    print('readable:', seen)\n"
        "    return len(seen)\n"
    )
    result = run(code)
    # Only the sandbox's own, empty, environ files are readable; nothing else exists.
    assert result.returned["f"].value == 2, result
    assert "readable: ['/proc/1/environ', '/proc/self/environ']" in result.output
    assert canary not in result.output
    assert "DJANGO" not in result.output and "DATABASE_URL" not in result.output
    assert "settings.py FileNotFoundError" in result.output
    assert "runner.py" in result.output  # the sandbox's own processes, and no others
    assert str(os.getpid()) + " " not in result.output.split("environ")[-1]


@pytest.mark.parametrize("unhook", ["", UNHOOK])
def test_no_network_at_all(unhook):
    code = (
        unhook + "import socket\n"
        "def f():\n"
        "    reached = []\n"
        "    for host, port in [('127.0.0.1', 5432), ('127.0.0.1', 6379), ('127.0.0.1', 8000),\n"
        "                       ('::1', 5432), ('1.1.1.1', 53), ('10.0.0.1', 80)]:\n"
        "        try:\n"
        "            socket.create_connection((host, port), timeout=1).close()\n"
        "            reached.append(port)\n"
        "        except OSError as exc:\n"
        "            print(host, port, exc)\n"
        "    try:\n"
        "        print([name for _, name in socket.if_nameindex()])\n"
        "    except OSError as exc:\n"
        "        print('interfaces:', exc)\n"
        "    return tuple(reached)\n"
    )
    result = run(code)
    if unhook:
        # No socket but AF_UNIX can even be made (the seccomp filter), and the network
        # namespace has no route anyway.
        assert result.returned["f"].value == (), result
        assert result.output.count("Operation not permitted") == 7, result.output
    else:
        assert result.load_error == (
            "ImportError: import of socket is not allowed in a lab (line 1)"
        )


def test_nothing_outside_tmp_can_be_written():
    project_file = settings.BASE_DIR / f"written-{secrets.token_hex(4)}"
    places = [str(project_file), "/x", "/usr/lib/x", "/sandbox/lib/numpy/x", "/sandbox/x"]
    places += ["/dev/x", "/dev/shm/x", "/proc/x", "/etc/x", "/var/tmp/x"]
    code = (
        "import os\n"
        "def f():\n"
        "    wrote = []\n"
        f"    for path in {places!r}:\n"
        "        try:\n"
        "            os.makedirs(os.path.dirname(path), exist_ok=True)\n"
        "            with open(path, 'w') as handle:\n"
        "                handle.write('x')\n"
        "            wrote.append(path)\n"
        "        except OSError:\n"
        "            pass\n"
        "    print(wrote)\n"
        "    return len(wrote)\n"
    )
    result = run(code)
    # Inside, /tmp is the run's own: a checkout under /tmp (as CI clones one) is no
    # exception, its path there names the private tmpfs, not the project.
    allowed = 1 if str(project_file).startswith("/tmp/") else 0
    assert result.returned["f"].value == allowed, result.output
    assert not project_file.exists()


def test_a_large_file_meets_the_file_size_limit():
    result = run("def f():\n    open('/tmp/big', 'wb').write(b'x' * 10**8)\n")
    assert result.limit == "file size", result
    assert result.limit_message == "Stopped: the code wrote more than 2 MB to files."


def test_many_files_fill_tmp_and_stop():
    code = (
        "def f():\n    for i in range(100):\n"
        "        open(f'/tmp/part{i}', 'wb').write(b'x' * 10**6)\n"
    )
    result = run(code)
    assert result.limit == "file size", result


def test_100_mb_of_output_stops_at_the_output_limit():
    # The wall limit is a failure guard here: a run the output limit did not stop at once
    # (the parent reading no more of it, but not killing it) would last until then.
    limits = dataclasses.replace(LIMITS, wall_seconds=60.0)
    code = "import sys\ndef f():\n    for _ in range(100):\n        print('x' * 10**6)\n"
    result = run(code, limits=limits)
    assert result.limit == "output", result
    assert len(result.output) <= LIMITS.output_bytes
    assert result.returned == {}
    assert result.duration_ms < limits.wall_seconds * 1000, "stopped by the wall limit"


def test_signals_reach_nothing_outside():
    code = (
        "import os\n"
        "def f():\n"
        "    missed = []\n"
        f"    for pid in (os.getppid(), 1, {os.getpid()}, {os.getppid()}, -1):\n"
        "        try:\n"
        "            os.kill(pid, 9)\n"
        "        except OSError as exc:\n"
        "            missed.append(type(exc).__name__)\n"
        "    return len(missed)\n"
    )
    result = run(code)
    # Its parent is the sandbox's pid 1, which ignores the signal; the service's pids do
    # not exist in its pid namespace, and kill(-1) finds nothing else to hit.
    assert result.returned == {"f": Returned(value=3)}, result
    assert os.getppid() > 1  # the test process and its parent live on


@pytest.mark.parametrize("unhook", ["", UNHOOK])
def test_ctypes_is_refused_and_crashes_only_itself(unhook):
    code = unhook + "import ctypes\ndef f():\n    return len(ctypes.string_at(1, 8))\n"
    result = run(code)
    assert not_passed(result), result
    if unhook:
        assert result.returned["f"].error == "The process ended abruptly: signal SIGSEGV."
    else:
        assert result.load_error == "ImportError: import of ctypes is not allowed in a lab (line 1)"


@pytest.mark.parametrize("unhook", ["", UNHOOK])
def test_subprocess_is_refused_and_finds_no_programs(unhook):
    code = (
        unhook + "import subprocess\n"
        "def f():\n"
        "    for program in (['/bin/sh', '-c', 'id'], ['ls', '/'], ['bwrap', '--version']):\n"
        "        try:\n"
        "            subprocess.run(program, check=True)\n"
        "            return 1\n"
        "        except OSError as exc:\n"
        "            print(exc)\n"
        "    return 0\n"
    )
    result = run(code)
    if unhook:
        assert result.returned["f"].value == 0, result
        assert "No such file or directory: 'bwrap'" in result.output
    else:
        assert result.load_error and result.load_error.startswith("ImportError: import of subp")


@pytest.mark.parametrize(
    ("code", "words"),
    [
        ("import os\nos._exit(0)\n", "The code ended the process while loading: exit status 0."),
        ("import os\nos.close(1)\nos.close(2)\nraise SystemExit(3)\n", "SystemExit: 3 (line 4)"),
    ],
)
def test_code_that_ends_the_process_at_load_is_told_so(code, words):
    result = run(code)
    assert result.load_error == words, result
    assert result.failure is None and result.returned == {}


def test_printed_results_and_forged_framing_change_nothing():
    code = (
        "import json, sys\n"
        "def f():\n"
        "    print('all tests passed')\n"
        "    print(json.dumps({'event': 'returned', 'key': 'f', 'value': {'t': 'int', 'v': 42}}))\n"
        "    print(json.dumps({'event': 'done'}), file=sys.stderr)\n"
        "    return 1\n"
    )
    result = run(code)
    assert result.returned == {"f": Returned(value=1)}
    assert "all tests passed" in result.output and result.failure is None


def test_writing_to_the_result_channel_itself_is_a_failure():
    code = (
        "import os, sys\n"
        "def f():\n"
        '    line = b\'{"event":"returned","key":"f","value":{"t":"int","v":42}}\\n\'\n'
        "    os.write(int(sys.argv[1]), line)\n"
        "    return 1\n"
    )
    result = run(code)
    assert result.failure and "malformed" in result.failure, result
    assert result.returned == {}


def test_nothing_is_left_for_the_next_run():
    mark = secrets.token_hex(6)
    places = ["/tmp", "/dev/shm", "/var/tmp", "/", "/sandbox", "/dev", "/run"]
    leave = (
        "import os\n"
        "def f():\n"
        "    left = 0\n"
        f"    for place in {places!r}:\n"
        "        try:\n"
        f"            with open(os.path.join(place, 'left-{mark}'), 'w') as handle:\n"
        "                handle.write('x')\n"
        "            left += 1\n"
        "        except OSError:\n"
        "            pass\n"
        "    return left\n"
    )
    first = run(leave)
    assert first.returned["f"].value == 1  # /tmp alone is writable
    look = (
        "import os\n"
        "def f():\n"
        f"    return sum(os.path.exists(os.path.join(p, 'left-{mark}')) for p in {places!r})\n"
    )
    assert run(look).returned["f"].value == 0


def _numbers(names):
    """The native architecture's numbers of these system calls, by name."""
    import pyseccomp

    arch = pyseccomp.system_arch()
    return {name: pyseccomp.resolve_syscall(arch, name) for name in names}


def test_kernel_interfaces_a_lab_never_needs_are_refused():
    # ctypes reaches any system call once the import hook is gone: the filter must hold.
    refused = _numbers(
        ["ptrace", "keyctl", "add_key", "bpf", "perf_event_open", "userfaultfd",
         "io_uring_setup", "process_vm_readv", "personality", "syslog", "get_mempolicy"]
    )  # fmt: skip
    allowed = _numbers(["getppid"])
    code = UNHOOK + (
        "import ctypes\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "def call(number):\n"
        "    ctypes.set_errno(0)\n"
        "    result = libc.syscall(number, 0, 0, 0, 0, 0)\n"
        "    return (result, ctypes.get_errno())\n"
        "def f(numbers):\n"
        "    return tuple(call(n) for n in numbers)\n"
    )
    numbers = [*refused.values(), *allowed.values()]
    result = run(code, [Call("f", "f", args=(tuple(numbers),))])
    answers = result.returned["f"].value
    assert answers is not None, result
    got = dict(zip([*refused, *allowed], answers, strict=True))
    assert {name: got[name] for name in refused} == {name: (-1, 1) for name in refused}  # EPERM
    assert got["getppid"] == (1, 0)  # bwrap's pid 1, unfiltered


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="the 32-bit entry is x86-64's")
def test_a_call_through_the_32_bit_entry_kills_the_process():
    # mov eax, 20 (getpid on i386); int 0x80; ret -- past a filter written for x86-64's
    # numbers, were it not for the architecture check.
    code = UNHOOK + (
        "import ctypes, mmap\n"
        "page = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)\n"
        "page.write(bytes([0xB8, 20, 0, 0, 0, 0xCD, 0x80, 0xC3]))\n"
        "address = ctypes.addressof(ctypes.c_char.from_buffer(page))\n"
        "entry = ctypes.CFUNCTYPE(ctypes.c_int)(address)\n"
        "def f():\n"
        "    return entry()\n"
    )
    result = run(code)
    assert not_passed(result), result
    assert result.returned["f"].error == "The process ended abruptly: signal SIGSYS.", result

"""The sandbox's inner walls, each tried from inside a real run (marker ``sandbox``):
memory a run could hold beyond its address space is refused, sockets other than
AF_UNIX are refused family by family, the whole run's memory is bounded by its cgroup
(forked children and tmpfs included), no program but the interpreter exists inside,
and ``/proc/self/mountinfo`` names no path of the checkout or the virtualenv.

Cases that call the kernel directly remove the runner's import hook first, as hostile
code can: the walls must hold without it.
"""

from __future__ import annotations

import errno
import socket
import sys
from pathlib import Path

import pytest
from django.conf import settings

from labs import sandbox
from labs.sandbox import bwrap, cgroup, mounts
from labs.spec import Call, Returned
from tests.labs import require_sandbox

pytestmark = pytest.mark.sandbox

LIMITS = sandbox.Limits(
    cpu_seconds=5, wall_seconds=20.0, memory_bytes=384 * 2**20, processes=16, file_bytes=2**20
)
UNHOOK = (
    "import sys\nsys.meta_path[:] = [m for m in sys.meta_path if type(m).__name__ != '_Refuse']\n"
)
SYSCALL = UNHOOK + (
    "import ctypes\n"
    "libc = ctypes.CDLL(None, use_errno=True)\n"
    "def call(number, *args):\n"
    "    ctypes.set_errno(0)\n"
    "    result = libc.syscall(number, *[ctypes.c_long(a) for a in args])\n"
    "    return (result, ctypes.get_errno())\n"
    "def f(number, args):\n"
    "    return call(number, *args)\n"
)


@pytest.fixture(autouse=True)
def _sandbox():
    require_sandbox()


CALL = (Call("f", "f"),)


def run(code: str, calls=CALL, limits: sandbox.Limits = LIMITS):
    return sandbox.run(code, list(calls), limits=limits)


def number(name: str) -> int:
    import pyseccomp

    return pyseccomp.resolve_syscall(pyseccomp.system_arch(), name)


# --- memory beyond the address space, refused -------------------------------------

IPC_PRIVATE, IPC_CREAT = 0, 0o1000
REFUSED_CALLS = {
    # a 3 GB System V segment, as a hold past the memory limit would ask for
    "shmget": (IPC_PRIVATE, 3 * 2**30, IPC_CREAT | 0o600),
    "shmat": (0, 0, 0),
    "shmctl": (0, 0, 0),
    "msgget": (IPC_PRIVATE, IPC_CREAT | 0o600),
    "msgsnd": (0, 0, 0, 0),
    "semget": (IPC_PRIVATE, 1, IPC_CREAT | 0o600),
    "mq_open": (0, 0, 0, 0),
    "memfd_create": (0, 0),
    "memfd_secret": (0,),
    "io_setup": (128, 0),
    "io_uring_setup": (8, 0),
}


@pytest.mark.parametrize("name", list(REFUSED_CALLS))
def test_memory_a_run_could_hold_outside_its_mappings_is_refused(name):
    result = run(SYSCALL, [Call("f", "f", args=(number(name), REFUSED_CALLS[name]))])
    assert result.returned["f"] == Returned(value=(-1, errno.EPERM)), result


def test_memfd_from_python_is_refused_and_tmp_files_still_work():
    code = (
        "import os\n"
        "def f():\n"
        "    with open('/tmp/x', 'wb') as handle:\n"
        "        handle.write(b'kept')\n"
        "    try:\n"
        "        os.memfd_create('hold')\n"
        "    except PermissionError as exc:\n"
        "        return (open('/tmp/x', 'rb').read() == b'kept', exc.errno)\n"
        "    return (True, 0)\n"
    )
    assert run(code).returned["f"] == Returned(value=(True, errno.EPERM))


# --- sockets: AF_UNIX alone -------------------------------------------------------

FAMILIES = {
    "AF_INET": socket.AF_INET,
    "AF_INET6": socket.AF_INET6,
    "AF_VSOCK": 40,
    "AF_NETLINK": 16,
    "AF_PACKET": 17,
    "AF_KEY": 15,
    "AF_APPLETALK": 5,
    "AF_BLUETOOTH": 31,
    "AF_ALG": 38,
    "AF_XDP": 44,
    "AF_TIPC": 30,
    "AF_CAN": 29,
}
SOCKET = UNHOOK + (
    "import _socket\n"
    "def f(family, kind):\n"
    "    try:\n"
    "        _socket.socket(family, kind).close()\n"
    "        return 0\n"
    "    except OSError as exc:\n"
    "        return exc.errno\n"
    "def pair(family):\n"
    "    try:\n"
    "        for end in _socket.socketpair(family, _socket.SOCK_STREAM):\n"
    "            end.close()\n"
    "        return 0\n"
    "    except OSError as exc:\n"
    "        return exc.errno\n"
)


@pytest.mark.parametrize("family", list(FAMILIES))
def test_every_socket_family_but_unix_is_refused(family):
    calls = [
        Call("stream", "f", args=(FAMILIES[family], socket.SOCK_STREAM)),
        Call("datagram", "f", args=(FAMILIES[family], socket.SOCK_DGRAM)),
        Call("raw", "f", args=(FAMILIES[family], socket.SOCK_RAW)),
        Call("pair", "pair", args=(FAMILIES[family],)),
    ]
    result = run(SOCKET, calls)
    assert {key: r.value for key, r in result.returned.items()} == {
        "stream": errno.EPERM,
        "datagram": errno.EPERM,
        "raw": errno.EPERM,
        "pair": errno.EPERM,
    }, result


def test_unix_sockets_still_work():
    calls = [
        Call("stream", "f", args=(socket.AF_UNIX, socket.SOCK_STREAM)),
        Call("pair", "pair", args=(socket.AF_UNIX,)),
    ]
    result = run(SOCKET, calls)
    assert result.returned == {"stream": Returned(value=0), "pair": Returned(value=0)}, result


# --- the whole run's memory, bounded by its cgroup --------------------------------


def require_cgroup() -> None:
    where = cgroup.place()
    if isinstance(where, str):
        pytest.skip(f"no cgroup for the runs here: {where}")


def test_memory_bound_names_the_cgroup_or_why_there_is_none():
    where = cgroup.place()
    bound = sandbox.memory_bound()
    if isinstance(where, str):
        assert bound == f"RLIMIT_AS per process only: {where}"
    else:
        assert bound is None


def test_forked_children_together_beyond_the_limit_stop_the_whole_run():
    require_cgroup()
    # Six processes of 120 MB each: every one within RLIMIT_AS (384 MB), together twice
    # the run's limit. Each holds its memory and waits; only the cgroup can stop them.
    code = (
        "import os, time\n"
        "def f():\n"
        "    children = []\n"
        "    for _ in range(6):\n"
        "        pid = os.fork()\n"
        "        if pid == 0:\n"
        "            hoard = b'x' * (120 * 2**20)\n"
        "            time.sleep(60)\n"
        "            os._exit(len(hoard) % 2)\n"
        "        children.append(pid)\n"
        "    for pid in children:\n"
        "        os.waitpid(pid, 0)\n"
        "    return len(children)\n"
    )
    result = run(code)
    assert result.limit == "memory", result
    assert result.limit_message == "Stopped: the code used more than 384 MB of memory."
    assert result.duration_ms < 20_000  # stopped by memory, far before the wall time


def test_files_in_tmp_count_against_the_memory_limit():
    require_cgroup()
    # /tmp (a tmpfs) may hold 1 GB here, the run 256 MB in all: the cgroup stops it.
    limits = sandbox.Limits(
        cpu_seconds=10, wall_seconds=20.0, memory_bytes=256 * 2**20, file_bytes=2**30
    )
    code = (
        "def f():\n"
        "    block = b'x' * 2**20\n"
        "    for i in range(40):\n"
        "        with open(f'/tmp/part{i}', 'wb') as handle:\n"
        "            for _ in range(16):\n"
        "                handle.write(block)\n"
        "    return 0\n"
    )
    result = run(code, limits=limits)
    assert result.limit == "memory", result
    assert result.duration_ms < 20_000


# --- what exists inside -----------------------------------------------------------

LOOK = (
    "import os, re\n"
    "def f():\n"
    "    for top, dirs, files in os.walk('/'):\n"
    "        if top in ('/proc', '/dev'):\n"
    "            dirs[:] = []\n"
    "            continue\n"
    "        for name in files:\n"
    "            path = os.path.join(top, name)\n"
    "            try:\n"
    "                with open(path, 'rb') as handle:\n"
    "                    head = handle.read(64)\n"
    "            except OSError:  # a link to a file left outside\n"
    "                continue\n"
    "            # An ELF executable (ET_EXEC, or a PIE: ET_DYN that is no library), or a\n"
    "            # script whose #! interpreter exists.\n"
    "            library = '.so' in name or name.startswith('ld-')\n"
    "            kind = head[16] if head[:4] == b'\\x7fELF' else 0\n"
    "            elf = kind == 2 or (kind == 3 and not library)\n"
    "            line = head[2:].split() if head[:2] == b'#!' else []\n"
    "            script = bool(line) and os.path.exists(line[0]) and os.access(path, os.X_OK)\n"
    "            if elf or script:\n"
    "                print('program:', path)\n"
    "            if re.fullmatch(r'python[0-9.]*|cc1|psql|java|git|sh|bash|dash', name):\n"
    "                print('named:', path)\n"
    "    return 0\n"
)


def test_no_program_but_the_interpreter_exists_inside():
    result = run(LOOK)
    assert result.returned == {"f": Returned(value=0)}, result
    python = mounts.inside_interpreter(bwrap.interpreter())
    lines = result.output.splitlines()
    # The one program, and the one file named like one: the interpreter bound for the run.
    assert [line for line in lines if line.startswith("program:")] == [f"program: {python}"]
    assert [line for line in lines if line.startswith("named:")] == [f"named: {python}"]


@pytest.mark.parametrize(
    "program",
    ["sh", "bash", "dash", "ls", "cc1", "gcc", "psql", "java", "git", "perl", "python3"],
)
def test_no_other_program_can_be_started(program):
    code = UNHOOK + (
        "import os, shutil\n"
        "def f():\n"
        f"    found = shutil.which({program!r}, path='/bin:/usr/bin:/usr/local/bin:/sandbox/python/bin')\n"
        "    for top in ('/bin', '/usr/bin', '/usr/local/bin', '/sandbox/python/bin'):\n"
        "        try:\n"
        f"            os.execv(os.path.join(top, {program!r}), [{program!r}, '--version'])\n"
        "        except FileNotFoundError:\n"
        "            continue\n"
        "    return found is not None\n"
    )
    result = run(code)
    assert result.returned["f"] == Returned(value=False), result


def test_mountinfo_names_no_path_of_the_checkout_or_the_virtualenv():
    result = run("def f():\n    print(open('/proc/self/mountinfo').read())\n    return 1\n")
    assert result.returned["f"] == Returned(value=1), result
    mountinfo = result.output
    assert " /sandbox " in mountinfo and "/sandbox/python/bin/" in mountinfo
    for host in {str(settings.BASE_DIR), str(Path(settings.BASE_DIR).resolve()), sys.prefix}:
        assert host not in mountinfo, (host, mountinfo)
    assert ".venv" not in mountinfo and "site-packages" not in mountinfo

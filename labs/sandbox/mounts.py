"""What a run sees: the interpreter, its stdlib, NumPy, the libraries they load; no more.

Nothing is bound wholesale. The shared libraries come from the real dependencies,
listed once per process by ``ldd`` over the interpreter, the stdlib's extension modules
and NumPy's; each is bound alone at the path the dynamic loader looks in. So no other
program exists inside: no shell, no compiler, no other interpreter.

Everything sits at neutral paths, so that ``/proc/self/mountinfo`` inside (which names
each bind's source) shows no path of the service's checkout or virtualenv: the
interpreter at ``/sandbox/python/bin``, its stdlib at ``/sandbox/python/lib``, and
NumPy with the runner in a runtime directory of this process (``runtime``: hard links,
or copies across filesystems and of files other users may not read, made once in the
system's temporary directory and removed at exit) bound at ``/sandbox``. What it holds
is readable by any user, as the throwaway uid of a service run as root needs, so the
service's checkout and virtualenv may sit where only their owner can read them.
"""

from __future__ import annotations

import atexit
import functools
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

from labs import runner as codec
from labs.sandbox.limits import SandboxUnavailable

RUNNER = Path(codec.__file__).resolve()
INSIDE = "/sandbox"
INSIDE_RUNNER = f"{INSIDE}/runner.py"
INSIDE_LIB = codec.NUMPY_DIR  # /sandbox/lib
INSIDE_PYTHON = f"{INSIDE}/python"


def interpreter() -> Path:
    """The Python that runs inside: STUDY_LAB_PYTHON, else the system's of this version.

    The same major.minor as the service's, so the service's NumPy build loads in it.
    """
    configured = os.environ.get("STUDY_LAB_PYTHON")
    if configured:
        return Path(configured).resolve()
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    found = shutil.which(version, path="/usr/local/bin:/usr/bin")
    if found is None:
        raise SandboxUnavailable(f"no system {version} (set STUDY_LAB_PYTHON)")
    return Path(found).resolve()


def inside_interpreter(python: Path) -> str:
    return f"{INSIDE_PYTHON}/bin/{python.name}"


def numpy_dirs() -> list[Path]:
    """NumPy's package directory, and numpy.libs beside it when the wheel has one."""
    import numpy

    package = Path(numpy.__file__).resolve().parent
    return [path for path in (package, package.parent / "numpy.libs") if path.is_dir()]


def _stdlib(python: Path) -> Path:
    """The interpreter's stdlib: ``lib/pythonX.Y`` beside its ``bin``."""
    return python.parent.parent / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}"


# --- the runtime directory: NumPy and the runner at neutral paths -------------------


def _link_or_copy(source: str, target: str) -> None:
    # A hard link shares its source's mode, so a file others may not read (a checkout or a
    # virtualenv made under umask 077, in a home directory) is copied, and the copy opened to
    # them: the sandbox's throwaway uid reads it as "other".
    mode = os.stat(source).st_mode
    if mode & stat.S_IROTH:
        try:
            os.link(source, target)
            return
        except OSError:  # another filesystem, or hard links refused: a copy
            pass
    shutil.copy2(source, target)
    os.chmod(target, stat.S_IMODE(mode) | 0o444 | (0o111 if mode & stat.S_IXUSR else 0))


@functools.cache
def runtime(python: Path) -> Path:
    """This process's runtime directory, bound read-only at ``/sandbox``."""
    top = Path(tempfile.mkdtemp(prefix="study-lab-runtime-"))
    atexit.register(shutil.rmtree, top, ignore_errors=True)
    try:
        for path in numpy_dirs():
            shutil.copytree(
                path,
                top / "lib" / path.name,
                copy_function=_link_or_copy,
                ignore=shutil.ignore_patterns("tests"),
            )
        _link_or_copy(str(RUNNER), str(top / "runner.py"))
        # The mount points of the interpreter and its stdlib, made here: /sandbox is read-only.
        (top / "python" / "bin").mkdir(parents=True)
        (top / "python" / "bin" / python.name).touch()
        (top / "python" / "lib" / _stdlib(python).name).mkdir(parents=True)
        for path in top.rglob("*"):
            if path.is_dir():
                path.chmod(0o755)
        top.chmod(0o755)  # read by the sandbox's throwaway uid when the service is root
    except OSError as exc:
        shutil.rmtree(top, ignore_errors=True)
        raise SandboxUnavailable(f"the sandbox's runtime directory: {exc}") from exc
    return top


# --- the shared libraries they load ------------------------------------------------

_LDD_PATH = re.compile(r"(?:=>\s+)?(/\S+)\s+\(0x[0-9a-f]+\)")


def _elf_files(python: Path) -> list[str]:
    found = [str(python)]
    for top in [_stdlib(python) / "lib-dynload", *numpy_dirs()]:
        if top.is_dir():
            found += sorted(str(p) for p in top.rglob("*.so*") if p.is_file())
    return found


@functools.cache
def libraries(python: Path) -> tuple[str, ...]:
    """Every shared library the interpreter, the stdlib and NumPy link, as the loader finds
    it (NumPy's own, bound with NumPy, left out). Listed by ``ldd``, once per process."""
    ldd = shutil.which("ldd", path="/usr/bin:/bin")
    if ldd is None:
        raise SandboxUnavailable("ldd is not installed (it lists the sandbox's libraries)")
    files = _elf_files(python)
    try:
        done = subprocess.run(
            [ldd, *files], capture_output=True, text=True, timeout=60, env={}, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SandboxUnavailable(f"ldd could not list the sandbox's libraries: {exc}") from exc
    own = tuple(str(path) for path in numpy_dirs())
    found = {match[1] for match in _LDD_PATH.finditer(done.stdout)}
    if not any(Path(path).name.startswith("libc.so") for path in found):
        raise SandboxUnavailable(f"ldd listed no C library for {python}: {done.stderr[-300:]}")
    return tuple(sorted(path for path in found if not path.startswith(own)))


# --- bwrap's options ---------------------------------------------------------------


def library_args(python: Path) -> list[str]:
    """Read-only binds: the runtime directory at /sandbox, the interpreter and its stdlib
    under /sandbox/python, each shared library at its own path."""
    stdlib = _stdlib(python)
    inside_stdlib = f"{INSIDE_PYTHON}/lib/{stdlib.name}"
    args = ["--ro-bind", str(runtime(python)), INSIDE]
    args += ["--ro-bind", str(python), inside_interpreter(python)]
    args += ["--ro-bind", str(stdlib), inside_stdlib]
    # Installed packages stay out of reach: only the stdlib and NumPy are importable; the
    # build files (libpython's static archive, python.o) are no use to a run.
    configs = [path.name for path in stdlib.glob("config-*") if path.is_dir()]
    for hidden in ("site-packages", "dist-packages", *configs):
        if (stdlib / hidden).is_dir():
            where = f"{inside_stdlib}/{hidden}"
            args += ["--size", "4096", "--tmpfs", where, "--remount-ro", where]
    for library in libraries(python):
        args += ["--ro-bind", library, library]
    return args

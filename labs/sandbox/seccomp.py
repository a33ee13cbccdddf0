"""The system calls a lab run may not make: a seccomp filter bwrap loads before the runner.

Namespaces, an unprivileged uid and no capabilities already stop what needs privilege
(mount, unshare, setns, modules, reboot, raw sockets). What is left are calls any user
may make that reach far into the kernel, read other processes or the host, or serve
mostly as exploit primitives; NumPy and the runner use none of them. They fail with
EPERM, as in Docker's default profile (which the lab worker's container runs without,
since bwrap needs the calls that profile refuses: docs/labs.md, "In a container").

Only the machine's own architecture is allowed: a call made through another ABI (the
32-bit ``int 0x80`` entry on x86-64, where a deny list by number would not apply) kills
the process. The filter is built with libseccomp (``pyseccomp``); without libseccomp
there is no sandbox, and ``labs.sandbox.unavailable`` says so.

Memory a run could hold outside its own address space (System V shared memory and
message queues, POSIX message queues, memfd, kernel AIO rings) is refused too: the
address-space limit counts only what is mapped, and a segment outlives its mapping.
``socket`` and ``socketpair`` are allowed for ``AF_UNIX`` alone (a lab needs no other
family): vsock is not namespaced, and on a virtual machine it reaches the
hypervisor and every other run; netlink, packet and the rest reach the kernel's network
code. Every other family fails with EPERM, checked on the call's first argument.
"""

from __future__ import annotations

import errno
import functools
import os
import socket
import tempfile

from labs.sandbox.limits import SandboxUnavailable

DENIED: dict[str, tuple[str, ...]] = {
    # Reading or changing other processes, even the sandbox's own.
    "other processes": ("ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd"),
    # The kernel keyrings are not namespaced: a uid's keys are shared with the host.
    "kernel keyrings": ("add_key", "keyctl", "request_key"),
    # Large kernel interfaces that are the usual road to a kernel exploit.
    "kernel attack surface": (
        "bpf",
        "perf_event_open",
        "userfaultfd",
        "io_uring_setup",
        "io_uring_enter",
        "io_uring_register",
        "modify_ldt",
        "personality",
        "uselib",
    ),
    # The host's memory placement and kernel log, and old interfaces nothing needs.
    "the host": (
        "syslog",
        "mbind",
        "migrate_pages",
        "move_pages",
        "set_mempolicy",
        "get_mempolicy",
        "lookup_dcookie",
        "acct",
        "quotactl",
        "ustat",
        "sysfs",
        "vhangup",
    ),
    # Memory held outside the process's mappings, which RLIMIT_AS does not count, and
    # shared between processes: System V IPC, POSIX message queues, memfd, kernel AIO.
    "memory beyond the address space": (
        "shmget",
        "shmat",
        "shmctl",
        "shmdt",
        "msgget",
        "msgsnd",
        "msgrcv",
        "msgctl",
        "semget",
        "semop",
        "semtimedop",
        "semctl",
        "mq_open",
        "mq_unlink",
        "mq_timedsend",
        "mq_timedreceive",
        "mq_notify",
        "mq_getsetattr",
        "memfd_create",
        "memfd_secret",
        "io_setup",
        "io_submit",
        "io_getevents",
        "io_pgetevents",
        "io_cancel",
        "io_destroy",
    ),
    # Privileged in any case: refused here too, so no capability bug can open them.
    "mounts, namespaces and the machine": (
        "mount",
        "umount2",
        "pivot_root",
        "chroot",
        "unshare",
        "setns",
        "open_tree",
        "move_mount",
        "fsopen",
        "fsconfig",
        "fsmount",
        "fspick",
        "mount_setattr",
        "name_to_handle_at",
        "open_by_handle_at",
        "init_module",
        "finit_module",
        "delete_module",
        "kexec_load",
        "kexec_file_load",
        "reboot",
        "swapon",
        "swapoff",
        "settimeofday",
        "clock_settime",
        "clock_adjtime",
        "adjtimex",
        "iopl",
        "ioperm",
    ),
}


# Calls allowed only for local sockets: refused when their first argument (the address
# family) is anything but AF_UNIX.
UNIX_ONLY = ("socket", "socketpair")


def denied_calls() -> list[str]:
    return [name for group in DENIED.values() for name in group]


@functools.cache
def program() -> bytes:
    """The compiled filter (classic BPF), built once per process.

    Raises ``SandboxUnavailable`` when libseccomp cannot be loaded or build it.
    """
    try:
        import pyseccomp as seccomp
    except (ImportError, OSError, RuntimeError) as exc:  # RuntimeError: no libseccomp
        raise SandboxUnavailable(f"libseccomp is not available: {exc}") from exc
    try:
        rules = seccomp.SyscallFilter(seccomp.ALLOW)
        rules.set_attr(seccomp.Attr.ACT_BADARCH, seccomp.KILL_PROCESS)
        for name in denied_calls():
            try:
                rules.add_rule(seccomp.ERRNO(errno.EPERM), name)
            except (ValueError, OSError):
                continue  # a call this architecture or libseccomp does not have
        for name in UNIX_ONLY:
            rules.add_rule(
                seccomp.ERRNO(errno.EPERM), name, seccomp.Arg(0, seccomp.NE, socket.AF_UNIX)
            )
        with tempfile.TemporaryFile() as compiled:
            rules.export_bpf(compiled)
            compiled.seek(0)
            return compiled.read()
    except OSError as exc:
        raise SandboxUnavailable(f"the seccomp filter could not be built: {exc}") from exc


def program_fd() -> int:
    """A file descriptor holding ``program()`` at offset 0, for bwrap's ``--seccomp``;
    the caller closes it."""
    data = program()
    fd = os.memfd_create("lab-seccomp", os.MFD_CLOEXEC)
    try:
        os.write(fd, data)
        os.lseek(fd, 0, os.SEEK_SET)
    except OSError:
        os.close(fd)
        raise
    return fd

"""What keeps the sandbox's code (functions/sandbox.py) from any credential on the machine, beyond
its bare environment: the process that holds credentials is closed to it, and so, where the kernel
has Landlock, is every file and process outside its own folder and the system's.

Who holds what. On Lambda the handler runs in the runtime's process, whose environment holds
the role's credentials (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN); the code
runs in its child. In the local stack the handler runs in a worker process with the sandbox
function's variables only, itself a child of the stack's process (pytest, `nanobot-lambda chat`)
which holds the user's environment and, in memory, what it read from `.env`. Files: on Lambda
nothing on disk holds a credential (/var/task, /opt and /var/runtime hold code, /tmp is emptied
before each run, /proc/1 is Lambda's init, which is given the credentials over its control
channel, not in its environment); on a developer's machine ~/.aws/credentials and the
project's `.env` do.

The layers, each on its own:

- `set_dumpable(False)` (prctl PR_SET_DUMPABLE 0) on the handler's process (and the local
  stack's): its /proc/<pid>/environ, mem, maps, fd/ and task/*/ then open only for a process
  with CAP_SYS_PTRACE, which neither Lambda's user nor the code has. A child's flag is reset
  at execve, so the code's own /proc entries stay readable to the runner (its sweep).
- In the code's process, before it starts (`Confinement.enter`): no new privileges (no
  setuid program or file capability raises it) and, when the runner has capabilities (it is
  root: tests and CI here, never Lambda), every capability dropped (bounding set, ambient,
  permitted, effective, inheritable), so root's CAP_SYS_PTRACE and CAP_DAC_* are gone too.
- Landlock (Linux >= 5.13, if the kernel enables it; `landlock_abi()` says): the code may read
  and run files only under the system folders (`SYSTEM_FOLDERS`), the interpreter's prefixes,
  /proc and /sys, write only in its root, and use /dev/null, zero, full, random and urandom:
  no home folder, no project folder, no /tmp but its own. A Landlock domain also denies the
  code ptrace access to every process outside it, whatever the user ids (their environ, mem,
  task/*/environ), and from ABI 6 on signals to them and their abstract UNIX sockets. Outside
  Lambda, from ABI 4 on, the code may open TCP connections to ports 53, 80 and 443 only: the
  local stack's servers (moto, which takes any credentials, and the Bot API) listen on other
  ports of the same machine.

Without Landlock (Lambda's kernel may not have it, or its seccomp filter may refuse it) the
first two layers still hold; on a developer's machine the code can then read whatever the
user's other processes expose and every file the user can read, which the local stack warns
about at start. Standard library only (ctypes), as the runner.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import sys
from collections.abc import Iterable
from functools import cache
from pathlib import Path

# The system folders the code may read and run from (those that exist). /etc is there for what
# programs read at start (ld.so.cache, the time zone, certificates); no home folder is.
SYSTEM_FOLDERS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
READABLE_PSEUDO_FOLDERS = ("/proc", "/sys")  # the code's own /proc entries, CPU counts...
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
ALLOWED_TCP_PORTS = (53, 80, 443)  # DNS over TCP, HTTP, HTTPS (outside Lambda)

# prctl(2) options and capability constants (linux/prctl.h, linux/capability.h).
_PR_GET_DUMPABLE = 3
_PR_SET_DUMPABLE = 4
_PR_CAPBSET_DROP = 24
_PR_SET_NO_NEW_PRIVS = 38
_PR_CAP_AMBIENT = 47
_PR_CAP_AMBIENT_CLEAR_ALL = 4
_CAPABILITY_VERSION_3 = 0x20080522

# Landlock (linux/landlock.h). The system call numbers are the same on x86_64 and arm64.
_SYS_LANDLOCK_CREATE_RULESET = 444
_SYS_LANDLOCK_ADD_RULE = 445
_SYS_LANDLOCK_RESTRICT_SELF = 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_RULE_NET_PORT = 2
_FS_EXECUTE = 1 << 0
_FS_WRITE_FILE = 1 << 1
_FS_READ_FILE = 1 << 2
_FS_READ_DIR = 1 << 3
_FS_TRUNCATE = 1 << 14  # ABI 3
_FS_IOCTL_DEV = 1 << 15  # ABI 5
_NET_CONNECT_TCP = 1 << 1  # ABI 4
_SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
_SCOPE_SIGNAL = 1 << 1  # ABI 6


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1  # packed in the kernel's header
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class _NetPortAttr(ctypes.Structure):
    _fields_ = [("allowed_access", ctypes.c_uint64), ("port", ctypes.c_uint64)]


class ConfinementError(OSError):
    """The code's process could not be confined as planned: it must not run."""


@cache
def _libc() -> ctypes.CDLL | None:
    try:
        # The interpreter's own symbols, libc's among them: no library search (ldconfig).
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


def _call(function: str, *arguments: object) -> int:
    """A libc function's result; OSError (with its errno) when it fails."""
    libc = _libc()
    if libc is None:
        raise OSError(errno.ENOSYS, "no C library to call")
    call = getattr(libc, function)
    call.restype = ctypes.c_long
    result = int(call(*arguments))
    if result < 0 or (function == "prctl" and result == -1):
        number = ctypes.get_errno()
        raise OSError(number, os.strerror(number))
    return result


def is_dumpable() -> bool:
    """Whether this process is dumpable (its /proc entries open to processes of its user)."""
    try:
        return _call("prctl", _PR_GET_DUMPABLE, 0, 0, 0, 0) == 1
    except OSError:
        return True


def set_dumpable(dumpable: bool) -> bool:
    """Make this process (un)dumpable; whether it was. False when the kernel cannot say."""
    before = is_dumpable()
    try:
        _call("prctl", _PR_SET_DUMPABLE, int(dumpable), 0, 0, 0)
    except OSError:
        return False
    return before


@cache
def landlock_abi() -> int:
    """The kernel's Landlock ABI version; 0 without Landlock (too old, disabled, or refused)."""
    try:
        return _call("syscall", _SYS_LANDLOCK_CREATE_RULESET, None, 0, _CREATE_RULESET_VERSION)
    except OSError:
        return 0


def has_capabilities() -> bool:
    """Whether this process holds any capability (its permitted set is not empty)."""
    with contextlib.suppress(OSError), open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("CapPrm:"):
                return int(line.split()[1], 16) != 0
    return os.geteuid() == 0


class Confinement:
    """Prepared in the runner (a Landlock ruleset, if the kernel has it), entered in the code's
    process between fork and exec (`enter`), closed after the start (`close`)."""

    def __init__(self, ruleset_fd: int | None, drops_capabilities: bool) -> None:
        self.ruleset_fd = ruleset_fd
        self.drops_capabilities = drops_capabilities

    @property
    def landlocked(self) -> bool:
        return self.ruleset_fd is not None

    def enter(self) -> None:
        """In the child, before exec: no new privileges, no capabilities, the Landlock domain.
        Raises ConfinementError (the run is refused) when a step that applies fails."""
        try:
            _call("prctl", _PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
            if self.drops_capabilities:
                drop_capabilities()
            if self.ruleset_fd is not None:
                _call("syscall", _SYS_LANDLOCK_RESTRICT_SELF, self.ruleset_fd, 0)
        except OSError as error:
            raise ConfinementError(error.errno, f"confining the code failed: {error}") from None

    def close(self) -> None:
        if self.ruleset_fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.ruleset_fd)
            self.ruleset_fd = None


def prepare(root: Path, *, restrict_network: bool) -> Confinement:
    """The confinement of one run whose code works in `root` (Landlock only if available)."""
    drop = has_capabilities()
    abi = landlock_abi()
    if abi <= 0:
        return Confinement(None, drop)
    return Confinement(_landlock_ruleset(abi, root, restrict_network), drop)


def drop_capabilities() -> None:
    """Empty this process's capability sets (and its bounding set, so that a root process gets
    none back at exec). Needs no capability to empty its own sets; the bounding set needs
    CAP_SETPCAP, which a process without it does not need (it has nothing to regain)."""
    with open("/proc/sys/kernel/cap_last_cap", encoding="ascii") as last:
        last_capability = int(last.read())
    for capability in range(last_capability + 1):
        with contextlib.suppress(OSError):  # needs CAP_SETPCAP; without it exec grants nothing
            _call("prctl", _PR_CAPBSET_DROP, capability, 0, 0, 0)
    with contextlib.suppress(OSError):  # kernels before 4.3 have no ambient set
        _call("prctl", _PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header = (ctypes.c_uint32 * 2)(_CAPABILITY_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()  # effective, permitted, inheritable (x2): all empty
    _call("capset", header, data)


def _handled_filesystem_access(abi: int) -> int:
    if abi >= 5:
        return (1 << 16) - 1
    if abi >= 3:
        return (1 << 15) - 1
    if abi == 2:
        return (1 << 14) - 1
    return (1 << 13) - 1


def interpreter_folders() -> list[str]:
    """Where the running interpreter lives: its prefixes (a venv's and its base's) and the
    folder above the real executable (what a run's `python3` needs to start)."""
    real = os.path.realpath(sys.executable)
    folders = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    folders.add(os.path.dirname(os.path.dirname(real)))
    return sorted(folder for folder in folders if folder and folder != os.sep)


def _landlock_ruleset(abi: int, root: Path, restrict_network: bool) -> int:
    handled = _handled_filesystem_access(abi)
    attributes = _RulesetAttr(
        handled_access_fs=handled,
        handled_access_net=_NET_CONNECT_TCP if restrict_network and abi >= 4 else 0,
        scoped=_SCOPE_SIGNAL | _SCOPE_ABSTRACT_UNIX_SOCKET if abi >= 6 else 0,
    )
    fd = _call(
        "syscall",
        _SYS_LANDLOCK_CREATE_RULESET,
        ctypes.byref(attributes),
        ctypes.sizeof(attributes),
        0,
    )
    try:
        read = _FS_EXECUTE | _FS_READ_FILE | _FS_READ_DIR
        _allow_paths(fd, [*SYSTEM_FOLDERS, *interpreter_folders()], read)
        _allow_paths(fd, READABLE_PSEUDO_FOLDERS, _FS_READ_FILE | _FS_READ_DIR)
        device = (_FS_READ_FILE | _FS_WRITE_FILE | _FS_TRUNCATE | _FS_IOCTL_DEV) & handled
        _allow_paths(fd, DEVICES, device)
        _allow_paths(fd, [str(root)], handled, required=True)
        if restrict_network and abi >= 4:
            for port in ALLOWED_TCP_PORTS:
                rule = _NetPortAttr(allowed_access=_NET_CONNECT_TCP, port=port)
                _call("syscall", _SYS_LANDLOCK_ADD_RULE, fd, _RULE_NET_PORT, ctypes.byref(rule), 0)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _allow_paths(fd: int, paths: Iterable[str], access: int, *, required: bool = False) -> None:
    for path in paths:
        try:
            target = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            if required:
                raise
            continue  # this system has no such folder
        try:
            rule = _PathBeneathAttr(allowed_access=access, parent_fd=target)
            _call("syscall", _SYS_LANDLOCK_ADD_RULE, fd, _RULE_PATH_BENEATH, ctypes.byref(rule), 0)
        finally:
            os.close(target)

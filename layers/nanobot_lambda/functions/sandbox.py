"""The code sandbox: runs the Python or shell code the model writes, in a function of its own.

The sandbox function's role can do nothing beyond writing its own logs and its environment holds
no secrets; on top of that, this module gives every run a clean slate and bounds it:

- Before each run, stray processes are ended (SIGKILL): every process whose environment holds
  the marker variable `NANOBOT_SANDBOX_RUN` (every run's processes inherit it) and, in Lambda,
  every other process of the same user except this one and its ancestors (the runtime). Then
  the root (`/tmp` in Lambda) is emptied, so one run cannot leave anything for the next. The
  same sweep runs again right after each run, before its files are collected, so nothing can
  change them (or swap them for links) while they are read.
- The code runs in `root/work/` (the input files are written there first) in a new session,
  with an environment of its own (never the handler's: no AWS credentials, no secrets), limits
  on address space, CPU time, file size and core dumps, and a wall-clock time limit after which
  its whole process group is killed.
- It finds no credential anywhere else either (functions/sandbox_confinement.py): the handler's
  process is undumpable (its /proc entries closed to the code), the code has no capabilities
  and gains none, and where the kernel has Landlock it may read only the system's files and
  write only in `root`, and no other process is open to it.
- Output is captured to files and at most `output_max_chars` of each stream is returned (head
  and tail, so a traceback at the end survives), and the files under `root/work/` that are new
  or changed come back base64-encoded, within the same caps as the inputs.

Request (version 1): {"version": 1, "language": "python" | "shell", "code": str,
"files": {relative path: base64}, "timeout_seconds": 1..60, "memory_mb": 64..1024,
"output_max_chars": 1000..50000} (the last three optional). Result: {"ok": true, "exit_code":
int | None (None when killed by a signal), "signal": name | None, "timed_out", "out_of_memory",
"stdout", "stderr", "stdout_bytes", "stderr_bytes" (the whole streams' sizes), "truncated",
"files": {relative path: base64} (new or changed files), "skipped": [paths not returned],
"skipped_reasons": {path: reason}, "duration_ms"}, or
{"ok": false, "error": str} for a refused request or a failure of the sandbox itself.

Outside Lambda (tests, the local stack) only marker processes are swept: a process that drops
the marker from its environment and leaves its session escapes the sweep there, never in Lambda.
Runs are meant to be one at a time per root, as in a Lambda container.

Standard library only (and the workspace path rules), from CoreLayer: the function starts fast
and loads nothing else. `run` never raises: a bad request or a failure is `{"ok": false,
"error": ...}`.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import functools
import os
import resource
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, BinaryIO

from nanobot_lambda.core.paths import PathError, normalize_path
from nanobot_lambda.functions.sandbox_confinement import prepare, set_dumpable

REQUEST_VERSION = 1
LANGUAGES = ("python", "shell")
MAX_CODE_CHARS = 100_000
MAX_FILES = 20
MAX_FILES_BYTES = 5_000_000
TIMEOUT_RANGE = (1, 60)
DEFAULT_TIMEOUT_SECONDS = 20
MEMORY_RANGE_MB = (64, 1024)
DEFAULT_MEMORY_MB = 512
OUTPUT_RANGE_CHARS = (1_000, 50_000)
DEFAULT_OUTPUT_MAX_CHARS = 10_000
MAX_FILE_SIZE_BYTES = 50 * 1024 * 1024  # RLIMIT_FSIZE: no single file (or output stream) larger
MAX_PROCESSES_IN_LAMBDA = 256  # RLIMIT_NPROC, per user: only set in Lambda (tests may be root)
MARKER = "NANOBOT_SANDBOX_RUN"
PATH = "/usr/local/bin:/usr/bin:/bin"
PYTHON_SCRIPT = "main.py"
MAX_SCANNED_FILES = 1_000  # files looked at when collecting the output files
MAX_SKIPPED_LISTED = 50

_REQUEST_KEYS = frozenset(
    {"version", "language", "code", "files", "timeout_seconds", "memory_mb", "output_max_chars"}
)
# Phrases that allocation failures print: Python, libc (strerror ENOMEM), C++, bash, GNU tools.
_OOM_PHRASES = (b"memoryerror", b"cannot allocate memory", b"out of memory", b"bad_alloc")
_OOM_SIGNALS = frozenset({signal.SIGSEGV, signal.SIGBUS, signal.SIGABRT})


def programs() -> list[str]:
    """The names of the programs a run's shell finds (its PATH), sorted."""
    found: set[str] = set()
    for folder in _child_path().split(":"):
        with contextlib.suppress(OSError):
            for entry in os.scandir(folder):
                with contextlib.suppress(OSError):
                    if entry.is_file() and os.access(entry.path, os.X_OK):
                        found.add(entry.name)
    return sorted(found)


def _child_path() -> str:
    """The PATH of a run: the interpreter's own folder first (/var/lang/bin in Lambda)."""
    return f"{os.path.dirname(sys.executable)}:{PATH}"


class RequestError(ValueError):
    """A request refused before anything runs. The message is written for the model."""


PROGRAMS_REQUEST = {"version": REQUEST_VERSION, "action": "programs"}


def run(request: object, *, root: Path, in_lambda: bool) -> dict[str, Any]:
    """Validate `request`, clean `root` and the process table, run the code, report the result.
    `PROGRAMS_REQUEST` instead answers which programs a run finds on its PATH."""
    if request == PROGRAMS_REQUEST:
        return {"ok": True, "programs": programs()}
    try:
        parsed = _parse(request)
    except RequestError as error:
        return {"ok": False, "error": str(error)}
    try:
        return _run(parsed, root, in_lambda)
    except Exception as error:  # never raise: the caller gets a result it can show the model
        return {"ok": False, "error": f"the sandbox failed: {type(error).__name__}: {error}"}


class _Request:
    def __init__(
        self,
        language: str,
        code: str,
        files: dict[str, bytes],
        timeout_seconds: int,
        memory_mb: int,
        output_max_chars: int,
    ) -> None:
        self.language = language
        self.code = code
        self.files = files
        self.timeout_seconds = timeout_seconds
        self.memory_mb = memory_mb
        self.output_max_chars = output_max_chars


def _parse(request: object) -> _Request:
    if not isinstance(request, dict):
        raise RequestError("the request must be a JSON object")
    unknown = sorted(str(key) for key in request if key not in _REQUEST_KEYS)
    if unknown:
        raise RequestError(
            f"unknown request field(s): {', '.join(unknown)}; "
            f"allowed: {', '.join(sorted(_REQUEST_KEYS))}"
        )
    version = request.get("version")
    if version != REQUEST_VERSION or isinstance(version, bool):
        raise RequestError(f"version must be {REQUEST_VERSION}, got {version!r}")
    language = request.get("language")
    if language not in LANGUAGES:
        raise RequestError(f"language must be one of {', '.join(LANGUAGES)}, got {language!r}")
    code = request.get("code")
    if not isinstance(code, str):
        raise RequestError("code must be a string")
    if not code.strip():
        raise RequestError("code is empty")
    if len(code) > MAX_CODE_CHARS:
        raise RequestError(f"code is {len(code)} characters long; at most {MAX_CODE_CHARS}")
    if "\x00" in code:
        raise RequestError("code contains a NUL character")
    return _Request(
        language=language,
        code=code,
        files=_parse_files(request.get("files", {}), language),
        timeout_seconds=_integer(
            request, "timeout_seconds", DEFAULT_TIMEOUT_SECONDS, TIMEOUT_RANGE
        ),
        memory_mb=_integer(request, "memory_mb", DEFAULT_MEMORY_MB, MEMORY_RANGE_MB),
        output_max_chars=_integer(
            request, "output_max_chars", DEFAULT_OUTPUT_MAX_CHARS, OUTPUT_RANGE_CHARS
        ),
    )


def _integer(request: dict[Any, Any], key: str, default: int, bounds: tuple[int, int]) -> int:
    value = request.get(key, default)
    low, high = bounds
    if not isinstance(value, int) or isinstance(value, bool):
        raise RequestError(f"{key} must be a whole number from {low} to {high}, got {value!r}")
    if not low <= value <= high:
        raise RequestError(f"{key} must be from {low} to {high}, got {value}")
    return value


def _parse_files(files: object, language: str) -> dict[str, bytes]:
    if not isinstance(files, dict):
        raise RequestError("files must be an object of relative path to base64 content")
    if len(files) > MAX_FILES:
        raise RequestError(f"{len(files)} files given; at most {MAX_FILES}")
    decoded: dict[str, bytes] = {}
    total = 0
    max_encoded = (MAX_FILES_BYTES + 2) // 3 * 4 + 4
    for raw_path, content in files.items():
        try:
            path = normalize_path(raw_path)
        except PathError as error:
            raise RequestError(f"files: {raw_path!r} is refused: {error}") from None
        if path in decoded:
            raise RequestError(f"files: {raw_path!r} names the same file as another entry")
        if language == "python" and path == PYTHON_SCRIPT:
            raise RequestError(
                f"files: {PYTHON_SCRIPT} is where the Python code is written: rename the file"
            )
        if not isinstance(content, str):
            raise RequestError(f"files: the content of {path!r} must be a base64 string")
        if len(content) > max_encoded:
            raise RequestError(f"files: the inputs are larger than {MAX_FILES_BYTES} bytes")
        try:
            data = base64.b64decode(content, validate=True)
        except (binascii.Error, ValueError):
            raise RequestError(f"files: the content of {path!r} is not valid base64") from None
        total += len(data)
        if total > MAX_FILES_BYTES:
            raise RequestError(f"files: the inputs are larger than {MAX_FILES_BYTES} bytes")
        decoded[path] = data
    for path in decoded:  # a file cannot also be a folder of another input
        parts = path.split("/")
        for depth in range(1, len(parts)):
            if "/".join(parts[:depth]) in decoded:
                raise RequestError(
                    f"files: {'/'.join(parts[:depth])!r} is both a file and a folder of {path!r}"
                )
    return decoded


# --- the run ------------------------------------------------------------------------------------


def _run(request: _Request, root: Path, in_lambda: bool) -> dict[str, Any]:
    root = Path(os.path.abspath(root))
    if root == Path(root.anchor):
        return {"ok": False, "error": "the sandbox root cannot be the file system root"}
    end_stray_processes(in_lambda=in_lambda)
    root.mkdir(parents=True, exist_ok=True)
    leftovers = empty_directory(root)
    if leftovers:
        return {
            "ok": False,
            "error": f"the sandbox could not empty {root} (left: {', '.join(leftovers[:5])})",
        }
    work = root / "work"
    tmp = root / "tmp"
    capture = root / "output"
    for folder in (work, tmp, capture):
        folder.mkdir(mode=0o700)
    for path, data in request.files.items():
        target = work / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    if request.language == "python":
        (work / PYTHON_SCRIPT).write_text(request.code, encoding="utf-8")
        # -E -s: no PYTHON* variables, no user site; -B: no bytecode; -u: output survives a kill.
        # Not -I: it would drop work/ from sys.path, so the code could not import its files.
        argv = [sys.executable, "-E", "-s", "-B", "-u", PYTHON_SCRIPT]
    else:
        argv = ["/bin/sh", "-c", request.code]
    environment = {
        # The interpreter's folder first: in Lambda python3 lives in /var/lang/bin.
        "PATH": _child_path(),
        "HOME": str(work),
        "LANG": "C.UTF-8",
        "TMPDIR": str(tmp),
        "PYTHONDONTWRITEBYTECODE": "1",
        MARKER: "1",
    }
    limits = _limits(request, in_lambda)
    # The handler's process holds the credentials on Lambda: closed to the code (see
    # functions/sandbox_confinement.py), as is, where the kernel has Landlock, all but its root.
    set_dumpable(False)
    confinement = prepare(root, restrict_network=not in_lambda)
    if not confinement.landlocked:
        _warn_without_landlock()

    def start_confined() -> None:  # in the child, before exec; the handler is single-threaded
        _apply_limits(limits)
        confinement.enter()

    # Kept open and read back through these descriptors: whatever the code does to the paths
    # (a link in their place), what is read is what it wrote.
    with (
        contextlib.closing(confinement),
        open(capture / "stdout", "w+b") as stdout,
        open(capture / "stderr", "w+b") as stderr,
    ):
        started = time.monotonic()
        process = subprocess.Popen(  # noqa: S603 - the code is the point; it runs confined
            argv,
            cwd=work,
            env=environment,
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,
            close_fds=True,
            preexec_fn=start_confined,
        )
        confinement.close()
        status, max_rss_kb, timed_out = _wait(process.pid, started + request.timeout_seconds)
        process.returncode = status  # reaped by _wait: tell Popen not to wait for it
        duration_ms = int((time.monotonic() - started) * 1000)
        _kill_group(process.pid)
        end_stray_processes(in_lambda=in_lambda)

        out_text, out_truncated = read_capped(stdout, request.output_max_chars)
        err_text, err_truncated = read_capped(stderr, request.output_max_chars)
        out_size, err_size = (os.fstat(stream.fileno()).st_size for stream in (stdout, stderr))
        out_of_memory = _out_of_memory(
            request, status, timed_out, max_rss_kb, stderr, shell=request.language == "shell"
        )
    exit_code = status if status >= 0 else None
    killed_by = -status if status < 0 else None
    files, skipped = _collect_files(work, request)
    return {
        "ok": True,
        "exit_code": exit_code,
        "signal": signal.Signals(killed_by).name if killed_by in _signal_numbers() else killed_by,
        "timed_out": timed_out,
        "out_of_memory": out_of_memory,
        "stdout": out_text,
        "stderr": err_text,
        "stdout_bytes": out_size,
        "stderr_bytes": err_size,
        "truncated": out_truncated or err_truncated,
        "files": files,
        "skipped": list(skipped),
        "skipped_reasons": skipped,
        "duration_ms": duration_ms,
    }


@functools.cache
def _warn_without_landlock() -> None:
    """Once per process: the code's file reads are bounded by file permissions only. Written
    to stderr (a log line on Lambda): importing logging would lengthen every cold start."""
    print(
        f"WARNING Landlock is not available (kernel {os.uname().release}): the sandbox's code "
        "is kept from credentials by its bare environment and this process being undumpable, "
        "not by file rules: it can read every file this user can",
        file=sys.stderr,
        flush=True,
    )


def _signal_numbers() -> set[int]:
    return {int(number) for number in signal.Signals}


def _limits(request: _Request, in_lambda: bool) -> list[tuple[int, int]]:
    limits = [
        (resource.RLIMIT_AS, request.memory_mb * 1024 * 1024),
        (resource.RLIMIT_CPU, request.timeout_seconds + 1),
        (resource.RLIMIT_FSIZE, MAX_FILE_SIZE_BYTES),
        (resource.RLIMIT_CORE, 0),
    ]
    if in_lambda:
        limits.append((resource.RLIMIT_NPROC, MAX_PROCESSES_IN_LAMBDA))
    return limits


def _apply_limits(limits: list[tuple[int, int]]) -> None:
    """In the child, before exec: soft and hard limits, so the code cannot raise them again."""
    for kind, value in limits:
        _soft, hard = resource.getrlimit(kind)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        resource.setrlimit(kind, (value, value))


def _wait(pid: int, deadline: float) -> tuple[int, int, bool]:
    """Reap the child (status as Popen's returncode, its peak RSS in KiB, whether it timed out).

    Polls with WNOHANG, so the child is still unreaped (its pid and group still ours) when the
    group is killed at the deadline.
    """
    delay = 0.002
    timed_out = False
    while True:
        reaped, wait_status, usage = os.wait4(pid, os.WNOHANG)
        if reaped == pid:
            return os.waitstatus_to_exitcode(wait_status), int(usage.ru_maxrss), timed_out
        if not timed_out and time.monotonic() >= deadline:
            timed_out = True
            _kill_group(pid)
            continue
        time.sleep(delay)
        delay = min(delay * 2, 0.05)


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _out_of_memory(
    request: _Request,
    status: int,
    timed_out: bool,
    max_rss_kb: int,
    stderr: BinaryIO,
    *,
    shell: bool,
) -> bool:
    """A heuristic: the code cannot be watched allocating, only its end seen.

    Out of memory when stderr holds an allocation failure (MemoryError, "Cannot allocate
    memory", "out of memory", std::bad_alloc), or when the code (or, for shell, the command sh
    reports as 128 + signal) was killed by SIGKILL without timing out (the only SIGKILL sent
    here is the timeout's, so another is the kernel's OOM killer), or by SIGSEGV, SIGBUS or
    SIGABRT with a peak resident size of at least half the memory limit (what a C program does
    when an allocation under RLIMIT_AS fails and it carries on).
    """
    if timed_out:
        return False
    if _stderr_mentions_oom(stderr):
        return True
    if status < 0:
        killed_by: int | None = -status
    elif shell and status > 128:
        killed_by = status - 128
    else:
        killed_by = None
    if killed_by == signal.SIGKILL:
        return True
    return killed_by in _OOM_SIGNALS and max_rss_kb * 1024 >= request.memory_mb * 1024 * 1024 // 2


def _stderr_mentions_oom(stream: BinaryIO) -> bool:
    overlap = max(len(phrase) for phrase in _OOM_PHRASES)
    tail = b""
    stream.seek(0)
    while chunk := stream.read(1 << 20):
        window = (tail + chunk).lower()
        if any(phrase in window for phrase in _OOM_PHRASES):
            return True
        tail = window[-overlap:]
    return False


def read_capped(stream: BinaryIO, max_chars: int) -> tuple[str, bool]:
    """At most `max_chars` characters of a captured stream (head and tail if longer)."""
    size = os.fstat(stream.fileno()).st_size
    stream.seek(0)
    if size <= max_chars * 4:
        text = stream.read().decode("utf-8", errors="replace")
        if len(text) <= max_chars:
            return text, False
        head_text = text
    else:
        head_text = stream.read(max_chars * 4).decode("utf-8", errors="replace")
    stream.seek(max(0, size - max_chars * 4))
    tail_text = stream.read().decode("utf-8", errors="replace")
    marker = f"\n… [output truncated: {size} bytes in all] …\n"
    budget = max(0, max_chars - len(marker))
    head_chars = budget // 2
    tail_chars = budget - head_chars
    return head_text[:head_chars] + marker + tail_text[len(tail_text) - tail_chars :], True


def _collect_files(work: Path, request: _Request) -> tuple[dict[str, str], dict[str, str]]:
    """The files under work/ that are new or changed, within the input caps; the rest skipped."""
    files: dict[str, str] = {}
    skipped: dict[str, str] = {}  # path: reason, in the order met
    total = 0
    scanned = 0
    unlisted = 0

    def skip(path: str, reason: str) -> None:
        nonlocal unlisted
        if len(skipped) < MAX_SKIPPED_LISTED:
            skipped[path] = reason
        else:
            unlisted += 1

    for folder, dirnames, filenames in os.walk(work):  # never follows links to folders
        dirnames.sort()
        for name in sorted(filenames):
            full = os.path.join(folder, name)
            relative = os.path.relpath(full, work).replace(os.sep, "/")
            if request.language == "python" and relative == PYTHON_SCRIPT:
                continue
            scanned += 1
            if scanned > MAX_SCANNED_FILES:
                skip(relative, f"more than {MAX_SCANNED_FILES} files: not looked at")
                continue
            try:
                path = normalize_path(relative)
            except PathError as error:
                skip(relative, f"unusable name: {error}")
                continue
            data = _read_regular_file(full, MAX_FILES_BYTES - total)
            if data is None:
                skip(path, "not a regular file (a link, a pipe, …)")
                continue
            if isinstance(data, int):
                skip(path, f"too large: {data} bytes, over the {MAX_FILES_BYTES}-byte total")
                continue
            if request.files.get(path) == data:
                continue  # an unchanged input
            if len(files) >= MAX_FILES:
                skip(path, f"more than {MAX_FILES} files")
                continue
            files[path] = base64.b64encode(data).decode("ascii")
            total += len(data)
    if unlisted:
        skipped["…"] = f"{unlisted} more files skipped, not listed"
    return files, skipped


def _read_regular_file(path: str, budget: int) -> bytes | int | None:
    """The file's bytes; its size if over `budget`; None if it is not a regular file.

    O_NOFOLLOW and O_NONBLOCK: a link is never followed (it could name the handler's own
    /proc entries), a pipe never blocks.
    """
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(descriptor, "rb") as stream:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            return None
        if info.st_size > budget:
            return info.st_size
        data = stream.read(budget + 1)
    return data if len(data) <= budget else len(data)


# --- cleaning -----------------------------------------------------------------------------------


def empty_directory(root: Path) -> list[str]:
    """Delete everything in `root` (not `root` itself); the names that could not be deleted."""
    left: list[str] = []
    with contextlib.suppress(OSError):
        os.chmod(root, stat.S_IRWXU | (os.stat(root).st_mode & 0o7777))
    for entry in os.scandir(root):
        if not _remove(entry.path):
            left.append(entry.name)
    return left


def _remove(path: str) -> bool:
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    if stat.S_ISDIR(info.st_mode):
        with contextlib.suppress(OSError):  # the code may have made it read-only
            os.chmod(path, stat.S_IRWXU)
        try:
            children = [entry.path for entry in os.scandir(path)]
        except OSError:
            return False
        removed = all([_remove(child) for child in children])
        try:
            os.rmdir(path)
        except FileNotFoundError:
            return True
        except OSError:
            return False
        return removed
    try:
        os.unlink(path)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return True


def end_stray_processes(*, in_lambda: bool) -> list[int]:
    """SIGKILL the strays (see `find_stray_processes`) until none is left; the pids killed."""
    killed: list[int] = []
    for _round in range(20):  # a fork bomb may spawn while it is being swept
        strays = find_stray_processes(in_lambda=in_lambda)
        if not strays:
            break
        for pid in strays:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        killed.extend(strays)
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline and any(_is_alive(pid) for pid in strays):
            time.sleep(0.005)
    return killed


def find_stray_processes(*, in_lambda: bool) -> list[int]:
    """The live processes of this user carrying the marker and, in Lambda, all the others but
    this process and its ancestors (the runtime). Never this process nor its ancestors."""
    me = os.getpid()
    protected = _ancestors(me) | {me}
    uid = os.getuid()
    sweep_user = in_lambda and uid != 0  # root outside a real Lambda: never sweep by user
    strays: list[int] = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return strays
    for entry in entries:
        if not entry.isdigit():
            continue
        pid = int(entry)
        if pid in protected:
            continue
        try:
            if os.stat(f"/proc/{pid}").st_uid != uid:
                continue
        except OSError:
            continue
        if not _is_alive(pid):
            continue
        if sweep_user or _has_marker(pid):
            strays.append(pid)
    return strays


def _has_marker(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as stream:
            environment = stream.read()
    except OSError:
        return False
    prefix = MARKER.encode() + b"="
    return any(item.startswith(prefix) for item in environment.split(b"\x00"))


def _stat_fields(pid: int) -> list[str] | None:
    """/proc/<pid>/stat after the command name: state, ppid, ..."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stream:
            content = stream.read().decode("ascii", errors="replace")
    except OSError:
        return None
    return content[content.rfind(")") + 2 :].split()


def _is_alive(pid: int) -> bool:
    """Exists and is not a zombie (a zombie is dead; only its parent's wait is missing)."""
    fields = _stat_fields(pid)
    return fields is not None and len(fields) > 0 and fields[0] not in ("Z", "X", "x")


def _ancestors(pid: int) -> set[int]:
    ancestors: set[int] = set()
    current = pid
    while current > 1:
        fields = _stat_fields(current)
        if not fields or len(fields) < 2:
            break
        parent = int(fields[1])
        if parent in ancestors or parent <= 0:
            break
        ancestors.add(parent)
        current = parent
    return ancestors

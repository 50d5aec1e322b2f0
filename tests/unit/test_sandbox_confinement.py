"""The sandbox's code finds no credential: not in its environment, not in any process's /proc
entries, not in the user's files (functions/sandbox_confinement.py).

The handler runs as Lambda runs it: in a process of its own whose environment holds the role's
credentials (planted here: fake, random values), with another secret put in its memory after
start (as the local stack's process holds what it read from .env). Its parent, this test's
process, holds every planted value in memory and is made undumpable as the local stack makes
its own process. The code (tests/support/sandbox_snoop.py) reads everything it can list.
"""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nanobot_lambda.functions import sandbox
from nanobot_lambda.functions.sandbox import run
from nanobot_lambda.functions.sandbox_confinement import Confinement, landlock_abi, set_dumpable
from tests.support.sandbox_snoop import snoop_code, snoop_report

APP = Path(__file__).resolve().parents[2] / "functions" / "sandbox" / "app.py"
WITH_LANDLOCK = pytest.mark.skipif(landlock_abi() == 0, reason="this kernel has no Landlock")

# The handler's process: reads {"request", "in_memory", "landlock"} on stdin, puts `in_memory`
# in its environment (memory only: /proc/<pid>/environ keeps the start's), drops whatever
# capabilities it has (Lambda's user has none; as root here, the kernel's capability check
# alone would close it to the code, hiding what undumpable does), runs the handler.
HANDLER_PROCESS = r"""
import importlib.util, json, os, sys
from nanobot_lambda.functions import sandbox_confinement
given = json.loads(sys.stdin.read())
os.environ.update(given["in_memory"])
if sandbox_confinement.has_capabilities():
    sandbox_confinement.drop_capabilities()
if not given["landlock"]:
    sandbox_confinement.landlock_abi = lambda: 0
spec = importlib.util.spec_from_file_location("sandbox_app", sys.argv[1])
app = importlib.util.module_from_spec(spec)
spec.loader.exec_module(app)
print(json.dumps(app.handler(given["request"], None)))
"""


class Planted:
    """Fake credentials where a user's machine or Lambda keeps real ones."""

    def __init__(self, base: Path) -> None:
        def fake(name: str) -> str:
            return f"planted-{name}-{uuid.uuid4().hex}"

        self.environment = {
            "AWS_ACCESS_KEY_ID": fake("key-id"),
            "AWS_SECRET_ACCESS_KEY": fake("secret-key"),
            "AWS_SESSION_TOKEN": fake("session-token"),
            "TELEGRAM_BOT_TOKEN": fake("bot-token"),
        }
        self.in_memory = {"LLM_API_KEY": fake("llm-key")}
        self.home = base / "home"
        self.project = base / "project"
        self.credentials_file = self.home / ".aws" / "credentials"
        self.env_file = self.project / ".env"
        self.in_files = {"credentials": fake("file-secret"), "dotenv": fake("dotenv-key")}
        self.credentials_file.parent.mkdir(parents=True)
        self.project.mkdir()
        self.credentials_file.write_text(
            f"[default]\naws_secret_access_key = {self.in_files['credentials']}\n"
        )
        self.env_file.write_text(f"LLM_API_KEY={self.in_files['dotenv']}\n")

    @property
    def values(self) -> list[str]:
        return [*self.environment.values(), *self.in_memory.values(), *self.in_files.values()]

    @property
    def files(self) -> list[str]:
        return [str(self.credentials_file), str(self.env_file)]


@pytest.fixture
def planted(tmp_path: Path) -> Iterator[Planted]:
    made = Planted(tmp_path)
    before = set_dumpable(False)  # as LocalStack does for its own process
    try:
        yield made
    finally:
        set_dumpable(before)


def run_in_handler_process(
    planted: Planted, root: Path, code: str, *, landlock: bool = True
) -> dict[str, Any]:
    """The sandbox function's handler in a process holding `planted` credentials, as on
    Lambda; its answer to a Python run of `code`."""
    given = {
        "request": {"version": 1, "language": "python", "code": code, "output_max_chars": 50_000},
        "in_memory": planted.in_memory,
        "landlock": landlock,
    }
    completed = subprocess.run(  # noqa: S603
        [sys.executable, "-c", HANDLER_PROCESS, str(APP)],
        input=json.dumps(given),
        env={
            "PATH": os.environ["PATH"],
            "HOME": str(planted.home),
            "SANDBOX_ROOT": str(root),
            **planted.environment,
        },
        cwd=planted.project,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    result: dict[str, Any] = json.loads(completed.stdout)
    assert result["ok"] and result["exit_code"] == 0, result
    return result


def assert_no_process_gave_anything_away(report: dict[str, Any], handler_pid: int) -> None:
    assert report["found"] == []
    assert "/proc/self/environ" in report["opened"]  # reading works: its own is readable
    assert report["ancestors"][0] == handler_pid
    assert report["pids"] > 2  # it listed the machine's processes
    assert report["tried"] > 20
    for pid in report["ancestors"]:  # the handler, this test's process, and theirs
        for part in ("environ", "mem (opened)", "maps", f"task/{pid}/environ"):
            assert f"/proc/{pid}/{part}" not in report["opened"]


def handler_pid(result: dict[str, Any]) -> int:
    return int(result["stderr"].strip().rsplit(" ", 1)[-1])


PRINT_PARENT = "import os, sys\nprint('parent', os.getppid(), file=sys.stderr)\n"


def test_the_code_finds_no_credential_in_any_process(planted: Planted, tmp_path: Path) -> None:
    code = PRINT_PARENT + snoop_code(planted.values, files=[])
    result = run_in_handler_process(planted, tmp_path / "root", code)
    report = snoop_report(result["stdout"])
    assert_no_process_gave_anything_away(report, handler_pid(result))
    assert not [value for value in planted.values if value in json.dumps(result)]


@WITH_LANDLOCK
def test_the_code_cannot_read_the_user_s_files(planted: Planted, tmp_path: Path) -> None:
    code = snoop_code(planted.values, files=planted.files)
    report = snoop_report(run_in_handler_process(planted, tmp_path / "root", code)["stdout"])
    assert report["found"] == []
    for path in planted.files:
        assert path not in report["opened"]


def test_without_landlock_the_processes_holding_credentials_stay_closed(
    planted: Planted, tmp_path: Path
) -> None:
    """Lambda's kernel may have no Landlock: the handler's process (undumpable) and this one
    stay closed to the code all the same (root's capabilities are dropped from it)."""
    code = PRINT_PARENT + snoop_code(planted.values, files=[])
    result = run_in_handler_process(planted, tmp_path / "root", code, landlock=False)
    assert_no_process_gave_anything_away(snoop_report(result["stdout"]), handler_pid(result))


def test_the_code_has_no_capabilities_and_gains_none(tmp_path: Path) -> None:
    code = (
        "status = dict(line.split(':', 1) for line in open('/proc/self/status'))\n"
        "print(status['CapEff'].strip(), status['CapPrm'].strip(), status['CapBnd'].strip(),\n"
        "      status['NoNewPrivs'].strip())\n"
    )
    result = run({"version": 1, "language": "python", "code": code}, root=tmp_path, in_lambda=False)
    effective, permitted, bounding, no_new_privileges = result["stdout"].split()
    assert int(effective, 16) == int(permitted, 16) == 0
    if os.geteuid() == 0:
        assert int(bounding, 16) == 0  # a root run could not get any back at exec either
    assert no_new_privileges == "1"


# Code that tries each (name, expression) and prints "name allowed" or "name denied errno".
ATTEMPTS = """
import os, socket
def attempt(what, action):
    try:
        action()
        print(what, "allowed")
    except OSError as error:
        print(what, "denied", error.errno)
"""


def attempts(root: Path, *tries: tuple[str, str]) -> str:
    """What the code run in `root` was allowed and denied, one line per try."""
    code = ATTEMPTS + "".join(f"attempt({name!r}, lambda: {action})\n" for name, action in tries)
    result = run({"version": 1, "language": "python", "code": code}, root=root, in_lambda=False)
    assert result["exit_code"] == 0, result["stderr"]
    stdout: str = result["stdout"]
    return stdout


@WITH_LANDLOCK
def test_landlock_keeps_writes_to_the_root_and_reads_to_the_system(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "private.txt").write_text("not yours")
    root = tmp_path / "root"
    seen = attempts(
        root,
        ("read outside", f"open({str(outside / 'private.txt')!r}).read()"),
        ("write outside", f"open({str(outside / 'new.txt')!r}, 'w')"),
        ("list outside", f"os.listdir({str(outside)!r})"),
        ("read /etc", "open('/etc/passwd').read()"),
        ("write work", "open('made.txt', 'w').write('x')"),
        ("write tmp", "open(os.environ['TMPDIR'] + '/t', 'w').write('x')"),
        ("null", "open('/dev/null', 'w').write('x')"),
    )
    assert seen.splitlines() == [
        "read outside denied 13",
        "write outside denied 13",
        "list outside denied 13",
        "read /etc allowed",
        "write work allowed",
        "write tmp allowed",
        "null allowed",
    ]
    assert not (outside / "new.txt").exists()


@pytest.fixture
def local_server() -> Iterator[int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


@pytest.mark.skipif(landlock_abi() < 4, reason="Landlock before ABI 4 leaves TCP alone")
def test_outside_lambda_the_code_cannot_reach_the_local_stack_s_servers(
    tmp_path: Path, local_server: int
) -> None:
    connect = f"socket.create_connection(('127.0.0.1', {local_server}), timeout=5).close()"
    assert attempts(tmp_path, ("connect", connect)) == "connect denied 13\n"


@pytest.mark.skipif(landlock_abi() < 6, reason="Landlock scopes signals from ABI 6 on")
def test_the_code_cannot_signal_a_process_outside_its_run(tmp_path: Path) -> None:
    assert attempts(tmp_path, ("signal", f"os.kill({os.getpid()}, 0)")) == "signal denied 1\n"


def test_a_confinement_that_cannot_be_entered_refuses_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Landlock ruleset the child cannot apply (here: a descriptor that is none) must stop
    the run before the code starts, never let it run unconfined."""
    monkeypatch.setattr(sandbox, "prepare", lambda root, **_: Confinement(1_000_000, False))
    code = "open('ran.txt', 'w').write('unconfined')\n"
    result = run({"version": 1, "language": "python", "code": code}, root=tmp_path, in_lambda=False)
    assert result["ok"] is False
    assert "the sandbox failed" in result["error"]
    assert not (tmp_path / "work" / "ran.txt").exists()

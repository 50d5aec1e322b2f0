"""The code sandbox's runner: confinement, limits, and a clean slate between runs.

Always `in_lambda=False`: in Lambda the sweep would end every process of the user.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from nanobot_lambda.functions import sandbox
from nanobot_lambda.functions.sandbox import MARKER, PROGRAMS_REQUEST, find_stray_processes, run

SLEEP = shutil.which("sleep") or "/bin/sleep"


def sleeper(**options: Any) -> subprocess.Popen[bytes]:
    """A process of the test's own, in a session of its own, sleeping for 300 s."""
    return subprocess.Popen([SLEEP, "300"], start_new_session=True, **options)  # noqa: S603


def request(language: str, code: str, **fields: Any) -> dict[str, Any]:
    return {"version": 1, "language": language, "code": code, **fields}


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def alive(pid: int) -> bool:
    """Exists and is not a zombie (a killed orphan may wait for a reaper that never comes)."""
    try:
        content = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return content[content.rfind(")") + 2 :].split()[0] not in ("Z", "X")


def wait_gone(pid: int, seconds: float = 2.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.01)
    return not alive(pid)


def test_python_prints_and_exits_zero(tmp_path: Path) -> None:
    result = run(request("python", "print('hello', 6 * 7)"), root=tmp_path, in_lambda=False)
    assert result["ok"] is True
    assert result["exit_code"] == 0
    assert result["stdout"] == "hello 42\n"
    assert result["stderr"] == ""
    assert result["timed_out"] is False
    assert result["out_of_memory"] is False
    assert result["truncated"] is False
    assert result["files"] == {}
    assert isinstance(result["duration_ms"], int)


def test_python_failure_reports_exit_code_and_traceback(tmp_path: Path) -> None:
    result = run(request("python", "raise SystemExit(3)"), root=tmp_path, in_lambda=False)
    assert result["exit_code"] == 3
    result = run(request("python", "1 / 0"), root=tmp_path, in_lambda=False)
    assert result["exit_code"] == 1
    assert "ZeroDivisionError" in result["stderr"]
    assert result["out_of_memory"] is False


def test_shell_runs_the_image_programs(tmp_path: Path) -> None:
    result = run(
        request("shell", "echo hi && ls", files={"data.csv": b64(b"a,b\n")}),
        root=tmp_path,
        in_lambda=False,
    )
    assert result["ok"] is True
    assert result["exit_code"] == 0
    assert result["stdout"].split() == ["hi", "data.csv"]


def test_shell_finds_python(tmp_path: Path) -> None:
    result = run(request("shell", "python3 -c 'print(1 + 1)'"), root=tmp_path, in_lambda=False)
    assert result["stdout"] == "2\n"


def test_input_files_are_readable_and_new_or_changed_files_come_back(tmp_path: Path) -> None:
    code = (
        "import helper\n"
        "from pathlib import Path\n"
        "rows = Path('in/data.csv').read_text().splitlines()\n"
        "Path('out').mkdir()\n"
        "Path('out/report.txt').write_text(helper.shout(str(len(rows))))\n"
        "Path('notes.txt').write_text('changed')\n"
    )
    files = {
        "in/data.csv": b64(b"a\nb\nc\n"),
        "helper.py": b64(b"def shout(text):\n    return text + '!'\n"),
        "./notes.txt": b64(b"original"),
    }
    result = run(request("python", code, files=files), root=tmp_path, in_lambda=False)
    assert result["ok"] is True, result
    assert result["exit_code"] == 0, result["stderr"]
    assert result["files"] == {"notes.txt": b64(b"changed"), "out/report.txt": b64(b"3!")}
    assert result["skipped"] == []


def test_links_and_pipes_are_not_returned(tmp_path: Path) -> None:
    code = (
        "import os\n"
        "os.symlink('/proc/self/environ', 'environ')\n"
        "os.mkfifo('pipe')\n"
        "open('kept.txt', 'w').write('ok')\n"
    )
    result = run(request("python", code), root=tmp_path, in_lambda=False)
    assert result["files"] == {"kept.txt": b64(b"ok")}
    assert sorted(result["skipped"]) == ["environ", "pipe"]
    assert "not a regular file" in result["skipped_reasons"]["environ"]


def test_output_files_beyond_the_caps_are_skipped(tmp_path: Path) -> None:
    code = (
        "for i in range(25):\n"
        "    open(f'f{i:02}.txt', 'w').write(str(i))\n"
        "open('big.bin', 'wb').write(b'x' * 6_000_000)\n"
    )
    result = run(request("python", code), root=tmp_path, in_lambda=False)
    assert len(result["files"]) == 20
    reasons = result["skipped_reasons"]
    assert sorted(result["skipped"]) == sorted(reasons)
    assert "too large" in reasons["big.bin"]
    assert len(reasons) == 6
    assert all("more than 20 files" in reasons[f"f{i}.txt"] for i in range(20, 25))


def test_timeout_kills_the_whole_group(tmp_path: Path) -> None:
    code = (
        "import subprocess, time\n"
        "child = subprocess.Popen(['sleep', '30'])\n"
        "print(child.pid, flush=True)\n"
        "time.sleep(30)\n"
    )
    started = time.monotonic()
    result = run(request("python", code, timeout_seconds=1), root=tmp_path, in_lambda=False)
    assert time.monotonic() - started < 3
    assert result["ok"] is True
    assert result["timed_out"] is True
    assert result["exit_code"] is None
    assert result["signal"] == "SIGKILL"
    assert result["out_of_memory"] is False
    assert wait_gone(int(result["stdout"].split()[0]))


def test_out_of_memory_is_reported(tmp_path: Path) -> None:
    result = run(
        request("python", "x = bytearray(2 * 1024**3)", memory_mb=128),
        root=tmp_path,
        in_lambda=False,
    )
    assert result["ok"] is True
    assert result["out_of_memory"] is True
    assert result["exit_code"] != 0
    assert "MemoryError" in result["stderr"]


def test_output_is_capped(tmp_path: Path) -> None:
    code = "import sys\nsys.stdout.write('a' * 1_000_000 + 'THE END')\n"
    result = run(request("python", code, output_max_chars=2_000), root=tmp_path, in_lambda=False)
    assert result["truncated"] is True
    assert len(result["stdout"]) <= 2_000
    assert result["stdout"].startswith("aaaa")
    assert result["stdout"].endswith("THE END")  # the tail survives, as a traceback would
    assert "truncated" in result["stdout"]
    assert result["stdout_bytes"] == 1_000_007 and result["stderr_bytes"] == 0  # the whole


def test_the_code_gets_none_of_the_parents_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "fake-secret-key")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "fake-session-token")
    monkeypatch.setenv("TELEGRAM_BOT_TOKEN", "123:fake-bot-token")
    code = "import json, os\nprint(json.dumps(dict(os.environ)))\n"
    result = run(request("python", code), root=tmp_path, in_lambda=False)
    environment = json.loads(result["stdout"])
    assert not [name for name in environment if name.startswith("AWS_")]
    assert "TELEGRAM_BOT_TOKEN" not in environment
    assert "fake" not in result["stdout"]
    allowed = {"PATH", "HOME", "LANG", "TMPDIR", "PYTHONDONTWRITEBYTECODE", MARKER, "LC_CTYPE"}
    assert set(environment) <= allowed
    assert environment["HOME"] == str(tmp_path / "work")
    assert environment["TMPDIR"] == str(tmp_path / "tmp")
    shell = run(request("shell", "env"), root=tmp_path, in_lambda=False)
    assert "fake" not in shell["stdout"]
    assert "AWS_" not in shell["stdout"]


def test_the_root_is_emptied_between_runs(tmp_path: Path) -> None:
    (tmp_path / "from-before.txt").write_text("old")
    code = (
        "import os\n"
        "open('../left-behind.txt', 'w').write('x')\n"
        "open(os.path.join(os.environ['TMPDIR'], 'temp.txt'), 'w').write('x')\n"
        "os.makedirs('../locked/inner')\n"
        "open('../locked/inner/f', 'w').write('x')\n"
        "os.chmod('../locked/inner', 0o500)\n"
        "os.chmod('../locked', 0o500)\n"
    )
    first = run(request("python", code), root=tmp_path, in_lambda=False)
    assert first["exit_code"] == 0, first["stderr"]
    assert not (tmp_path / "from-before.txt").exists()
    assert (tmp_path / "left-behind.txt").exists()

    check = "import os\nprint(sorted(os.listdir('..')), os.listdir(os.environ['TMPDIR']))\n"
    second = run(request("python", check), root=tmp_path, in_lambda=False)
    assert second["stdout"] == "['output', 'tmp', 'work'] []\n"
    assert not (tmp_path / "left-behind.txt").exists()
    assert not (tmp_path / "locked").exists()


def test_a_detached_process_does_not_outlive_its_run(tmp_path: Path) -> None:
    code = (
        "import subprocess\n"
        "child = subprocess.Popen(['sleep', '300'], start_new_session=True,\n"
        "    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
        "print(child.pid)\n"
    )
    first = run(request("python", code), root=tmp_path, in_lambda=False)
    stray = int(first["stdout"])
    detached = run(
        request("shell", "nohup setsid sleep 300 >/dev/null 2>&1 & echo $!"),
        root=tmp_path,
        in_lambda=False,
    )
    second = run(request("python", "print('next')"), root=tmp_path, in_lambda=False)
    assert second["stdout"] == "next\n"
    assert wait_gone(stray)
    assert wait_gone(int(detached["stdout"]))


def test_marked_processes_are_ended_before_a_run(tmp_path: Path) -> None:
    stray = sleeper(env={"PATH": os.environ["PATH"], MARKER: "1"})
    unmarked = sleeper()
    try:
        result = run(request("python", "print('run')"), root=tmp_path, in_lambda=False)
        assert result["stdout"] == "run\n"
        assert stray.wait(timeout=2) == -9
        assert unmarked.poll() is None  # outside Lambda, only marked processes are swept
    finally:
        for process in (stray, unmarked):
            process.kill()
            process.wait()


def test_the_lambda_sweep_spares_this_process_and_its_ancestors() -> None:
    unmarked = sleeper()
    try:
        strays = find_stray_processes(in_lambda=True)
        if os.getuid() != 0:  # as root (outside a real Lambda) nothing is swept by user
            assert unmarked.pid in strays
        assert os.getpid() not in strays
        assert os.getppid() not in strays
        assert 1 not in strays
        assert unmarked.pid not in find_stray_processes(in_lambda=False)
    finally:
        unmarked.kill()
        unmarked.wait()


@pytest.mark.parametrize("name", ["../x", "/etc/passwd", "a/../../x", "~/x", "", "a\\b"])
def test_hostile_file_names_are_refused(tmp_path: Path, name: str) -> None:
    marker = tmp_path / "kept"
    marker.write_text("x")
    result = run(
        request("shell", "echo ran", files={name: b64(b"x")}), root=tmp_path, in_lambda=False
    )
    assert result["ok"] is False
    assert repr(name) in result["error"]
    assert marker.exists()  # nothing was cleaned or run


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (["not", "an", "object"], "JSON object"),
        ({"version": 2, "language": "python", "code": "1"}, "version must be 1"),
        ({"language": "python", "code": "1"}, "version must be 1"),
        (request("ruby", "puts 1"), "language must be one of python, shell"),
        (request("python", "1", timeout_seconds=0), "timeout_seconds must be from 1 to 60"),
        (request("python", "1", timeout_seconds=61), "timeout_seconds must be from 1 to 60"),
        (request("python", "1", timeout_seconds=True), "timeout_seconds must be a whole number"),
        (request("python", "1", timeout_seconds="5"), "timeout_seconds must be a whole number"),
        (request("python", "1", memory_mb=32), "memory_mb must be from 64 to 1024"),
        (request("python", "1", output_max_chars=10), "output_max_chars must be from 1000"),
        (request("python", "x" * 100_001), "at most 100000"),
        (request("python", ""), "code is empty"),
        (request("python", 5), "code must be a string"),
        (request("shell", "echo \x00"), "NUL"),
        (request("python", "1", stdin="x"), "unknown request field(s): stdin"),
        (request("python", "1", files=[]), "files must be an object"),
        (request("python", "1", files={"a": "%%%"}), "not valid base64"),
        (request("python", "1", files={"a": 5}), "must be a base64 string"),
        (request("python", "1", files={f"f{i}": "" for i in range(21)}), "at most 20"),
        (
            request("python", "1", files={"a": b64(b"x" * 3_000_000), "b": b64(b"x" * 3_000_000)}),
            "larger than 5000000 bytes",
        ),
        (request("python", "1", files={"a": "", "./a": ""}), "same file"),
        (request("python", "1", files={"a": "", "a/b": ""}), "both a file and a folder"),
        (request("python", "1", files={"main.py": ""}), "main.py is where the Python code"),
    ],
)
def test_bad_requests_are_refused_without_running(
    tmp_path: Path, bad: object, message: str
) -> None:
    marker = tmp_path / "kept"
    marker.write_text("x")
    result = run(bad, root=tmp_path, in_lambda=False)
    assert result["ok"] is False
    assert message in result["error"]
    assert marker.exists()


def test_the_file_system_root_is_refused() -> None:
    result = run(request("python", "1"), root=Path("/"), in_lambda=False)
    assert result == {"ok": False, "error": "the sandbox root cannot be the file system root"}


def test_a_failure_is_a_result_not_an_exception(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sandbox.sys, "executable", str(tmp_path / "no-such-python"))
    result = run(request("python", "print(1)"), root=tmp_path / "root", in_lambda=False)
    assert result["ok"] is False
    assert "the sandbox failed" in result["error"]


def test_the_handler_refuses_to_clean_tmp_outside_lambda(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SANDBOX_ROOT", raising=False)
    monkeypatch.delenv("AWS_LAMBDA_FUNCTION_NAME", raising=False)
    app = _load_handler()
    result = app.handler(request("python", "print(1)"), None)
    assert result["ok"] is False
    assert "SANDBOX_ROOT" in result["error"]


def test_the_handler_runs_in_its_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SANDBOX_ROOT", str(tmp_path))
    monkeypatch.delenv("AWS_LAMBDA_FUNCTION_NAME", raising=False)
    result = _load_handler().handler(request("shell", "pwd"), None)
    assert result["stdout"] == f"{tmp_path / 'work'}\n"


def test_the_runner_imports_only_the_standard_library() -> None:
    code = (
        "import sys\n"
        "before = set(sys.modules)\n"
        "import nanobot_lambda.functions.sandbox\n"
        "loaded = {name.split('.')[0] for name in set(sys.modules) - before}\n"
        "print(sorted(loaded - set(sys.stdlib_module_names) - {'nanobot_lambda'}))\n"
    )
    completed = subprocess.run(  # noqa: S603
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert completed.stdout.strip() == "[]"


def _load_handler() -> Any:
    import importlib.util

    path = Path(__file__).resolve().parents[2] / "functions" / "sandbox" / "app.py"
    spec = importlib.util.spec_from_file_location("sandbox_app_under_test", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_replacing_the_captured_output_with_a_link_reads_nothing_else(tmp_path: Path) -> None:
    code = (
        "import os\n"
        "print('mine')\n"
        "os.rename('../output', '../gone')\n"
        "os.makedirs('../output')\n"
        "os.symlink('/proc/1/environ', '../output/stdout')\n"
    )
    result = run(request("python", code), root=tmp_path, in_lambda=False)
    assert result["stdout"] == "mine\n"


def test_the_programs_a_run_finds_are_listed_without_running_anything(tmp_path: Path) -> None:
    (tmp_path / "keep").write_text("x")
    answer = run(PROGRAMS_REQUEST, root=tmp_path, in_lambda=False)
    assert answer["ok"] and "sh" in answer["programs"] and "python3" in answer["programs"]
    assert answer["programs"] == sorted(set(answer["programs"]))
    assert (tmp_path / "keep").exists()  # a question, not a run: nothing was emptied

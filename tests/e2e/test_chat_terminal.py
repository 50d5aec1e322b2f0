"""`nanobot-lambda chat` at a terminal, as a person uses it: the installed console script on a
pseudo-terminal (python's `pty`), typed into key by key, against the scripted model server.

The prompt stays usable while a turn runs (/stop goes through the webhook as in Telegram), a
message that arrives on its own prints above the prompt and the prompt comes back with what was
being typed, buttons are pressed with /press, sent files are saved and links show their address,
`--state DIR` keeps the chat between runs, and `--local` lets the operator commands reach the
running stack. Nothing below WARNING is logged without -v.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import struct
import subprocess
import termios
import threading
import time
from pathlib import Path

import pytest

from nanobot_lambda.core import texts
from nanobot_lambda.operator.cli.live import PRESS_HINT
from tests.e2e.test_cli import CLI, run_cli
from tests.support.screen import Screen
from tests.support.scripted_model import ScriptedModelServer

WORDS = " ".join(f"w{n}" for n in range(1, 31))
COLUMNS = 200
STOP_SENT = "(Ctrl-C: /stop sent"


class ChatAtTerminal:
    """A `chat` process on a pseudo-terminal of 200 columns; its output read as it comes."""

    def __init__(self, *arguments: str, env: dict[str, str], cwd: Path) -> None:
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, COLUMNS, 0, 0))
        clean = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "AWS_"))}

        def own_terminal() -> None:  # a session of its own, the pty its terminal: Ctrl-C works
            os.setsid()
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)

        self.process = subprocess.Popen(  # noqa: S603
            [CLI, "chat", "--env-file", "/nonexistent", *arguments],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            cwd=cwd,
            env={**clean, "TERM": "xterm", **env},
            preexec_fn=own_terminal,
        )
        os.close(slave)
        self._master = master
        self._raw = b""
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self._master, 65536)
            except OSError:  # EIO: the process closed the terminal
                return
            if not chunk:
                return
            with self._lock:
                self._raw += chunk

    @property
    def raw(self) -> str:
        with self._lock:
            return self._raw.decode(errors="replace")

    @property
    def screen(self) -> Screen:
        """What the terminal shows now (the output played on a terminal's screen)."""
        screen = Screen(COLUMNS)
        screen.feed(self.raw)
        return screen

    @property
    def text(self) -> str:
        return self.screen.text

    def expect(self, expected: str, timeout: float = 60) -> None:
        """Wait until the screen shows `expected`."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if expected in self.text:
                return
            if self.process.poll() is not None:
                break
            time.sleep(0.1)
        raise AssertionError(f"{expected!r} not shown; the screen shows:\n{self.text}")

    def expect_prompt(self, typed: str = "", timeout: float = 30) -> None:
        """Wait until the last line is the prompt (with what was typed), and nothing is below."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.screen.lines[-1] == f"you> {typed}".rstrip():
                return
            time.sleep(0.1)
        raise AssertionError(f"no prompt at the bottom; the screen shows:\n{self.text}")

    def type(self, keys: str) -> None:
        os.write(self._master, keys.encode())

    def send(self, line: str) -> None:
        self.type(line + "\r")

    def close(self) -> int:
        if self.process.poll() is None:
            self.type("\x15\x04")  # Ctrl-U (the line typed so far goes), Ctrl-D: quit
        try:
            code = self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            code = self.process.wait()
        self._reader.join(timeout=5)
        os.close(self._master)
        return code


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    """Where `chat` announces its stack and `--local` finds it (XDG_CACHE_HOME)."""
    return tmp_path / "cache"


def start_chat(
    model_server: ScriptedModelServer, tmp_path: Path, cache: Path, *arguments: str
) -> ChatAtTerminal:
    chat = ChatAtTerminal(
        *arguments, env={**model_server.env(), "XDG_CACHE_HOME": str(cache)}, cwd=tmp_path
    )
    chat.expect_prompt()
    return chat


def test_stop_typed_while_an_answer_is_written_stops_the_turn(
    model_server: ScriptedModelServer, tmp_path: Path, cache: Path
) -> None:
    # A first step streamed slowly (about 4 s) that calls a tool; the answer would come after.
    model_server.call_tool(
        "list_dir",
        {"path": ""},
        content=f"Let me look through it all: {WORDS}",
        tokens_per_second=8,
    ).reply("Here is everything.")
    chat = start_chat(model_server, tmp_path, cache)
    try:
        chat.send("go through my files")
        chat.expect("nanobot> Let me look through")  # being written...
        chat.expect_prompt()  # ...above the prompt
        chat.send("/stop")
        chat.expect(f"nanobot> {texts.load('stopped')}")
        chat.expect_prompt()  # drawn again under it
    finally:
        assert chat.close() == 0
    assert len(model_server.requests) == 1  # stopped before the next step
    assert model_server.remaining == 1
    assert "Here is everything." not in chat.text
    assert "you> /stop" in chat.text
    # No log line below WARNING without -v (Powertools' JSON lines carry a "level").
    assert '"level"' not in chat.text and "INFO" not in chat.text


def test_a_message_that_arrives_while_typing_prints_above_the_prompt_and_the_typing_stays(
    model_server: ScriptedModelServer, tmp_path: Path, cache: Path
) -> None:
    """As a reminder or a background task's result would: the bot writes while the person is
    typing (here the answer to a question, held by the model until the typing has begun)."""
    answer_now = threading.Event()
    model_server.reply(f"Take your time: {WORDS}", hold=answer_now, tokens_per_second=40)
    chat = start_chat(model_server, tmp_path, cache)
    try:
        chat.send("what should I do today?")
        chat.expect_prompt()  # at once: the answer is still to come
        chat.type("hel")
        chat.expect_prompt("hel")
        answer_now.set()
        chat.expect(f"nanobot> Take your time: {WORDS}")
        chat.expect_prompt("hel")  # the prompt again under it, with what was typed
        model_server.reply("Hello to you.")
        chat.type("lo\r")
        chat.expect("nanobot> Hello to you.")
        chat.expect_prompt()
    finally:
        assert chat.close() == 0
    assert "you> nanobot>" not in chat.text
    lines = chat.screen.lines
    assert lines.index("you> what should I do today?") < lines.index("you> hello")
    assert model_server.requests[-1]["messages"][-1]["content"].endswith("hello")


def test_a_button_is_pressed_by_its_number(
    model_server: ScriptedModelServer, tmp_path: Path, cache: Path
) -> None:
    model_server.call_tool("reply_buttons", {"buttons": ["Green tea", "Black tea"]})
    model_server.reply("Which tea would you like?")
    chat = start_chat(model_server, tmp_path, cache)
    try:
        chat.send("make me a tea")
        chat.expect("nanobot> Which tea would you like?\n   [1 Green tea]\n   [2 Black tea]")
        chat.expect(PRESS_HINT.strip())
        chat.send("/press 3")
        chat.expect("(no button '3': give its number, or its label)")
        model_server.reply("Black tea it is.")
        chat.send("/press 2")
        chat.expect("nanobot> Black tea it is.")
    finally:
        assert chat.close() == 0
    choice = model_server.requests[-1]["messages"][-1]["content"]
    assert choice.endswith(
        '[pressed the button "Black tea" under your message: "Which tea would you like?"]'
    )
    assert len(model_server.requests) == 3  # the question's two steps, then the press


def test_ctrl_c_during_a_turn_stops_it_and_after_that_quits(
    model_server: ScriptedModelServer, tmp_path: Path, cache: Path
) -> None:
    model_server.call_tool(
        "list_dir", {"path": ""}, content=f"Looking: {WORDS}", tokens_per_second=8
    ).reply("Never sent.")
    chat = start_chat(model_server, tmp_path, cache)
    try:
        chat.send("go")
        chat.expect("nanobot> Looking")
        chat.type("\x03")
        chat.expect(f"nanobot> {texts.load('stopped')}")
        chat.expect_prompt()
        # Nothing runs now (once the queued /stop itself is answered): Ctrl-C quits.
        for presses in range(2, 6):
            chat.type("\x03")
            while chat.process.poll() is None and chat.text.count(STOP_SENT) < presses:
                time.sleep(0.1)
            if chat.process.poll() is not None:
                break
        assert chat.process.wait(timeout=60) == 0
    finally:
        chat.close()
    assert "Never sent." not in chat.text


def test_state_is_kept_between_runs_and_the_operator_commands_reach_the_stack(
    model_server: ScriptedModelServer, tmp_path: Path, cache: Path
) -> None:
    state = tmp_path / "state"
    model_server.call_tool(
        "write_file", {"path": "memory/MEMORY.md", "content": "Likes green tea."}
    ).reply("Noted: you like green tea.")
    chat = start_chat(model_server, tmp_path, cache, "--state", str(state))
    assert "Sessions, memory, usage and cron jobs will be kept in" in chat.text
    try:
        chat.send("remember that I like green tea")
        chat.expect("Noted: you like green tea.")
        # `workspace pull --local` while the chat runs: the running stack's bucket.
        pulled = run_cli(
            "workspace",
            "pull",
            str(tmp_path / "ws"),
            "--local",
            env={"XDG_CACHE_HOME": str(cache)},
            cwd=tmp_path,
        )
        assert pulled.returncode == 0, pulled.stderr
        assert (tmp_path / "ws" / "memory" / "MEMORY.md").read_text() == "Likes green tea."
        sessions = run_cli("sessions", "list", "--local", env={"XDG_CACHE_HOME": str(cache)})
        assert sessions.returncode == 0, sessions.stderr
        assert "telegram:100000001" in sessions.stdout
    finally:
        assert chat.close() == 0
    # Ended: the announcement is gone, and --local says what to do.
    ended = run_cli("usage", "--local", env={"XDG_CACHE_HOME": str(cache)})
    assert ended.returncode == 2
    assert "no local stack is running: start one with `make chat`" in ended.stderr

    model_server.reply("You like green tea.")
    again = run_cli(
        "chat",
        "-m",
        "what do I like?",
        "--state",
        str(state),
        "--env-file",
        "/nonexistent",
        env=model_server.env(),
        cwd=tmp_path,
    )
    assert again.returncode == 0, again.stderr
    request = json.dumps(model_server.requests[-1]["messages"])
    assert "remember that I like green tea" in request  # the session, kept
    assert "Likes green tea." in request  # the memory, kept


def test_a_sent_file_is_saved_and_a_link_shows_its_address(
    model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    model_server.call_tool("write_file", {"path": "notes/hello.txt", "content": "hi there"})
    model_server.call_tool("send_file", {"path": "notes/hello.txt"})
    model_server.reply("Sent. See [the docs](https://example.org/docs).")
    completed = run_cli(
        "chat",
        "-m",
        "send me the note",
        "--env-file",
        "/nonexistent",
        env=model_server.env(),
        cwd=tmp_path,
    )
    assert completed.returncode == 0, completed.stderr
    assert (tmp_path / "chat-files" / "hello.txt").read_bytes() == b"hi there"
    assert "nanobot> 📎 document hello.txt (8 B) → chat-files/hello.txt" in completed.stdout
    assert "nanobot> Sent. See the docs (https://example.org/docs)." in completed.stdout


def test_stream_replies_is_read_from_the_env_file(
    model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    """Issue 27 part 5: StreamReplies, like every template parameter, from .env."""
    model_server.reply("Not streamed.").reply("Streamed.")
    env_file = tmp_path / ".env"
    settings = {**model_server.env(), "STREAM_REPLIES": "false"}
    env_file.write_text("".join(f"{key}={value}\n" for key, value in settings.items()))
    off = run_cli("chat", "-m", "hi", "--env-file", str(env_file), env={}, cwd=tmp_path)
    assert off.returncode == 0, off.stderr
    on = run_cli("chat", "-m", "hi", "--env-file", "/nonexistent", env=model_server.env())
    assert on.returncode == 0, on.stderr
    assert model_server.streamed == [False, True]

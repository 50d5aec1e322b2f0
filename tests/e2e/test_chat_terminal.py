"""`nanobot-lambda chat` at a terminal, as a person uses it: the installed console script on a
pseudo-terminal (python's `pty`), typed into key by key, against the scripted model server.

The prompt stays usable while a turn runs (/stop goes through the webhook as in Telegram), a
message that arrives on its own prints above the prompt and the prompt comes back with what was
being typed, buttons are pressed with /press, sent files are saved and links show their address,
`--state DIR` keeps the chat between runs, and `--local` lets the operator commands reach the
running stack. Nothing below WARNING is logged without -v. The operator commands that reach it,
and `chat -m`, run in this process (tests/support/cli.py).
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import signal
import struct
import subprocess
import termios
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from nanobot_lambda.core import inbound_events, texts
from nanobot_lambda.operator.cli.live import PRESS_HINT
from nanobot_lambda.operator.cli.local import STOP_SENT
from nanobot_lambda.operator.local.stack import LocalUser
from tests.e2e.test_proactive import tool_results
from tests.support.cli import CLI, clean_environ, run_cli
from tests.support.screen import Screen
from tests.support.scripted_model import ScriptedModelServer

WORDS = " ".join(f"w{n}" for n in range(1, 31))
COLUMNS = 200


class ChatAtTerminal:
    """A `chat` process on a pseudo-terminal of 200 columns; its output read as it comes."""

    def __init__(
        self,
        *arguments: str,
        env: dict[str, str],
        cwd: Path,
        sigint: signal.Handlers = signal.SIG_DFL,
    ) -> None:
        """`sigint`: the SIGINT disposition it inherits (a shell at a terminal gives the
        default, whatever the suite inherited; SIG_IGN, as a script's `&` or nohup would)."""
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, COLUMNS, 0, 0))

        def own_terminal() -> None:  # a session of its own, the pty its terminal: Ctrl-C works
            os.setsid()
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)
            signal.signal(signal.SIGINT, sigint)

        self.process = subprocess.Popen(  # noqa: S603
            [CLI, "chat", "--env-file", "/nonexistent", *arguments],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            cwd=cwd,
            env={**clean_environ(), "TERM": "xterm", **env},
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
        """Type a line and Enter; returns once the terminal has taken it (the prompt seen
        before that would be the old one)."""
        self.type(line + "\r")
        self.expect(f"you> {line}\n")

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


def chat_once(
    model_server: ScriptedModelServer, cwd: Path, message: str, *arguments: str
) -> subprocess.CompletedProcess[str]:
    """`chat -m MESSAGE` with the scripted model (and no .env), in `cwd`."""
    return run_cli(
        "chat",
        "-m",
        message,
        "--env-file",
        "/nonexistent",
        *arguments,
        env=model_server.env(),
        cwd=cwd,
    )


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    """Where `chat` announces its stack and `--local` finds it (XDG_CACHE_HOME)."""
    return tmp_path / "cache"


def start_chat(
    model_server: ScriptedModelServer,
    tmp_path: Path,
    cache: Path,
    *arguments: str,
    sigint: signal.Handlers = signal.SIG_DFL,
) -> ChatAtTerminal:
    chat = ChatAtTerminal(
        *arguments,
        env={**model_server.env(), "XDG_CACHE_HOME": str(cache)},
        cwd=tmp_path,
        sigint=sigint,
    )
    chat.expect_prompt(timeout=120)  # the stack's start, on a busy machine
    return chat


def slow_tool_step(model_server: ScriptedModelServer, opening: str) -> None:
    """A first step streamed slowly (about 4 s) that calls a tool; an answer would follow."""
    model_server.call_tool(
        "list_dir", {"path": ""}, content=f"{opening} {WORDS}", tokens_per_second=8
    ).reply("Here is everything.")


def stopped_before_the_answer(model_server: ScriptedModelServer) -> None:
    assert model_server.remaining == 1  # the answer's step was never asked for
    model_server.steps.clear()


def test_at_the_terminal_the_prompt_stays_usable_while_the_bot_works(
    model_server: ScriptedModelServer, tmp_path: Path, cache: Path
) -> None:
    """One session (a chat takes seconds to start): /stop typed during an answer, a message
    that arrives while typing, a button pressed, Ctrl-C during a turn and then to quit."""
    chat = start_chat(model_server, tmp_path, cache)
    try:
        # /stop, typed while the answer is being written, goes through the webhook.
        slow_tool_step(model_server, "Let me look through it all:")
        chat.send("go through my files")
        chat.expect("nanobot> Let me look through")  # being written...
        chat.expect_prompt()  # ...above the prompt
        chat.send("/stop")
        # Cut where it was being written: what was written so far, then that it was stopped.
        chat.expect("nanobot> Let me look through it all: w1")
        chat.expect(texts.load("stopped"))
        chat.expect_prompt()  # drawn again under it
        stopped_before_the_answer(model_server)

        # A message that arrives while the person types (as a reminder or a background task's
        # result would; here an answer the model holds until the typing has begun) prints
        # above the prompt, and the prompt comes back with what was typed.
        answer_now = threading.Event()
        model_server.reply(f"Take your time: {WORDS}", hold=answer_now, tokens_per_second=40)
        chat.send("what should I do today?")
        chat.expect_prompt()  # at once: the answer is still to come
        chat.type("hel")
        chat.expect_prompt("hel")
        answer_now.set()
        chat.expect(f"nanobot> Take your time: {WORDS}")
        chat.expect_prompt("hel")
        model_server.reply("Hello to you.")
        chat.type("lo\r")
        chat.expect("nanobot> Hello to you.")
        chat.expect_prompt()
        assert model_server.requests[-1]["messages"][-1]["content"].endswith("hello")

        # Buttons, numbered, pressed with /press: a callback_query through the webhook.
        model_server.call_tool("reply_buttons", {"buttons": ["Green tea", "Black tea"]})
        model_server.reply("Which tea would you like?")
        chat.send("make me a tea")
        chat.expect("nanobot> Which tea would you like?\n   [1 Green tea]\n   [2 Black tea]")
        chat.expect(PRESS_HINT.strip())
        asked = len(model_server.requests)
        chat.send("/press 3")
        chat.expect("(no button '3': give its number, or its label)")
        # Streamed, with a `*` the draft takes for emphasis (its Markdown unfinished) and the
        # message shows as it is: the message replaces the draft all the same.
        brewing = f"Black tea it is, 2*3 minutes: {WORDS}"
        model_server.reply(brewing, tokens_per_second=20)
        chat.send("/press 2")
        chat.expect(f"nanobot> {brewing}")
        assert len(model_server.requests) == asked + 1  # /press 3 reached nobody
        assert model_server.requests[-1]["messages"][-1]["content"].endswith(
            '[pressed the button "Black tea" under your message: "Which tea would you like?"]'
        )

        # Ctrl-C while a turn runs sends /stop...
        slow_tool_step(model_server, "Looking:")
        chat.send("go on")
        chat.expect("nanobot> Looking:")
        chat.type("\x03")
        chat.expect(STOP_SENT)
        chat.expect(f"{texts.load('stopped')}\nyou>")
        chat.expect_prompt()
        stopped_before_the_answer(model_server)
        # ...and again, it quits.
        chat.type("\x03")
        assert chat.process.wait(timeout=60) == 0
    finally:
        chat.close()
    lines = chat.screen.lines
    # Each answer shows once: its message replaced its draft, also when the person had sent a
    # line under the draft (/stop, Ctrl-C) and when the two read otherwise (the `*`).
    for opening in ("Let me look through it all:", "Take your time:", "Black tea", "Looking:"):
        assert sum(line.startswith(f"nanobot> {opening}") for line in lines) == 1, chat.text
    assert "Here is everything." not in chat.text
    assert "you> /stop" in lines
    assert not any(line.startswith("you> nanobot>") for line in lines)
    # Each line sent reached the model whole and in order (on the screen, a line sent just as a
    # message arrives has been seen erased under heavy load: cosmetic, and not asserted here).
    asked = [json.dumps(request["messages"][-1]["content"]) for request in model_server.requests]
    assert any("what should I do today?" in content for content in asked)
    assert "you> hello" in lines
    first = next(i for i, content in enumerate(asked) if "what should I do today?" in content)
    assert any(content.endswith('hello"') for content in asked[first + 1 :])
    # No log line below WARNING without -v (Powertools' JSON lines carry a "level").
    assert '"level"' not in chat.text and "INFO" not in chat.text


def test_ctrl_c_quits_even_when_the_chat_was_started_with_sigint_ignored(
    model_server: ScriptedModelServer, tmp_path: Path, cache: Path
) -> None:
    """Started from a script that ignores SIGINT (`&`, nohup, `trap '' INT`), the chat at its
    terminal still takes Ctrl-C: it is one of its keys (/stop, then quit)."""
    chat = start_chat(model_server, tmp_path, cache, sigint=signal.SIG_IGN)
    try:
        chat.type("\x03")  # nothing runs: it quits
        assert chat.process.wait(timeout=30) == 0
    finally:
        chat.close()


def test_a_hook_made_in_the_chat_takes_signed_events_on_this_machine(
    model_server: ScriptedModelServer, tmp_path: Path, cache: Path
) -> None:
    """The chat serves the HTTP API's routes on 127.0.0.1 and says where: `/hooks add` shows
    that URL (it showed the deployed form, `https://local.execute-api…`, which resolves
    nowhere), a signed event POSTed to it becomes the hook's turn in the chat, and
    `hooks list --local` and `doctor --local` reach the running stack (issue 37)."""
    chat = start_chat(model_server, tmp_path, cache)
    try:
        banner = re.search(r"Event hooks: POST (http://127\.0\.0\.1:\d+/hooks)/NAME", chat.text)
        assert banner is not None, chat.text
        chat.send("/hooks add deploys")
        chat.expect("Secret (shown only now")
        made = re.search(r"URL: (\S+)\s+Secret \(shown only now, keep it safe\): (\S+)", chat.text)
        assert made is not None, chat.text
        url, secret = made.groups()
        assert url == f"{banner.group(1)}/deploys"

        # As the README's curl example sends it, to the URL shown.
        model_server.reply("The api deploy was rolled back: worth a look.")
        body = b'{"service": "api", "status": "rolled back"}'
        timestamp = int(time.time())
        request = urllib.request.Request(  # noqa: S310 - the URL the chat showed
            url,
            data=body,
            method="POST",
            headers={
                "Content-Type": "application/json",
                "X-Hook-Timestamp": str(timestamp),
                "X-Hook-Signature": inbound_events.sign(secret, body, timestamp),
                "X-Hook-Event": "deploy",
            },
        )
        with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
            assert response.status == 202
            assert json.loads(response.read())["status"] == "queued"
        chat.expect("nanobot> The api deploy was rolled back: worth a look.")
        assert '"status": "rolled back"' in model_server.requests[-1]["messages"][-1]["content"]

        # No route for another path or method: API Gateway's own 404, no function reached.
        with pytest.raises(urllib.error.HTTPError) as missing:
            urllib.request.urlopen(url.replace("/hooks/", "/nowhere/"), timeout=30)  # noqa: S310
        assert missing.value.code == 404
        assert json.loads(missing.value.read()) == {"message": "Not Found"}

        local = {"XDG_CACHE_HOME": str(cache)}
        listed = run_cli("hooks", "list", "--local", env=local)
        assert listed.returncode == 0, listed.stderr
        assert f"deploys  chat {LocalUser().id}  {url}  made " in listed.stdout
        assert secret not in listed.stdout
        model_server.reply("OK")  # the doctor's one-token request
        doctor = run_cli(
            "doctor", "--local", "--env-file", "/nonexistent", env={**local, **model_server.env()}
        )
        assert doctor.returncode == 0, doctor.stdout + doctor.stderr
        *lines, summary = doctor.stdout.splitlines()
        assert summary == "Everything checked is in place."
        checks = {line[6:22].strip(): line[:4].strip() for line in lines}
        assert checks == {
            "AWS credentials": "skip",
            "stack": "ok",
            "configuration": "ok",
            "model": "ok",
            "MCP servers": "ok",
            "bot token": "skip",
            "webhook": "skip",
            "command menu": "skip",
            "console": "ok",
            "workspace": "ok",
        }, doctor.stdout
        assert f"hooks at {banner.group(1)}/NAME reach the webhook function" in doctor.stdout
        # The banner's console link: the page on this machine, signed in as the local user.
        console = re.search(
            r"signed in as you for 1 hour\):\s+(http://\S+/console)#tgWebAppData=", chat.text
        )
        assert console is not None, chat.text
        assert f"{console.group(1)}: its page and its API answer" in doctor.stdout
    finally:
        assert chat.close() == 0


def test_state_is_kept_between_runs_and_the_operator_commands_reach_the_stack(
    model_server: ScriptedModelServer, tmp_path: Path, cache: Path
) -> None:
    state = tmp_path / "state"
    model_server.call_tool("write_file", {"path": "memory/MEMORY.md", "content": "Likes tea."})
    model_server.call_tool(
        "cron",
        {"action": "add", "kind": "task", "message": "Summarise my notes", "every_seconds": 3600},
    ).reply("Noted, and scheduled hourly.")
    chat = start_chat(model_server, tmp_path, cache, "--state", str(state))
    assert "Sessions, memory, usage and cron jobs will be kept in" in chat.text
    try:
        chat.send("I like tea; every hour, summarise my notes")
        chat.expect("nanobot> Noted, and scheduled hourly.")
        # The operator commands, with --local, while the chat runs: its stack.
        local = {"XDG_CACHE_HOME": str(cache)}
        pulled = run_cli("workspace", "pull", str(tmp_path / "ws"), "--local", env=local)
        assert pulled.returncode == 0, pulled.stderr
        assert (tmp_path / "ws" / "memory" / "MEMORY.md").read_text() == "Likes tea."
        jobs = run_cli("cron", "list", "--local", env=local)
        assert jobs.returncode == 0, jobs.stderr
        assert "Summarise my notes" in jobs.stdout
    finally:
        assert chat.close() == 0
    # Ended: its announcement is gone, and --local says what to do.
    ended = run_cli("sessions", "list", "--local", env=local)
    assert ended.returncode == 2
    assert "no local stack is running: start one with `make chat`" in ended.stderr

    # The next run, from the same folder, has the session, the memory and the job.
    model_server.call_tool("cron", {"action": "list"}).reply("You like tea; one job.")
    again = chat_once(model_server, tmp_path, "what do you know?", "--state", str(state))
    assert again.returncode == 0, again.stderr
    first_request = json.dumps(model_server.requests[-2]["messages"])
    assert "I like tea; every hour, summarise my notes" in first_request  # the session
    assert "Likes tea." in first_request  # the memory
    *_, listed = tool_results(model_server.requests[-1])
    assert "task 'Summarise my notes', every hour" in listed  # the job, with its schedule
    # What the second run saved: the schedule put back, the usage of both runs' turns.
    saved = json.loads((state / "state.json").read_text())
    (schedule,) = [
        item
        for item in saved["schedules"]["ScheduleGroup"]
        if json.loads(item["Target"]["Input"])["kind"] == "cron"
    ]
    assert schedule["ScheduleExpression"] == "rate(1 hour)"
    (total,) = [
        item
        for item in saved["tables"]["SessionsTable"]
        if item["pk"]["S"] == f"usage#{LocalUser().id}" and item["sk"]["S"] == "total"
    ]
    assert total["turns"]["N"] == "2"


def test_a_sent_file_is_saved_a_link_shows_its_address_and_env_turns_streaming_off(
    model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    """STREAM_REPLIES in .env: issue 27 part 5 (every template parameter from .env)."""
    model_server.call_tool("write_file", {"path": "notes/hello.txt", "content": "hi there"})
    model_server.call_tool("send_file", {"path": "notes/hello.txt"})
    model_server.reply("Sent. See [the docs](https://example.org/docs).")
    env_file = tmp_path / ".env"
    settings = {**model_server.env(), "STREAM_REPLIES": "false"}
    env_file.write_text("".join(f"{key}={value}\n" for key, value in settings.items()))
    completed = run_cli(
        "chat", "-m", "send me the note", "--env-file", str(env_file), env={}, cwd=tmp_path
    )
    assert completed.returncode == 0, completed.stderr
    assert (tmp_path / "chat-files" / "hello.txt").read_bytes() == b"hi there"
    assert "nanobot> 📎 document hello.txt (8 B) → chat-files/hello.txt" in completed.stdout
    assert "nanobot> Sent. See the docs (https://example.org/docs)." in completed.stdout
    assert model_server.streamed == [False, False, False]  # on by default: test_live_replies


def test_an_approval_is_asked_with_its_buttons_and_answered_with_press(
    model_server: ScriptedModelServer, tmp_path: Path, cache: Path
) -> None:
    """A change to SOUL.md asks the owner (the local user) first: the question shows its three
    buttons, /press 1 allows it once, the turn goes on and the question says who decided."""
    chat = start_chat(model_server, tmp_path, cache)
    try:
        model_server.call_tool("write_file", {"path": "SOUL.md", "content": "Be brief."})
        chat.send("be brief from now on")
        chat.expect("May I do this?")
        chat.expect("[1 Allow once]\n   [2 Always allow here]\n   [3 Deny]")
        chat.expect_prompt()
        model_server.reply("Done: brief it is.")
        chat.send("/press 1")
        chat.expect("Allowed once by")
        chat.expect("nanobot> Done: brief it is.")
        assert model_server.requests[-1]["messages"][-1]["content"].startswith("Wrote")
    finally:
        chat.close()

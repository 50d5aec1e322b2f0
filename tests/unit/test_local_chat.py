"""The pieces of `chat` that need no stack: the template parameters it reads from the
environment, the terminal that keeps the prompt under the output, the encoding of the kept
state, and finding a running local stack for --local."""

from __future__ import annotations

import io
import json
import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from nanobot_lambda.operator.cli import terminal as terminal_module
from nanobot_lambda.operator.cli.local import template_parameters_from_env
from nanobot_lambda.operator.cli.terminal import Terminal
from nanobot_lambda.operator.local.cfn import (
    TemplateContext,
    find_template,
    load_template,
    parameter_variables,
)
from nanobot_lambda.operator.local.http_api import Route, deployed_api_url, http_api_routes
from nanobot_lambda.operator.local.stack import LocalStack
from nanobot_lambda.operator.local.state import (
    LocalStackInfo,
    LocalState,
    StateError,
    _decoded,
    _encoded,
)
from nanobot_lambda.operator.ops.deployment import OperatorError
from tests.support.screen import Screen

TEMPLATE = load_template(find_template())


def test_every_template_parameter_is_known_by_the_variable_it_feeds() -> None:
    variables = parameter_variables(TEMPLATE)
    assert set(variables) == set(TEMPLATE["Parameters"])
    assert variables["StreamReplies"] == "STREAM_REPLIES"
    assert variables["MaxReceiveCount"] == "TURN_MAX_RECEIVE_COUNT"
    assert variables["LogLevel"] == "POWERTOOLS_LOG_LEVEL"  # through Globals
    assert variables["EnableSandbox"] == "ENABLE_SANDBOX"  # feeds no variable: its own name
    assert variables["HeartbeatScheduleExpression"] == "HEARTBEAT_SCHEDULE_EXPRESSION"


def test_the_environment_sets_the_parameters_but_not_what_the_local_stack_provides() -> None:
    environ = {
        "STREAM_REPLIES": "false",
        "SEND_TOOL_HINTS": "true",
        "SPEND_LIMIT_DAILY_USD": "2",
        "ENABLE_SANDBOX": "false",
        "LOG_LEVEL": "DEBUG",  # .env.example's name for LogLevel
        "HISTORY_WINDOW": "",  # empty: not set
        # A deployed stack's, in a shared .env: the local stack has its own.
        "ALLOW_FROM": "424242",
        "OWNER_ID": "424242",
        "HEARTBEAT_CHAT_ID": "424242",
        "LLM_MODEL": "openai/x",
        "TELEGRAM_BOT_TOKEN_PARAM": "/deployed/token",
        "WEB_SEARCH_API_KEY_PARAM": "/deployed/search-key",
    }
    assert template_parameters_from_env(TEMPLATE, environ) == {
        "StreamReplies": "false",
        "SendToolHints": "true",
        "SpendLimitDailyUsd": "2",
        "EnableSandbox": "false",
        "LogLevel": "DEBUG",
    }
    # The variable the parameter feeds wins over the older name.
    both = {"LOG_LEVEL": "DEBUG", "POWERTOOLS_LOG_LEVEL": "WARNING"}
    assert template_parameters_from_env(TEMPLATE, both) == {"LogLevel": "WARNING"}


def test_a_value_the_template_does_not_allow_is_refused_with_what_it_takes() -> None:
    with pytest.raises(OperatorError, match=r"StreamReplies .* is 'maybe': it takes true or false"):
        template_parameters_from_env(TEMPLATE, {"STREAM_REPLIES": "maybe"})


def prompt_session(
    monkeypatch: pytest.MonkeyPatch,
    while_waiting: list[tuple[str, object]],
    *,
    typed: str | None = "typed",
) -> tuple[Terminal, io.StringIO]:
    """One read_line, during which the output calls `while_waiting` arrive (as from another
    thread), then the person sends `typed` (None: presses Ctrl-C); returns the terminal and
    what it wrote."""
    out = io.StringIO()
    terminal = Terminal(out, screen=True, size=lambda: (80, 24))

    def person_typing(prompt: str) -> str:
        out.write(prompt)  # what input() draws
        for method, argument in while_waiting:
            if method in ("live", "finish"):
                getattr(terminal, method)("chat", argument)
            else:
                getattr(terminal, method)(argument)
        if typed is None:
            raise KeyboardInterrupt
        out.write(typed + "\n")  # what the terminal echoes, Enter included
        return typed

    monkeypatch.setattr("builtins.input", person_typing)
    monkeypatch.setattr(terminal_module, "readline", None)
    try:
        assert terminal.read_line() == typed
    except KeyboardInterrupt:
        assert typed is None
    return terminal, out


def drawn(out: io.StringIO) -> Screen:
    screen = Screen(80)
    screen.feed(out.getvalue().replace("\n", "\r\n"))  # the terminal's own translation
    return screen


def test_output_while_the_prompt_is_shown_goes_above_it(monkeypatch: pytest.MonkeyPatch) -> None:
    _, out = prompt_session(
        monkeypatch,
        [
            ("live", "nanobot> The plan"),
            ("live", "nanobot> The plan for today"),
            ("finish", "nanobot> The plan for today is coffee.\n"),
            ("lines", "nanobot> ⏰ Drink water!\n"),
        ],
    )
    assert drawn(out).text == (
        "nanobot> The plan for today is coffee.\nnanobot> ⏰ Drink water!\nyou> typed"
    )


def test_a_line_sent_under_a_draft_goes_above_it_and_its_message_replaces_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """/stop typed while the answer is written: the draft goes on under the line sent, and
    the message that ends the turn replaces it there (issue 37: it printed twice)."""
    terminal, out = prompt_session(
        monkeypatch, [("live", "nanobot> Half"), ("live", "nanobot> Half of it")], typed="/stop"
    )
    assert drawn(out).text == "you> /stop\nnanobot> Half of it"
    assert terminal.live_key == "chat"
    terminal.finish("chat", "nanobot> Half of it, stopped.\n")
    assert drawn(out).text == "you> /stop\nnanobot> Half of it, stopped."


def test_ctrl_c_under_a_draft_leaves_it_the_last_thing_shown(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    terminal, out = prompt_session(
        monkeypatch, [("live", "nanobot> Looking at a draft that wraps " * 3)], typed=None
    )
    terminal.lines("(Ctrl-C: /stop sent)\n")
    terminal.finish("chat", "nanobot> Looked.\n")
    assert drawn(out).text == "(Ctrl-C: /stop sent)\nnanobot> Looked."


class Readline:
    """What the terminal uses of readline: the line typed so far, and the hook it calls once
    the prompt is drawn."""

    def __init__(self) -> None:
        self.buffer = ""
        self.pre_input_hook: Callable[[], None] | None = None

    def get_line_buffer(self) -> str:
        return self.buffer

    def set_pre_input_hook(self, hook: Callable[[], None] | None = None) -> None:
        self.pre_input_hook = hook


def arrives(call: Callable[..., None], *arguments: object) -> threading.Thread:
    """Output from another thread (the Bot API's), as it comes: started, not waited for."""
    thread = threading.Thread(target=call, args=arguments, daemon=True)
    thread.start()
    return thread


def test_a_message_that_comes_while_the_prompt_is_drawn_goes_above_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """readline draws the prompt as input() begins: the message that comes at that instant
    waits until it is drawn, then replaces its draft above it (issue 37: drawn at once, it
    drew a prompt of its own, and readline's came after it: `you> you> typed`)."""
    out = io.StringIO()
    terminal = Terminal(out, screen=True, size=lambda: (80, 24))
    terminal.live("chat", "nanobot> Half")
    readline = Readline()
    monkeypatch.setattr(terminal_module, "readline", readline)

    def person_typing(prompt: str) -> str:
        message = arrives(terminal.finish, "chat", "nanobot> Half of it, stopped.\n")
        message.join(timeout=0.5)  # it waits (or, drawn at once, it is drawn by now)
        out.write(prompt)  # readline draws the prompt...
        if readline.pre_input_hook is not None:
            readline.pre_input_hook()  # ...and says so
        message.join(timeout=10)
        out.write("typed\n")
        return "typed"

    monkeypatch.setattr("builtins.input", person_typing)
    assert terminal.read_line() == "typed"
    assert drawn(out).text == "nanobot> Half of it, stopped.\nyou> typed"


def test_a_message_that_comes_as_the_line_is_sent_goes_under_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Enter pressed: readline writes the line break and gives the terminal back before the
    line reaches the chat. The message that comes at that instant (here /stop's, replacing its
    draft) goes under the line sent (issue 37: drawn as if the prompt were still there, it
    erased the line sent)."""
    out = io.StringIO()
    terminal = Terminal(out, screen=True, size=lambda: (80, 24))
    terminal.live("chat", "nanobot> Half")
    readline, taken = Readline(), threading.Event()
    monkeypatch.setattr(terminal_module, "readline", readline)
    monkeypatch.setattr(terminal_module, "readline_has_the_keys", lambda: not taken.is_set())

    def person_typing(prompt: str) -> str:
        out.write(prompt)
        if readline.pre_input_hook is not None:
            readline.pre_input_hook()
        out.write("/stop\n")  # Enter: the line break, and the terminal given back
        taken.set()
        arrives(terminal.finish, "chat", "nanobot> Half of it, stopped.\n").join(timeout=10)
        return "/stop"

    monkeypatch.setattr("builtins.input", person_typing)
    assert terminal.read_line() == "/stop"
    assert drawn(out).text == "you> /stop\nnanobot> Half of it, stopped."


def test_after_mute_nothing_is_written() -> None:
    out = io.StringIO()
    terminal = Terminal(out)
    terminal.lines("before\n")
    terminal.mute()
    terminal.live(1, "nanobot> late")
    terminal.lines("late\n")
    assert out.getvalue() == "before\n"


def test_a_draft_cut_off_by_quitting_ends_its_line_before_the_shell_s_prompt() -> None:
    out = io.StringIO()
    terminal = Terminal(out, screen=True, size=lambda: (80, 24))
    terminal.live("chat", "nanobot> cut off")
    terminal.mute()
    terminal.live("chat", "nanobot> cut off here")
    assert out.getvalue() == "nanobot> cut off\n"


def test_binary_attributes_survive_the_state_file() -> None:
    item = {"pk": {"S": "telegram:1"}, "blob": {"B": b"\x00\xff"}, "set": {"BS": [b"a", b"b"]}}
    assert _decoded(json.loads(json.dumps(_encoded(item)))) == item


def test_local_finds_a_running_stack_and_refuses_an_ended_one(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    with pytest.raises(OperatorError, match="no local stack is running: start one with"):
        LocalStackInfo.find()

    running = LocalStackInfo("http://127.0.0.1:5123", "us-east-1", os.getpid(), {})
    path = running.announce()
    assert path == tmp_path / "nanobot-lambda" / "local-stack.json"
    assert LocalStackInfo.find() == running

    # Above Linux's largest process id: a process that cannot be running.
    gone = LocalStackInfo("http://127.0.0.1:5123", "us-east-1", 2**22 + 12345, {})
    gone.announce()
    with pytest.raises(OperatorError, match="has ended"):
        LocalStackInfo.find()
    running.withdraw()  # not its announcement: left alone
    assert path.exists()
    gone.withdraw()
    assert not path.exists()


def test_an_unreadable_state_stops_the_start_and_is_left_alone(tmp_path: Path) -> None:
    state = LocalState(tmp_path / "state")
    state.folder.mkdir()
    state.path.write_text("{not json")
    stack = LocalStack(find_template(), model_env={"LLM_MODEL": "openai/x"})
    with pytest.raises(StateError, match=r"cannot be read .*: move the folder away"):
        stack.keep_in(state)
    assert state.path.read_text() == "{not json"

    state.path.write_text('{"version": 99}')  # of another version: not guessed at either
    with pytest.raises(StateError, match="of another version"):
        stack.keep_in(state)


def test_the_http_api_routes_are_the_template_s_as_api_gateway_matches_them() -> None:
    context = TemplateContext(TEMPLATE, refs={"ServerlessHttpApi": "local"})
    webhook, hooks, page, api = http_api_routes(context)
    assert webhook == Route("POST", "/webhook", "WebhookFunction")
    assert page == Route("GET", "/console", "ConsoleFunction")
    assert api == Route("POST", "/console/api/{route+}", "ConsoleFunction")
    assert api.match("POST", "/console/api/memory/save") == {"route": "memory/save"}
    assert page.match("GET", "/console/api") is None
    # Without the console (EnableConsole=false), its routes are not served.
    without = TemplateContext(TEMPLATE, parameters={"EnableConsole": "false"})
    assert [route.function for route in http_api_routes(without)] == ["WebhookFunction"] * 2
    assert hooks == Route("POST", "/hooks/{name}", "WebhookFunction")
    assert hooks.match("POST", "/hooks/deploys") == {"name": "deploys"}
    assert hooks.match("GET", "/hooks/deploys") is None  # no route for another method
    assert hooks.match("POST", "/hooks/a/b") is None
    assert hooks.match("POST", "/hooks/") is None
    assert webhook.match("POST", "/webhook") == {}
    # What the template's outputs and HOOKS_URL name, and the local stack replaces.
    assert deployed_api_url(context) == "https://local.execute-api.us-east-1.amazonaws.com"
    assert Route("ANY", "/files/{path+}", "F").match("PUT", "/files/a/b") == {"path": "a/b"}

"""`chat` and `poll`: the whole deployment on this machine (moto as AWS, the three functions
in-process), talked to from the terminal or fed by your real bot through long polling."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nanobot_lambda.operator.cli.common import add_command, add_env_file_option, operator_settings
from nanobot_lambda.operator.ops.deployment import OperatorError

if TYPE_CHECKING:  # the local stack imports moto: only `chat` and `poll` pay for it, at run time
    from nanobot_lambda.operator.cli.live import LiveReplies
    from nanobot_lambda.operator.cli.terminal import Terminal
    from nanobot_lambda.operator.local.stack import LocalStack
    from nanobot_lambda.operator.local.state import LocalState

MODEL_HELP = """\
No model is configured. Set LLM_MODEL (plus LLM_API_KEY and/or LLM_API_BASE) in the
environment or in a .env file (see .env.example), for example:

  OpenAI       LLM_MODEL=openai/gpt-4o-mini                     LLM_API_KEY=sk-...
  Anthropic    LLM_MODEL=anthropic/claude-sonnet-4-5            LLM_API_KEY=sk-ant-...
  OpenRouter   LLM_MODEL=openrouter/anthropic/claude-sonnet-4.5 LLM_API_KEY=sk-or-...
  Ollama       LLM_MODEL=ollama_chat/llama3.2                   LLM_API_BASE=http://localhost:11434
  Any OpenAI-compatible server:
               LLM_MODEL=openai/<model>  LLM_API_BASE=http://host:port/v1  LLM_API_KEY=<key or any>
"""


def register(commands: Any) -> None:
    chat = add_command(
        commands,
        "chat",
        help="chat with the bot on a local stack (moto as AWS, no account needed)",
        description="Start the whole stack locally (moto, the three functions, a local Telegram "
        "Bot API) and chat with the bot. The model comes from LLM_MODEL / LLM_API_KEY / "
        "LLM_API_BASE (environment or .env), and every template parameter from the variable it "
        "feeds (STREAM_REPLIES=false...). You can type while the bot works: /stop (or Ctrl-C) "
        "stops a turn, /press N presses a button, files the bot sends are saved in --files. "
        "Each run starts fresh unless --state DIR keeps the data (sessions, memory, usage, "
        "cron jobs) there. While it runs, the operator commands reach it with --local.",
        examples=[
            "nanobot-lambda chat                      interactive chat on a local stack",
            "nanobot-lambda chat --state ./chat-state keep the chat between runs",
            "nanobot-lambda workspace pull ./ws --local   (from another terminal, while it runs)",
            'nanobot-lambda chat -m "What can you do?"',
            "LLM_MODEL=ollama_chat/llama3.2 LLM_API_BASE=http://localhost:11434 "
            "nanobot-lambda chat",
        ],
        handler=chat_command,
    )
    chat.add_argument("-m", "--message", help="send one message, print the reply and exit")
    add_env_file_option(chat)
    chat.add_argument("--template", type=Path, help="SAM template (default: infra/template.yaml)")
    chat.add_argument("-v", "--verbose", action="store_true", help="show the functions' logs")
    chat.add_argument(
        "--state",
        type=Path,
        metavar="DIR",
        help="keep the stack's data (sessions, memory, workspace, usage, cron jobs) in DIR "
        "between runs; without it every run starts fresh",
    )
    chat.add_argument(
        "--files",
        type=Path,
        metavar="DIR",
        default=Path("chat-files"),
        help="where the files the bot sends (photos, documents, voice notes) are saved "
        "(default ./chat-files)",
    )

    poll = add_command(
        commands,
        "poll",
        help="run the bot on this machine for real Telegram (long polling, no public URL)",
        description="Start the local stack (moto as AWS) and feed it your real bot's updates "
        "through getUpdates long polling: each update is posted to the local webhook function "
        "with the secret token, as Telegram would, and the bot answers in Telegram. Needs "
        "TELEGRAM_BOT_TOKEN, ALLOW_FROM (your Telegram user id) and the model settings "
        "(environment or .env). The stack lives as long as the command: conversations and "
        "workspace start fresh each run. A bot with a webhook set gets no updates by polling: "
        "remove it first with `nanobot-lambda webhook delete`. Ctrl-C stops.",
        examples=[
            "nanobot-lambda poll",
            "TELEGRAM_BOT_TOKEN=123456:ABC... ALLOW_FROM=111111111 nanobot-lambda poll -v",
        ],
        handler=poll_command,
    )
    add_env_file_option(poll)
    poll.add_argument("--template", type=Path, help="SAM template (default: infra/template.yaml)")
    poll.add_argument("-v", "--verbose", action="store_true", help="show the functions' logs")
    poll.add_argument(
        "--long-poll",
        type=_long_poll_seconds,
        default=25,
        metavar="SECONDS",
        help="how long each getUpdates call waits for an update (default 25)",
    )


def _long_poll_seconds(value: str) -> int:
    seconds = int(value)
    if not 0 <= seconds <= 50:
        raise argparse.ArgumentTypeError("between 0 and 50 seconds (Telegram's limit)")
    return seconds


# Every template parameter can be set from the environment (or .env) by the variable it feeds
# (`STREAM_REPLIES` for StreamReplies; cfn.parameter_variables), so the local functions get it
# as the deployed ones would. Not those the local stack sets itself: its allow-list and owner
# (always the local user), its model settings (LLM_* are read apart) and the SSM names of
# secrets, which name parameters of a deployed account.
SET_BY_THE_STACK = frozenset(
    {
        "AllowFrom",
        "OwnerId",
        "HeartbeatChatId",
        "LlmModel",
        "LlmApiBase",
        "LlmApiKeyParameter",
        "TelegramBotTokenParameter",
        "TelegramSecretTokenParameter",
        "TranscriptionApiKeyParameter",
        "WebSearchApiKeyParameter",
    }
)
# Older names still read: LOG_LEVEL (.env.example's) for LogLevel, which feeds
# POWERTOOLS_LOG_LEVEL.
PARAMETER_ALIASES = {"LOG_LEVEL": "LogLevel"}


def template_parameters_from_env(
    template: Mapping[str, Any], environ: Mapping[str, str]
) -> dict[str, str]:
    """The template parameters `environ` sets (a value that is empty sets nothing)."""
    from nanobot_lambda.operator.local.cfn import parameter_variables

    parameters = {
        parameter: environ[alias]
        for alias, parameter in PARAMETER_ALIASES.items()
        if environ.get(alias)
    }
    for parameter, variable in parameter_variables(template).items():
        if parameter not in SET_BY_THE_STACK and environ.get(variable):
            parameters[parameter] = environ[variable]
    for parameter, value in parameters.items():  # refused here as CloudFormation would
        allowed = template["Parameters"][parameter].get("AllowedValues")
        if allowed is not None and value not in [str(item) for item in allowed]:
            raise OperatorError(
                f"{parameter} (from the environment or .env) is {value!r}: it takes "
                + " or ".join(str(item) for item in allowed)
            )
    return parameters


def _model_env() -> dict[str, str] | None:
    model_env = {
        name: os.environ[name]
        for name in ("LLM_MODEL", "LLM_API_BASE", "LLM_API_KEY")
        if os.environ.get(name)
    }
    if "LLM_MODEL" not in model_env:
        print(MODEL_HELP, file=sys.stderr)
        return None
    if problems := _model_name_problems():
        for variable, problem in problems:
            print(f"error: {variable}: {problem}", file=sys.stderr)
        print(f"\n{MODEL_HELP.split(chr(10), 2)[2]}", file=sys.stderr)  # the examples
        return None
    return model_env


def _model_name_problems() -> list[tuple[str, str]]:
    """Models named without a provider litellm knows: said before the stack starts, as no
    request to them can ever succeed (litellm is imported here; the agent imports it anyway)."""
    from nanobot_lambda.adapters.llm.model_errors import model_name_problems
    from nanobot_lambda.settings import LlmSettings

    names = ("LLM_MODEL", "LLM_FALLBACK_MODELS", "HEARTBEAT_MODEL", "CONSOLIDATION_MODEL")
    settings = LlmSettings.model_validate(
        {name: os.environ[name] for name in names if os.environ.get(name)}
    )
    return model_name_problems(settings)


def _log_printer(verbose: bool, terminal: Terminal | None = None) -> Any:
    """Shows the functions' errors (with -v, their warnings too): above the prompt while one is
    shown, else on stderr."""

    def show_log(record: logging.LogRecord) -> None:
        if verbose or record.levelno >= logging.ERROR:
            line = f"  [{record.levelname.lower()}] {record.getMessage()}"
            if terminal is not None:
                terminal.lines(line + "\n")
            else:
                print(line, file=sys.stderr)

    return show_log


def _template(arguments: argparse.Namespace) -> Path:
    from nanobot_lambda.operator.local.cfn import find_template

    template: Path = arguments.template or find_template()
    return template


def _parameters(template: Path) -> dict[str, str]:
    from nanobot_lambda.operator.local.cfn import load_template

    return template_parameters_from_env(load_template(template), os.environ)


def chat_command(arguments: argparse.Namespace) -> int:
    model_env = _model_env()
    if model_env is None:
        return 2

    from nanobot_lambda.operator.cli.live import LiveReplies
    from nanobot_lambda.operator.cli.terminal import Terminal
    from nanobot_lambda.operator.local.stack import LocalOutput, LocalStack
    from nanobot_lambda.operator.local.state import LocalState

    # Interactive: a reply shows as it is written. With -m, only the messages are printed.
    interactive = arguments.message is None
    if interactive and sys.stdin.isatty():
        take_ctrl_c()
    terminal = Terminal()
    replies = LiveReplies(terminal, files_dir=arguments.files)
    template = _template(arguments)
    state = LocalState(arguments.state) if arguments.state is not None else None
    print("Starting the local stack (moto, functions, Bot API)…", file=sys.stderr)
    stack = LocalStack(
        template,
        model_env=model_env,
        output=LocalOutput(
            on_message=replies.message,
            on_draft=replies.draft if interactive else None,
            on_file=replies.file,
            on_log=_log_printer(arguments.verbose, terminal if interactive else None),
            replace_log_output=not arguments.verbose,
        ),
        parameters=_parameters(template),
    )
    if state is not None:
        stack.keep_in(state)
    try:
        stack.start()
    except Exception as error:
        print(f"error: the local stack did not start: {error}", file=sys.stderr)
        return 1
    try:
        if not interactive:
            return _one_message(stack, arguments.message)
        return _interactive(stack, replies, state)
    finally:
        terminal.mute()  # a turn still running prints nothing over the shell's prompt
        # A second Ctrl-C while stopping would leave the servers' threads running (a process
        # that never ends) and the state unsaved: stopping takes a moment, let it finish.
        interrupt = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            stack.stop()
        finally:
            signal.signal(signal.SIGINT, interrupt)


def take_ctrl_c() -> None:
    """Ctrl-C is one of the chat's keys (/stop, then quit): a chat read from a terminal takes
    it even if whoever started it ignored SIGINT (a script's `&`, nohup, `trap '' INT`), and
    Python, started so, would raise no KeyboardInterrupt. Reading the terminal, the chat is its
    foreground: a Ctrl-C typed there is meant for it. Not `poll` nor `chat -m`: run in the
    background from a script, they keep ignoring a Ctrl-C typed for another program, as the
    script asked (stop them with SIGTERM)."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _post(stack: LocalStack, update: dict[str, Any], say: Callable[[str], None]) -> bool:
    """Post an update through the webhook, as Telegram would; True if the webhook took it."""
    reactions_before = len(stack.bot_api.reactions)
    response = stack.post_update(update)
    for reaction in stack.bot_api.reactions[reactions_before:]:  # ACK_REACTION's sign of life
        say(f"(nanobot reacted {' '.join(reaction.emoji)})")
    if response["statusCode"] != 200:
        say(f"error: the webhook answered {response['statusCode']}")
        return False
    return True


def _one_message(stack: LocalStack, text: str) -> int:
    errors_before = len(stack.log_sink.errors)
    ok = _post(stack, stack.text_update(text), _to_stderr)
    if ok:
        stack.process_queue()
    if not stack.bot_api.messages:
        print("error: the bot did not answer (see the errors above)", file=sys.stderr)
        return 1
    return 0 if ok and len(stack.log_sink.errors) == errors_before else 1


def _to_stderr(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


STOP_SENT = "(Ctrl-C: /stop sent; Ctrl-C again quits)"


def _banner(stack: LocalStack, files: Path, state: LocalState | None) -> str:
    from nanobot_lambda.operator.cli.live import shown_path

    hooks = ""
    if stack.hooks_url:  # the HTTP API's, on 127.0.0.1
        hooks = f"Event hooks: POST {stack.hooks_url}/NAME (make one with /hooks add NAME).\n"
    console = stack.console_launch_url()
    if console:  # the console's page, with launch data signed for the local user
        hours = int(stack.environment["console"]["CONSOLE_LAUNCH_MAX_AGE_SECONDS"] or 3600) / 3600
        hours_text = f"{hours:g} hour" + ("" if hours == 1 else "s")
        hooks += f"Console (open in a browser; signed in as you for {hours_text}):\n  {console}\n"
    if state is None:
        kept = "Fresh stack: nothing is kept when the chat ends (--state DIR keeps it)."
    else:
        again = "restored from" if state.exists else "will be kept in"
        kept = f"Sessions, memory, usage and cron jobs {again} {state.folder}."
    return (
        "Chat with nanobot. Ctrl-D or /exit to quit; /stop (or Ctrl-C) stops an answer being "
        "written;\n/press 1 (or /press and its label) presses a button.\n"
        f"Files the bot sends are saved in {shown_path(files)}/.\n"
        f"{kept}\n"
        f"{hooks}"
        "Operator commands reach this stack with --local, e.g. "
        "`nanobot-lambda workspace pull ./workspace --local`."
    )


def _interactive(stack: LocalStack, replies: LiveReplies, state: LocalState | None) -> int:
    from nanobot_lambda.operator.local.stack import REGION
    from nanobot_lambda.operator.local.state import LocalStackInfo

    terminal = replies.terminal
    assert replies.files_dir is not None
    print(_banner(stack, replies.files_dir, state), file=sys.stderr, flush=True)
    # With a person at a terminal, the prompt comes back at once: /stop can be sent while an
    # answer is being written. Lines piped in wait for each answer, or the input would end
    # (and the chat with it) before the first one.
    at_terminal = sys.stdin.isatty()

    def say(text: str) -> None:
        terminal.lines(text + "\n")

    announced = LocalStackInfo.of(
        stack.template, stack.endpoint_url, REGION, stack.hooks_url, stack.console_url
    )
    announced.announce()
    # Reminders, scheduled tasks and background tasks arrive while you type.
    stack.start_background()
    stop_sent = False  # since the last message: a Ctrl-C then quits, even while a turn runs
    try:
        while True:
            try:
                line = terminal.read_line().strip()
            except EOFError:
                return 0
            except KeyboardInterrupt:
                if stop_sent or not stack.poller.busy:
                    return 0
                say(STOP_SENT)
                line = "/stop"
            if line in ("/exit", "/quit"):
                return 0
            if not line:
                continue
            stop_sent = line == "/stop"
            if line == "/press" or line.startswith("/press "):
                update = _press(stack, replies, line.removeprefix("/press").strip(), say)
            else:
                update = stack.text_update(line)
            if update is not None and _post(stack, update, say) and not at_terminal:
                stack.poller.wait_idle()
    finally:
        announced.withdraw()


def _press(
    stack: LocalStack, replies: LiveReplies, choice: str, say: Callable[[str], None]
) -> dict[str, Any] | None:
    """The update of pressing a button of the latest message that has some, or None (said)."""
    from nanobot_lambda.operator.cli.live import button_label

    message = replies.last_keyboard
    if message is None:
        say("(no message with buttons yet)")
        return None
    label = button_label(message, choice)
    if label is None:
        say(f"(no button {choice!r}: give its number, or its label)")
        return None
    try:
        return stack.press_button(message, label)
    except ValueError:  # the bot changed the keyboard, or removed it, since it was shown
        say(f"(the button {label!r} is no longer there)")
        return None


# -- poll ---------------------------------------------------------------------------------


def _allow_from() -> str:
    from nanobot_lambda.settings import AllowListSettings

    value = os.environ.get("ALLOW_FROM", "").strip()
    if not value:
        raise OperatorError(
            "set ALLOW_FROM to your Telegram user id (e.g. ALLOW_FROM=111111111 in .env; "
            "@userinfobot tells you yours): with real Telegram, anyone could write to the bot"
        )
    AllowListSettings.from_env({"ALLOW_FROM": value})  # a ConfigError names the problem
    return value


def poll_command(arguments: argparse.Namespace) -> int:
    model_env = _model_env()
    if model_env is None:
        return 2
    settings = operator_settings()
    if settings.telegram_bot_token is None:
        raise OperatorError(
            "set TELEGRAM_BOT_TOKEN to your bot's token (from @BotFather), in the environment "
            "or .env"
        )
    allow_from = _allow_from()

    from nanobot_lambda.adapters.telegram.client import TelegramBot
    from nanobot_lambda.operator.local.poll import Delivery, TelegramPoller, WebhookIsSet
    from nanobot_lambda.operator.local.stack import (
        LocalOutput,
        LocalStack,
        LocalTelegram,
        LocalUser,
    )
    from nanobot_lambda.operator.ops.webhook_admin import webhook_info

    api_base = settings.telegram_api_base.rstrip("/")
    bot = TelegramBot(
        settings.telegram_bot_token, api_base, timeout=(3.05, arguments.long_poll + 15.0)
    )
    me = bot.get_me()  # a wrong token stops here, before the stack starts
    if webhook_info(bot).url:  # getUpdates would answer 409: say so before starting anything
        raise WebhookIsSet()
    owner = next((int(item) for item in allow_from.split(",") if item.strip().isdigit()), None)
    print(f"Starting the local stack for @{me.username} (moto, functions)…", file=sys.stderr)
    template = _template(arguments)
    stack = LocalStack(
        template,
        model_env=model_env,
        telegram=LocalTelegram(
            user=LocalUser(id=owner) if owner is not None else LocalUser(),
            allow_from=allow_from,
            bot_token=settings.telegram_bot_token.get_secret_value(),
            api_base=api_base,
        ),
        output=LocalOutput(
            on_log=_log_printer(arguments.verbose), replace_log_output=not arguments.verbose
        ),
        parameters=_parameters(template),
    )

    def show_delivery(delivery: Delivery) -> None:
        print(delivery.describe(), flush=True)

    def show_problem(problem: str) -> None:
        print(f"  [problem] {problem}", file=sys.stderr, flush=True)

    poller = TelegramPoller(
        bot,
        stack.post_update,
        long_poll_seconds=arguments.long_poll,
        on_delivery=show_delivery,
        on_problem=show_problem,
    )
    try:
        stack.start()
    except Exception as error:
        raise OperatorError(f"the local stack did not start: {error}") from None
    try:
        stack.start_background()  # runs the queued turns and the due schedules
        print(
            f"Polling Telegram as @{me.username}: write to it from an ALLOW_FROM account. "
            f"Ctrl-C to stop.\nEvent hooks: POST {stack.hooks_url}/NAME (on this machine).",
            file=sys.stderr,
            flush=True,
        )
        poller.run(threading.Event())
    except KeyboardInterrupt:
        print("\nStopping…", file=sys.stderr)
    finally:
        stack.stop()
    print("Stopped.", file=sys.stderr)
    return 0

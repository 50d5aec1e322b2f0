"""`chat` and `poll`: the whole deployment on this machine (moto as AWS, the three functions
in-process), talked to from the terminal or fed by your real bot through long polling."""

from __future__ import annotations

import argparse
import logging
import os
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nanobot_lambda.operator.cli.common import add_command, add_env_file_option, operator_settings
from nanobot_lambda.operator.ops.deployment import OperatorError

if TYPE_CHECKING:  # the local stack imports moto: only `chat` and `poll` pay for it, at run time
    from nanobot_lambda.operator.local.stack import LocalStack

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
        "LLM_API_BASE (environment or .env).",
        examples=[
            "nanobot-lambda chat                      interactive chat on a local stack",
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


# Settings the template exposes as parameters: a value in the environment (or .env) becomes the
# parameter's value, so the local functions get it the way the deployed ones would. ALLOW_FROM
# and HEARTBEAT_CHAT_ID are not taken: locally they are always the local user.
TEMPLATE_PARAMETERS = {
    "TIMEZONE": "Timezone",
    "MAX_TOOL_ITERATIONS": "MaxToolIterations",
    "HISTORY_WINDOW": "HistoryWindow",
    "LOG_LEVEL": "LogLevel",
    # Remote MCP servers (a local one needs WEB_FETCH_ALLOW_NETWORKS=127.0.0.1/32).
    "MCP_SERVERS": "McpServers",
    "WEB_FETCH_ALLOW_NETWORKS": "WebFetchAllowNetworks",
}


def template_parameters_from_env(environ: Mapping[str, str]) -> dict[str, str]:
    return {
        parameter: environ[variable]
        for variable, parameter in TEMPLATE_PARAMETERS.items()
        if environ.get(variable)
    }


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


def _log_printer(verbose: bool) -> Any:
    def show_log(record: logging.LogRecord) -> None:
        if verbose or record.levelno >= logging.ERROR:
            print(f"  [{record.levelname.lower()}] {record.getMessage()}", file=sys.stderr)

    return show_log


def _template(arguments: argparse.Namespace) -> Path:
    from nanobot_lambda.operator.local.cfn import find_template

    template: Path = arguments.template or find_template()
    return template


def chat_command(arguments: argparse.Namespace) -> int:
    model_env = _model_env()
    if model_env is None:
        return 2

    from nanobot_lambda.operator.cli.live import LiveReplies
    from nanobot_lambda.operator.local.stack import LocalOutput, LocalStack

    # Interactive: a reply shows as it is written. With -m, only the messages are printed.
    replies = LiveReplies()
    interactive = arguments.message is None
    template = _template(arguments)
    print("Starting the local stack (moto, functions, Bot API)…", file=sys.stderr)
    stack = LocalStack(
        template,
        model_env=model_env,
        output=LocalOutput(
            on_message=replies.message,
            on_draft=replies.draft if interactive else None,
            on_file=replies.file,
            on_log=_log_printer(arguments.verbose),
            replace_log_output=not arguments.verbose,
        ),
        parameters=template_parameters_from_env(os.environ),
    )
    try:
        stack.start()
    except Exception as error:
        print(f"error: the local stack did not start: {error}", file=sys.stderr)
        return 1
    try:
        if not interactive:
            return _one_message(stack, arguments.message)
        return _interactive(stack)
    finally:
        stack.stop()


def _send(stack: LocalStack, text: str, *, background: bool = False) -> bool:
    """Post a message through the webhook, run the turn; True if it went without errors.

    With the background worker running (interactive chat), it runs the turn; otherwise the
    queue is processed here.
    """
    errors_before = len(stack.log_sink.errors)
    reactions_before = len(stack.bot_api.reactions)
    response = stack.post_update(stack.text_update(text))
    for reaction in stack.bot_api.reactions[reactions_before:]:  # ACK_REACTION's sign of life
        print(f"(nanobot reacted {' '.join(reaction.emoji)})", file=sys.stderr, flush=True)
    if response["statusCode"] != 200:
        print(f"error: the webhook answered {response['statusCode']}", file=sys.stderr)
        return False
    if background:
        stack.poller.wait_idle()
    else:
        stack.process_queue()
    return len(stack.log_sink.errors) == errors_before


def _one_message(stack: LocalStack, text: str) -> int:
    ok = _send(stack, text)
    if not stack.bot_api.messages:
        print("error: the bot did not answer (see the errors above)", file=sys.stderr)
        return 1
    return 0 if ok else 1


def _interactive(stack: LocalStack) -> int:
    print("Chat with nanobot. Ctrl-D or /exit to quit.", file=sys.stderr)
    # Reminders, scheduled tasks and background tasks arrive while you type.
    stack.start_background()
    while True:
        try:
            line = input("you> ").strip()
        except (EOFError, KeyboardInterrupt):
            print(file=sys.stderr)
            return 0
        if line in ("/exit", "/quit"):
            return 0
        if line:
            try:
                _send(stack, line, background=True)
            except KeyboardInterrupt:
                print("\n(interrupted)", file=sys.stderr)


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
    stack = LocalStack(
        _template(arguments),
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
        parameters=template_parameters_from_env(os.environ),
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
            "Ctrl-C to stop.",
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

"""`nanobot-lambda`: the operator's command line.

nanobot-lambda chat              talk to the bot on a local stack (moto + local Bot API)
nanobot-lambda chat -m "hello"   one message, print the answer, exit
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the local stack imports moto: only `chat` pays for it, at run time
    from nanobot_lambda.local.stack import LocalStack

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

EPILOG = """\
examples:
  nanobot-lambda chat                      interactive chat on a local stack
  nanobot-lambda chat -m "What can you do?"
  LLM_MODEL=ollama_chat/llama3.2 LLM_API_BASE=http://localhost:11434 nanobot-lambda chat
"""


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="nanobot-lambda",
        description="nanobot-lambda: a personal AI assistant in Telegram on AWS serverless.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True)
    chat = commands.add_parser(
        "chat",
        help="chat with the bot on a local stack (moto as AWS, no account needed)",
        description="Start the whole stack locally (moto, the three functions, a local Telegram "
        "Bot API) and chat with the bot. The model comes from LLM_MODEL / LLM_API_KEY / "
        "LLM_API_BASE (environment or .env).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    chat.add_argument("-m", "--message", help="send one message, print the reply and exit")
    chat.add_argument("--env-file", default=".env", help="file of settings to read (default .env)")
    chat.add_argument("--template", type=Path, help="SAM template (default: infra/template.yaml)")
    chat.add_argument("-v", "--verbose", action="store_true", help="show the functions' logs")
    cron = commands.add_parser(
        "cron",
        help="list or remove the scheduled jobs of a deployed stack",
        description="Scheduled jobs (reminders and tasks created with the bot's cron tool). "
        "The jobs table and schedule group come from --stack's outputs, or from JOBS_TABLE "
        "and SCHEDULE_GROUP.",
        epilog="examples:\n  nanobot-lambda cron list --stack nanobot-lambda\n"
        "  nanobot-lambda cron remove 1a2b3c4d --chat 111111111 --stack nanobot-lambda",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    cron_actions = cron.add_subparsers(dest="action", required=True)
    cron_list = cron_actions.add_parser("list", help="every job, with its next run")
    cron_list.add_argument("--chat", type=int, help="only this chat's jobs")
    cron_remove = cron_actions.add_parser("remove", help="delete a job and its schedule")
    cron_remove.add_argument("job_id")
    cron_remove.add_argument("--chat", type=int, required=True, help="the chat that owns it")
    for sub in (cron_list, cron_remove):
        sub.add_argument("--stack", help="CloudFormation stack name (reads its outputs)")
    usage = commands.add_parser(
        "usage",
        help="tokens, turns and cost per chat of a deployed stack",
        description="What each chat used today, this month and in total: turns, model and "
        "tool calls, tokens in (cached) and out, cost when the model's price is known. The "
        "sessions table comes from --stack's outputs, or from SESSIONS_TABLE; days follow "
        "TIMEZONE (default UTC).",
        epilog="examples:\n  nanobot-lambda usage --stack nanobot-lambda\n"
        "  nanobot-lambda usage --chat 111111111 --stack nanobot-lambda",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    usage.add_argument("--chat", type=int, help="only this chat")
    usage.add_argument("--stack", help="CloudFormation stack name (reads its outputs)")
    arguments = parser.parse_args(argv)
    if arguments.command == "chat":
        return chat_command(arguments)
    if arguments.command == "cron":
        return cron_command(arguments)
    if arguments.command == "usage":
        return usage_command(arguments)
    return 2  # pragma: no cover - argparse enforces a command


def _stack_outputs(stack: str) -> dict[str, str]:
    import boto3

    described = boto3.client("cloudformation").describe_stacks(StackName=stack)["Stacks"][0]
    return {output["OutputKey"]: output["OutputValue"] for output in described.get("Outputs", [])}


def cron_command(arguments: argparse.Namespace) -> int:
    from datetime import UTC, datetime

    import boto3

    from nanobot_lambda.cronjobs import JobStore, ScheduleClient
    from nanobot_lambda.schedules import next_run

    try:
        outputs = _stack_outputs(arguments.stack) if arguments.stack else {}
    except Exception as error:
        print(f"error: cannot read stack {arguments.stack!r}: {error}", file=sys.stderr)
        return 1
    table = outputs.get("JobsTableName") or os.environ.get("JOBS_TABLE")
    group = outputs.get("ScheduleGroupName") or os.environ.get("SCHEDULE_GROUP")
    if not table or not group:
        print("error: give --stack NAME, or set JOBS_TABLE and SCHEDULE_GROUP", file=sys.stderr)
        return 2
    store = JobStore(table, boto3.client("dynamodb"))
    if arguments.action == "list":
        jobs = store.for_chat(arguments.chat) if arguments.chat else store.all_jobs()
        if not jobs:
            print("No scheduled jobs.")
        now = datetime.now(UTC)
        for listed in jobs:
            anchor = datetime.fromisoformat(listed.starts_at or listed.created_at)
            upcoming = next_run((listed.expression, listed.timezone), now, anchor=anchor)
            when = upcoming.strftime("%Y-%m-%d %H:%M UTC") if upcoming else "-"
            print(
                f"{listed.job_id}  chat {listed.chat_id}  {listed.kind:<8} next {when}  "
                f"{listed.description}  {listed.name}"
            )
        return 0
    job = store.get(arguments.chat, arguments.job_id)
    if job is None:
        print(
            f"error: no job {arguments.job_id} in chat {arguments.chat} (see cron list)",
            file=sys.stderr,
        )
        return 1
    # Only deletion is needed: the target and role are not used to delete.
    ScheduleClient(boto3.client("scheduler"), group=group, target_arn="-", role_arn="-").delete(job)
    store.delete(job.chat_id, job.job_id)
    print(f"Removed {job.kind} '{job.name}' ({job.job_id}).")
    return 0


def usage_command(arguments: argparse.Namespace) -> int:
    from datetime import UTC, datetime

    import boto3

    from nanobot_lambda.usage import UsageStore, usage_report

    try:
        outputs = _stack_outputs(arguments.stack) if arguments.stack else {}
        table = outputs.get("SessionsTableName") or os.environ.get("SESSIONS_TABLE")
        if not table:
            print("error: give --stack NAME, or set SESSIONS_TABLE", file=sys.stderr)
            return 2
        timezone = os.environ.get("TIMEZONE") or "UTC"
        store = UsageStore(table, boto3.client("dynamodb"), timezone=timezone)
        print(usage_report(store, arguments.chat, datetime.now(UTC)))
    except Exception as error:
        print(f"error: cannot read usage: {error}", file=sys.stderr)
        return 1
    return 0


def _load_env_file(path: str) -> None:
    if Path(path).is_file():
        from dotenv import load_dotenv

        load_dotenv(path, override=False)


# Settings the template exposes as parameters: a value in the environment (or .env) becomes the
# parameter's value, so the local functions get it the way the deployed ones would. ALLOW_FROM
# and HEARTBEAT_CHAT_ID are not taken: locally they are always the local user.
TEMPLATE_PARAMETERS = {
    "TIMEZONE": "Timezone",
    "MAX_TOOL_ITERATIONS": "MaxToolIterations",
    "HISTORY_WINDOW": "HistoryWindow",
    "LOG_LEVEL": "LogLevel",
}


def template_parameters_from_env(environ: Mapping[str, str]) -> dict[str, str]:
    return {
        parameter: environ[variable]
        for variable, parameter in TEMPLATE_PARAMETERS.items()
        if environ.get(variable)
    }


def chat_command(arguments: argparse.Namespace) -> int:
    _load_env_file(arguments.env_file)
    model_env = {
        name: os.environ[name]
        for name in ("LLM_MODEL", "LLM_API_BASE", "LLM_API_KEY")
        if os.environ.get(name)
    }
    if "LLM_MODEL" not in model_env:
        print(MODEL_HELP, file=sys.stderr)
        return 2

    from nanobot_lambda.local.bot_api import SentMessage
    from nanobot_lambda.local.cfn import find_template
    from nanobot_lambda.local.stack import LocalStack

    def show_reply(message: SentMessage) -> None:
        print(f"nanobot> {message.plain_text}", flush=True)

    def show_log(record: logging.LogRecord) -> None:
        if arguments.verbose or record.levelno >= logging.ERROR:
            print(f"  [{record.levelname.lower()}] {record.getMessage()}", file=sys.stderr)

    try:
        template = arguments.template or find_template()
    except FileNotFoundError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print("Starting the local stack (moto, functions, Bot API)…", file=sys.stderr)
    stack = LocalStack(
        template,
        model_env=model_env,
        parameters=template_parameters_from_env(os.environ),
        on_message=show_reply,
        replace_log_output=not arguments.verbose,
        on_log=show_log,
    )
    try:
        stack.start()
    except Exception as error:
        print(f"error: the local stack did not start: {error}", file=sys.stderr)
        return 1
    try:
        if arguments.message is not None:
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
    response = stack.post_update(stack.text_update(text))
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


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

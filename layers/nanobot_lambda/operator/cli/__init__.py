"""`nanobot-lambda`: the operator's command line.

One module per command group; each `register(commands)` adds its subcommands, every one with
examples in its --help and a handler returning the exit code: 0 done, 1 done but something
failed (a conflict, a failed check), 2 could not start (the message says what to fix).
Failures the operator can fix (configuration, AWS, Telegram) end as one line, not a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from nanobot_lambda.operator.cli import (
    cron,
    dlq,
    doctor,
    hooks,
    local,
    sessions,
    usage,
    webhook,
    workspace,
)
from nanobot_lambda.operator.cli.common import HelpFormatter, describe_failure, load_env_file

# The order of `nanobot-lambda --help`. A new command group is one module and one entry here.
COMMAND_GROUPS = (local, workspace, webhook, cron, hooks, dlq, sessions, usage, doctor)

EPILOG = """\
examples:
  nanobot-lambda chat                      interactive chat on a local stack
  nanobot-lambda chat -m "What can you do?"
  nanobot-lambda poll                      the local stack, fed by your real bot
  nanobot-lambda doctor --stack nanobot-lambda
  nanobot-lambda webhook set --stack nanobot-lambda
  nanobot-lambda workspace pull ./my-workspace --stack nanobot-lambda

Add --help to any command for its options and examples.
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="nanobot-lambda",
        description="nanobot-lambda: a personal AI assistant in Telegram on AWS serverless.",
        epilog=EPILOG,
        formatter_class=HelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for group in COMMAND_GROUPS:
        group.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    arguments = build_parser().parse_args(argv)
    try:
        load_env_file(getattr(arguments, "env_file", None))
        return int(arguments.handler(arguments))
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130
    except Exception as error:
        message = describe_failure(error)
        if message is None:
            raise
        print(f"error: {message}", file=sys.stderr)
        return 2


__all__ = ["build_parser", "main"]

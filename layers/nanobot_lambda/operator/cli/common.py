"""What every command shares: building subcommands with examples, the deployment they act on,
and turning known failures into one line that says what to do."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from nanobot_lambda.adapters.aws.errors import error_code
from nanobot_lambda.adapters.telegram.client import TelegramError
from nanobot_lambda.core.errors import ConfigError, StorageError
from nanobot_lambda.operator.ops.deployment import (
    Deployment,
    OperatorError,
    aws_setup_missing,
    fetch_reference,
)
from nanobot_lambda.settings import OperatorSettings

Handler = Callable[[argparse.Namespace], int]


class HelpFormatter(argparse.HelpFormatter):
    """Descriptions wrapped to the terminal; the examples (epilog) kept line for line."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if text.startswith("examples:"):
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)


def add_command(
    commands: Any,
    name: str,
    *,
    help: str,
    description: str,
    examples: Sequence[str],
    handler: Handler | None = None,
) -> argparse.ArgumentParser:
    """A subcommand whose --help ends with examples (`commands` is a subparsers action)."""
    parser: argparse.ArgumentParser = commands.add_parser(
        name,
        help=help,
        description=description,
        epilog="examples:\n" + "\n".join(f"  {example}" for example in examples),
        formatter_class=HelpFormatter,
    )
    if handler is not None:
        parser.set_defaults(handler=handler)
    return parser


def add_stack_option(parser: argparse.ArgumentParser, *, local: bool = False) -> None:
    """--stack NAME; with `local`, or --local: the stack of the `chat` running on this machine."""
    target = parser.add_mutually_exclusive_group() if local else parser
    target.add_argument(
        "--stack",
        metavar="NAME",
        help="CloudFormation stack to act on (reads its outputs and parameters); without it, "
        "the variables the functions read (WORKSPACE_BUCKET, SESSIONS_TABLE, ...)",
    )
    if local:
        target.add_argument(
            "--local",
            action="store_true",
            help="act on the local stack of the `nanobot-lambda chat` (`make chat`) running on "
            "this machine",
        )


def add_env_file_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--env-file", default=".env", help="file of settings to read first (default .env)"
    )


def load_env_file(path: str | None) -> None:
    """Variables from a dotenv file; the environment wins. python-dotenv comes with the
    `local` extra: without it, a file that is there is an error, not silently ignored."""
    if path and Path(path).is_file():
        try:
            from dotenv import load_dotenv
        except ImportError:
            raise OperatorError(
                f"{path} exists but python-dotenv is not installed: pip install "
                "'nanobot-lambda[local]', or export the variables instead"
            ) from None
        load_dotenv(path, override=False)


def operator_settings() -> OperatorSettings:
    settings: OperatorSettings = OperatorSettings.from_env(os.environ, fetch=fetch_reference)
    return settings


def deployment(arguments: argparse.Namespace) -> Deployment:
    if getattr(arguments, "local", False):
        return local_deployment()
    return Deployment.connect(getattr(arguments, "stack", None), operator_settings())


def local_deployment() -> Deployment:
    """The local stack a running `chat` announced (operator/local/state.py): its moto endpoint
    and resources, and nothing of the environment's (a deployed stack's variables in .env)."""
    from nanobot_lambda.operator.local.state import LocalStackInfo

    return LocalStackInfo.find().deployment()


def confirm(question: str, assume_yes: bool) -> bool:
    """Ask on the terminal; no answer (not a terminal, Ctrl-D) is no."""
    if assume_yes:
        return True
    try:
        return input(f"{question} [y/N] ").strip().lower() in ("y", "yes")
    except EOFError:
        print(file=sys.stderr)
        return False


_CREDENTIAL_CODES = (
    "ExpiredToken",
    "ExpiredTokenException",
    "InvalidClientTokenId",
    "UnrecognizedClientException",
    "SignatureDoesNotMatch",
    "InvalidAccessKeyId",
)
_MISSING_CODES = (
    "ResourceNotFoundException",
    "NoSuchBucket",
    "AWS.SimpleQueueService.NonExistentQueue",
    "QueueDoesNotExist",
)


def describe_failure(error: BaseException) -> str | None:
    """One line, with the fix, for a failure the operator can act on; None for a bug."""
    if isinstance(error, StorageError) and isinstance(error.__cause__, ClientError | BotoCoreError):
        error = error.__cause__  # what AWS said, as the adapter received it
    if isinstance(error, OperatorError):
        return str(error)
    if isinstance(error, ConfigError):
        return f"{error} (set them in the environment or .env; see README, Configuration)"
    if (missing := aws_setup_missing(error)) is not None:
        problem, fix = missing
        return f"{problem}: {fix}"
    if isinstance(error, ClientError):
        code = error_code(error)
        operation = getattr(error, "operation_name", "the call")
        message = error.response.get("Error", {}).get("Message", "")
        if code in _CREDENTIAL_CODES:
            fix = "refresh your AWS credentials (aws sso login, or new keys)"
        elif code.startswith("AccessDenied") or code == "UnauthorizedOperation":
            fix = "use credentials of the account that deployed the stack, with its permissions"
        elif code in _MISSING_CODES:
            fix = (
                "it does not exist: check --stack NAME (or the variable naming it) and "
                "AWS_DEFAULT_REGION"
            )
        else:
            fix = "check --stack NAME, AWS_DEFAULT_REGION and your credentials"
        return f"AWS refused {operation} ({code}: {message}): {fix}"
    if isinstance(error, BotoCoreError):
        return (
            f"cannot reach AWS ({error}): check the network, AWS_DEFAULT_REGION and "
            "AWS_ENDPOINT_URL"
        )
    if isinstance(error, TelegramError):
        if error.status in (401, 404):
            return (
                f"Telegram refused the bot token ({error.status} {error.description}): check "
                "TELEGRAM_BOT_TOKEN, or the stack's SSM parameter with --stack"
            )
        if error.status is None:
            return (
                f"cannot reach Telegram ({error.description}): check the network "
                "(and TELEGRAM_API_BASE if set)"
            )
        return f"Telegram {error.method} failed ({error.status}): {error.description}"
    if isinstance(error, FileNotFoundError):
        return str(error)
    return None

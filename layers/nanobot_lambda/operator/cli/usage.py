"""`usage`: tokens, turns and cost per chat, from the usage items of the sessions table."""

from __future__ import annotations

import argparse
import os
import sys
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from nanobot_lambda.operator.cli.common import (
    add_command,
    add_stack_option,
    deployment,
    describe_failure,
)


def register(commands: Any) -> None:
    usage = add_command(
        commands,
        "usage",
        help="tokens, turns and cost per chat of a deployed stack",
        description="What each chat used today, this month and in total: turns, model and "
        "tool calls, tokens in (cached) and out, cost when the model's price is known; with "
        "--chat, the reactions to its answers too. The "
        "sessions table comes from --stack's outputs, or from SESSIONS_TABLE; days follow the "
        "stack's Timezone (without --stack, TIMEZONE; default UTC).",
        examples=[
            "nanobot-lambda usage --stack nanobot-lambda",
            "nanobot-lambda usage --chat 111111111 --stack nanobot-lambda",
        ],
        handler=usage_command,
    )
    usage.add_argument("--chat", type=int, help="only this chat")
    add_stack_option(usage, local=True)


def usage_command(arguments: argparse.Namespace) -> int:
    from nanobot_lambda.adapters.aws.reactions_and_edits import DynamoFeedbackBook
    from nanobot_lambda.adapters.aws.usage import DynamoUsageStore
    from nanobot_lambda.core.errors import StorageError
    from nanobot_lambda.core.reactions_and_edits import feedback_line, reactions_to_answers
    from nanobot_lambda.core.usage import usage_report

    target = deployment(arguments)
    (table,) = target.require("sessions_table")
    if target.stack is not None:
        timezone = target.stack.parameters.get("Timezone") or "UTC"
    else:
        timezone = os.environ.get("TIMEZONE") or "UTC"
    client = target.client("dynamodb")
    store = DynamoUsageStore(table, client, timezone=timezone)
    try:
        print(usage_report(store, arguments.chat, datetime.now(UTC)))
        if arguments.chat is not None:  # the reactions to its answers (core/reactions_and_edits.py)
            book = DynamoFeedbackBook(table, lambda: client)
            print(feedback_line(reactions_to_answers(book, arguments.chat)))
    except (ClientError, BotoCoreError, StorageError) as error:
        print(f"error: cannot read usage: {describe_failure(error)}", file=sys.stderr)
        return 1
    return 0

"""`dlq list|replay`: turns that failed every attempt, kept in the dead-letter queue."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from nanobot_lambda.adapters.aws.dead_letters import DeadLetter, DeadLetterQueue
from nanobot_lambda.operator.cli.common import add_command, add_stack_option, deployment


def register(commands: Any) -> None:
    group = add_command(
        commands,
        "dlq",
        help="list the turns that failed every attempt, or send them back to the turn queue",
        description="The turn queue's dead-letter queue (--stack's TurnDeadLetterQueueUrl "
        "output, or TURN_DLQ_URL). Messages are described by kind, chat and ids, never by "
        "their text. Replay after fixing the cause (see the agent_turn logs).",
        examples=[
            "nanobot-lambda dlq list --stack nanobot-lambda",
            "nanobot-lambda dlq replay --all --stack nanobot-lambda",
        ],
    )
    actions = group.add_subparsers(dest="action", required=True, metavar="ACTION")
    add_command(
        actions,
        "list",
        help="show the dead letters without consuming them",
        description="Show each message: its id, when it was first queued, its chat (message "
        "group), its job's kind and ids, and its size. Nothing is consumed. A FIFO queue "
        "shows at most the first ten messages of each chat at a time.",
        examples=["nanobot-lambda dlq list --stack nanobot-lambda"],
        handler=list_command,
    )
    replay = add_command(
        actions,
        "replay",
        help="send dead letters back to the turn queue",
        description="Send the given messages (or --all) back to the turn queue (TurnQueueUrl "
        "or TURN_QUEUE_URL) in their chat's order, then delete each from the dead-letter "
        "queue once it was sent.",
        examples=[
            "nanobot-lambda dlq replay 0f8a1c2e-... --stack nanobot-lambda",
            "nanobot-lambda dlq replay --all --stack nanobot-lambda",
        ],
        handler=replay_command,
    )
    replay.add_argument("message_ids", nargs="*", metavar="ID", help="message ids from dlq list")
    replay.add_argument("--all", action="store_true", help="every message")
    for action in actions.choices.values():
        add_stack_option(action, local=True)


def _queue(arguments: argparse.Namespace, *also: str) -> tuple[DeadLetterQueue, list[str]]:
    target = deployment(arguments)
    dlq_url, *others = target.require("turn_dlq_url", *also)
    return DeadLetterQueue(dlq_url, target.client("sqs")), others


def _line(letter: DeadLetter) -> str:
    sent = f"{letter.sent_at:%Y-%m-%d %H:%M:%S} UTC" if letter.sent_at else "?"
    return (
        f"{letter.message_id}  queued {sent}  group {letter.group}  {letter.describe_job()}  "
        f"{letter.size} bytes"
    )


def list_command(arguments: argparse.Namespace) -> int:
    queue, _ = _queue(arguments)
    letters = queue.peek()
    if not letters:
        print("The dead-letter queue is empty.")
        return 0
    for letter in letters:
        print(_line(letter))
    total = queue.approximate_count()
    hidden = max(0, total - len(letters))
    more = f" (about {hidden} more behind them: replay these first)" if hidden else ""
    print(f"{len(letters)} message(s){more}.")
    return 0


def replay_command(arguments: argparse.Namespace) -> int:
    if not arguments.all and not arguments.message_ids:
        print("error: give message ids (from dlq list) or --all", file=sys.stderr)
        return 2
    queue, (turn_queue_url,) = _queue(arguments, "turn_queue_url")
    wanted = None if arguments.all else set(arguments.message_ids)

    def show(letter: DeadLetter) -> None:
        print(f"  replayed {letter.message_id} ({letter.describe_job()})", flush=True)

    replayed, missing = queue.replay(turn_queue_url, wanted, on_replayed=show)
    for message_id in sorted(missing):
        print(f"error: no message {message_id} in the dead-letter queue", file=sys.stderr)
    print(f"Replayed {len(replayed)} message(s) into the turn queue.")
    return 1 if missing else 0

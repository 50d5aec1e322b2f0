"""`hooks list|add|remove`: the owner's signed event hooks (core/inbound_events.py), as /hooks
manages them in the chat."""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from nanobot_lambda.operator.cli.common import add_command, add_stack_option, deployment

if TYPE_CHECKING:
    from nanobot_lambda.adapters.aws.inbound_events import DynamoHookStore


def register(commands: Any) -> None:
    hooks = add_command(
        commands,
        "hooks",
        help="list, add or remove the event hooks of a deployed stack",
        description="Signed event hooks: each has its own URL (POST <HooksUrl>/NAME) and "
        "secret, and an event signed with it becomes a task in the hook's chat. The sessions "
        "table and the hooks' URL come from --stack's outputs, or from SESSIONS_TABLE and "
        "HOOKS_URL; with --local, from the `chat` running on this machine (its hooks' URL is "
        "on 127.0.0.1).",
        examples=[
            "nanobot-lambda hooks list --stack nanobot-lambda",
            "nanobot-lambda hooks add github --chat 111111111 --stack nanobot-lambda",
            "nanobot-lambda hooks remove github --stack nanobot-lambda",
            "nanobot-lambda hooks list --local",
        ],
    )
    actions = hooks.add_subparsers(dest="action", required=True, metavar="ACTION")
    hooks_list = add_command(
        actions,
        "list",
        help="every hook, with its chat and URL",
        description="Every hook, with the chat its events go to and its URL (never its secret).",
        examples=["nanobot-lambda hooks list --stack nanobot-lambda"],
        handler=list_command,
    )
    hooks_add = add_command(
        actions,
        "add",
        help="make a hook; its secret is printed once",
        description="Make a hook whose events become tasks in --chat (in that chat's scope, "
        "counted against its spending limits). Its secret is printed once: give it to the "
        "sender (GitHub: the webhook's Secret, content type application/json).",
        examples=[
            "nanobot-lambda hooks add github --chat 111111111 --stack nanobot-lambda",
            "nanobot-lambda hooks add uptime --chat 111111111 --quiet --stack nanobot-lambda",
        ],
        handler=add_command_handler,
    )
    hooks_add.add_argument("name", help="1-32 lowercase letters, digits or dashes")
    hooks_add.add_argument("--chat", type=int, required=True, help="the chat its events go to")
    hooks_add.add_argument("--topic", type=int, help="a forum topic of that chat")
    hooks_add.add_argument(
        "--quiet", action="store_true", help="write only when an event needs the person"
    )
    hooks_remove = add_command(
        actions,
        "remove",
        help="delete a hook (its URL refuses events at once)",
        description="Delete a hook: its URL answers 404 from now on, and nothing more is queued.",
        examples=["nanobot-lambda hooks remove github --stack nanobot-lambda"],
        handler=remove_command,
    )
    hooks_remove.add_argument("name")
    for sub in (hooks_list, hooks_add, hooks_remove):
        add_stack_option(sub, local=True)


def _store(arguments: argparse.Namespace) -> tuple[DynamoHookStore, str]:
    """The hooks (imported here: the CLI starts without boto3's adapters) and their base URL."""
    from nanobot_lambda.adapters.aws.inbound_events import DynamoHookStore

    target = deployment(arguments)
    (table,) = target.require("sessions_table")
    client = target.client("dynamodb")
    return DynamoHookStore(table, lambda: client), (target.hooks_url or "/hooks").rstrip("/")


def list_command(arguments: argparse.Namespace) -> int:
    store, base = _store(arguments)
    hooks = store.hooks()
    if not hooks:
        print("No hooks.")
    for hook in hooks:
        where = f"chat {hook.chat_id}" + (f" topic {hook.thread_id}" if hook.thread_id else "")
        quiet = "  quiet" if hook.quiet else ""
        print(f"{hook.name}  {where}{quiet}  {base}/{hook.name}  made {hook.created_at}")
    return 0


def add_command_handler(arguments: argparse.Namespace) -> int:
    from nanobot_lambda.core.inbound_events import BadHookName, new_hook

    try:
        hook = new_hook(
            arguments.name,
            arguments.chat,
            arguments.topic,
            quiet=arguments.quiet,
            now=datetime.now(UTC),
            created_by=None,
        )
    except BadHookName:
        print(
            f"error: {arguments.name!r} is no hook name: 1-32 lowercase letters, digits or "
            "dashes, starting with a letter",
            file=sys.stderr,
        )
        return 2
    store, base = _store(arguments)
    if not store.add(hook):
        print(f"error: a hook named {hook.name} exists: remove it first", file=sys.stderr)
        return 1
    print(f"Hook {hook.name}: events become tasks in chat {hook.chat_id}.")
    print(f"url:    {base}/{hook.name}")
    print(f"secret: {hook.secret.get_secret_value()}  (shown only now)")
    return 0


def remove_command(arguments: argparse.Namespace) -> int:
    store, _ = _store(arguments)
    if not store.remove(arguments.name):
        print(f"error: no hook named {arguments.name!r} (see hooks list)", file=sys.stderr)
        return 1
    print(f"Removed hook {arguments.name}: its URL refuses events from now on.")
    return 0

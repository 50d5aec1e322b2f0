"""`sessions list|show|reset`: the conversations in the sessions table."""

from __future__ import annotations

import argparse
from typing import Any

from nanobot_lambda.operator.cli.common import add_command, add_stack_option, confirm, deployment
from nanobot_lambda.operator.ops.session_admin import SessionAdmin, message_preview, session_key


def register(commands: Any) -> None:
    group = add_command(
        commands,
        "sessions",
        help="list conversations, show one, or reset one",
        description="Conversations in the sessions table (--stack's SessionsTableName output, "
        "or SESSIONS_TABLE). CHAT is a chat id (111111111) or a session key "
        "(telegram:-1001234:7 for a forum topic, cron:1a2b3c4d for a scheduled task); put -- "
        "before a key that starts with a minus sign.",
        examples=[
            "nanobot-lambda sessions list --stack nanobot-lambda",
            "nanobot-lambda sessions show 111111111 --stack nanobot-lambda",
            "nanobot-lambda sessions reset 111111111 --stack nanobot-lambda",
        ],
    )
    actions = group.add_subparsers(dest="action", required=True, metavar="ACTION")
    add_command(
        actions,
        "list",
        help="every session: key, messages, last activity",
        description="Every session, most recently active first, with its message count and "
        "how many of those are summarised into memory.",
        examples=["nanobot-lambda sessions list --stack nanobot-lambda"],
        handler=list_command,
    )
    show = add_command(
        actions,
        "show",
        help="a chat's recent messages",
        description="The last messages of a session, oldest first (tool calls by name).",
        examples=[
            "nanobot-lambda sessions show 111111111 --stack nanobot-lambda",
            "nanobot-lambda sessions show 111111111 --limit 50 --stack nanobot-lambda",
        ],
        handler=show_command,
    )
    show.add_argument("chat", metavar="CHAT")
    show.add_argument("--limit", type=int, default=20, help="how many messages (default 20)")
    reset = add_command(
        actions,
        "reset",
        help="delete a chat's conversation (memory files stay)",
        description="Delete every message of a session, as if the chat started afresh. The "
        "memory files (memory/MEMORY.md, HISTORY.md) are not touched; /new in the chat saves "
        "the conversation to memory first, this does not.",
        examples=[
            "nanobot-lambda sessions reset 111111111 --stack nanobot-lambda",
            "nanobot-lambda sessions reset 111111111 --yes --stack nanobot-lambda",
        ],
        handler=reset_command,
    )
    reset.add_argument("chat", metavar="CHAT")
    reset.add_argument("-y", "--yes", action="store_true", help="do not ask for confirmation")
    for action in actions.choices.values():
        add_stack_option(action, local=True)


def _admin(arguments: argparse.Namespace) -> SessionAdmin:
    target = deployment(arguments)
    (table,) = target.require("sessions_table")
    return SessionAdmin(table, target.client("dynamodb"))


def list_command(arguments: argparse.Namespace) -> int:
    sessions = _admin(arguments).sessions()
    if not sessions:
        print("No sessions.")
    for summary in sessions:
        print(
            f"{summary.key:<32} {summary.messages:>6} messages ({summary.consolidated} in "
            f"memory)  last {summary.last_activity or '-'}"
        )
    return 0


def show_command(arguments: argparse.Namespace) -> int:
    key = session_key(arguments.chat)
    messages = _admin(arguments).recent(key, max(1, arguments.limit))
    if not messages:
        print(f"No messages in session {key}.")
        return 1
    for stored in messages:
        role = stored.message.get("role", "?")
        print(f"#{stored.seq} {stored.created_at or ''} {role}: {message_preview(stored.message)}")
    return 0


def reset_command(arguments: argparse.Namespace) -> int:
    key = session_key(arguments.chat)
    admin = _admin(arguments)
    count = admin.count(key)
    if count == 0:
        print(f"No session {key}: nothing to reset.")
        return 1
    question = f"Delete session {key} ({count} items)? Memory files are kept."
    if not confirm(question, arguments.yes):
        print("Nothing deleted.")
        return 1
    deleted = admin.reset(key)
    print(f"Deleted {deleted} items of session {key}; its next message starts afresh.")
    return 0

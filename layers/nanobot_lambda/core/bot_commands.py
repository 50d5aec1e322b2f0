"""The bot's commands: one list, for the /help answer and for the command menu Telegram shows
when the user types "/" (set with `setMyCommands` by `nanobot-lambda webhook set`)."""

from __future__ import annotations

from nanobot_lambda.core import texts

# (command, description): Telegram wants 1-32 characters of a-z, 0-9 and _, and a description
# of 1-256 characters.
BOT_COMMANDS: tuple[tuple[str, str], ...] = (
    ("new", "save our conversation to memory and start a fresh one"),
    ("stop", "stop what I'm working on (what I did so far is kept)"),
    ("compact", "summarise our earlier conversation into memory now (the newest stays)"),
    ("memory", "versions of my memory of this chat; /memory restore N brings one back"),
    ("usage", "tokens, turns and cost of this chat (today, this month, all time)"),
    ("model", "which model answers this chat; /model NAME switches"),
    ("think", "how hard I think: /think off, low, medium or high"),
    ("console", "open my console: memory, schedules, models, spending (in our private chat)"),
    ("help", "the commands, and what I can do"),
)


def help_text() -> str:
    commands = "\n".join(f"/{command}: {description}" for command, description in BOT_COMMANDS)
    return texts.render("help", commands=commands)


def command_menu() -> list[dict[str, str]]:
    """The commands as `setMyCommands` takes them (and `getMyCommands` returns them)."""
    return [
        {"command": command, "description": description} for command, description in BOT_COMMANDS
    ]

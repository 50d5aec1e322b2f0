"""Groups: is a message for the bot? Commands, @mentions and replies, read from the message and
the bot's id and username (agent_turn knows them; the webhook, with no bot token, does not)."""

from __future__ import annotations

import re
from typing import Literal

from nanobot_lambda.adapters.telegram.models import Message, MessageEntity

COMMAND = re.compile(r"^/([A-Za-z0-9_]{1,32})(?:@([A-Za-z0-9_]+))?(?:\s|$)")
GROUP_CHAT_TYPES = frozenset({"group", "supergroup"})
GroupPolicy = Literal["mention", "open"]


def is_group_chat(message: Message) -> bool:
    return message.chat.type in GROUP_CHAT_TYPES


def entity_span(text_units: int, entity: MessageEntity) -> tuple[int, int]:
    """An entity's (start, end) in UTF-16 code units (how Telegram counts), clamped to the
    text: offsets that are negative or past the end select nothing rather than wrap around."""
    start = min(max(entity.offset, 0), text_units)
    end = min(max(entity.offset + entity.length, start), text_units)
    return start, end


def entity_text(text: str, entity: MessageEntity) -> str:
    """The part of `text` an entity covers."""
    units = text.encode("utf-16-le")
    start, end = entity_span(len(units) // 2, entity)
    return units[start * 2 : end * 2].decode("utf-16-le", errors="ignore")


def _text_and_entities(message: Message) -> tuple[str, list[MessageEntity]]:
    if message.text is not None:
        return message.text, message.entities
    return message.caption or "", message.caption_entities


def _is_handle(text: str, entity: MessageEntity, bot_username: str | None) -> bool:
    return (
        entity.type == "mention"
        and bool(bot_username)
        and entity_text(text, entity).lower() == f"@{bot_username}".lower()
    )


def mentions_bot(message: Message, *, bot_id: int, bot_username: str | None) -> bool:
    """An `@bot_username` mention, or a text mention (a name linked to the bot's account)."""
    text, entities = _text_and_entities(message)
    for entity in entities:
        if _is_handle(text, entity, bot_username):
            return True
        if entity.type == "text_mention" and entity.user is not None and entity.user.id == bot_id:
            return True
    return False


def replied_message(message: Message) -> Message | None:
    """The message this one replies to. In a forum topic every message "replies" to the topic's
    first message; that implicit reply is not one."""
    reply = message.reply_to_message
    if reply is None:
        return None
    if message.is_topic_message and reply.message_id == message.message_thread_id:
        return None
    return reply


def replies_to_bot(message: Message, *, bot_id: int) -> bool:
    reply = replied_message(message)
    return reply is not None and reply.sender is not None and reply.sender.id == bot_id


def command_target(message: Message) -> tuple[str, str | None] | None:
    """(command, bot it names or None) for "/cmd" or "/cmd@some_bot"; None for other text."""
    match = COMMAND.match(message.text or "")
    return (match.group(1).lower(), match.group(2)) if match else None


def addressed_to_bot(
    message: Message, *, bot_id: int, bot_username: str | None, policy: GroupPolicy
) -> bool:
    """Whether the bot should act on this message.

    Private chats: always. Groups and supergroups: a command for this bot ("/cmd" or
    "/cmd@this_bot", never "/cmd@other_bot"); otherwise, with the `mention` policy, only a
    message that mentions the bot or replies to one of its messages; with `open`, every message.
    """
    if not is_group_chat(message):
        return True
    command = command_target(message)
    if command is not None:
        target = command[1]
        return target is None or (bot_username or "").lower() == target.lower()
    if policy == "open":
        return True
    return mentions_bot(message, bot_id=bot_id, bot_username=bot_username) or replies_to_bot(
        message, bot_id=bot_id
    )


def has_mention(message: Message) -> bool:
    """Whether the message has any @mention (then the bot's username is needed to strip it)."""
    return any(entity.type == "mention" for entity in _text_and_entities(message)[1])


def strip_bot_mention(message: Message, bot_username: str | None) -> str:
    """The text or caption without the bot's own @mentions ("@bot, hi" -> "hi").

    A message that is nothing but the mention keeps it, so the model still sees something.
    """
    text, entities = _text_and_entities(message)
    units = text.encode("utf-16-le")
    spans = sorted(
        entity_span(len(units) // 2, entity)
        for entity in entities
        if _is_handle(text, entity, bot_username)
    )
    if not spans:
        return text

    def between(start: int, end: int) -> str:
        return units[start * 2 : end * 2].decode("utf-16-le", errors="ignore")

    result = between(0, spans[0][0])
    cursor = spans[0][1]
    for start, end in spans[1:]:
        result = _after_mention(result, between(cursor, start))
        cursor = max(cursor, end)
    result = _after_mention(result, between(cursor, len(units) // 2))
    return result.strip() or text.strip()


def _after_mention(before: str, piece: str) -> str:
    """Join the text after a removed mention: drop the "," or ":" it had, and a double space."""
    piece = piece.lstrip(",:;")
    if not before or before[-1].isspace():
        piece = piece.lstrip(" ")
    return before + piece

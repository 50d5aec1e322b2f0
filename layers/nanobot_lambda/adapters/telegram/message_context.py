"""The context of a message for the model: what it replies to, where it was forwarded from.
Names and quotes are cut short (strangers choose them) and quoted (`quoted`), so nothing in
someone else's words or name ends the quotation."""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import ValidationError

from nanobot_lambda.adapters.telegram.addressing import replied_message
from nanobot_lambda.adapters.telegram.contents import message_text
from nanobot_lambda.adapters.telegram.models import Chat, Message, User
from nanobot_lambda.core import texts
from nanobot_lambda.core.texts import quoted

QUOTE_MAX_CHARS = 500
NAME_MAX_CHARS = 100


def display_name(user: User) -> str:
    """One short line: names are chosen by strangers too (a forwarded message's author)."""
    name = shorten(
        " ".join(part for part in (user.first_name, user.last_name) if part), NAME_MAX_CHARS
    )
    return name or (f"@{user.username}" if user.username else f"user {user.id}")


def _author(message: Message) -> str:
    if message.sender_chat is not None and message.sender_chat.title:
        # a channel, or a group's anonymous admin
        return shorten(message.sender_chat.title, NAME_MAX_CHARS)
    if message.sender is not None:
        return display_name(message.sender)
    return "someone"


def shorten(text: str, limit: int = QUOTE_MAX_CHARS) -> str:
    """One line, at most `limit` characters (an ellipsis marks a cut)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def forward_origin_name(origin: Mapping[str, object] | None) -> str | None:
    """Who a forwarded message came from (MessageOrigin: user, hidden_user, chat, channel)."""
    if not origin:
        return None
    kind = origin.get("type")
    name = ""
    try:
        if kind == "user" and isinstance(origin.get("sender_user"), dict):
            name = display_name(User.model_validate(origin["sender_user"]))
        elif kind == "hidden_user":
            name = str(origin.get("sender_user_name") or "")
        elif kind in ("chat", "channel"):
            chat = origin.get("sender_chat" if kind == "chat" else "chat")
            if isinstance(chat, dict):
                parsed = Chat.model_validate(chat)
                name = parsed.title or (f"@{parsed.username}" if parsed.username else "")
    except ValidationError:
        name = ""
    signature = origin.get("author_signature")
    if signature:
        name = f"{name} ({signature})" if name else str(signature)
    return shorten(name, NAME_MAX_CHARS) or "someone"


def context_lines(message: Message, *, bot_id: int | None) -> list[str]:
    """Lines for the model before the message text: what it replies to, where it came from."""
    lines = []
    reply = replied_message(message)
    if reply is not None:
        quote = shorten(message_text(reply))
        if quote:
            from_bot = bot_id is not None and reply.sender is not None and reply.sender.id == bot_id
            # Quoted (`quoted`): nothing in someone else's words or name ends the quotation.
            if from_bot:
                lines.append(texts.render("reply_context_bot", quote=quoted(quote)))
            else:
                who = quoted(_author(reply))
                lines.append(texts.render("reply_context", who=who, quote=quoted(quote)))
    origin = forward_origin_name(message.forward_origin)
    if origin is not None:
        lines.append(texts.render("forward_context", origin=origin))
    return lines

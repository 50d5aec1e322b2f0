"""Who acts in an update and where (`place_of`: a `Place`), read in one place for every update
kind; an update with no place the bot answers in is `Ignored`, with the reason. A conversation
is a chat, or one topic of a forum chat (`session_key_for`).
"""

from __future__ import annotations

from dataclasses import dataclass

from nanobot_lambda.adapters.telegram.models import (
    CallbackQuery,
    Chat,
    Message,
    MessageReactionUpdated,
    Update,
)
from nanobot_lambda.core.sessions import session_key_for as session_key_for  # re-exported


@dataclass(frozen=True)
class Ignored:
    """An update the bot does not answer, and why."""

    reason: str


@dataclass(frozen=True)
class Sender:
    """Who sent something: a user, or a chat posting on its own behalf (`sender_chat`)."""

    id: int
    username: str | None
    is_bot: bool = False


def sender_of(message: Message) -> Sender | None:
    """The chat a message was sent on behalf of (an anonymous group admin, a linked channel, a
    user posting as a channel; `from` is then a placeholder bot), else its `from`."""
    if message.sender_chat is not None:
        return Sender(message.sender_chat.id, message.sender_chat.username)
    if message.sender is not None:
        return Sender(message.sender.id, message.sender.username, message.sender.is_bot)
    return None


@dataclass(frozen=True)
class Place:
    """Who acts in an update, and where: the one reading of every update kind. The webhook's
    allow-list judges it, `to_inbound` builds the message to answer from it, and agent_turn
    derives a queued update's subject from it (`subjects.py`), so the three cannot disagree
    about whose an update is.

    The chat of a pressed button is the chat of the message it was under. In a private chat
    only its person acts: anything else is not from Telegram and is not heard.
    """

    sender: Sender
    chat: Chat
    thread_id: int | None  # a forum topic; None in other chats
    message: Message  # the message sent, or the one a pressed button is under
    query: CallbackQuery | None = None  # a button pressed


@dataclass(frozen=True)
class RefusedPress(Ignored):
    """A button press the bot does not hear: the webhook answers its query (so its spinner
    stops, with a short notice) and queues nothing."""

    callback_query_id: str


def place_of(update: Update) -> Place | Ignored:
    """Who acts in `update` and in which chat (and topic), or why it has no place the bot
    answers in."""
    if update.channel_post is not None or update.edited_channel_post is not None:
        # No person sends these; the bot talks in private chats and groups only.
        return Ignored("channel post")
    if update.callback_query is not None:
        return _place_of_press(update.callback_query)
    if update.message_reaction is not None:
        return _place_of_reaction(update.message_reaction)
    message = update.message or update.edited_message or update.business_message
    if message is None:
        return Ignored(f"update kind {update.kind}")
    sender = sender_of(message)
    if sender is None:
        return Ignored("message without a sender")
    if sender.is_bot:
        return Ignored("message from a bot")
    if _someone_else_in_private(message.chat, sender):
        return Ignored("message in a private chat from someone other than its person")
    return Place(sender, message.chat, _thread_of(message), message)


def _place_of_press(query: CallbackQuery) -> Place | Ignored:
    message = query.message
    if message is None:
        return RefusedPress("button under a message too old to show", query.id)
    sender = Sender(query.sender.id, query.sender.username, query.sender.is_bot)
    if sender.is_bot:
        return Ignored("button pressed by a bot")
    if _someone_else_in_private(message.chat, sender):
        return RefusedPress("button pressed by someone other than the chat's person", query.id)
    return Place(sender, message.chat, _thread_of(message), message, query)


def _place_of_reaction(reacted: MessageReactionUpdated) -> Place | Ignored:
    """A reaction is placed in its chat (Telegram gives no forum topic for it), by the person
    who reacted (or the chat an anonymous one was made for); `message` is the message reacted
    to, as far as the update tells of it."""
    if reacted.actor_chat is not None:
        sender = Sender(reacted.actor_chat.id, reacted.actor_chat.username)
    elif reacted.user is not None:
        sender = Sender(reacted.user.id, reacted.user.username, reacted.user.is_bot)
    else:
        return Ignored("reaction without a sender")
    if sender.is_bot:
        return Ignored("reaction from a bot")
    if _someone_else_in_private(reacted.chat, sender):
        return Ignored("reaction in a private chat from someone other than its person")
    message = Message(message_id=reacted.message_id, date=reacted.date, chat=reacted.chat)
    return Place(sender, reacted.chat, None, message)


def _someone_else_in_private(chat: Chat, sender: Sender) -> bool:
    return chat.type == "private" and sender.id != chat.id


def _thread_of(message: Message) -> int | None:
    return message.message_thread_id if message.is_topic_message else None

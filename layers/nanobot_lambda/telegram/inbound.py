"""Decide what an Update means for the bot: a message to answer, one to ignore, or a stranger.

Both the webhook (to decide what to enqueue) and agent_turn (to rebuild the message from the
queued update) use `classify`, so the two can never disagree about what a message says.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from nanobot_lambda.allowlist import AllowList
from nanobot_lambda.telegram.models import Message, Update

_COMMAND = re.compile(r"^/([A-Za-z0-9_]{1,32})(?:@[A-Za-z0-9_]+)?(?:\s|$)")


@dataclass(frozen=True)
class InboundMessage:
    update_id: int
    chat_id: int
    chat_type: str
    message_id: int
    sender_id: int
    sender_username: str | None
    thread_id: int | None
    text: str

    @property
    def command(self) -> str | None:
        """`new` for "/new", "/new@my_bot" or "/NEW extra words"; None for other text."""
        match = _COMMAND.match(self.text)
        return match.group(1).lower() if match else None

    @property
    def session_key(self) -> str:
        """One conversation: a chat, or one topic of a forum chat. Also the SQS message group."""
        key = f"telegram:{self.chat_id}"
        return key if self.thread_id is None else f"{key}:{self.thread_id}"


@dataclass(frozen=True)
class Accepted:
    message: InboundMessage


@dataclass(frozen=True)
class Ignored:
    reason: str


@dataclass(frozen=True)
class Rejected:
    """An allowed-kind message from a sender not on the allow-list."""

    sender_id: int
    chat_id: int


Decision = Accepted | Ignored | Rejected


def to_inbound(update: Update) -> InboundMessage | Ignored:
    """The message the bot should answer in this update, or why there is none."""
    message = update.message
    if message is None:
        return Ignored(f"update kind {update.kind}")
    sender = message.sender
    if sender is None:
        return Ignored("message without a sender")
    if sender.is_bot:
        return Ignored("message from a bot")
    text = message_text(message)
    if not text:
        return Ignored("message without content")
    return InboundMessage(
        update_id=update.update_id,
        chat_id=message.chat.id,
        chat_type=message.chat.type,
        message_id=message.message_id,
        sender_id=sender.id,
        sender_username=sender.username,
        thread_id=message.message_thread_id if message.is_topic_message else None,
        text=text,
    )


def classify(update: Update, allow_list: AllowList) -> Decision:
    """The webhook's decision: answer (Accepted), drop quietly (Ignored), or refuse (Rejected)."""
    inbound = to_inbound(update)
    if isinstance(inbound, Ignored):
        return inbound
    if not allow_list.allows(inbound.sender_id, inbound.sender_username):
        return Rejected(sender_id=inbound.sender_id, chat_id=inbound.chat_id)
    return Accepted(inbound)


def message_text(message: Message) -> str:
    """The message as text for the model: its text or caption plus a note for each attachment."""
    parts = [note for note in _attachment_notes(message) if note]
    body = message.text or message.caption
    if body:
        parts.append(body)
    return "\n".join(parts).strip()


def _attachment_notes(message: Message) -> list[str]:
    notes = []
    if message.photo:
        notes.append("[photo]")
    if message.voice:
        notes.append(f"[voice message, {message.voice.duration or 0} s]")
    if message.audio:
        notes.append(f"[audio: {message.audio.file_name or 'untitled'}]")
    if message.document:
        document = message.document
        notes.append(
            f"[document: {document.file_name or 'unnamed'} "
            f"({document.mime_type or 'unknown type'}, {document.file_size or 0} bytes)]"
        )
    if message.video or message.video_note or message.animation:
        notes.append("[video]")
    if message.sticker:
        notes.append(f"[sticker {message.sticker.emoji or ''}]".replace(" ]", "]"))
    if message.location:
        notes.append(f"[location: {message.location.latitude}, {message.location.longitude}]")
    if message.contact:
        contact = message.contact
        name = " ".join(filter(None, [contact.first_name, contact.last_name]))
        notes.append(f"[contact: {name}, {contact.phone_number}]")
    return notes

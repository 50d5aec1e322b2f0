"""The parts of the Telegram Bot API `Update` the bot reads, as pydantic models.

Tolerant by design: unknown fields are ignored (Telegram adds fields often), every optional field
is optional. Only `update_id` is required, so anything that is not an Update fails validation.

Strict where hostile input could hurt later: before validation the whole update is cleaned
(`clean_update`): lone UTF-16 surrogates (which no JSON encoder downstream accepts) and NUL
characters become U+FFFD (one UTF-16 unit each, so entity offsets stay right), and numbers
outside 64 bits, non-finite numbers and nesting deeper than any real update are refused.
"""

from __future__ import annotations

import math
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

INT64 = 2**63
MAX_NESTING = 32  # a real update nests about 8 levels (update.message.reply_to_message.…)
_UNSAFE_CHARACTER = re.compile(r"[\x00\ud800-\udfff]")


def clean_update(value: Any, depth: int = 0) -> Any:
    """The update with its strings made safe to store and send on; ValueError for numbers
    or nesting no Telegram update has."""
    if depth > MAX_NESTING:
        raise ValueError("nested too deeply to be a Telegram update")
    if isinstance(value, str):
        return _UNSAFE_CHARACTER.sub("\ufffd", value)
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        if not -INT64 <= value < INT64:
            raise ValueError("a number is out of the 64-bit range")
        return value
    if isinstance(value, float):
        if not math.isfinite(value) or abs(value) >= INT64:
            raise ValueError("a number is not finite or out of range")
        return value
    if isinstance(value, dict):
        return {
            clean_update(key, depth): clean_update(item, depth + 1) for key, item in value.items()
        }
    if isinstance(value, list):
        return [clean_update(item, depth + 1) for item in value]
    return value


class _TelegramModel(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True, frozen=True)


class User(_TelegramModel):
    id: int
    is_bot: bool = False
    first_name: str = ""
    last_name: str | None = None
    username: str | None = None
    language_code: str | None = None


class Chat(_TelegramModel):
    id: int
    type: str
    title: str | None = None
    username: str | None = None
    first_name: str | None = None
    is_forum: bool | None = None


class MessageEntity(_TelegramModel):
    type: str
    offset: int
    length: int
    url: str | None = None
    user: User | None = None


class PhotoSize(_TelegramModel):
    file_id: str
    file_unique_id: str
    width: int
    height: int
    file_size: int | None = None


class FileRef(_TelegramModel):
    """Voice, audio, document, video, animation, video note: the fields they share."""

    file_id: str
    file_unique_id: str
    file_size: int | None = None
    mime_type: str | None = None
    file_name: str | None = None
    duration: int | None = None


class Sticker(_TelegramModel):
    file_id: str
    emoji: str | None = None
    set_name: str | None = None


class Location(_TelegramModel):
    latitude: float
    longitude: float


class Contact(_TelegramModel):
    phone_number: str
    first_name: str
    last_name: str | None = None
    user_id: int | None = None


class Message(_TelegramModel):
    message_id: int
    date: int
    chat: Chat
    edit_date: int | None = None  # an edited message: when it was last edited
    sender: User | None = Field(default=None, alias="from")
    sender_chat: Chat | None = None
    message_thread_id: int | None = None
    is_topic_message: bool | None = None
    text: str | None = None
    caption: str | None = None
    entities: list[MessageEntity] = Field(default_factory=list)
    caption_entities: list[MessageEntity] = Field(default_factory=list)
    photo: list[PhotoSize] = Field(default_factory=list)
    voice: FileRef | None = None
    audio: FileRef | None = None
    document: FileRef | None = None
    video: FileRef | None = None
    video_note: FileRef | None = None
    animation: FileRef | None = None
    sticker: Sticker | None = None
    location: Location | None = None
    contact: Contact | None = None
    reply_to_message: Message | None = None
    forward_origin: dict[str, object] | None = None
    via_bot: User | None = None
    reply_markup: dict[str, Any] | None = None  # a bot's message: its inline keyboard
    media_group_id: str | None = None  # a part of an album (core/albums.py)


class CallbackQuery(_TelegramModel):
    id: str
    sender: User = Field(alias="from")
    message: Message | None = None
    data: str | None = None


class ReactionType(_TelegramModel):
    type: str  # emoji, custom_emoji, paid
    emoji: str | None = None
    custom_emoji_id: str | None = None

    @property
    def shown(self) -> str:
        """The reaction as one short string: its emoji, `custom:<id>`, or ⭐ for a paid one."""
        if self.type == "emoji" and self.emoji:
            return self.emoji
        if self.type == "custom_emoji" and self.custom_emoji_id:
            return f"custom:{self.custom_emoji_id}"
        return "⭐" if self.type == "paid" else self.type


class MessageReactionUpdated(_TelegramModel):
    """A person changed their reaction to a message (`message_reaction`; the bot sees it in
    private chats, and in groups where it is an administrator)."""

    chat: Chat
    message_id: int
    date: int
    user: User | None = None
    actor_chat: Chat | None = None  # an anonymous reaction, on behalf of a chat
    old_reaction: list[ReactionType] = Field(default_factory=list)
    new_reaction: list[ReactionType] = Field(default_factory=list)


class Update(_TelegramModel):
    update_id: int
    message: Message | None = None
    edited_message: Message | None = None
    channel_post: Message | None = None
    edited_channel_post: Message | None = None
    business_message: Message | None = None
    callback_query: CallbackQuery | None = None
    my_chat_member: dict[str, object] | None = None
    chat_member: dict[str, object] | None = None
    message_reaction: MessageReactionUpdated | None = None

    @model_validator(mode="before")
    @classmethod
    def _clean(cls, data: Any) -> Any:
        return clean_update(data)

    @property
    def kind(self) -> str:
        """The update's payload field (`message`, `edited_message`, …) or `unknown`."""
        for name in type(self).model_fields:
            if name != "update_id" and getattr(self, name) is not None:
                return name
        return "unknown"

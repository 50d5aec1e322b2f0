"""Decide what an Update means for the bot: a message to answer, one to ignore, or a stranger.

Both the webhook (to decide what to enqueue) and agent_turn (to rebuild the message from the
queued update) use `classify`, so the two can never disagree about what a message says. Who acts
in an update and in which chat is read in one place for every update kind (`place_of`): the
allow-list, the message answered and the queued job's subject (`subjects.py`) all take it from
there.

A button press is heard only when it is one Telegram could send: in a private chat, pressed by
the chat's person; its data that of a button on the keyboard the message shows. Anything else
is refused (`RefusedPress`: the webhook answers its query and queues nothing; agent_turn ignores
it again). The choice reaches the model as the button's label and the message's text, each a
quoted JSON string (`quoted`), which no label or text can break out of.

A reaction is placed like a message (its chat, the person who reacted) and judged by the same
allow-list; `classify` makes it `Reacted`, which the webhook records and never queues. An edit is
heard as a short turn that says what the message reads now (`_edited`, marked `edited`, never a
command); in a group, like a message, it is queued and its turn checks the group policy on the
message as edited (`addressed_to_bot`).

agent_turn then applies what the webhook cannot know (it has no bot token, hence no bot
identity): the group policy (`addressed_to_bot`), the bot's own @mention stripped from the text
(`strip_bot_mention`), and the context of replies and forwards (`context_lines`). These are pure
functions of the message and the bot's id and username.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from pydantic import ValidationError

from nanobot_lambda.adapters.telegram.models import (
    CallbackQuery,
    Chat,
    Message,
    MessageEntity,
    MessageReactionUpdated,
    Update,
    User,
)
from nanobot_lambda.core import texts
from nanobot_lambda.core.allowlist import AllowList
from nanobot_lambda.core.feedback import Edit, Reaction, edit_turn_text
from nanobot_lambda.core.sessions import session_key_for as session_key_for  # re-exported
from nanobot_lambda.core.texts import quoted

_COMMAND = re.compile(r"^/([A-Za-z0-9_]{1,32})(?:@([A-Za-z0-9_]+))?(?:\s|$)")
GROUP_CHAT_TYPES = frozenset({"group", "supergroup"})
QUOTE_MAX_CHARS = 500
NAME_MAX_CHARS = 100
# What a Telegram user can send (Bot API: text 4096, caption 1024 characters).
TEXT_MAX_CHARS = 4096
CAPTION_MAX_CHARS = 1024
GroupPolicy = Literal["mention", "open"]


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
    # A button pressed (a callback query): the query's id, and `message_id` is the message the
    # button was under (`chat_id` is that message's chat).
    callback_query_id: str | None = None
    # An edit of an earlier message (`message_id`): `text` says what it reads now
    # (core/feedback.py: `edit_turn_text`), never as a command.
    edited: bool = False

    @property
    def command(self) -> str | None:
        """`new` for "/new", "/new@my_bot" or "/NEW extra words"; None for other text."""
        match = _COMMAND.match(self.text)
        return match.group(1).lower() if match else None

    @property
    def session_key(self) -> str:
        """One conversation: a chat, or one topic of a forum chat. Also the SQS message group."""
        return session_key_for(self.chat_id, self.thread_id)


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


@dataclass(frozen=True)
class Reacted:
    """A reaction from a heard person: recorded by the webhook, no turn (core/feedback.py)."""

    reaction: Reaction


Decision = Accepted | Reacted | Ignored | Rejected


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


def too_long(message: Message) -> bool:
    """Longer than any text or caption a Telegram user can send: not from Telegram."""
    return len(message.text or "") > TEXT_MAX_CHARS or len(message.caption or "") > (
        CAPTION_MAX_CHARS
    )


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


def reaction_of(update: Update) -> Reaction | Ignored:
    """The reaction to record from a `message_reaction` update, or why there is none."""
    reacted = update.message_reaction
    place = place_of(update)
    if reacted is None or isinstance(place, Ignored):
        return place if isinstance(place, Ignored) else Ignored(f"update kind {update.kind}")
    return Reaction(
        chat_id=place.chat.id,
        message_id=reacted.message_id,
        person_id=place.sender.id,
        emojis=tuple(reaction.shown for reaction in reacted.new_reaction),
        date=reacted.date,
    )


def edit_of(update: Update) -> Edit | None:
    """The edit to record from an `edited_message` update the bot answers (`to_inbound`)."""
    edited = update.edited_message
    place = place_of(update)
    if edited is None or isinstance(place, Ignored) or not _answers_edit(edited):
        return None
    return Edit(
        session_key=session_key_for(place.chat.id, place.thread_id),
        chat_id=place.chat.id,
        message_id=edited.message_id,
        update_id=update.update_id,
        edit_date=edited.edit_date or edited.date,
        text=message_text(edited),
    )


def _answers_edit(edited: Message) -> bool:
    """An edit with text is queued like a message. In a group, whether the edited message is
    for the bot needs the bot's identity: its turn checks (`addressed_to_bot`), as for every
    group message."""
    return not too_long(edited) and bool(message_text(edited))


def as_edited(message: Message, edit: Edit) -> Message:
    """`message` as `edit` left it (an edit recorded before the message's turn ran): its text,
    or its caption, is the edit's; its files are those it was sent with. The edit's entities
    are not recorded: the edited text has none (a @mention in it stays as written)."""
    if message.text is not None:
        return message.model_copy(update={"text": edit.text, "entities": []})
    # An edit's text is the caption after the notes on the files (`message_text`).
    notes = message_text(message.model_copy(update={"caption": None}))
    caption = edit.text.removeprefix(notes).strip() if notes else edit.text
    return message.model_copy(update={"caption": caption or None, "caption_entities": []})


def _someone_else_in_private(chat: Chat, sender: Sender) -> bool:
    return chat.type == "private" and sender.id != chat.id


def _thread_of(message: Message) -> int | None:
    return message.message_thread_id if message.is_topic_message else None


def to_inbound(update: Update) -> InboundMessage | Ignored:
    """The message the bot should answer in this update, or why there is none."""
    place = place_of(update)
    if isinstance(place, Ignored):
        return place
    if place.query is not None:
        return _pressed(update.update_id, place, place.query)
    if update.edited_message is not None:
        return _edited(update, place, update.edited_message)
    if update.message_reaction is not None:  # recorded by the webhook, never a turn
        return Ignored("a reaction")
    message = update.message
    if message is None:  # a business message: not answered
        return Ignored(f"update kind {update.kind}")
    if too_long(message):
        return Ignored("text longer than Telegram allows")
    text = message_text(message)
    if not text:
        return Ignored("message without content")
    return _inbound(update.update_id, place, text)


def _edited(update: Update, place: Place, edited: Message) -> InboundMessage | Ignored:
    """An edit, as a short turn that says what the message reads now. agent_turn may know
    better (core/feedback.py): the message not answered yet takes the edit in its own turn,
    and the text saved before says what changed."""
    edit = edit_of(update)
    if edit is None:
        return Ignored("edit without content the bot can read")
    return _inbound(update.update_id, place, edit_turn_text(None, edit), edited=True)


def _inbound(
    update_id: int,
    place: Place,
    text: str,
    callback_query_id: str | None = None,
    *,
    edited: bool = False,
) -> InboundMessage:
    return InboundMessage(
        update_id=update_id,
        chat_id=place.chat.id,
        chat_type=place.chat.type,
        message_id=place.message.message_id,
        sender_id=place.sender.id,
        sender_username=place.sender.username,
        thread_id=place.thread_id,
        text=text,
        callback_query_id=callback_query_id,
        edited=edited,
    )


def _pressed(update_id: int, place: Place, query: CallbackQuery) -> InboundMessage | Ignored:
    """A button pressed under one of the bot's messages, as the user's choice in words. Only
    a choice the message's keyboard offers is heard (Telegram sends the message with its
    keyboard as it is now: a keyboard taken off offers nothing)."""
    if not query.data:
        return RefusedPress("button without data", query.id)
    label = button_text(place.message, query.data)
    if label is None:
        return RefusedPress("button not on the keyboard shown", query.id)
    quote = (place.message.text or place.message.caption or "")[:QUOTE_MAX_CHARS]
    text = texts.render("button_pressed", choice=quoted(label), quote=quoted(quote))
    return _inbound(update_id, place, text, callback_query_id=query.id)


def button_text(message: Message, data: str | None) -> str | None:
    """The text of the message's inline button that carries `data`, if it still has one."""
    if not data:
        return None
    keyboard = (message.reply_markup or {}).get("inline_keyboard")
    for row in keyboard if isinstance(keyboard, list) else []:
        for button in row if isinstance(row, list) else []:
            if isinstance(button, dict) and button.get("callback_data") == data:
                return str(button.get("text") or "") or None
    return None


def classify(update: Update, allow_list: AllowList) -> Decision:
    """The webhook's decision: answer (Accepted), record a reaction (Reacted), drop quietly
    (Ignored), or refuse (Rejected).

    The allow-list (rules in `allowlist.py`) is applied to every update a person sends, before
    looking at what it is: a stranger's command, edit or button press is refused alike. A group
    is judged by the chat the update is in, a press by the chat of the message it was under.
    """
    place = place_of(update)
    if isinstance(place, Ignored):
        return place
    sender, chat = place.sender, place.chat
    group_id = chat.id if chat.type in GROUP_CHAT_TYPES else None
    if not allow_list.allows(sender.id, sender.username, group_id=group_id):
        return Rejected(sender_id=sender.id, chat_id=chat.id)
    if update.message_reaction is not None:
        reaction = reaction_of(update)
        return reaction if isinstance(reaction, Ignored) else Reacted(reaction)
    inbound = to_inbound(update)
    return inbound if isinstance(inbound, Ignored) else Accepted(inbound)


def message_text(message: Message) -> str:
    """The message as plain text: its text or caption after a short note for each attachment.

    The webhook's test for "has content", and the quote of a replied-to message. What the model
    sees of the files themselves (images, transcriptions, stored documents) is media.py's.
    """
    parts = [note for note in [*_file_notes(message), *other_attachment_notes(message)] if note]
    body = message.text or message.caption
    if body:
        parts.append(body)
    return "\n".join(parts).strip()


def _file_notes(message: Message) -> list[str]:
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
    return notes


def other_attachment_notes(message: Message) -> list[str]:
    """Notes for what the bot does not download: videos, stickers, locations, contacts."""
    notes = []
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


# -- groups: is the message for the bot? ------------------------------------------------------


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
    match = _COMMAND.match(message.text or "")
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


# -- context: what the message replies to, where it was forwarded from ------------------------


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

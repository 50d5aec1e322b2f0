"""Decide what an Update means for the bot: a message to answer, one to ignore, or a stranger.

Both the webhook (to decide what to enqueue) and agent_turn (to rebuild the message from the
queued update) use `classify`, so the two can never disagree about what a message says. Who acts
in an update and in which chat is read in one place for every update kind (`places.py`): the
allow-list, the message answered and the queued job's subject (`subjects.py`) all take it from
there.

A button press is heard only when it is one Telegram could send (`presses.py`); its choice
reaches the model in words. A reaction is placed like a message and judged by the same
allow-list; `classify` makes it `Reacted`, which the webhook records and never queues
(`reactions_and_edits.py`). An edit is heard as a short turn that says what the message reads
now (`_edited`, marked `edited`, never a command); in a group, like a message, it is queued and
its turn checks the group policy on the message as edited (`addressed_to_bot`).

agent_turn then applies what the webhook cannot know (it has no bot token, hence no bot
identity): the group policy (`addressing.py`: `addressed_to_bot`, and the bot's own @mention
stripped from the text, `strip_bot_mention`), and the context of replies and forwards
(`message_context.py`). These are pure functions of the message and the bot's id and username.
What a message says as text, attachments noted, is `contents.py`'s.
"""

from __future__ import annotations

from dataclasses import dataclass

from nanobot_lambda.adapters.telegram.addressing import COMMAND, GROUP_CHAT_TYPES
from nanobot_lambda.adapters.telegram.contents import message_text, too_long
from nanobot_lambda.adapters.telegram.models import Message, Update
from nanobot_lambda.adapters.telegram.places import (
    Ignored,
    Place,
    RefusedPress,
    place_of,
    session_key_for,
)
from nanobot_lambda.adapters.telegram.presses import press_text
from nanobot_lambda.adapters.telegram.reactions_and_edits import edit_of, reaction_of
from nanobot_lambda.core.allowlist import AllowList
from nanobot_lambda.core.reactions_and_edits import Reaction, edit_turn_text


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
    # (core/reactions_and_edits.py: `edit_turn_text`), never as a command.
    edited: bool = False

    @property
    def command(self) -> str | None:
        """`new` for "/new", "/new@my_bot" or "/NEW extra words"; None for other text."""
        match = COMMAND.match(self.text)
        return match.group(1).lower() if match else None

    @property
    def session_key(self) -> str:
        """One conversation: a chat, or one topic of a forum chat. Also the SQS message group."""
        return session_key_for(self.chat_id, self.thread_id)


@dataclass(frozen=True)
class Accepted:
    message: InboundMessage


@dataclass(frozen=True)
class Rejected:
    """An allowed-kind message from a sender not on the allow-list."""

    sender_id: int
    chat_id: int


@dataclass(frozen=True)
class Reacted:
    """A reaction from a heard person: recorded by the webhook, no turn
    (core/reactions_and_edits.py)."""

    reaction: Reaction


Decision = Accepted | Reacted | Ignored | Rejected


def to_inbound(update: Update) -> InboundMessage | Ignored:
    """The message the bot should answer in this update, or why there is none."""
    place = place_of(update)
    if isinstance(place, Ignored):
        return place
    if place.query is not None:
        choice = press_text(place, place.query)
        if isinstance(choice, RefusedPress):
            return choice
        return _inbound(update.update_id, place, choice, callback_query_id=place.query.id)
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
    better (core/reactions_and_edits.py): the message not answered yet takes the edit in its own
    turn, and the text saved before says what changed."""
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

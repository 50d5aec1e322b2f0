"""Reactions and edits: what people do to messages already sent, recorded by the webhook.

A reaction (Telegram's `message_reaction`) starts no model call: the webhook records it in the
sessions table (`adapters/aws/reactions_and_edits.py`), one item per message and person holding the
emojis they show on it now (an emptied reaction is kept as none), and answers. It belongs to
the exchange whose answer it is on: Telegram numbers a chat's messages in order, so the
message reacted to answers the person's latest message before it (`exchange_of`); a reaction
on the person's own message is no feedback on an answer. `/usage` shows the chat's tally
(`feedback_line`) of the reactions to the bot's own messages only (`reactions_to_answers`): a
turn records the ids of the messages it sent (with its save, `answer_writes`, or as the run
ends, `record_answers`: functions/agent_turn/turn.py), since Telegram's
reaction does not say whose message it is on, and a reaction to a person's message, their own
or another's, is not counted there. The session tools can show each exchange's.

An edit (`edited_message`) is queued like a message, and recorded first (`Edit`, the text as
it is now), so that agent_turn can tell:
- the message is not answered yet (its turn has not started: it is still in the chat's FIFO
  order ahead of the edit): that turn takes the edited text instead (`latest_edit`), and the
  edit's own turn then finds it answered with that text and does nothing;
- the message was answered: the edit becomes a short turn that says what changed
  (`edit_turn_text`), with the text as the last turn that answered it saw it and the text now.

agent_turn's side: a message's turn looks up its latest edit (`latest_edit`) before it builds
its request and marks the user message it saves with that edit's time (`EDIT_DATE_FIELD`); an
edit's own turn marks the user message it saves with the edit's time and text (`EDIT_TEXT_FIELD`:
its content is the short turn, not the message). An edit's turn finds what the last turn that
answered the message saw (`answered_message`: the message's own turn, or a later edit's) and
asks `edit_turn` whether anything is left to say: nothing when that turn saw this edit (or a
later one) or the same text (the same edit sent again under a new update id, an edit of the
formatting only); else it says what changed since.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from nanobot_lambda.core import texts
from nanobot_lambda.core.stored_writes import StoredWrite
from nanobot_lambda.core.texts import quoted

EDIT_QUOTE_MAX_CHARS = 1000  # each side of "what changed", in the short turn
# On a saved user message: the `edit_date` of the edit its turn took (the message was edited
# before its turn ran, or the turn is the edit's own). An edit's own turn saves its user message
# marked `EDITED_FIELD`, with the edit's text in `EDIT_TEXT_FIELD` (saved before that field
# existed, an edit's turn has none: what it saw is not known).
EDIT_DATE_FIELD = "edit_date"
EDITED_FIELD = "edited"
EDIT_TEXT_FIELD = "edit_text"


@dataclass(frozen=True)
class Reaction:
    chat_id: int
    message_id: int
    person_id: int
    emojis: tuple[str, ...]  # as shown now; () when the person took their reaction off
    date: int  # Telegram's, unix seconds


@dataclass(frozen=True)
class Edit:
    session_key: str
    chat_id: int
    message_id: int
    update_id: int
    edit_date: int  # Telegram's, unix seconds: a later edit replaces an earlier one
    text: str


def exchange_of(message_id: int, user_message_ids: Sequence[int]) -> int | None:
    """The user message whose answer `message_id` is: the latest user message before it;
    None for a user message itself, or a message before any of them."""
    if message_id in user_message_ids:
        return None
    earlier = [each for each in user_message_ids if each < message_id]
    return max(earlier) if earlier else None


def tally(reactions: Iterable[Reaction]) -> Counter[str]:
    """How many messages show each emoji (a person's reaction counted once per message)."""
    return Counter(emoji for reaction in reactions for emoji in set(reaction.emojis))


def reactions_to_answers(book: FeedbackBook, chat_id: int) -> list[Reaction]:
    """The chat's reactions to messages the bot sent (one Query, and one look-up of the
    messages reacted to)."""
    reactions = book.reactions(chat_id)
    if not reactions:
        return []
    answers = book.answers_among(chat_id, {reaction.message_id for reaction in reactions})
    return [reaction for reaction in reactions if reaction.message_id in answers]


def feedback_line(reactions: Iterable[Reaction]) -> str:
    """One line for /usage: "Reactions: 👍 3 · 👎 1", or the text for none."""
    counts = tally(reactions)
    if not counts:
        return texts.load("feedback_none")
    shown = " · ".join(f"{emoji} {count}" for emoji, count in counts.most_common())
    return texts.render("feedback_line", reactions=shown)


def answered_unchanged(saved_text: str | None, edit: Edit) -> bool:
    """The last turn that answered the edited message saw its text as it is now (its own turn
    took the edit, or an earlier edit's turn saw the same text): the edit needs no turn."""
    return saved_text is not None and saved_text == edit.text


def edit_turn_text(before: str | None, edit: Edit) -> str:
    """The short turn an edit of an answered message becomes: what it said, what it says now
    (each quoted: no text ends the quotation). `before` None: the saved text is not known."""
    now = quoted(edit.text[:EDIT_QUOTE_MAX_CHARS])
    if before is None:
        return texts.render("message_edited_unknown", now=now)
    return texts.render("message_edited", before=quoted(before[:EDIT_QUOTE_MAX_CHARS]), now=now)


def answered_message(
    history: Sequence[Mapping[str, Any]], message_id: int
) -> Mapping[str, Any] | None:
    """The user message `message_id` as the last turn that answered it saved it: its own
    turn's, or a later edit's turn's (marked edited, with the text that turn saw); an edit's
    turn saved without that text is passed over. None when the history no longer holds it."""
    answered = [
        message
        for message in history
        if message.get("role") == "user"
        and message.get("message_id") == message_id
        and (not message.get(EDITED_FIELD) or isinstance(message.get(EDIT_TEXT_FIELD), str))
    ]
    return answered[-1] if answered else None


def text_seen(saved: Mapping[str, Any]) -> str | None:
    """The message's text as the turn that saved `saved` saw it: an edit's turn's, the edit's
    text; a message's turn's, its content."""
    seen = saved.get(EDIT_TEXT_FIELD if saved.get(EDITED_FIELD) else "content")
    return seen if isinstance(seen, str) else None


def edit_turn(saved: Mapping[str, Any] | None, edit: Edit) -> str | None:
    """What the short turn of `edit` says, given the message as the last turn that answered it
    saved it (`answered_message`); None when there is nothing to say: that turn saw this edit or
    a later one, or the same text."""
    if saved is None:
        return edit_turn_text(None, edit)
    took = saved.get(EDIT_DATE_FIELD)
    if isinstance(took, int) and took >= edit.edit_date:
        return None
    before = text_seen(saved)
    if answered_unchanged(before, edit):
        return None
    return edit_turn_text(before, edit)


class FeedbackBook(Protocol):
    """Reactions to messages and edits of messages, as the webhook records them."""

    def record_reaction(self, reaction: Reaction) -> None:
        """Keep the reaction as the message's latest from its person (replacing theirs)."""
        ...

    def reactions(self, chat_id: int) -> list[Reaction]:
        """The chat's reactions, oldest message first."""
        ...

    def record_answers(self, chat_id: int, message_ids: Sequence[int]) -> None:
        """Keep that the bot sent these messages to the chat (a reaction to one of them is one
        to an answer)."""
        ...

    def answer_writes(self, chat_id: int, message_ids: Sequence[int]) -> list[StoredWrite]:
        """The writes of `record_answers`, to be made with the transaction saving a turn."""
        ...

    def answers_among(self, chat_id: int, message_ids: Collection[int]) -> set[int]:
        """Those of `message_ids` that the bot sent to the chat."""
        ...

    def record_edit(self, edit: Edit) -> None:
        """Keep the message's latest text (an older edit never replaces a newer one)."""
        ...

    def latest_edit(self, session_key: str, message_id: int) -> Edit | None: ...

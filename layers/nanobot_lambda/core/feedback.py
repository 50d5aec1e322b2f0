"""Reactions and edits: what people do to messages already sent, recorded by the webhook.

A reaction (Telegram's `message_reaction`) starts no model call: the webhook records it in the
sessions table (`adapters/aws/feedback.py`), one item per message and person holding the
emojis they show on it now (an emptied reaction is kept as none), and answers. It belongs to
the exchange whose answer it is on: Telegram numbers a chat's messages in order, so the
message reacted to answers the person's latest message before it (`exchange_of`); a reaction
on the person's own message is no feedback on an answer. `/usage` shows the chat's tally
(`feedback_line`) and the session tools can show each exchange's.

An edit (`edited_message`) is queued like a message, and recorded first (`Edit`, the text as
it is now), so that agent_turn can tell:
- the message is not answered yet (its turn has not started: it is still in the chat's FIFO
  order ahead of the edit): that turn takes the edited text instead (`latest_edit`), and the
  edit's own turn then finds it answered with that text and does nothing;
- the message was answered: the edit becomes a short turn that says what changed
  (`edit_turn_text`), with the text as the session saved it and the text now.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from nanobot_lambda.core import texts
from nanobot_lambda.core.texts import quoted

EDIT_QUOTE_MAX_CHARS = 1000  # each side of "what changed", in the short turn


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


def feedback_line(reactions: Iterable[Reaction]) -> str:
    """One line for /usage: "Reactions: 👍 3 · 👎 1", or the text for none."""
    counts = tally(reactions)
    if not counts:
        return texts.load("feedback_none")
    shown = " · ".join(f"{emoji} {count}" for emoji, count in counts.most_common())
    return texts.render("feedback_line", reactions=shown)


def answered_unchanged(saved_text: str | None, edit: Edit) -> bool:
    """The edited message was answered with its text as it is now (its turn took the edit):
    the edit needs no turn of its own."""
    return saved_text is not None and saved_text == edit.text


def edit_turn_text(before: str | None, edit: Edit) -> str:
    """The short turn an edit of an answered message becomes: what it said, what it says now
    (each quoted: no text ends the quotation). `before` None: the saved text is not known."""
    now = quoted(edit.text[:EDIT_QUOTE_MAX_CHARS])
    if before is None:
        return texts.render("message_edited_unknown", now=now)
    return texts.render("message_edited", before=quoted(before[:EDIT_QUOTE_MAX_CHARS]), now=now)


class FeedbackBook(Protocol):
    """Reactions to messages and edits of messages, as the webhook records them."""

    def record_reaction(self, reaction: Reaction) -> None:
        """Keep the reaction as the message's latest from its person (replacing theirs)."""
        ...

    def reactions(self, chat_id: int) -> list[Reaction]:
        """The chat's reactions, oldest message first."""
        ...

    def record_edit(self, edit: Edit) -> None:
        """Keep the message's latest text (an older edit never replaces a newer one)."""
        ...

    def latest_edit(self, session_key: str, message_id: int) -> Edit | None: ...

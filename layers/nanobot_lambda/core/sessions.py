"""Conversation history: a session is a sequence of messages that can grow for years.

Each message (OpenAI format: role, content, tool_calls, tool_call_id, name) has a sequence
number; the session's header holds `next_seq`, the consolidation cursor `consolidated_upto`
(messages below it have been summarised into memory) and `recent_turns`, the ids of the latest
turns saved (see core/journal.py). Appending a turn is one conditional write on `next_seq`, so two
writers can never interleave or overwrite messages. The model is given only unconsolidated
messages, at most `limit` of them, starting at a user message so that a tool call is never
separated from its results. (`adapters/aws/sessions.py` keeps them in DynamoDB.)

`noticed_upto` is how far the chat was told its conversation was summarised (the compaction
notice, entry/agent_turn/turn.py): an automatic consolidation moves the cursor and leaves it
behind (a notice is due), the next answered message turn says so and its save brings it up to
the cursor; /compact and /new, which say so themselves, move both. A session that never had it
(None) has nothing to announce.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from nanobot_lambda.core.errors import StorageConflict
from nanobot_lambda.core.journal import TurnProgress
from nanobot_lambda.core.stored_writes import StoredWrite

Message = dict[str, Any]
RECENT_TURNS = 20  # turn ids a session remembers as saved


class SessionConflict(StorageConflict):
    """Another writer changed the session since it was loaded."""


@dataclass(frozen=True)
class ChatPreferences:
    """What the chat chose with /model and /think (core/model_choice.py); None: the default."""

    model_preset: str | None = None
    thinking: str | None = None


@dataclass
class SessionHistory:
    key: str
    messages: list[Message] = field(default_factory=list)
    next_seq: int = 0
    consolidated_upto: int = 0
    recent_turns: tuple[str, ...] = ()
    open_turns: dict[str, TurnProgress] = field(default_factory=dict)  # by turn id
    preferences: ChatPreferences = field(default_factory=ChatPreferences)
    noticed_upto: int | None = None  # None: as far as the cursor (nothing to announce)

    @property
    def unconsolidated(self) -> int:
        return self.next_seq - self.consolidated_upto

    @property
    def summarised_unnoticed(self) -> bool:
        """Consolidation summarised messages the chat was not told about yet."""
        return self.noticed_upto is not None and self.noticed_upto < self.consolidated_upto


def align_to_user_turn(messages: list[Message]) -> list[Message]:
    """Drop leading messages until a user message, so a window never starts mid-turn.

    A window cut between an assistant tool call and its tool results would be rejected by
    providers (orphan tool results); starting at a user message guarantees it cannot happen.
    """
    for index, message in enumerate(messages):
        if message.get("role") == "user":
            return messages[index:]
    return []


class SessionStore(Protocol):
    """Conversations, one message at a time (see the module's docstring)."""

    def load(self, key: str, limit: int) -> SessionHistory:
        """The header, the unconsolidated window (at most `limit` messages, starting at a user
        message) and the session's unfinished turns, in one read."""
        ...

    def append(
        self,
        history: SessionHistory,
        messages: list[Message],
        *,
        turn_id: str | None = None,
        also: Sequence[StoredWrite] = (),
    ) -> None:
        """Save `messages` after the history in one transaction (per 99 messages); `turn_id`
        joins `recent_turns` and the `also` writes are made with the last one. Raises
        SessionConflict only when another writer changed the session since it was loaded
        (reload the header and save again); a StorageConflict naming the store when one of
        the `also` writes was refused (a reload cannot help); a StorageError for anything else
        (a message over the store's item limit, the store busy after its own retries), naming
        the cause and never a message's text. A failed transaction keeps nothing of itself."""
        ...

    def load_range(self, key: str, start: int, end: int) -> list[tuple[int, Message]]:
        """Messages with start <= seq < end, oldest first."""
        ...

    def advance_cursor(self, key: str, expected: int, new: int, *, noticed: bool = False) -> bool:
        """Move `consolidated_upto` from `expected` to `new`; False if it had moved already.
        `noticed`: the caller tells the chat itself (/compact, /new): `noticed_upto` moves too;
        otherwise it stays where it was (at `expected` if it had none), so a notice is due."""
        ...

    def set_preferences(self, key: str, preferences: ChatPreferences) -> None:
        """Keep the chat's /model and /think choices with the session (loaded with it)."""
        ...

"""Conversation history: a session is a sequence of messages that can grow for years.

Each message (OpenAI format: role, content, tool_calls, tool_call_id, name) has a sequence
number; the session's header holds `next_seq`, the consolidation cursor `consolidated_upto`
(messages below it have been summarised into memory) and `recent_turns`, the ids of the latest
turns saved (see core/journal.py). Appending a turn is one conditional write on `next_seq`, so two
writers can never interleave or overwrite messages. The model is given only unconsolidated
messages, at most `limit` of them, starting at a user message so that a tool call is never
separated from its results. (`adapters/aws/sessions.py` keeps them in DynamoDB.)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from nanobot_lambda.core.errors import StorageConflict
from nanobot_lambda.core.journal import TurnProgress

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

    @property
    def unconsolidated(self) -> int:
        return self.next_seq - self.consolidated_upto


def align_to_user_turn(messages: list[Message]) -> list[Message]:
    """Drop leading messages until a user message, so a window never starts mid-turn.

    A window cut between an assistant tool call and its tool results would be rejected by
    providers (orphan tool results); starting at a user message guarantees it cannot happen.
    """
    for index, message in enumerate(messages):
        if message.get("role") == "user":
            return messages[index:]
    return []

"""Conversation history: a session is a sequence of messages that can grow for years.

Each message (OpenAI format: role, content, tool_calls, tool_call_id, name) has a sequence
number; the session's header holds `next_seq`, the consolidation cursor `consolidated_upto`
(messages below it have been summarised into memory), `recent_turns`, the ids of the latest
turns saved (see core/journal.py), and `turn_log`, what each of them used (`TurnRecord`: its
models, tokens, cost, the tools it called, and why it ended unanswered, if it did; the console's
Activity), written with the turn's save and as bounded. Appending a turn is one conditional
write on `next_seq`, so two writers can never interleave or overwrite messages. The model is
given only unconsolidated messages, at most `limit` of them, starting at a user message so that
a tool call is never separated from its results. (`adapters/aws/sessions.py` keeps them in
DynamoDB.)

`noticed_upto` is how far the chat was told its conversation was summarised (the compaction
notice, functions/agent_turn/delivery.py): an automatic consolidation moves the cursor and leaves it
behind (a notice is due), the next answered message turn says so and its save brings it up to
the cursor; /compact and /new, which say so themselves, move both. A session that never had it
(None) has nothing to announce. `noticed_at` is when the notice was last sent (None: never),
saved with it: a notice due sooner than COMPACTION_NOTICE_INTERVAL_HOURS after it waits.

A store keeps each message as one item, and DynamoDB's items stop at 400 KB: a message over
`SAVED_MESSAGE_MAX_BYTES` is saved as a shortened copy (`within_item_limit`), its longest
strings cut in the middle with a note, so that no turn fails forever for its own size (a
`write_file` call with hundreds of KB in its arguments). The model was sent the whole message in
its turn; later turns see the copy.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any, Protocol

from nanobot_lambda.core.errors import StorageConflict
from nanobot_lambda.core.journal import TurnProgress
from nanobot_lambda.core.shorten import keep_head_and_tail
from nanobot_lambda.core.stored_writes import StoredWrite

Message = dict[str, Any]
RECENT_TURNS = 20  # turn ids a session remembers as saved
# A saved message's JSON in UTF-8 at most: DynamoDB's item limit, 400 KB (counted here as
# 400,000 bytes: moto, the local stack's DynamoDB, stops at 405,000), less room for the item's
# keys and date (under 200 bytes).
SAVED_MESSAGE_MAX_BYTES = 399_000
# Strings never cut to fit: they name things (a role, a tool, a call's id), they are short.
_NAMES = frozenset({"role", "name", "id", "type", "tool_call_id", "ts"})


def session_key_for(chat_id: int, thread_id: int | None = None) -> str:
    """The session (and SQS message group) of a chat, or of one topic of a forum chat."""
    key = f"telegram:{chat_id}"
    return key if thread_id is None else f"{key}:{thread_id}"


@dataclass(frozen=True)
class TurnRecord:
    """What one turn used (this invocation's part of a turn continued in several), never its
    text: the models that answered, calls, tokens, cost (None: no price known), the tools it
    called, and `error` when it ended unanswered (`model_error`)."""

    at: str  # ISO 8601, when it was saved
    turn_id: str = ""
    models: tuple[str, ...] = ()
    model_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: Decimal | None = None
    tools: tuple[str, ...] = ()
    error: str | None = None

    def to_json(self) -> str:
        shown = asdict(self)
        shown["cost_usd"] = None if self.cost_usd is None else str(self.cost_usd)
        return json.dumps(shown, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> TurnRecord | None:
        """The record, or None if it is not one (written by a later version, damaged)."""
        try:
            data = json.loads(text)
            return cls(
                at=str(data["at"]),
                turn_id=str(data.get("turn_id", "")),
                models=tuple(str(name) for name in data.get("models", ())),
                model_calls=int(data.get("model_calls", 0)),
                prompt_tokens=int(data.get("prompt_tokens", 0)),
                completion_tokens=int(data.get("completion_tokens", 0)),
                cost_usd=None if data.get("cost_usd") is None else Decimal(data["cost_usd"]),
                tools=tuple(str(name) for name in data.get("tools", ())),
                error=None if data.get("error") is None else str(data["error"]),
            )
        except (ValueError, TypeError, KeyError, ArithmeticError):
            return None


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
    turn_log: tuple[TurnRecord, ...] = ()  # the latest turns' records, oldest first
    open_turns: dict[str, TurnProgress] = field(default_factory=dict)  # by turn id
    preferences: ChatPreferences = field(default_factory=ChatPreferences)
    noticed_upto: int | None = None  # None: as far as the cursor (nothing to announce)
    noticed_at: datetime | None = None  # when the chat was last told (None: never)

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


def within_item_limit(message: Message, max_bytes: int = SAVED_MESSAGE_MAX_BYTES) -> Message:
    """`message` itself when its JSON fits in `max_bytes`; else a copy whose strings over the
    longest length that fits are cut in the middle, with a note of how much was cut. A tool
    call's `arguments` are cut inside their JSON, so they stay JSON for the providers that
    parse them; names (role, tool, ids) are never cut."""
    if _json_bytes(message) <= max_bytes:
        return message
    shortened: Message = _cut_to(message, _longest_fitting(message, _json_fits(max_bytes)))
    return shortened


def cut_to_fit(messages: list[Message], fits: Callable[[list[Message]], bool]) -> list[Message]:
    """`messages` themselves when they `fit`; else copies cut as `within_item_limit` cuts, to
    the longest length of string with which they fit together. Raises ValueError when they do
    not fit with every string cut (their names alone are too many)."""
    if fits(messages):
        return messages
    shortened: list[Message] = _cut_to(messages, _longest_fitting(messages, fits))
    if not fits(shortened):
        raise ValueError("the messages do not fit even with every string cut")
    return shortened


def _json_fits(max_bytes: int) -> Callable[[Any], bool]:
    return lambda value: _json_bytes(value) <= max_bytes


def _longest_fitting(value: Any, fits: Callable[[Any], bool]) -> int:
    """The longest length the strings of `value` may keep for it to fit (0 if none does),
    found by halving the range."""
    fitting, over = 0, _longest_string(value)
    while over - fitting > 1:
        middle = (fitting + over) // 2
        if fits(_cut_to(value, middle)):
            fitting = middle
        else:
            over = middle
    return fitting


def _json_bytes(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False).encode())


def _longest_string(value: Any) -> int:
    if isinstance(value, str):
        return max(len(value), _longest_string(_arguments(value)) if value[:1] == "{" else 0)
    if isinstance(value, dict):
        return max((_longest_string(item) for item in value.values()), default=0)
    if isinstance(value, list):
        return max((_longest_string(item) for item in value), default=0)
    return 0


def _cut_to(value: Any, max_chars: int, key: str = "") -> Any:
    """`value` with every string over `max_chars` cut (a tool call's arguments inside their
    JSON), but for names."""
    if isinstance(value, dict):
        return {name: _cut_to(item, max_chars, name) for name, item in value.items()}
    if isinstance(value, list):
        return [_cut_to(item, max_chars) for item in value]
    if not isinstance(value, str) or key in _NAMES or key.endswith("_id"):
        return value
    if key == "arguments":
        parsed = _arguments(value)
        if parsed is not None:
            return json.dumps(_cut_to(parsed, max_chars), ensure_ascii=False)
    return keep_head_and_tail(value, max_chars, _not_saved, tail_share=0.25)


def _arguments(text: str) -> Any:
    """A tool call's arguments as JSON, or None when they are not JSON."""
    try:
        return json.loads(text)
    except ValueError:
        return None


def _not_saved(cut: int) -> str:
    return f"\n[… {cut} chars not saved …]\n"


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
        record: TurnRecord | None = None,
    ) -> None:
        """Save `messages` after the history in one transaction (per 99 messages); `turn_id`
        joins `recent_turns`, `record` the `turn_log` (each keeping the last `RECENT_TURNS`),
        and the `also` writes are made with the last one; the history's
        `noticed_upto` and `noticed_at`, where it has them, are written to the header. Raises
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

"""The turn journal: a turn survives a re-delivery, a crash and Lambda's time limit, never sends
the same message twice, and never loses its answer when a run of it says something else.

Every turn has a stable id taken from its job (the Telegram update, the cron firing, the
background task). While it runs, its progress (`TurnProgress`) is recorded:
- `messages`: the assistant and tool messages of the turn so far. A step that calls tools is
  recorded *before* its progress text is shown and its tools run (write-ahead), and again as
  each of its calls answers (its results kept in the order of its calls, whichever came
  first); a run that finds a step with calls that have no result yet runs those calls only,
  it does not ask the model for that step again (a step's calls can so span invocations:
  core/agent.py);
- `sends`: how many messages the turn had sent when those messages were recorded;
- `sent`: what each message the turn sent was (`Shown`: the kind and a digest of its text,
  media and buttons — its identity — and its text), by its number in the turn, each recorded
  with a conditional write right after the channel accepted it (its last part);
- `parts`: for a message longer than the channel's limit, which goes out as several messages,
  each part accepted so far, recorded the same way before the next part is sent, and the
  message's text (`partial`), recorded with its first part;
- `aside`: messages an earlier run showed that a later run did not say again (see below);
- `ended`: the turn ended without an answer (every model attempt failed, or it ran out of
  continuations): the text it ended with (in `texts/`) and that message's number (`ended_at`);
- `context`: the runtime-context block the turn's request was sent with, so that a continued
  turn sends the very same request (see core/context.py);
- `answered`: the turn's answer was delivered and only its save failed (functions/agent_turn/
  saving.py): `messages` are then the turn's messages as its session saves them, ending with
  the answer, and a later run saves them; it neither asks the model nor sends anything.
- `pending`: a call of the last step waits for a person's approval (core/approvals.py): the
  turn asked and ended; the press (or the deadline) resumes it, and the decision is recorded
  here before the call runs, so it runs at most once;
- `untrusted`: content from outside (a fetched page, a document, an MCP result, a hook's
  payload) entered the turn, so a continued or resumed turn still asks before data leaves.

A re-delivered or continued turn resumes from there. Its messages are numbered again from
`sends`, and message n is skipped only if it **is** the message an earlier run sent as n (the
same identity): a model asked again may answer otherwise (temperature, another tool result),
so a different message n is sent, and what earlier runs showed from n on is set *aside*: it was
shown, it stays in the record, and the saved turn holds it where it was shown (`with_aside`,
below), so the session holds what the user saw. A message the earlier run had begun (some
parts accepted) is finished first if the new run says something else. The final answer is never
skipped for a progress text an earlier run sent under its number.

A turn that ends without an answer records `ended` before it says so: a later run of it (a crash
between the apology and the record that the turn is over) repeats that message if it was not
yet accepted, and never asks the model again after the user was told to send the message again.

The one message that can repeat is one whose process died between the channel's answer for it
and its record (the journal write's round trip, milliseconds), or whose connection dropped after
Telegram took it (the client sends it again rather than lose it). The final answer's last part
is recorded by the transaction that saves the turn, right after the channel's answer; a final
answer in several parts is recorded before its first part, so that a retry finishes that answer
instead of asking the model for a new one. When that transaction fails (the store refused or
was busy), the turn is recorded `answered` on its own before the job fails, so SQS's retry
saves the answer that was sent instead of asking for another: only a process that dies between
the answer and its save leaves the retry to ask the model again.

When the turn is saved, the same transaction closes its record and adds its id to the
session's `recent_turns`, so a job delivered again afterwards is recognised and skipped. The
session load returns the session's unfinished turns too: a turn that finishes in one
invocation costs no extra request. (`adapters/aws/journal.py` keeps the records in DynamoDB.)
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from nanobot_lambda.core.approvals import Pending
from nanobot_lambda.core.stored_writes import StoredWrite

Message = dict[str, Any]
SendKind = Literal["text", "file", "buttons_off", "edit"]


def identity(kind: SendKind, text: str, *extra: str) -> str:
    """The identity of a message: the same kind with the same text (a file's: its name and a
    digest of its bytes; a message's buttons in `extra`) is the same message."""
    packed = json.dumps([kind, text, *extra], ensure_ascii=False)
    return hashlib.sha256(packed.encode()).hexdigest()[:24]


@dataclass(frozen=True)
class Shown:
    """A message the turn sent: its identity, and its text as the user saw it (for a file, its
    caption or name), kept so it can be set aside and saved if a later run says otherwise.
    `identity` is None for a record written before messages had identities: such a message is
    skipped by number, as it was then."""

    identity: str | None
    text: str = ""


@dataclass(frozen=True)
class Aside:
    """A message an earlier run showed and a later run did not say again: `at` is where in the
    turn's messages it was shown (before the message of that index)."""

    at: int
    text: str


@dataclass
class TurnProgress:
    """What a turn has done so far, as recorded."""

    turn_id: str
    messages: list[Message] = field(default_factory=list)
    iterations: int = 0
    sends: int = 0
    sent: dict[int, Shown] = field(default_factory=dict)  # by the message's number
    parts: set[tuple[int, int]] = field(default_factory=set)  # (message, part) accepted
    partial: tuple[int, str] | None = None  # (message, text) of the message sent in parts
    aside: list[Aside] = field(default_factory=list)
    ended: str | None = None  # the text (its name in texts/) the turn ended with, unanswered
    ended_at: int = 0  # that text's number among the turn's messages
    continuations: int = 0
    context: str | None = None  # the runtime-context block the request was sent with
    answered: bool = False  # delivered; only its save is left (its messages are as saved)
    pending: Pending | None = None  # a call waiting for a person's approval
    untrusted: bool = False  # content from outside entered the turn (core/approvals.py)
    done: bool = False
    recorded: bool = False  # an item exists, so finishing the turn deletes it

    @property
    def resumed(self) -> bool:
        return self.recorded and (
            self.iterations > 0
            or bool(self.sent)
            or bool(self.parts)
            or self.ended is not None
            or self.answered
        )


def settled_length(messages: Sequence[Message]) -> int:
    """How many of a turn's messages are settled: all of them, but for a last step whose tool
    calls do not all have results yet (with the results it has)."""
    step = open_step(messages)
    return len(messages) if step is None else step


def open_step(messages: Sequence[Message]) -> int | None:
    """Where the turn's last step is (an assistant's tool calls, followed by tool results only)
    when it has fewer results than calls: recorded before its tools ran, or as some of them
    answered. None when every call of it has its result, or the turn ends otherwise."""
    results = 0
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.get("role") == "tool":
            results += 1
            continue
        calls = message.get("tool_calls") if message.get("role") == "assistant" else None
        return index if calls and results < len(calls) else None
    return None


def with_aside(messages: Sequence[Message], aside: Sequence[Aside]) -> list[Message]:
    """The turn's messages with what earlier runs showed and a later run did not say again, each
    where it was shown, as an assistant message (what the user saw, so the session holds it)."""
    merged = list(messages)
    # From the last place to the first, so that each index still means what it meant; of
    # several set aside at one place, the latest first, so that they end up in order.
    for _, entry in sorted(enumerate(aside), key=lambda pair: (pair[1].at, pair[0]), reverse=True):
        at = min(max(entry.at, 0), len(merged))
        while at < len(merged) and merged[at].get("role") == "tool":
            at += 1  # never between tool calls and their results (providers refuse that)
        merged.insert(at, {"role": "assistant", "content": entry.text})
    return merged


class HoldsOpenTurns(Protocol):
    """What `progress_in` reads of a session load (core/sessions.py's `SessionHistory`; named
    by its shape so that this module, which the sessions import, does not import them)."""

    @property
    def open_turns(self) -> Mapping[str, TurnProgress]: ...


def progress_in(history: HoldsOpenTurns, turn_id: str) -> TurnProgress:
    """The turn's record among the unfinished turns the session load returned (or a new one)."""
    return history.open_turns.get(turn_id) or TurnProgress(turn_id)


class TurnJournal(Protocol):
    """Each unfinished turn's progress (see the module's docstring)."""

    def get(self, session_key: str, turn_id: str) -> TurnProgress:
        """The turn's record, for turns whose session load does not return it."""
        ...

    def checkpoint(self, session_key: str, progress: TurnProgress) -> None:
        """Record the turn's messages so far, with the sends recorded so far (and whether it
        was `answered`)."""
        ...

    def record_send(
        self, session_key: str, progress: TurnProgress, number: int, shown: Shown
    ) -> None:
        """Record that message `number`, `shown`, was sent in full."""
        ...

    def record_part(
        self, session_key: str, progress: TurnProgress, number: int, part: int, text: str
    ) -> None:
        """Record that `part` of message `number` was sent (with the first, the text)."""
        ...

    def set_aside(
        self, session_key: str, progress: TurnProgress, numbers: list[int], at: int
    ) -> None:
        """Messages `numbers` an earlier run sent are not this run's: keep them aside, shown
        before message `at` of the turn's messages (core/journal.py)."""
        ...

    def end(self, session_key: str, progress: TurnProgress, text: str, number: int) -> None:
        """Record that the turn ends unanswered, with the text named `text` as message
        `number`."""
        ...

    def finish(self, session_key: str, progress: TurnProgress) -> list[StoredWrite]:
        """The writes that close the turn's record, made with the transaction saving it."""
        ...

    def discard(self, session_key: str, progress: TurnProgress) -> None:
        """Forget an unfinished turn's record (the user was told it failed)."""
        ...

    def mark_done(self, session_key: str, progress: TurnProgress) -> None:
        """A turn that saves no session: record that it is done, replacing its progress."""
        ...

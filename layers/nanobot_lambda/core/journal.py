"""The turn journal: a turn survives a re-delivery, a crash and Lambda's time limit, and does
not send the same message twice.

Every turn has a stable id taken from its job (the Telegram update, the cron firing, the
background task). While it runs, its progress (`TurnProgress`) is recorded:
- `messages`: the assistant and tool messages of the iterations completed so far;
- `sends`: how many messages the turn had sent when those iterations were done;
- `sent`: the sequence numbers of all messages it has sent in full, each recorded with a
  conditional write right after the channel accepted it (its last part);
- `parts`: for a message longer than the channel's limit, which goes out as several messages,
  each part accepted so far, recorded the same way before the next part is sent, and the
  message's text (`partial`), recorded with its first part;
- `context`: the runtime-context block the turn's request was sent with, so that a continued
  turn sends the very same request (see core/context.py).
A re-delivered or continued turn resumes from there: completed iterations are not redone, a
message whose number is in `sent` is not sent again, and a message cut short resumes at its
first part not yet accepted, with the text its first parts came from. The one message that can
repeat is one whose process died between the channel's answer for it and its record (a few
milliseconds). The final answer's last part is recorded by the transaction that saves the
turn, right after the channel's answer; a final answer in several parts is checkpointed before
its first part, so that a retry finishes that answer instead of asking the model for a new one.

When the turn is saved, the same transaction closes its record and adds its id to the
session's `recent_turns`, so a job delivered again afterwards is recognised and skipped. The
session load returns the session's unfinished turns too: a turn that finishes in one
invocation costs no extra request. (`adapters/aws/journal.py` keeps the records in DynamoDB.)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nanobot_lambda.core.sessions import SessionHistory

Message = dict[str, Any]


@dataclass
class TurnProgress:
    """What a turn has done so far, as recorded."""

    turn_id: str
    messages: list[Message] = field(default_factory=list)
    iterations: int = 0
    sends: int = 0
    sent: set[int] = field(default_factory=set)
    parts: set[tuple[int, int]] = field(default_factory=set)  # (message, part) accepted
    partial: tuple[int, str] | None = None  # (message, text) of the message sent in parts
    continuations: int = 0
    context: str | None = None  # the runtime-context block the request was sent with
    done: bool = False
    recorded: bool = False  # an item exists, so finishing the turn deletes it

    @property
    def resumed(self) -> bool:
        return self.recorded and (self.iterations > 0 or bool(self.sent) or bool(self.parts))

    def text_of(self, message: int) -> str | None:
        """The recorded text of `message` if some of its parts were sent, else None."""
        if self.partial is not None and self.partial[0] == message:
            return self.partial[1]
        return None


def progress_in(history: SessionHistory, turn_id: str) -> TurnProgress:
    """The turn's record among the unfinished turns the session load returned (or a new one)."""
    return history.open_turns.get(turn_id) or TurnProgress(turn_id)

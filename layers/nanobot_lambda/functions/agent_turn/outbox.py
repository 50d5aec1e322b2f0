"""A turn's messages to the chat: each one the user saw is sent once across runs of the same
turn, and nothing a later run says is taken for something an earlier run sent.

Messages are numbered in the order the turn sends them (a run resumed from a record goes on from
the number recorded with it); a message longer than the channel's limit goes out as several
messages, its parts. Each message is recorded in the turn's journal, with its identity (the
kind and a digest of its text, media and buttons) and its text, as soon as the channel accepts
it (its last part), and each part before the next one is sent. On a later run, message n is
skipped only if the record of n is the same message; otherwise — a model asked again answered
differently — it is sent, and what earlier runs sent from n on is set aside (kept in the record
and saved with the turn where it was shown, see core/journal.py). A message an earlier run had
begun is finished first: with the text its first parts came from when this run says the same,
or before this run's own message when it says something else.

The last part of the final answer is recorded by the transaction that saves the turn
(`record=False` here), which costs nothing extra. A file (`send_file`) is one message, recorded
when the channel accepts it.

While a draft stream is attached (draft_stream.py), the next message can be shown as it is being
written (`draft`); drafts are ephemeral and not journaled, and each send settles the stream
first, so no draft of an earlier text arrives after the message.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Sequence
from typing import Protocol

from nanobot_lambda.core.errors import ChannelError
from nanobot_lambda.core.journal import Shown, TurnProgress, identity, settled_length
from nanobot_lambda.core.outgoing import Button, OutgoingFile
from nanobot_lambda.core.ports import Channel, TurnJournal

logger = logging.getLogger(__name__)


class Drafts(Protocol):
    """A run's draft stream, as the outbox uses it (draft_stream.DraftStream)."""

    def show(self, number: int, text: str) -> None: ...

    def settle(self) -> None: ...


def send_unjournaled(
    channel: Channel, chat_id: int, text: str, thread_id: int | None = None
) -> bool:
    """Send a message, unjournaled; False when the user blocked the bot (nothing to retry)."""
    try:
        channel.send_text(chat_id, text, thread_id=thread_id)
    except ChannelError as error:
        return _dropped_if_blocked(error, chat_id)
    return True


def _dropped_if_blocked(error: ChannelError, chat_id: int) -> bool:
    """False for a chat that blocked the bot (nothing to retry); any other error is raised."""
    if not error.blocked:
        raise error
    logger.warning("chat %s blocked the bot; message dropped", chat_id)
    return False


def file_shown(file: OutgoingFile) -> Shown:
    """A file as the outbox records it: its identity (name, kind, bytes, caption) and, as its
    text, its caption or a note of its name."""
    digest = hashlib.sha256(file.data).hexdigest()
    text = file.caption or f"[{file.kind} {file.name}]"
    return Shown(identity("file", file.name, file.kind, digest, file.caption or ""), text)


class JournaledOutbox:
    """The `Outbox` of one run of a turn."""

    def __init__(
        self, channel: Channel, journal: TurnJournal, journal_key: str, progress: TurnProgress
    ) -> None:
        self._channel = channel
        self._journal = journal
        self._key = journal_key
        self._progress = progress
        self.count = progress.sends  # messages sent up to the recorded point of the turn
        # Where in the turn's messages a message set aside now was shown: after the settled
        # ones (never between a step's tool calls and their results). turn_run.checkpoint moves it.
        self.boundary = settled_length(progress.messages)
        self._rendered: tuple[str, list[str]] = ("", [])
        self.drafts: Drafts | None = None  # attached while the run streams its replies
        # A step's independent tool calls may send from several threads at once, while the
        # loop records the step's results as they come (turn_run.checkpoint): each send and
        # each record holds this, so none sees another's numbering or record half done.
        self.lock = threading.RLock()
        # What this run sent, (chat, message id) as Telegram numbered it, not yet recorded as the
        # bot's (core/reactions_and_edits.py): with the turn's save (saving.py), the rest as the run
        # ends (turn.py), so that reactions to them are told apart.
        self.sent_ids: list[tuple[int, int]] = []

    def sent_by_chat(self, limit: int | None = None) -> dict[int, list[int]]:
        """The ids of the messages this run sent and has not recorded (the first `limit`), by
        chat."""
        by_chat: dict[int, list[int]] = {}
        for chat_id, message_id in self.sent_ids[:limit]:
            by_chat.setdefault(chat_id, []).append(message_id)
        return by_chat

    def sent_recorded(self, count: int) -> None:
        """The first `count` of `sent_ids` are recorded."""
        del self.sent_ids[:count]

    @property
    def drafting(self) -> bool:
        return self.drafts is not None

    def draft(self, text: str) -> None:
        """Show `text`, the next message as it is being written, as a draft."""
        if self.drafts is not None:
            self.drafts.show(self.count + 1, text)

    def parts(self, text: str) -> list[str]:
        """The messages `text` goes out as (rendered once for the checks and the send)."""
        if self._rendered[0] != text:
            self._rendered = (text, self._channel.message_parts(text))
        return self._rendered[1]

    def send_file(self, chat_id: int, file: OutgoingFile, thread_id: int | None = None) -> bool:
        """Send `file` unless an earlier run of this turn sent this very file as this message
        (a file is one message, recorded as soon as the channel accepts it); False if the chat
        blocked the bot."""
        with self.lock:
            if self.drafts is not None:
                self.drafts.settle()
            shown = file_shown(file)
            number = self._next(shown, chat_id, thread_id)
            if number is None:
                return True
            try:
                sent = self._channel.send_file(chat_id, file, thread_id=thread_id)
            except ChannelError as error:
                return _dropped_if_blocked(error, chat_id)
            self.sent_ids.append((chat_id, sent))
            self._journal.record_send(self._key, self._progress, number, shown)
            return True

    def take_buttons_off(self, chat_id: int, message_id: int) -> bool:
        """Remove the buttons of a message whose button the user pressed, once per turn (it
        counts as one of the turn's messages, so a retried turn does not do it again); False
        when they were gone already: another press of them came first."""
        with self.lock:
            shown = Shown(identity("buttons_off", str(message_id)))
            number = self._next(shown, chat_id, None)
            if number is None:
                return True
            if not self._channel.remove_buttons(chat_id, message_id):
                return False
            self._journal.record_send(self._key, self._progress, number, shown)
            return True

    def edit(self, chat_id: int, message_id: int, text: str) -> bool:
        """Replace the text of a message the bot sent (its buttons taken off), once per turn
        (it counts as one of the turn's messages, like `take_buttons_off`); False when the
        message is gone or reads so already."""
        with self.lock:
            if self.drafts is not None:
                self.drafts.settle()
            shown = Shown(identity("edit", f"{chat_id}/{message_id}", text))
            number = self._next(shown, chat_id, None)
            if number is None:
                return True
            if not self._channel.edit_text(chat_id, message_id, text):
                return False
            self._journal.record_send(self._key, self._progress, number, shown)
            return True

    def send(
        self,
        chat_id: int,
        text: str,
        thread_id: int | None = None,
        *,
        record: bool = True,
        buttons: Sequence[Button] = (),
        recorded_as: str | None = None,
    ) -> bool:
        """Send what an earlier run of this turn did not send of this message, `buttons` under
        its last part; False if the chat blocked the bot. `record=False`: the caller records
        the last part itself. `recorded_as`: the text the journal keeps instead of the message's
        (one holding a secret, which is to be shown and stored nowhere else); such a message
        must fit one message, as a part's record would keep its text."""
        with self.lock:
            if recorded_as is not None and len(self.parts(text)) > 1:
                raise ValueError("a message recorded as another text must fit one message")
            if self.drafts is not None:
                self.drafts.settle()
            progress = self._progress
            labels = [b if isinstance(b, str) else "\n".join(b) for b in buttons]
            shown = Shown(identity("text", text, *labels), recorded_as or text)
            number = self._next(shown, chat_id, thread_id)
            if number is None:
                return True
            parts = self.parts(text)
            for part, rendered in enumerate(parts, start=1):
                if (number, part) in progress.parts:
                    continue  # accepted in an earlier run of this same message
                under = buttons if part == len(parts) else ()
                try:
                    sent = self._channel.send_part(
                        chat_id, rendered, thread_id=thread_id, buttons=under
                    )
                except ChannelError as error:
                    return _dropped_if_blocked(error, chat_id)
                self.sent_ids.append((chat_id, sent))
                if part < len(parts):
                    self._journal.record_part(self._key, progress, number, part, text)
                elif record:
                    self._journal.record_send(self._key, progress, number, shown)
            return True

    def _next(self, shown: Shown, chat_id: int, thread_id: int | None) -> int | None:
        """Number the next message; None when an earlier run sent this very message under that
        number (skip it). Otherwise make room for it: finish a message an earlier run began
        there if it is another one, and set aside what earlier runs sent from there on."""
        self.count += 1
        number, progress = self.count, self._progress
        recorded = progress.sent.get(number)
        if recorded is not None and (recorded.identity in (None, shown.identity)):
            logger.info("message %d of the turn was sent by an earlier run: skipped", number)
            return None
        begun = progress.partial
        if recorded is None and begun is not None and begun[0] == number and begun[1] == shown.text:
            return number  # the same message, cut short: its remaining parts go now
        if begun is not None and begun[0] >= number and begun[0] not in progress.sent:
            self._finish_begun(*begun, chat_id, thread_id)
        superseded = sorted(n for n in progress.sent if n >= number)
        if superseded:
            logger.info("an earlier run sent other messages from message %d on: set aside", number)
            self._journal.set_aside(self._key, progress, superseded, self.boundary)
        return number

    def _finish_begun(self, number: int, text: str, chat_id: int, thread_id: int | None) -> None:
        """The rest of a message an earlier run began (the user is reading it), before this run
        says something else."""
        progress = self._progress
        parts = self.parts(text)
        for part, rendered in enumerate(parts, start=1):
            if (number, part) in progress.parts:
                continue
            try:
                sent = self._channel.send_part(chat_id, rendered, thread_id=thread_id)
            except ChannelError as error:
                _dropped_if_blocked(error, chat_id)
                return  # blocked: nobody to finish it for
            self.sent_ids.append((chat_id, sent))
            if part < len(parts):
                self._journal.record_part(self._key, progress, number, part, text)
        shown = Shown(identity("text", text), text)
        self._journal.record_send(self._key, progress, number, shown)

"""A turn's messages to the chat, each part sent at most once across runs of the same turn.

Messages are numbered in the order the turn sends them; a message longer than the channel's
limit goes out as several messages, its parts. Each part is recorded in the turn's journal as
soon as the channel accepts it, before the next one is sent: a message whose number is recorded
was delivered by an earlier run (before a crash or a continuation) and is skipped, and a message
cut short resumes at its first part not yet accepted, with the text its first parts came from.
The last part of the final answer is recorded by the transaction that saves the turn
(`record=False` here), which costs nothing extra. A file (`send_file`) is one message, recorded
when the channel accepts it.

While a draft stream is attached (drafts.py), the next message can be shown as it is being
written (`draft`); drafts are ephemeral and not journaled, and each send settles the stream
first, so no draft of an earlier text arrives after the message.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from nanobot_lambda.core.errors import ChannelError
from nanobot_lambda.core.journal import TurnProgress
from nanobot_lambda.core.outgoing import OutgoingFile
from nanobot_lambda.core.ports import Channel, TurnJournal

if TYPE_CHECKING:
    from nanobot_lambda.entry.agent_turn.drafts import DraftStream

logger = logging.getLogger(__name__)


def deliver(channel: Channel, chat_id: int, text: str, thread_id: int | None = None) -> bool:
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
        self._rendered: tuple[str, list[str]] = ("", [])
        self.drafts: DraftStream | None = None  # attached while the run streams its replies

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
        """Send `file` unless an earlier run of this turn did (a file is one message, recorded
        as soon as the channel accepts it); False if the chat blocked the bot."""
        if self.drafts is not None:
            self.drafts.settle()
        self.count += 1
        if self.count in self._progress.sent:
            logger.info("file %d of the turn was sent by an earlier run: skipped", self.count)
            return True
        try:
            self._channel.send_file(chat_id, file, thread_id=thread_id)
        except ChannelError as error:
            return _dropped_if_blocked(error, chat_id)
        self._journal.record_send(self._key, self._progress, self.count)
        return True

    def take_buttons_off(self, chat_id: int, message_id: int) -> bool:
        """Remove the buttons of a message whose button the user pressed, once per turn (it
        counts as one of the turn's messages, so a retried turn does not do it again); False
        when they were gone already: another press of them came first."""
        self.count += 1
        if self.count in self._progress.sent:
            return True
        if not self._channel.remove_buttons(chat_id, message_id):
            return False
        self._journal.record_send(self._key, self._progress, self.count)
        return True

    def send(
        self,
        chat_id: int,
        text: str,
        thread_id: int | None = None,
        *,
        record: bool = True,
        buttons: Sequence[str] = (),
    ) -> bool:
        """Send what an earlier run of this turn did not send of this message, `buttons` under
        its last part; False if the chat blocked the bot. `record=False`: the caller records
        the last part itself."""
        if self.drafts is not None:
            self.drafts.settle()
        self.count += 1
        number, progress = self.count, self._progress
        if number in progress.sent:
            logger.info("message %d of the turn was sent by an earlier run: skipped", number)
            return True
        # A message an earlier run began finishes with its own text, whatever was asked now.
        text = progress.text_of(number) or text
        parts = self.parts(text)
        for part, rendered in enumerate(parts, start=1):
            if (number, part) in progress.parts:
                continue
            under = buttons if part == len(parts) else ()
            try:
                self._channel.send_part(chat_id, rendered, thread_id=thread_id, buttons=under)
            except ChannelError as error:
                return _dropped_if_blocked(error, chat_id)
            if part < len(parts):
                self._journal.record_part(self._key, progress, number, part, text)
            elif record:
                self._journal.record_send(self._key, progress, number)
        return True

"""A turn's messages to Telegram, each sent at most once across runs of the same turn.

Messages are numbered in the order the turn sends them. A number already recorded in the turn's
journal was delivered by an earlier run (before a crash or a continuation) and is skipped; a new
one is sent, then recorded. The final answer is recorded by the transaction that saves the turn
(`record=False` here), which costs nothing extra.
"""

from __future__ import annotations

import logging

from nanobot_lambda.journal import TurnJournal, TurnProgress
from nanobot_lambda.telegram.client import TelegramBot, TelegramError

logger = logging.getLogger(__name__)

BLOCKED_STATUS = 403


def deliver(bot: TelegramBot, chat_id: int, text: str, thread_id: int | None = None) -> bool:
    """Send a message; False when the user blocked the bot (nothing to retry)."""
    try:
        bot.send_text(chat_id, text, thread_id=thread_id)
    except TelegramError as error:
        if error.status == BLOCKED_STATUS:
            logger.warning("chat %s blocked the bot; message dropped", chat_id)
            return False
        raise
    return True


class Outbox:
    def __init__(
        self, bot: TelegramBot, journal: TurnJournal, journal_key: str, progress: TurnProgress
    ) -> None:
        self._bot = bot
        self._journal = journal
        self._key = journal_key
        self._progress = progress
        self.count = progress.sends  # messages sent up to the recorded point of the turn

    def send(
        self, chat_id: int, text: str, thread_id: int | None = None, *, record: bool = True
    ) -> bool:
        """Send unless an earlier run of this turn sent this message; False if blocked."""
        self.count += 1
        if self.count in self._progress.sent:
            logger.info("message %d of the turn was sent by an earlier run: skipped", self.count)
            return True
        delivered = deliver(self._bot, chat_id, text, thread_id)
        if record:
            self._journal.record_send(self._key, self._progress, self.count)
        return delivered

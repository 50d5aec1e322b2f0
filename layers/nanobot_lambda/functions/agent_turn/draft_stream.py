"""Live replies: the answer shown in a private chat as the model writes it (message drafts).

A `DraftStream` belongs to one run of a turn. The agent loop hands it the text so far of each
model call; a worker thread shows the latest text as a draft at most every
`DRAFT_INTERVAL_SECONDS` (Telegram animates a draft into the next one with the same id), so
the model's stream is never held up by the Bot API. Drafts are ephemeral and not journaled:
what the user keeps is the message the outbox sends once the text is complete, exactly once as
before. The outbox settles the stream before it sends: no draft of an earlier text can arrive
after the message.

Each message of the turn (by its number in the outbox) and each of its parts past Telegram's
length limit has its own draft id, the same in every run of the turn, so a retried turn
replaces the drafts of the run before it.

Faults never reach the turn: a rate-limited draft delays the next one by what Telegram asks;
a chat that refuses drafts (a group, a Bot API without drafts) gets no more of them in this
container and keeps "typing…"; any other failure skips that one draft.
"""

from __future__ import annotations

import logging
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from nanobot_lambda.core.errors import ChannelError
from nanobot_lambda.core.ports import Channel
from nanobot_lambda.functions.agent_turn.turn_run import TurnRun

logger = logging.getLogger(__name__)

DRAFT_INTERVAL_SECONDS = 0.3  # Telegram sustains about 5 drafts a second per chat
RATE_LIMITED_DEFAULT_SECONDS = 1.0  # a rate limit that does not say how long to wait


def draft_id(turn_id: str, number: int, part: int) -> int:
    """A non-zero 31-bit draft id, the same for the same message part of the same turn."""
    return zlib.crc32(f"{turn_id}/{number}/{part}".encode()) & 0x7FFF_FFFF or 1


class DraftStream:
    def __init__(
        self,
        channel: Channel,
        chat_id: int,
        thread_id: int | None,
        turn_id: str,
        *,
        interval: float = DRAFT_INTERVAL_SECONDS,
        on_refused: Callable[[], None] | None = None,
    ) -> None:
        self._channel = channel
        self._chat_id = chat_id
        self._thread_id = thread_id
        self._turn_id = turn_id
        self._interval = interval
        self._on_refused = on_refused
        self._changed = threading.Condition()
        self._pending: tuple[int, str] | None = None  # (message number, text): the latest
        self._in_flight = False
        self._next_at = 0.0  # monotonic time before which no draft goes out
        self._last_shown: tuple[int, int, str] | None = None
        self._closed = False
        self.refused = False
        self.shown = 0  # drafts Telegram accepted
        self._worker: threading.Thread | None = None

    def show(self, number: int, text: str) -> None:
        """Show `text`, message `number` of the turn as it is being written (latest wins)."""
        with self._changed:
            if self._closed or self.refused:
                return
            self._pending = (number, text)
            if self._worker is None:
                self._worker = threading.Thread(target=self._work, name="drafts", daemon=True)
                self._worker.start()
            self._changed.notify_all()

    def settle(self) -> None:
        """Before a message is sent: drop the draft not yet shown, wait for one being sent."""
        with self._changed:
            self._pending = None
            while self._in_flight:
                self._changed.wait()

    def close(self) -> None:
        """Settle, and end the worker."""
        self.settle()
        with self._changed:
            self._closed = True
            self._changed.notify_all()
        if self._worker is not None:
            self._worker.join(timeout=5)

    def _work(self) -> None:
        while True:
            with self._changed:
                while not self._closed and (
                    self._pending is None or time.monotonic() < self._next_at
                ):
                    wait = None if self._pending is None else self._next_at - time.monotonic()
                    self._changed.wait(wait)
                if self._closed or self.refused:
                    return  # a text shown meanwhile is not sent to a chat that refused one
                assert self._pending is not None
                (number, text), self._pending = self._pending, None
                self._in_flight = True
            try:
                self._send(number, text)
            finally:
                with self._changed:
                    self._in_flight = False
                    self._changed.notify_all()

    def _send(self, number: int, text: str) -> None:
        parts = self._channel.draft_parts(text)
        if not parts:
            return
        part, html = len(parts), parts[-1]  # the part being written
        if self._last_shown == (number, part, html):
            return
        started = time.monotonic()
        self._next_at = started + self._interval
        try:
            self._channel.send_draft(
                self._chat_id,
                draft_id(self._turn_id, number, part),
                html,
                thread_id=self._thread_id,
            )
        except ChannelError as error:
            self._failed(error)
            return
        self._last_shown = (number, part, html)
        self.shown += 1

    def _failed(self, error: ChannelError) -> None:
        if error.rate_limited:
            wait = error.retry_after or RATE_LIMITED_DEFAULT_SECONDS
            logger.info("drafts rate-limited: the next one in %.1f s", wait)
            self._next_at = time.monotonic() + wait
        elif error.refused:
            logger.info("drafts refused in this chat (%s): typing only", error.status)
            self.refused = True
            if self._on_refused is not None:
                self._on_refused()
        else:
            logger.debug("a draft failed (%s): skipped", error.status)


class Drafts:
    """Draft streams for runs of turns: when STREAM_REPLIES is on, in private chats that have
    not refused drafts in this container."""

    def __init__(
        self, channel: Channel, enabled: bool, interval: float = DRAFT_INTERVAL_SECONDS
    ) -> None:
        self._channel = channel
        self._enabled = enabled
        self._interval = interval
        self._refused_chats: set[int] = set()

    @contextmanager
    def streaming(
        self, run: TurnRun, chat_id: int, thread_id: int | None, *, private: bool
    ) -> Iterator[None]:
        """While open, the run's outbox shows the next message as a draft as it is written."""
        if not (self._enabled and private and chat_id not in self._refused_chats):
            yield
            return
        stream = DraftStream(
            self._channel,
            chat_id,
            thread_id,
            run.progress.turn_id,
            interval=self._interval,
            on_refused=lambda: self._refused_chats.add(chat_id),
        )
        run.outbox.drafts = stream
        try:
            yield
        finally:
            stream.close()
            run.outbox.drafts = None

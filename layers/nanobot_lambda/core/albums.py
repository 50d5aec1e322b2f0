"""Albums: the parts of one media group answered in one turn.

Telegram sends each photo (or file) of an album as an update of its own, sharing a
`media_group_id`, usually within a second and possibly through concurrent webhook deliveries.
The webhook records every part (its update, whole) in the album's record before queueing it.
The turn of the first part the queue hands out is the album's *lead*: it waits until no part
has arrived for a moment (`AlbumWait`), claims the parts recorded by then and answers them
together. The parts' own jobs, queued behind it in the chat's order, find themselves claimed
and are skipped.

Nothing is lost and nothing is answered twice: a part recorded after the claim, or never
recorded (the webhook records on a best-effort basis), is not claimed, so its own job answers
it alone. The claim is written once: a retried lead turn answers the same parts, without
waiting again.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

logger = logging.getLogger(__name__)

Update = Mapping[str, Any]
"""A Telegram update as it arrived (the core does not look inside)."""


def album_key(session_key: str, media_group_id: str) -> str:
    """One album of one conversation (media group ids are unique per chat, not globally)."""
    return f"{session_key}:{media_group_id}"


@dataclass(frozen=True)
class AlbumRecord:
    """What the webhook recorded of an album, and which turn claimed which parts."""

    parts: Mapping[int, Update]  # update id -> the update
    last_part_ms: int  # when the latest part was recorded (epoch milliseconds)
    lead: int | None = None  # the update id whose turn answers the album, once claimed
    claimed: frozenset[int] = field(default_factory=frozenset)


@dataclass(frozen=True)
class AlbumWait:
    """How long a lead waits for the rest of its album: until no part has arrived for
    `quiet_ms`, and never more than `max_ms` in all (Telegram sends an album's parts within
    about a second; a slower part is answered on its own)."""

    quiet_ms: int = 1500
    max_ms: int = 8000
    poll_ms: int = 300


def _now_ms() -> int:
    return int(time.time() * 1000)


class Albums:
    """Decides, for a part's turn, which updates it answers."""

    def __init__(
        self,
        book: AlbumBook,
        wait: AlbumWait | None = None,
        *,
        now_ms: Callable[[], int] = _now_ms,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._book = book
        self._wait = wait or AlbumWait()
        self._now_ms = now_ms
        self._sleep = sleep

    def to_answer(self, key: str, update_id: int, update: Update) -> list[Update]:
        """The updates this part's turn answers, oldest first: the album's claimed parts for
        its lead, the part alone when it was not claimed (late or never recorded), and none
        when another part's turn answers it."""
        record = self._book.get(key)
        if record is None:
            return [update]
        if record.lead is None:
            record = self._claim(key, update_id, self._quiet(key, record))
        if record.lead == update_id:
            return _ordered({**record.parts, update_id: update}, record.claimed | {update_id})
        if update_id in record.claimed:
            return []
        return [update]

    def _quiet(self, key: str, record: AlbumRecord) -> AlbumRecord:
        """The album's record once no part has arrived for a while (or the wait is over)."""
        wait = self._wait
        started = self._now_ms()
        while True:
            now = self._now_ms()
            quiet_for = now - record.last_part_ms
            if quiet_for >= wait.quiet_ms or now - started >= wait.max_ms:
                return record
            self._sleep(min(wait.quiet_ms - quiet_for, wait.poll_ms) / 1000)
            record = self._book.get(key) or record

    def _claim(self, key: str, update_id: int, record: AlbumRecord) -> AlbumRecord:
        claimed = self._book.claim(key, update_id, frozenset(record.parts) | {update_id})
        logger.info(
            "album claimed",
            extra={"lead": claimed.lead, "parts": len(claimed.claimed), "update_id": update_id},
        )
        return claimed


def _ordered(updates: Mapping[int, Update], claimed: frozenset[int]) -> list[Update]:
    # Telegram numbers updates in the order it sends them, which is the album's order.
    return [updates[update_id] for update_id in sorted(claimed) if update_id in updates]


class AlbumBook(Protocol):
    """The parts of albums (media groups) as the webhook received them, and which turn
    claimed them (see the module's docstring). Keyed by `album_key`."""

    def add_part(self, key: str, update_id: int, update: Mapping[str, Any]) -> None:
        """Record a part (again, for a re-sent update: harmless) and when it arrived."""
        ...

    def get(self, key: str) -> AlbumRecord | None:
        """The album's record, read consistently; None if no part was recorded."""
        ...

    def claim(self, key: str, lead: int, parts: frozenset[int]) -> AlbumRecord:
        """Make `lead`'s turn the one answering `parts`, unless another turn claimed the
        album first; returns the record as claimed (by whichever turn did)."""
        ...

"""The local Bot API with Telegram's rate limits, for the load simulation (bench/load.py).

Telegram documents its limits loosely ("about 30 messages a second" overall, "one message a
second" per chat, "short bursts" allowed, "20 messages a minute" per group) and answers a send
over them with 429 and `parameters.retry_after` (whole seconds). Here each limit is a token
bucket (`Limit`: a rate and a burst); a send takes a token from the overall bucket and from its
chat's (private chats: the per-chat limit; groups, whose ids are negative: the per-group limit
too), or, when one of them is empty, takes none and is answered 429 with the seconds until
every one of them has a token again.

What counts as a send (`LIMITED_METHODS`): messages, files, message drafts and edits. Chat
actions ("typing…"), reactions, callback answers and reads are not limited (Telegram documents
no limit for them). Whether drafts count is not documented either: counted here, the cautious
reading (`count_drafts=False` leaves them free).

Every limited call is kept in `sends` (when, what, for which chat, and the answer's status), so
the simulation counts 429s and finds the first text each chat was shown. Everything else is
LocalBotApi's, unchanged.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from nanobot_lambda.operator.local.bot_api import FILE_METHODS, ApiError, LocalBotApi

TEXT_METHODS = frozenset({"sendMessage", "sendMessageDraft"})
LIMITED_METHODS = frozenset(
    {
        "sendMessage",
        "sendMessageDraft",
        "editMessageText",
        "editMessageReplyMarkup",
        "sendMediaGroup",
        *FILE_METHODS,
    }
)


@dataclass(frozen=True)
class Limit:
    per_second: float
    burst: float


@dataclass(frozen=True)
class TelegramLimits:
    overall: Limit = Limit(per_second=30, burst=30)
    per_chat: Limit = Limit(per_second=1, burst=3)
    per_group: Limit = Limit(per_second=20 / 60, burst=20)
    count_drafts: bool = True

    def describe(self) -> str:
        return (
            f"{self.overall.per_second:g}/s overall (burst {self.overall.burst:g}), "
            f"{self.per_chat.per_second:g}/s per chat (burst {self.per_chat.burst:g}), "
            f"{self.per_group.per_second * 60:g}/min per group (burst {self.per_group.burst:g}); "
            f"drafts {'counted' if self.count_drafts else 'free'}"
        )


@dataclass
class _Bucket:
    limit: Limit
    tokens: float
    at: float

    def refill(self, now: float) -> None:
        self.tokens = min(self.limit.burst, self.tokens + (now - self.at) * self.limit.per_second)
        self.at = now

    def wait(self) -> float:
        """Seconds until it holds a token (0: it holds one now)."""
        return max(0.0, (1 - self.tokens) / self.limit.per_second)


@dataclass(frozen=True)
class Send:
    at: float  # time.monotonic() when it arrived
    method: str
    chat_id: int
    status: int  # 200, 429, or the error Telegram gave otherwise
    retry_after: int | None = None


@dataclass
class RateLimiter:
    """The token buckets, shared by every request thread."""

    limits: TelegramLimits = field(default_factory=TelegramLimits)
    _overall: _Bucket | None = None
    _chats: dict[int, _Bucket] = field(default_factory=dict)
    _groups: dict[int, _Bucket] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def take(self, chat_id: int, now: float) -> int | None:
        """Take a token for a send to `chat_id`: None when taken, else the whole seconds to
        wait (Telegram's retry_after, at least 1)."""
        with self._lock:
            buckets = [self._bucket(None, self.limits.overall, now)]
            buckets.append(self._bucket(self._chats, self.limits.per_chat, now, chat_id))
            if chat_id < 0:
                buckets.append(self._bucket(self._groups, self.limits.per_group, now, chat_id))
            wait = max(bucket.wait() for bucket in buckets)
            if wait > 0:
                return max(1, math.ceil(wait))
            for bucket in buckets:
                bucket.tokens -= 1
            return None

    def _bucket(
        self, buckets: dict[int, _Bucket] | None, limit: Limit, now: float, chat_id: int = 0
    ) -> _Bucket:
        if buckets is None:
            if self._overall is None:
                self._overall = _Bucket(limit, limit.burst, now)
            bucket = self._overall
        else:
            bucket = buckets.setdefault(chat_id, _Bucket(limit, limit.burst, now))
        bucket.refill(now)
        return bucket


class RateLimitedBotApi(LocalBotApi):
    """LocalBotApi answering 429 with `retry_after` to sends over Telegram's limits."""

    def __init__(self, token: str, limits: TelegramLimits | None = None) -> None:
        super().__init__(token)
        self.limits = limits or TelegramLimits()
        self.limiter = RateLimiter(self.limits)
        self.sends: list[Send] = []
        self._sends_lock = threading.Lock()

    def _limited(self, method: str) -> bool:
        if method == "sendMessageDraft" and not self.limits.count_drafts:
            return False
        return method in LIMITED_METHODS

    def handle(self, method: str, params: dict[str, Any]) -> Any:
        if not self._limited(method) or params.get("chat_id") in (None, ""):
            return super().handle(method, params)
        chat_id, now = int(params["chat_id"]), time.monotonic()
        retry_after = self.limiter.take(chat_id, now)
        if retry_after is not None:
            self._keep(Send(now, method, chat_id, 429, retry_after))
            raise ApiError(429, f"Too Many Requests: retry after {retry_after}", retry_after)
        try:
            result = super().handle(method, params)
        except ApiError as error:
            self._keep(Send(now, method, chat_id, error.code))
            raise
        self._keep(Send(time.monotonic(), method, chat_id, 200))
        return result

    def forget_sends(self) -> None:
        with self._sends_lock:
            self.sends.clear()

    def _keep(self, send: Send) -> None:
        with self._sends_lock:
            self.sends.append(send)

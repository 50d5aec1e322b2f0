"""The seeded plan of a chaos soak run: what is said, and which faults strike where.

Every decision is drawn from its own `random.Random` keyed by the seed and what it is about
(`rng(seed, "crash", tag, attempt)`), never from one shared stream: the same seed gives the same
plan whatever order the run asks in, and a decision about one message does not shift when
another message's run takes a different path.

What the plan decides:
- the conversation: which chats, their messages (`m c3 k5`: chat 3, message 5), the waves in
  which they are posted (each wave: a few rounds of every chat's next message, chats shuffled),
  which posts Telegram delivers twice, and which answered jobs SQS delivers again;
- per run of a job (its SQS receive count): at most one crash of the worker, at the n-th call
  of one kind of boundary (a Telegram send, a draft, a DynamoDB write, an S3 PutObject), before
  the call is performed or after it is performed but before its answer; and Telegram's faults
  (429 with retry_after, 500, a connection dropped after the method was performed);
- the model's side (see chaos_model.py): per message, whether its model errors are none,
  transient (retried by the client) or lasting (the turn apologises); per answer, its shape.

Crashes are planned on the first two runs of a job only, the second rarely: with
`MaxReceiveCount` 3 the third run always gets its chance, so a dead letter is the product's
doing, never the plan's.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field
from typing import Literal

BoundaryKind = Literal["send", "draft", "dynamodb", "s3"]
When = Literal["before", "after"]
TelegramFault = Literal["429", "500", "drop"]
ModelErrors = Literal["none", "transient", "lasting"]

KINDS: tuple[BoundaryKind, ...] = ("send", "draft", "dynamodb", "s3")
WHENS: tuple[When, ...] = ("before", "after")
TELEGRAM_FAULTS: tuple[TelegramFault, ...] = ("429", "500", "drop")
FIRST_CHAT_ID = 500_000_001  # the soak's users: private chats, chat id = user id


def rng(seed: int, *about: object) -> random.Random:
    """A generator for one decision, the same for the same seed and subject."""
    digest = hashlib.sha256(repr((seed, *about)).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def tag_of(chat: int, message: int) -> str:
    """How the model's texts name a message: `c3k5` (chat 3, message 5)."""
    return f"c{chat}k{message}"


def user_text(chat: int, message: int) -> str:
    return f"m c{chat} k{message}"


@dataclass(frozen=True)
class Crash:
    kind: BoundaryKind
    nth: int  # the n-th call of that kind in this run (1-based)
    when: When


@dataclass(frozen=True)
class RunFaults:
    """What strikes one run of a job (one SQS receive of it)."""

    crash: Crash | None = None
    # n-th Telegram send or draft of the run -> the fault Telegram answers it with
    telegram: dict[tuple[BoundaryKind, int], TelegramFault] = field(default_factory=dict)


NO_FAULTS = RunFaults()


@dataclass(frozen=True)
class Message:
    chat: int  # 0-based chat number
    number: int  # 1-based, in the chat's order
    posted_twice: bool  # Telegram delivers the update twice
    redelivered: bool  # SQS delivers its answered job again (a new message, same body)

    @property
    def tag(self) -> str:
        return tag_of(self.chat, self.number)

    @property
    def text(self) -> str:
        return user_text(self.chat, self.number)


@dataclass(frozen=True)
class SoakPlan:
    seed: int
    chats: int
    messages: int
    crash_rate: float = 0.35

    def chat_id(self, chat: int) -> int:
        return FIRST_CHAT_ID + chat

    def message(self, chat: int, number: int) -> Message:
        r = rng(self.seed, "webhook", chat, number)
        return Message(chat, number, posted_twice=r.random() < 0.15, redelivered=r.random() < 0.1)

    def waves(self) -> list[list[Message]]:
        """The posts, wave by wave: each wave holds one to three rounds (every chat's next
        message per round), chats shuffled within a round; the queue is drained between waves."""
        r = rng(self.seed, "waves")
        waves: list[list[Message]] = []
        number = 1
        while number <= self.messages:
            rounds = min(r.randint(1, 3), self.messages - number + 1)
            wave: list[Message] = []
            for _ in range(rounds):
                order = list(range(self.chats))
                r.shuffle(order)
                wave += [self.message(chat, number) for chat in order]
                number += 1
            # Interleave the rounds' posts while keeping each chat's own order.
            waves.append(_interleaved(wave, r))
        return waves

    def run_faults(self, tag: str, attempt: int) -> RunFaults:
        """The faults of the `attempt`-th run of the job of message `tag` (its first delivery;
        a redelivered job is left alone: the product only has to recognise it)."""
        r = rng(self.seed, "run", tag, attempt)
        crash = None
        rate = {1: self.crash_rate, 2: self.crash_rate / 3}.get(attempt, 0.0)
        if r.random() < rate:
            kind = r.choices(KINDS, [4, 1, 4, 1])[0]
            most = {"send": 3, "draft": 2, "dynamodb": 6, "s3": 1}[kind]
            crash = Crash(kind, r.randint(1, most), r.choice(WHENS))
        telegram: dict[tuple[BoundaryKind, int], TelegramFault] = {}
        if attempt == 1:
            for nth in range(1, 4):
                if r.random() < 0.08:
                    telegram[("send", nth)] = r.choice(TELEGRAM_FAULTS)
            if r.random() < 0.1:
                telegram[("draft", 1)] = r.choice(TELEGRAM_FAULTS)
        return RunFaults(crash, telegram)

    def model_errors(self, tag: str) -> ModelErrors:
        roll = rng(self.seed, "model-errors", tag).random()
        return "lasting" if roll < 0.08 else "transient" if roll < 0.25 else "none"


def _interleaved(posts: list[Message], r: random.Random) -> list[Message]:
    """A random merge of the chats' posts that keeps every chat's messages in order."""
    by_chat: dict[int, list[Message]] = {}
    for post in posts:
        by_chat.setdefault(post.chat, []).append(post)
    merged: list[Message] = []
    while by_chat:
        chat = r.choice(sorted(by_chat))
        merged.append(by_chat[chat].pop(0))
        if not by_chat[chat]:
            del by_chat[chat]
    return merged

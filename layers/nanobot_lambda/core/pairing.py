"""Pairing: a stranger asks to talk to the bot and the owner approves, in the chat (`PAIRING=on`).

With pairing on, a private message from someone ALLOW_FROM does not list, and who was not
approved before, is answered by the webhook with a short one-time code and nothing else: the
message is not queued and no model sees it. The stranger gives the code to the owner, who sends
`/approve CODE` (or `/deny CODE`) in their private chat; `/people` lists who is approved and who
is waiting, `/people remove ID` takes an approval back. The webhook checks approved people
together with ALLOW_FROM; each gets a private scope (`core/scopes.py`) like anyone but the owner.

Codes are 6 digits, valid `CODE_MINUTES`. The limits are per person asking: one open code at a
time (asking again shows the same one, so at most one an hour), at most `CODES_PER_DAY` a day;
and everyone together gets at most `codes_per_hour` an hour (PAIRING_CODES_PER_HOUR), so a crowd
of strangers cannot bury the owner's list. A code is used once (approving or denying deletes
it), only the owner's private chat can use it, and it names the person who asked for it: a
guessed or replayed code gets nobody anything. (To admit many people at once, the owner makes an
invite link instead: `core/invites.py`; whom it admits are approved people too.)

Approved people (and groups, by an invite) live in the store, ALLOW_FROM being the seed: each
webhook or agent_turn container reads a person at most once a minute while they are approved
(`APPROVAL_CACHE_SECONDS`), keeping the `APPROVALS_CACHED` most recently heard (least recently
used forgotten first), so 10,000 people cost one read per person, container and minute.

The owner sees each person by the name and username they chose, which may be anything: both are
shown as plain text (`texts.literal`), never as a link, formatting or a mention.
"""

from __future__ import annotations

import logging
import secrets
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Protocol

from nanobot_lambda.core import texts

logger = logging.getLogger(__name__)

CODE_MINUTES = 60
CODES_PER_DAY = 3  # per person
CODES_PER_HOUR = 100  # for everyone together, by default (PAIRING_CODES_PER_HOUR)
DENIED_HOURS = 24  # a person refused may not ask again before
APPROVAL_CACHE_SECONDS = 60  # how long a webhook container trusts an approval it read
APPROVALS_CACHED = 10_000  # approvals a container remembers, the least recently used forgotten


@dataclass(frozen=True)
class Asker:
    """A person asking to talk to the bot, as Telegram names them (for the owner to judge)."""

    user_id: int
    name: str
    username: str | None = None

    def describe(self) -> str:
        """Who they are, for the owner's chat: their name and username as they chose them, shown
        literally (`texts.literal`), and the id Telegram gave them."""
        handle = f" ({texts.literal('@' + self.username)})" if self.username else ""
        return f"{texts.literal(self.name)}{handle}, id {self.user_id}"


@dataclass(frozen=True)
class PairingCode:
    code: str
    asker: Asker
    expires: datetime


@dataclass(frozen=True)
class AskRecord:
    """What a person asked for so far: their open code (if any) and the codes of the day."""

    code: str | None
    expires: datetime
    day: str
    count: int
    denied_until: datetime | None = None


@dataclass(frozen=True)
class Person:
    asker: Asker
    approved_at: datetime


def new_code() -> str:
    return f"{secrets.randbelow(1_000_000):06d}"


def normal_code(text: str) -> str | None:
    """A code as the owner may type it ("123 456", "123-456"): its six digits, or None."""
    digits = "".join(char for char in text if char not in " -")
    return digits if len(digits) == 6 and digits.isascii() and digits.isdigit() else None


class Pairing:
    def __init__(
        self,
        store: PairingStore,
        *,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        codes: Callable[[], str] = new_code,
        codes_per_hour: int = CODES_PER_HOUR,
    ) -> None:
        self._store = store
        self._clock = clock
        self._codes = codes
        self._codes_per_hour = codes_per_hour
        # approved person (or group) -> when it was read; least recently heard first
        self._approved: OrderedDict[int, datetime] = OrderedDict()

    # -- the webhook ---------------------------------------------------------------------

    def is_approved(self, user_id: int) -> bool:
        """Whether the owner approved this person (or group: its negative id), by a code or an
        invite. An approval is read at most once a minute per container (a removal takes
        effect within that), and at most `APPROVALS_CACHED` are kept; a stranger is read every
        time, so one approved or invited a moment ago is heard at once."""
        now = self._clock()
        since = self._approved.get(user_id)
        if since is not None and now - since < timedelta(seconds=APPROVAL_CACHE_SECONDS):
            self._approved.move_to_end(user_id)
            return True
        approved = self._store.person(user_id) is not None
        if approved:
            self._approved[user_id] = now
            self._approved.move_to_end(user_id)
            if len(self._approved) > APPROVALS_CACHED:
                self._approved.popitem(last=False)
        else:
            self._approved.pop(user_id, None)
        return approved

    def answer_stranger(self, asker: Asker) -> str | None:
        """What the webhook tells a stranger: their code and how to use it; None when they
        get no answer (refused recently, or no code left to give)."""
        now = self._clock()
        asked = self._store.ask_record(asker.user_id)
        if asked is not None and asked.denied_until is not None and asked.denied_until > now:
            return None
        if asked is not None and asked.code is not None and asked.expires > now:
            return texts.render("pairing_code", code=_spaced(asked.code), minutes=_left(asked, now))
        day = now.strftime("%Y-%m-%d")
        count = asked.count if asked is not None and asked.day == day else 0
        if count >= CODES_PER_DAY:
            return texts.load("pairing_later")
        if not self._store.take_hour_slot(now.strftime("%Y-%m-%dT%H"), self._codes_per_hour):
            logger.warning("pairing: the hour's codes are all given out")
            return texts.load("pairing_later")
        expires = now + timedelta(minutes=CODE_MINUTES)
        for _ in range(5):  # a code already open for someone else: draw another
            code = self._codes()
            if self._store.open_code(PairingCode(code, asker, expires), day, count + 1):
                logger.info("pairing: code given", extra={"sender_id": asker.user_id})
                return texts.render("pairing_code", code=_spaced(code), minutes=CODE_MINUTES)
        return texts.load("pairing_later")

    # -- the owner's commands ------------------------------------------------------------

    def approve(self, code_text: str) -> tuple[str, Asker | None]:
        """/approve CODE: the owner's answer, and the person approved (None if nobody)."""
        pairing = self._open(code_text)
        if pairing is None:
            return _no_code(code_text), None
        if not self._store.approve(pairing, self._clock()):  # used in the meantime
            return _no_code(code_text), None
        self._approved.pop(pairing.asker.user_id, None)
        logger.info("pairing: approved", extra={"sender_id": pairing.asker.user_id})
        return texts.render("pairing_approved", who=pairing.asker.describe()), pairing.asker

    def deny(self, code_text: str) -> str:
        pairing = self._open(code_text)
        if pairing is None:
            return _no_code(code_text)
        if not self._store.deny(pairing, self._clock() + timedelta(hours=DENIED_HOURS)):
            return _no_code(code_text)
        logger.info("pairing: denied", extra={"sender_id": pairing.asker.user_id})
        return texts.render("pairing_denied", who=pairing.asker.describe(), hours=DENIED_HOURS)

    def people(self) -> str:
        """/people: who is approved, and who waits with an open code."""
        now = self._clock()
        approved = "\n".join(
            f"- {person.asker.describe()}" for person in self._store.people()
        ) or texts.load("pairing_nobody")
        waiting = "\n".join(
            f"- {pairing.asker.describe()}: code {_spaced(pairing.code)}"
            for pairing in self._store.open_codes()
            if pairing.expires > now
        ) or texts.load("pairing_nobody")
        return texts.render("pairing_people", approved=approved, waiting=waiting)

    def remove(self, user_text: str) -> str:
        """/people remove ID."""
        user = user_text.strip()
        digits = user.removeprefix("-")  # a group an invite admitted has a negative id
        if not (digits.isascii() and digits.isdigit()):
            return texts.load("pairing_remove_usage")
        if not self._store.remove(int(user)):
            return texts.render("pairing_not_approved", user=user)
        self._approved.pop(int(user), None)
        return texts.render("pairing_removed", user=user)

    def _open(self, code_text: str) -> PairingCode | None:
        code = normal_code(code_text)
        if code is None:
            return None
        pairing = self._store.code(code)
        if pairing is None or pairing.expires <= self._clock():
            return None
        return pairing


def _no_code(code_text: str) -> str:
    """No open request has this code: the owner's words are shown back as they typed them."""
    return texts.render("pairing_no_code", code=texts.literal(code_text, limit=20))


def _spaced(code: str) -> str:
    return f"{code[:3]} {code[3:]}"


def _left(asked: AskRecord, now: datetime) -> int:
    return max(1, int((asked.expires - now).total_seconds() // 60))


class PairingStore(Protocol):
    """Who the owner approved, and the codes strangers were given (see the module's docstring;
    `adapters/aws/pairing.py` keeps them in DynamoDB)."""

    def person(self, user_id: int) -> Person | None: ...

    def people(self) -> list[Person]: ...

    def ask_record(self, user_id: int) -> AskRecord | None: ...

    def take_hour_slot(self, hour: str, limit: int) -> bool:
        """Count one more code in `hour`; False (and nothing counted) past `limit`."""
        ...

    def open_code(self, pairing: PairingCode, day: str, count: int) -> bool:
        """Record a new code and the person's ask (`count` codes on `day`); False when the code
        is open for someone else already."""
        ...

    def code(self, code: str) -> PairingCode | None: ...

    def open_codes(self) -> list[PairingCode]: ...

    def approve(self, pairing: PairingCode, at: datetime) -> bool:
        """Approve the code's person and close the code, at once; False if it was closed."""
        ...

    def deny(self, pairing: PairingCode, until: datetime) -> bool:
        """Close the code and refuse its person until `until`; False if it was closed."""
        ...

    def remove(self, user_id: int) -> bool:
        """Take an approval back; False if there was none."""
        ...

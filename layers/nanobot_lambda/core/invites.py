"""Invite links: the owner admits a team or a family at once, with one link (`/invite`).

The owner sends `/invite` (or `/invite USES DAYS`) in their private chat and gets a link,
`https://t.me/<bot>?start=<token>`, that admits up to USES people (default 10) for DAYS days
(default 7). Whoever opens it presses Start, and Telegram sends `/start <token>` in their private
chat: the webhook, which answers strangers (`functions/webhook.py`), counts one use and admits the
person in one conditional write, so however many press Start at once, or one presses it twice,
no more are admitted than the link has uses. A group is admitted the same way, by its
`?startgroup=<token>` link (Telegram adds the bot and sends `/start@<bot> <token>` in the group) or
by anyone sending that command there: the group is then heard as a whole, as a group listed in
ALLOW_FROM is. Everyone admitted is an approved person of `core/pairing.py` (`/people` lists them,
`/people remove ID` takes them out), with a private scope of their own.

`/invite list` shows the links still open (their id, uses left, expiry); `/invite revoke ID` closes
one at once. The token is shown once, to the owner, and never stored: the store keys an invite by
the token's SHA-256, so neither a read of the table nor a log line can admit anyone, and a guessed
or forged token finds nothing. The id is the digest's first 8 hex digits.
"""

from __future__ import annotations

import hashlib
import logging
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Protocol

from nanobot_lambda.core import texts
from nanobot_lambda.core.pairing import Asker, PairingStore

logger = logging.getLogger(__name__)

DEFAULT_USES = 10
DEFAULT_DAYS = 7
MAX_USES = 1000
MAX_DAYS = 90
ID_LENGTH = 8  # hex digits of the token's digest that name an invite
# What Telegram allows in a deep link's start parameter: 1 to 64 of A-Z a-z 0-9 _ -.
_TOKEN = re.compile(r"^[A-Za-z0-9_-]{20,64}$")
_ID = re.compile(rf"^[0-9a-f]{{{ID_LENGTH}}}$")


@dataclass(frozen=True)
class Invite:
    digest: str  # SHA-256 of the token, in hex: the token itself is never kept
    expires: datetime
    max_uses: int
    made_at: datetime
    uses: int = 0

    @property
    def id(self) -> str:
        return self.digest[:ID_LENGTH]

    def open(self, now: datetime) -> bool:
        return self.uses < self.max_uses and self.expires > now


@dataclass(frozen=True)
class Admission:
    """What an opened invite link came to: whether its person (or group) is in, and the answer."""

    admitted: bool
    text: str


def new_token() -> str:
    return secrets.token_urlsafe(24)  # 32 characters of A-Z a-z 0-9 _ -


def digest_of(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def invite_token(text: str) -> str | None:
    """The token of a `/start <token>` (or `/start@bot <token>`) message; None for any other
    text, a bare /start included."""
    words = text.split()
    if len(words) != 2 or not re.fullmatch(r"/start(@\w+)?", words[0], flags=re.ASCII):
        return None
    return words[1] if _TOKEN.match(words[1]) else None


class Invites:
    def __init__(
        self,
        store: InviteStore,
        people: PairingStore,
        *,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        tokens: Callable[[], str] = new_token,
    ) -> None:
        self._store = store
        self._people = people
        self._clock = clock
        self._tokens = tokens

    # -- the owner's command -------------------------------------------------------------

    def command(
        self,
        argument: str,
        *,
        sender_id: int | None,
        owner: int | None,
        private: bool,
        bot_username: Callable[[], str | None],
    ) -> str:
        """/invite [USES] [DAYS], /invite list, /invite revoke ID: the answer. Only the owner,
        in their private chat (where the token is shown): anyone else is refused.
        `bot_username` (asked only to make a link) is the bot's, which the link names."""
        if owner is None or sender_id != owner or not private:
            return texts.load("pairing_owner_only")
        words = argument.split()
        if words[:1] == ["list"]:
            return self._list()
        if words[:1] == ["revoke"]:
            return self._revoke(" ".join(words[1:2]))
        return self._make(words, bot_username)

    def _make(self, words: list[str], bot_username: Callable[[], str | None]) -> str:
        numbers = [int(word) for word in words if word.isascii() and word.isdigit()]
        if len(numbers) != len(words) or len(numbers) > 2:
            return texts.render("invite_usage", uses=MAX_USES, days=MAX_DAYS)
        uses = numbers[0] if numbers else DEFAULT_USES
        days = numbers[1] if len(numbers) > 1 else DEFAULT_DAYS
        if not (1 <= uses <= MAX_USES and 1 <= days <= MAX_DAYS):
            return texts.render("invite_usage", uses=MAX_USES, days=MAX_DAYS)
        username = bot_username()
        if not username:  # a bot always has one: Telegram did not say it
            return texts.load("invite_no_username")
        now = self._clock()
        token = self._tokens()
        invite = Invite(digest_of(token), now + timedelta(days=days), uses, now)
        self._store.make_invite(invite)
        logger.info("invite made", extra={"invite": invite.id, "uses": uses, "days": days})
        return texts.render(
            "invite_made",
            link=f"https://t.me/{username}?start={token}",
            group_link=f"https://t.me/{username}?startgroup={token}",
            uses=uses,
            expires=_date(invite.expires),
            id=invite.id,
        )

    def _list(self) -> str:
        now = self._clock()
        lines = [
            texts.render(
                "invite_line",
                id=invite.id,
                left=invite.max_uses - invite.uses,
                uses=invite.max_uses,
                expires=_date(invite.expires),
            )
            for invite in self._store.invites()
            if invite.open(now)
        ]
        if not lines:
            return texts.load("invite_none")
        return texts.render("invite_list", invites="\n".join(lines))

    def _revoke(self, invite_id: str) -> str:
        if not _ID.match(invite_id):
            return texts.render("invite_usage", uses=MAX_USES, days=MAX_DAYS)
        if not self._store.revoke_invite(invite_id):
            return texts.render("invite_unknown", id=invite_id)
        logger.info("invite revoked", extra={"invite": invite_id})
        return texts.render("invite_revoked", id=invite_id)

    # -- the webhook ---------------------------------------------------------------------

    def admit(self, token: str, admitted: Asker, *, group: bool) -> Admission:
        """What the webhook answers a `/start <token>` from a person (or in a group) not heard
        yet: the welcome once the invite admitted them, or that the link is not valid. A use is
        counted only for someone it admits: a second /start of someone already admitted finds
        them so and is welcomed again, at no use."""
        welcome = texts.load("invite_welcome_group" if group else "invite_welcome")
        digest = digest_of(token)
        if self._store.use_invite(digest, admitted, self._clock()):
            logger.info(
                "invite used: admitted",
                extra={"invite": digest[:ID_LENGTH], "sender_id": admitted.user_id},
            )
            return Admission(True, welcome)
        if self._people.person(admitted.user_id) is not None:
            # Admitted already (a second press of Start, or one at the same time): no use.
            return Admission(True, welcome)
        logger.info("invite refused", extra={"sender_id": admitted.user_id})
        return Admission(False, texts.load("invite_invalid"))


def _date(at: datetime) -> str:
    return at.strftime("%Y-%m-%d %H:%M UTC")


class InviteStore(Protocol):
    """The owner's invites, and who they admitted (`adapters/aws/invites.py` keeps them in
    DynamoDB beside the approved people of `core/pairing.py`)."""

    def make_invite(self, invite: Invite) -> None: ...

    def invites(self) -> list[Invite]: ...

    def revoke_invite(self, invite_id: str) -> bool:
        """Close the invite named `invite_id` (its digest's start); False if there is none."""
        ...

    def use_invite(self, digest: str, admitted: Asker, at: datetime) -> bool:
        """Count one use of the invite and approve `admitted`, at once: False, and nothing
        changed, when no invite has this digest (forged, revoked), it expired by `at` or has no
        use left, or `admitted` is approved already."""
        ...

"""Who may talk to the bot. Default deny: an empty list allows nobody.

Entries are numeric Telegram ids (users, or groups such as -1001234567890) or usernames (with
or without a leading @). Matching is exact: ids as integers, usernames case-insensitively but
only in ASCII (Telegram usernames are ASCII; Unicode case folding would let "ſ" match "s"), never
by prefix or substring. `*` allows everyone.

The rules that use it (`telegram.inbound.classify`) are:

- the sender must be listed: commands, edits and button presses alike;
- in a group, the sender must be listed, unless the group's own (negative) chat id is listed;
- a message sent on behalf of a chat (`sender_chat`: an anonymous group admin, a linked
  channel's automatic forward, a user posting as a channel) counts as sent by that chat: it is
  allowed if that chat's id or username is listed, or the group it was posted in is;
- messages from bots are ignored whatever the list says.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

_ID = re.compile(r"^-?\d{1,20}$")
_USERNAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]{2,31}$")


@dataclass(frozen=True)
class AllowList:
    ids: frozenset[int] = frozenset()
    usernames: frozenset[str] = frozenset()
    everyone: bool = False
    first_user_id: int | None = None  # the first (positive) user id listed: the owner by default

    @classmethod
    def parse(cls, text: str) -> AllowList:
        ids: set[int] = set()
        usernames: set[str] = set()
        everyone = False
        first_user_id: int | None = None
        for raw in text.split(","):
            entry = raw.strip()
            if not entry:
                continue
            if entry == "*":
                everyone = True
            elif _ID.match(entry):
                ids.add(int(entry))
                if first_user_id is None and int(entry) > 0:
                    first_user_id = int(entry)
            elif _USERNAME.match(entry.removeprefix("@")):
                usernames.add(entry.removeprefix("@").lower())
            else:
                raise ValueError(
                    f"entry {entry!r} is neither a numeric Telegram id, a username, nor *"
                )
        return cls(frozenset(ids), frozenset(usernames), everyone, first_user_id)

    def including(self, user_id: int) -> AllowList:
        """This list with one more id (a person the owner approved by pairing)."""
        return AllowList(self.ids | {user_id}, self.usernames, self.everyone, self.first_user_id)

    @property
    def allows_nobody(self) -> bool:
        return not (self.everyone or self.ids or self.usernames)

    def allows(
        self, sender_id: int, username: str | None = None, *, group_id: int | None = None
    ) -> bool:
        """Whether a sender (a user, or a chat posting on its own behalf) may talk to the bot;
        `group_id` is the group the message was posted in, which may be listed as a whole."""
        if self.everyone or sender_id in self.ids:
            return True
        if group_id is not None and group_id in self.ids:
            return True
        return username is not None and username.isascii() and username.lower() in self.usernames


@dataclass(frozen=True)
class Audience:
    """Who the assistant serves, as a server's access names them."""

    owner: int | None
    allow_list: AllowList
    # Whether the owner approved this person, or a group, by pairing or an invite
    # (core/pairing.py, core/invites.py); may read a store.
    approved: Callable[[int], bool] = lambda _user_id: False

    def allows_chat(self, chat_id: int) -> bool:
        """Whether every participant of the chat may talk to the bot (see the module doc)."""
        if chat_id == self.owner or self.allow_list.everyone or chat_id in self.allow_list.ids:
            return True
        return self.approved(chat_id)

    def still_heard(self, chat_id: int) -> bool:
        """Whether a job nobody sent just now (a scheduled task, a background task, its
        announcement) may still run for this chat: a group's (its members were heard when it
        was made), or the private chat of a person who may talk to the bot today. Someone the
        owner took out of ALLOW_FROM or off the approved list has no more turns, scheduled or
        not. While ALLOW_FROM lists usernames, a person cannot be told from their id, and their
        jobs run."""
        if chat_id < 0 or self.allow_list.usernames:
            return True
        return self.allows_chat(chat_id)

"""Who may talk to the bot. Default deny: an empty list allows nobody.

Entries are numeric Telegram ids or usernames (with or without a leading @). A sender matches
by exact id or exact username (Telegram usernames are case-insensitive), never by prefix or
substring. `*` allows everyone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_ID = re.compile(r"^-?\d{1,20}$")
_USERNAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]{2,31}$")


@dataclass(frozen=True)
class AllowList:
    ids: frozenset[int] = frozenset()
    usernames: frozenset[str] = frozenset()
    everyone: bool = False

    @classmethod
    def parse(cls, text: str) -> AllowList:
        ids: set[int] = set()
        usernames: set[str] = set()
        everyone = False
        for raw in text.split(","):
            entry = raw.strip()
            if not entry:
                continue
            if entry == "*":
                everyone = True
            elif _ID.match(entry):
                ids.add(int(entry))
            elif _USERNAME.match(entry.removeprefix("@")):
                usernames.add(entry.removeprefix("@").casefold())
            else:
                raise ValueError(
                    f"entry {entry!r} is neither a numeric Telegram id, a username, nor *"
                )
        return cls(frozenset(ids), frozenset(usernames), everyone)

    @property
    def allows_nobody(self) -> bool:
        return not (self.everyone or self.ids or self.usernames)

    def allows(self, user_id: int, username: str | None = None) -> bool:
        if self.everyone or user_id in self.ids:
            return True
        return username is not None and username.casefold() in self.usernames

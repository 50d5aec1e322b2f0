"""People (the owner's): pending pairing requests to approve or deny, the people approved, the
ids and groups ALLOW_FROM lists, and taking an approval back.

Each change is `/approve`, `/deny` and `/people remove`'s own (core/pairing.py: `Pairing`, on
the same store, so a code still works once): an approved person is welcomed in their private
chat as `/approve` welcomes them. With PAIRING=off there is nothing to approve: the list shows
ALLOW_FROM only.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from nanobot_lambda.core.allowlist import AllowList
from nanobot_lambda.core.pairing import Asker, Pairing
from nanobot_lambda.functions.console.auth import ChatScope
from nanobot_lambda.functions.console.ports import ConsoleError, ConsolePorts
from nanobot_lambda.functions.console.requests import plain, text_field


class PeopleViews:
    def __init__(self, ports: ConsolePorts, allow_list: AllowList, owner: int | None) -> None:
        self._ports = ports
        self._allow_list = allow_list
        self._owner = owner
        self._pairing = (
            Pairing(ports.pairing, clock=ports.clock) if ports.pairing is not None else None
        )

    def people(self, target: ChatScope, body: dict[str, Any]) -> dict[str, Any]:
        store = self._ports.pairing
        return {
            "pairing": store is not None,
            "owner": self._owner,
            "allowed_ids": sorted(i for i in self._allow_list.ids if i > 0),
            "allowed_usernames": sorted(self._allow_list.usernames),
            "everyone": self._allow_list.everyone,
            "groups": sorted(i for i in self._allow_list.ids if i < 0),
            "approved": [
                {**_asker(person.asker), "approved_at": _when(person.approved_at)}
                for person in (store.people() if store else [])
            ],
            "waiting": [
                {**_asker(code.asker), "code": code.code, "expires": _when(code.expires)}
                for code in self._waiting()
            ],
        }

    def _pairing_on(self) -> Pairing:
        if self._pairing is None:
            raise ConsoleError(409, "pairing is off (PAIRING=off)")
        return self._pairing

    def approve(self, target: ChatScope, body: dict[str, Any]) -> dict[str, Any]:
        answer, approved = self._pairing_on().approve(text_field(body, "code", 20))
        if approved is None:
            raise ConsoleError(404, plain(answer))
        self._ports.welcome(approved.user_id)
        return {"message": plain(answer), "user_id": approved.user_id}

    def deny(self, target: ChatScope, body: dict[str, Any]) -> dict[str, Any]:
        code = text_field(body, "code", 20)
        pairing = self._pairing_on()
        before = len(self._waiting())
        answer = pairing.deny(code)
        if len(self._waiting()) == before:  # no open code of that number: nothing denied
            raise ConsoleError(404, plain(answer))
        return {"message": plain(answer)}

    def _waiting(self) -> list[Any]:
        now = self._ports.clock()
        store = self._ports.pairing
        return [code for code in (store.open_codes() if store else []) if code.expires > now]

    def remove(self, target: ChatScope, body: dict[str, Any]) -> dict[str, Any]:
        user = str(body.get("person", ""))
        store = self._ports.pairing
        if store is None or not user.isdigit() or store.person(int(user)) is None:
            raise ConsoleError(404, f"{user} is not among the people approved")
        return {"message": plain(self._pairing_on().remove(user))}


def _asker(asker: Asker) -> dict[str, Any]:
    return {"user_id": asker.user_id, "name": asker.name, "username": asker.username}


def _when(moment: datetime) -> str:
    return moment.isoformat(timespec="minutes")

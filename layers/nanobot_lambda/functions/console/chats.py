"""The chats the owner can choose between (their own, each person's, each group's): those
ALLOW_FROM lists by id, the people approved by pairing, and the chats hooks or schedules were
made for are all chats the bot talks in; a scope's name is the page's handle for each."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from nanobot_lambda.core.allowlist import AllowList
from nanobot_lambda.core.scopes import scope_of_chat
from nanobot_lambda.functions.console.ports import ConsolePorts


@dataclass(frozen=True)
class KnownChat:
    chat_id: int
    scope: str  # owner, people/<id>, groups/<id>
    label: str

    def shown(self) -> dict[str, Any]:
        return {"chat_id": self.chat_id, "scope": self.scope, "label": self.label}


def known_chats(ports: ConsolePorts, allow_list: AllowList, owner: int) -> list[KnownChat]:
    names: dict[int, str] = {owner: "You"}
    for chat in sorted(allow_list.ids, key=lambda chat: (chat < 0, abs(chat))):
        names.setdefault(chat, _label(chat))
    if ports.pairing is not None:
        for person in ports.pairing.people():
            names[person.asker.user_id] = person.asker.name or f"Person {person.asker.user_id}"
    for hook in ports.hooks.hooks():
        names.setdefault(hook.chat_id, _label(hook.chat_id))
    return [
        KnownChat(chat, scope_of_chat(chat, owner).name or "owner", label)
        for chat, label in names.items()
    ]


def _label(chat: int) -> str:
    return f"Group {chat}" if chat < 0 else f"Person {chat}"

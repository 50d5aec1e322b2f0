"""Hooks (the owner's alone, as `/hooks` is): the list with each hook's URL, add, remove.

A hook is made as `/hooks add` makes it (core/inbound_events.py: `HookCommands.make`), for the
chat of the scope the owner chose, and recorded as made by the press (`made_in`:
`console-<request>`): the page sending the same press again (a dropped answer) gets the same hook
and secret back, any other press for a taken name is refused. Its secret is in that one answer
only: the list never shows a secret.
"""

from __future__ import annotations

from typing import Any

from nanobot_lambda.core.inbound_events import NAME_RULE, Hook, HookCommands
from nanobot_lambda.functions.console.auth import ChatScope, Viewer
from nanobot_lambda.functions.console.ports import ConsoleError, ConsolePorts
from nanobot_lambda.functions.console.requests import bool_field, plain, text_field


class HookViews:
    def __init__(self, ports: ConsolePorts, hooks_url: str) -> None:
        self._ports = ports
        self._commands = HookCommands(ports.hooks, hooks_url, ports.clock)

    def hooks(self, target: ChatScope, body: dict[str, Any]) -> dict[str, Any]:
        return {"hooks": [self._shown(hook) for hook in self._ports.hooks.hooks()]}

    def _shown(self, hook: Hook) -> dict[str, Any]:
        return {
            "name": hook.name,
            "chat_id": hook.chat_id,
            "thread_id": hook.thread_id,
            "quiet": hook.quiet,
            "created_at": hook.created_at,
            "url": self._commands.url_of(hook.name),
        }

    def add(self, target: ChatScope, body: dict[str, Any], viewer: Viewer) -> dict[str, Any]:
        name = text_field(body, "name", 64).strip()
        request = text_field(body, "request", 100)
        made = self._commands.make(
            name,
            target.chat_id,
            None,
            viewer.user_id,
            f"console-{request}",
            quiet=bool_field(body, "quiet", default=False),
        )
        if isinstance(made, str):
            raise ConsoleError(409 if NAME_RULE.fullmatch(name) else 400, plain(made))
        return {**self._shown(made), "secret": made.secret.get_secret_value()}

    def remove(self, target: ChatScope, body: dict[str, Any]) -> dict[str, Any]:
        name = text_field(body, "name", 64)
        if not NAME_RULE.fullmatch(name) or not self._ports.hooks.remove(name):
            raise ConsoleError(404, f"no hook {name}")
        return {"name": name, "removed": True}

"""Hooks (the owner's alone, as `/hooks` is): the list with each hook's URL, add, remove, and a
hook's last deliveries with what each caused.

A hook is made as `/hooks add` makes it (core/inbound_events.py: `HookCommands.make`), for the
chat of the scope the owner chose, and recorded as made by the press (`made_in`:
`console-<request>`): the page sending the same press again (a dropped answer) gets the same hook
and secret back, any other press for a taken name is refused. Its secret is in that one answer
only: the list never shows a secret.

A delivery (the webhook's record: when, the answer, the payload's size and digest, never the
payload) that was queued caused a turn in the hook's chat; what became of it is read from that
chat's session (one read a chat): answered (the answer's first line), with nothing to report (a
quiet hook's, not sent), running (its record open: running, or failed and waiting for a retry),
or not among the chat's recent turns (still queued, or answered too long ago to tell).
"""

from __future__ import annotations

from typing import Any

from nanobot_lambda.core.heartbeat import nothing_to_report
from nanobot_lambda.core.inbound_events import (
    DELIVERIES_KEEP,
    DELIVERIES_KEPT,
    EVENT_TURN_FIELD,
    NAME_RULE,
    Delivery,
    Hook,
    HookCommands,
    deliveries_of,
)
from nanobot_lambda.core.sessions import Message, SessionHistory
from nanobot_lambda.functions.console.auth import ChatScope, Viewer
from nanobot_lambda.functions.console.ports import ConsoleError, ConsolePorts
from nanobot_lambda.functions.console.requests import bool_field, plain, text_field

SESSION_READ = 60  # the messages of the hook's chat read to find what a delivery caused
ANSWER_SHOWN_CHARS = 200


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

    def deliveries(self, target: ChatScope, body: dict[str, Any]) -> dict[str, Any]:
        name = text_field(body, "name", 64)
        hook = self._ports.hooks.hook(name) if NAME_RULE.fullmatch(name) else None
        if hook is None:
            raise ConsoleError(404, f"no hook {name}")
        sessions: dict[str, SessionHistory] = {}
        shown = []
        for delivery in deliveries_of(self._ports.hooks, hook):
            caused = None
            if delivery.session is not None and delivery.turn_id is not None:
                if delivery.session not in sessions:
                    sessions[delivery.session] = self._ports.sessions.load(
                        delivery.session, SESSION_READ
                    )
                caused = _caused(sessions[delivery.session], delivery.turn_id)
            shown.append({**_delivery(delivery), "caused": caused})
        return {
            "name": hook.name,
            "deliveries": shown,
            "kept": DELIVERIES_KEPT,
            "kept_days": DELIVERIES_KEEP.days,
        }

    def remove(self, target: ChatScope, body: dict[str, Any]) -> dict[str, Any]:
        name = text_field(body, "name", 64)
        if not NAME_RULE.fullmatch(name) or not self._ports.hooks.remove(name):
            raise ConsoleError(404, f"no hook {name}")
        return {"name": name, "removed": True}


def _delivery(delivery: Delivery) -> dict[str, Any]:
    return {
        "at": delivery.at,
        "outcome": delivery.outcome,
        "status": delivery.status,
        "reason": delivery.reason,
        "size": delivery.size,
        "digest": delivery.digest,
        "delivery_id": delivery.delivery_id,
        "event": delivery.event,
        "turn_id": delivery.turn_id,
    }


def _caused(history: SessionHistory, turn_id: str) -> dict[str, Any]:
    """What became of the turn `turn_id`, as its chat's session tells: `state` answered,
    quiet, running or unseen, and the answer's first line when the window holds it."""
    answer = _answer_of(history.messages, turn_id)
    if answer is not None and nothing_to_report(answer):
        return {"state": "quiet", "answer": None}
    if answer is not None or turn_id in history.recent_turns:
        first = (answer or "").strip().split("\n", 1)[0]
        shown = first[:ANSWER_SHOWN_CHARS] + ("…" if len(first) > ANSWER_SHOWN_CHARS else "")
        return {"state": "answered", "answer": shown or None}
    if turn_id in history.open_turns:
        return {"state": "running", "answer": None}
    return {"state": "unseen", "answer": None}


def _answer_of(messages: list[Message], turn_id: str) -> str | None:
    """The last text the assistant said in the turn whose saved prompt names `turn_id`."""
    answer: str | None = None
    inside = False
    for message in messages:
        if message.get("role") == "user":
            if inside:
                break
            inside = message.get(EVENT_TURN_FIELD) == turn_id
        elif inside and message.get("role") == "assistant":
            content = message.get("content")
            if isinstance(content, str) and content.strip():
                answer = content
    return answer

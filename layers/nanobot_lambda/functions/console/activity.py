"""Activity (the owner's): the recent turns of every chat the owner can choose, and the
dead-letter queue with replay.

A turn is read from its chat's session (one Query a chat: the header and the unconsolidated
window), never its text: the header's records of the latest turns (core/sessions.py,
`TurnRecord`: when it was saved, the models that answered, tokens, cost, the tools it called,
why it ended unanswered), and for turns saved before there were records, what their messages
show (when, the tools their steps called, how many steps). A turn that
failed every attempt is in the dead-letter queue (adapters/aws/dead_letters.py, as `nanobot-
lambda dlq` reads it: kind and ids, never the text), from where replay sends it back to the
turn queue in its chat's order.
"""

from __future__ import annotations

from typing import Any

from nanobot_lambda.core.allowlist import AllowList
from nanobot_lambda.core.sessions import TurnRecord, session_key_for
from nanobot_lambda.functions.console.auth import ChatScope
from nanobot_lambda.functions.console.chats import known_chats
from nanobot_lambda.functions.console.ports import ConsoleError, ConsolePorts
from nanobot_lambda.functions.console.requests import text_field

TURNS_READ = 60  # messages of each chat's window read
TURNS_SHOWN = 30


class ActivityViews:
    def __init__(
        self,
        ports: ConsolePorts,
        *,
        allow_list: AllowList,
        owner: int | None,
        turn_queue_url: str,
    ) -> None:
        self._ports = ports
        self._allow_list = allow_list
        self._owner = owner
        self._turn_queue_url = turn_queue_url

    def activity(self, target: ChatScope, body: dict[str, Any]) -> dict[str, Any]:
        turns: list[dict[str, Any]] = []
        chats = known_chats(self._ports, self._allow_list, self._owner) if self._owner else []
        for chat in chats:
            history = self._ports.sessions.load(session_key_for(chat.chat_id), TURNS_READ)
            recorded = [_recorded(record, chat.scope, chat.label) for record in history.turn_log]
            first = min((turn["when"] for turn in recorded), default=None)
            older = _turns(history.messages, chat.scope, chat.label)
            turns += recorded + [turn for turn in older if first is None or turn["when"] < first]
        turns.sort(key=lambda turn: turn["when"], reverse=True)
        letters = self._ports.dead_letters.peek() if self._ports.dead_letters else []
        return {
            "turns": turns[:TURNS_SHOWN],
            "dead_letters": [
                {
                    "message_id": letter.message_id,
                    "group": letter.group,
                    "job": letter.describe_job(),
                    "sent_at": letter.sent_at.isoformat(timespec="seconds")
                    if letter.sent_at
                    else None,
                    "receive_count": letter.receive_count,
                    "size": letter.size,
                }
                for letter in letters
            ],
            "dead_letters_known": self._ports.dead_letters is not None,
        }

    def replay(self, target: ChatScope, body: dict[str, Any]) -> dict[str, Any]:
        message_id = text_field(body, "message_id", 200)
        if self._ports.dead_letters is None:
            raise ConsoleError(409, "the dead-letter queue is not known here (TURN_DLQ_URL)")
        replayed, missing = self._ports.dead_letters.replay(self._turn_queue_url, {message_id})
        if missing or not replayed:
            raise ConsoleError(404, "no such message in the dead-letter queue")
        return {"replayed": message_id}


def _recorded(record: TurnRecord, scope: str, label: str) -> dict[str, Any]:
    return {
        "when": record.at,
        "scope": scope,
        "chat": label,
        "tools": list(record.tools),
        "steps": record.model_calls,
        "models": list(record.models),
        "prompt_tokens": record.prompt_tokens,
        "completion_tokens": record.completion_tokens,
        "cost_usd": None if record.cost_usd is None else float(record.cost_usd),
        "error": record.error,
    }


def _turns(messages: list[dict[str, Any]], scope: str, label: str) -> list[dict[str, Any]]:
    turns: list[dict[str, Any]] = []
    for message in messages:
        if message.get("role") == "user" and isinstance(message.get("ts"), str):
            turns.append(
                {"when": message["ts"], "scope": scope, "chat": label, "tools": [], "steps": 0}
            )
        elif turns and message.get("role") == "assistant":
            turns[-1]["steps"] += 1
            for call in message.get("tool_calls") or []:
                name = call.get("function", {}).get("name") if isinstance(call, dict) else None
                if isinstance(name, str):
                    turns[-1]["tools"].append(name)
    return turns

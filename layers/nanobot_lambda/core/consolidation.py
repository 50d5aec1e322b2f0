"""Consolidation: summarise the older part of a session into HISTORY.md and MEMORY.md.

When a session's unconsolidated history outgrows its budget (core/budget.py: tokens, and a
backstop count of messages), everything but the newest exchanges filling at most half of it is
summarised by one model call forced to call `save_memory(history_entry, memory_update)`:
structured output through a tool schema, never JSON scraped from prose. Then, in this order:
the history entry is appended (with a marker naming the session and range, so a retry cannot
append it twice), MEMORY.md is rewritten if it changed and the change is not a drastic shrink,
and finally the session's cursor moves (conditionally, so two runs cannot both move it). Any
failure before the cursor moves leaves it where it was. A later run first looks for the marker
of an entry already written from the cursor on (a run that died before moving the cursor): if
there is one, it only moves the cursor, with no model call and no second entry, even if new
messages arrived meanwhile.

Nothing leaves the history window unsummarised: the model is sent the unconsolidated messages
only, and the cursor moves past a message only once its summary is written. A request that
would not fit, or a session past its message backstop (HISTORY_WINDOW: the model would be sent
only the newest of them), is consolidated before the turn's request is built
(functions/agent_turn/turn_request.py); what the request fitter still leaves out of one request
(core/budget.py) stays unconsolidated, is sent again by later turns and summarised in its turn.

Moving the cursor leaves a notice due (core/sessions.py: `noticed_upto`): the next answer tells
the chat in one line that earlier conversation was summarised (at most once per
COMPACTION_NOTICE_INTERVAL_HOURS: functions/agent_turn/delivery.py). A caller that tells the chat
itself (/compact, /new) consolidates with `noticed`.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from nanobot_lambda.core import texts
from nanobot_lambda.core.budget import HistoryBudget
from nanobot_lambda.core.errors import ModelError, NanobotError, StorageError
from nanobot_lambda.core.memory import MEMORY_FILE, append_history, find_marker, guard_memory_update
from nanobot_lambda.core.model import CompletionRequest, force_tool, function_tool
from nanobot_lambda.core.ports import ChatModel, SessionStore, Workspace
from nanobot_lambda.core.sessions import Message, SessionHistory
from nanobot_lambda.core.workspace import NotText, update_text

logger = logging.getLogger(__name__)

SAVE_MEMORY = "save_memory"
SAVE_MEMORY_TOOL = function_tool(
    SAVE_MEMORY,
    "Save the conversation summary and the updated long-term memory.",
    {
        "type": "object",
        "properties": {
            "history_entry": {
                "type": "string",
                "description": "[YYYY-MM-DD HH:MM] then 2-5 sentences for a searchable log.",
            },
            "memory_update": {"type": "string", "description": "The complete new MEMORY.md."},
        },
        "required": ["history_entry", "memory_update"],
    },
)
MAX_TRANSCRIPT_TOOL_CHARS = 300
EMPTY_MEMORY = "(empty)"  # how an empty MEMORY.md is shown to the summariser
_STORAGE_ERRORS = (StorageError, NotText)
_TIMESTAMPED = re.compile(r"^\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}\]")


class ConsolidationError(NanobotError):
    """The summary could not be produced or stored; the cursor did not move."""


@dataclass(frozen=True)
class Consolidated:
    start: int
    end: int
    memory_updated: bool


class Consolidator:
    def __init__(
        self,
        model: ChatModel,
        workspace: Workspace,
        sessions: SessionStore,
        budget: HistoryBudget,
        *,
        timezone: str,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._model = model
        self._workspace = workspace
        self._sessions = sessions
        self._budget = budget
        self._zone = ZoneInfo(timezone)
        self._clock = clock

    def due(self, history: SessionHistory) -> bool:
        return self._budget.over(history.messages, history.unconsolidated)

    def consolidate(
        self,
        key: str,
        *,
        everything: bool = False,
        keep_exchanges: int | None = None,
        noticed: bool = False,
    ) -> Consolidated | None:
        """Summarise the older unconsolidated messages: those past the budget's kept half, all
        of them with `everything`, all but the newest `keep_exchanges` exchanges (a user message
        and what answered it) with that. `noticed`: the caller tells the chat (no notice due).

        Returns None when there was nothing to do. Raises ConsolidationError on failure.
        """
        try:
            return self._consolidate(key, everything, keep_exchanges, noticed)
        except _STORAGE_ERRORS as error:
            raise ConsolidationError(f"storage failed: {type(error).__name__}") from None

    def _consolidate(
        self, key: str, everything: bool, keep_exchanges: int | None, noticed: bool
    ) -> Consolidated | None:
        header = self._sessions.load(key, 0)
        start, end = header.consolidated_upto, header.next_seq
        recorded = find_marker(self._workspace, f"{key} {start}-")
        if recorded is not None:
            # A run died after writing its entry: finish it rather than summarise again.
            target = int(recorded.rsplit("-", 1)[1])
            self._sessions.advance_cursor(key, start, target, noticed=noticed)
            logger.info("consolidation resumed", extra={"session": key, "end": target})
            return Consolidated(start, target, False)
        messages = self._sessions.load_range(key, start, end)
        if everything:
            target = end
        elif keep_exchanges is not None:
            target = _exchanges_from(messages, keep_exchanges, end)
        else:
            target = self._budget.keep_from(messages, end)
        target = self._budget.summarised_until(messages, target)
        archived = [message for seq, message in messages if seq < target]
        if target <= start or not archived:
            return None

        memory_file = self._workspace.read(MEMORY_FILE)
        memory = memory_file.text if memory_file is not None else ""
        entry, memory_update = self._summarise(archived, memory)
        if not memory.strip() and memory_update.strip() == EMPTY_MEMORY:
            memory_update = ""  # the model returned the placeholder as "unchanged"
        append_history(self._workspace, entry, marker=f"{key} {start}-{target}")
        written = update_text(
            self._workspace,
            MEMORY_FILE,
            lambda current: guard_memory_update(current or "", memory_update),
        )
        if not self._sessions.advance_cursor(key, start, target, noticed=noticed):
            logger.info("consolidation of %s already recorded by another run", key)
        logger.info(
            "session consolidated",
            extra={"session": key, "start": start, "end": target, "memory_updated": bool(written)},
        )
        return Consolidated(start, target, written is not None)

    def _summarise(self, archived: list[Message], memory: str) -> tuple[str, str]:
        timestamp = self._timestamp(archived)
        request = [
            {"role": "system", "content": texts.load("consolidation_system")},
            {
                "role": "user",
                "content": texts.render(
                    "consolidation_request",
                    timestamp=timestamp,
                    memory=memory.strip() or EMPTY_MEMORY,
                    transcript=transcript(archived),
                ),
            },
        ]
        try:
            reply = self._model.complete(
                CompletionRequest(request, [SAVE_MEMORY_TOOL], tool_choice=force_tool(SAVE_MEMORY))
            )
        except ModelError as error:
            raise ConsolidationError(f"model call failed: {error}") from None
        call = reply.call_to(SAVE_MEMORY)
        if call is None:
            raise ConsolidationError("the model did not call save_memory")
        try:
            arguments = json.loads(call.arguments)
        except json.JSONDecodeError:
            raise ConsolidationError("save_memory arguments are not valid JSON") from None
        entry = arguments.get("history_entry") if isinstance(arguments, dict) else None
        memory_update = arguments.get("memory_update") if isinstance(arguments, dict) else None
        if not isinstance(entry, str) or not entry.strip() or not isinstance(memory_update, str):
            raise ConsolidationError("save_memory needs a history_entry and a memory_update")
        entry = " ".join(entry.split())
        if not _TIMESTAMPED.match(entry):
            entry = f"[{timestamp}] {entry}"
        return entry, memory_update

    def _timestamp(self, archived: list[Message]) -> str:
        """When the archived conversation took place (its first timestamped message), local."""
        for message in archived:
            if isinstance(message.get("ts"), str):
                try:
                    moment = datetime.fromisoformat(message["ts"])
                except ValueError:
                    continue
                return moment.astimezone(self._zone).strftime("%Y-%m-%d %H:%M")
        return self._clock().astimezone(self._zone).strftime("%Y-%m-%d %H:%M")


def _exchanges_from(messages: list[tuple[int, Message]], count: int, end: int) -> int:
    """Where the newest `count` exchanges start (the `count`-th user message from the end);
    the first message when there are fewer, `end` when `count` is 0."""
    users = [seq for seq, message in messages if message.get("role") == "user"]
    if count <= 0:
        return end
    if len(users) <= count:
        return messages[0][0] if messages else end
    return users[-count]


def transcript(messages: list[Message]) -> str:
    """The conversation as plain lines for the summariser (tool output shortened)."""
    lines = []
    for message in messages:
        role = message.get("role")
        content = message.get("content")
        text = content if isinstance(content, str) else ""
        if role == "user":
            lines.append(f"USER: {text}")
        elif role == "assistant":
            if text:
                lines.append(f"ASSISTANT: {text}")
            for call in message.get("tool_calls") or []:
                function = call.get("function", {})
                lines.append(
                    f"ASSISTANT called {function.get('name')}({function.get('arguments')})"
                )
        elif role == "tool":
            lines.append(f"TOOL {message.get('name')}: {text[:MAX_TRANSCRIPT_TOOL_CHARS]}")
    return "\n".join(lines)

"""The tool-calling loop: ask the model, run the tools it asks for, repeat until it answers.

Tool calls are recognised by their presence, not by `finish_reason` (providers disagree on it).
A model failure raises `ModelError` out of the loop: the caller apologises and saves nothing,
so an error never becomes an assistant message in the session.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import Any

from nanobot_lambda import texts
from nanobot_lambda.model import ChatModel, ModelReply, Usage
from nanobot_lambda.tools import ToolRegistry

logger = logging.getLogger(__name__)

MAX_SAVED_TOOL_RESULT_CHARS = 16_000
_THINK_BLOCK = re.compile(r"<think>.*?(</think>|$)", re.DOTALL | re.IGNORECASE)


def strip_thinking(text: str) -> str:
    """Remove `<think>…</think>` blocks some models emit inline; they are never shown."""
    return _THINK_BLOCK.sub("", text).strip()


@dataclass
class TurnOutcome:
    reply: str
    new_messages: list[dict[str, Any]]
    tool_calls: int = 0
    iterations: int = 0
    hit_iteration_limit: bool = False
    usage: Usage = field(default_factory=Usage)


class AgentLoop:
    def __init__(self, model: ChatModel, tools: ToolRegistry, max_iterations: int) -> None:
        self._model = model
        self._tools = tools
        self._max_iterations = max_iterations

    def run(self, messages: list[dict[str, Any]]) -> TurnOutcome:
        """Run one turn from `messages` (system, history, user). Returns what to send and save.

        `new_messages` are the assistant and tool messages the turn produced, ready to save
        after the user message.
        """
        outcome = TurnOutcome(reply="", new_messages=[])
        definitions = self._tools.definitions()
        while outcome.iterations < self._max_iterations:
            outcome.iterations += 1
            reply = self._model.complete([*messages, *outcome.new_messages], definitions)
            outcome.usage += reply.usage
            if not reply.tool_calls:
                outcome.reply = strip_thinking(reply.content or "") or texts.load("empty_reply")
                outcome.new_messages.append({"role": "assistant", "content": outcome.reply})
                return outcome
            self._run_tools(reply, outcome)

        logger.warning("turn stopped at the tool iteration limit (%d)", self._max_iterations)
        outcome.hit_iteration_limit = True
        outcome.reply = texts.render("iteration_limit", limit=self._max_iterations)
        outcome.new_messages.append({"role": "assistant", "content": outcome.reply})
        return outcome

    def _run_tools(self, reply: ModelReply, outcome: TurnOutcome) -> None:
        outcome.new_messages.append(
            {
                "role": "assistant",
                "content": strip_thinking(reply.content or "") or None,
                "tool_calls": [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": call.arguments},
                    }
                    for call in reply.tool_calls
                ],
            }
        )
        for call in reply.tool_calls:
            outcome.tool_calls += 1
            logger.info("tool call", extra={"tool": call.name})
            result = self._tools.execute(call)
            outcome.new_messages.append(
                {"role": "tool", "tool_call_id": call.id, "name": call.name, "content": result}
            )


def for_saving(message: dict[str, Any]) -> dict[str, Any]:
    """The message as stored: long tool results shortened (the model saw them in full)."""
    content = message.get("content")
    if (
        message.get("role") == "tool"
        and isinstance(content, str)
        and len(content) > MAX_SAVED_TOOL_RESULT_CHARS
    ):
        kept = content[:MAX_SAVED_TOOL_RESULT_CHARS]
        return {**message, "content": f"{kept}\n[… {len(content) - len(kept)} chars not saved]"}
    return message

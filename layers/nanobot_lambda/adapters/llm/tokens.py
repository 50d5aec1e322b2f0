"""`TokenCounter` on litellm: its tokenizer for the model (tiktoken's bundled encodings for
most, offline), and its model map's context window.

The system prompt is the same bytes turn after turn (core/context.py) and, with many skills, the
longest message: its count is kept (per version of it) and added to the count of the rest of
the request, less what counting two lists instead of one adds (the reply's priming tokens,
measured once per model, with tools and without); the tools' definitions, the same on every
request of a turn, are counted once per version of them too. So a request counts as it would
in one piece, without the system prompt or the tools tokenized again on every count.

Imported by agent_turn only, after litellm_model (which sets litellm's offline options).
"""

from __future__ import annotations

import json
import logging
from typing import Any

import litellm

logger = logging.getLogger(__name__)

# For a model litellm's map does not know (a local or proxied one): a common, modest window.
UNKNOWN_CONTEXT_WINDOW = 32_768
# When the tokenizer fails: fewer characters per token than prose has, so the estimate errs high.
ESTIMATED_CHARS_PER_TOKEN = 3


def model_context_window(model: str) -> int:
    """The model's input limit in litellm's model map, or UNKNOWN_CONTEXT_WINDOW."""
    try:
        info = litellm.get_model_info(model)
    except Exception:
        logger.info(
            "context window of %s unknown to litellm: %d assumed", model, UNKNOWN_CONTEXT_WINDOW
        )
        return UNKNOWN_CONTEXT_WINDOW
    window = info.get("max_input_tokens") or info.get("max_tokens")
    return int(window) if window else UNKNOWN_CONTEXT_WINDOW


SYSTEM_PROMPTS_KEPT = 4  # counted system prompts kept (the scopes a container serves)
_PROBE_TOOL = {
    "type": "function",
    "function": {"name": "probe", "parameters": {"type": "object", "properties": {}}},
}


class LitellmTokenCounter:
    def __init__(self, model: str) -> None:
        self._model = model
        self.context_window = model_context_window(model)  # CONTEXT_WINDOW_TOKENS overrides it
        self._system_tokens: dict[str, int] = {}
        self._tools_tokens: dict[str, int] = {}
        self._split_excess: dict[bool, int] = {}  # with tools or not: see _excess

    def _tokens(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
    ) -> int:
        return int(litellm.token_counter(model=self._model, messages=messages, tools=tools))

    def _system(self, message: dict[str, Any]) -> int:
        key = json.dumps(message, ensure_ascii=False, sort_keys=True)
        if key not in self._system_tokens:
            if len(self._system_tokens) >= SYSTEM_PROMPTS_KEPT:
                self._system_tokens.clear()
            self._system_tokens[key] = self._tokens([message])
        return self._system_tokens[key]

    def _tools(self, tools: list[dict[str, Any]]) -> int:
        """What the tools add to a request without a system prompt (the same whatever its
        messages: litellm counts their definitions apart)."""
        key = json.dumps(tools, ensure_ascii=False, sort_keys=True)
        if key not in self._tools_tokens:
            if len(self._tools_tokens) >= SYSTEM_PROMPTS_KEPT:
                self._tools_tokens.clear()
            user = [{"role": "user", "content": "Hello."}]
            self._tools_tokens[key] = self._tokens(user, tools) - self._tokens(user)
        return self._tools_tokens[key]

    def _excess(self, with_tools: bool) -> int:
        """What counting the system prompt apart adds (the reply's priming; with tools, also
        what litellm takes off a request that has both a system prompt and tools)."""
        if with_tools not in self._split_excess:
            system = {"role": "system", "content": "Be brief."}
            user = {"role": "user", "content": "Hello."}
            tools = [_PROBE_TOOL] if with_tools else None
            joint = self._tokens([system, user], tools)
            apart = self._tokens([system]) + self._tokens([user], tools)
            self._split_excess[with_tools] = apart - joint
        return self._split_excess[with_tools]

    def count(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
    ) -> int:
        try:
            if len(messages) > 1 and messages[0].get("role") == "system":
                rest = self._tokens(messages[1:]) + (self._tools(tools) if tools else 0)
                return self._system(messages[0]) + rest - self._excess(bool(tools))
            return self._tokens(messages, tools or None)
        except Exception as error:  # a tokenizer that fails must not fail the turn
            logger.warning("token count failed (%s): estimated", type(error).__name__)
            text = json.dumps([messages, tools or []], ensure_ascii=False)
            return len(text) // ESTIMATED_CHARS_PER_TOKEN

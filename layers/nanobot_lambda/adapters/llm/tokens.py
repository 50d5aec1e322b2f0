"""`TokenCounter` on litellm: its tokenizer for the model (tiktoken's bundled encodings for
most, offline), and its model map's context window.

litellm counts a request as the sum of what each message adds plus what the request adds once
(the reply's priming and the tools' definitions). Each part is counted once and kept, keyed by a
hash of its content: the system prompt (the same bytes turn after turn, and with many skills the
longest message), each message of the history (unchanged once saved) and the tool list. So a
request counts exactly as it would in one piece, while a turn tokenizes only its new messages,
however long the history or the system prompt (issue 31: with 200 skills the request passed the
fitter's no-tokenizer bound and the whole history was tokenized on every count).

Imported by agent_turn only, after litellm_model (which sets litellm's offline options).
"""

from __future__ import annotations

import contextlib
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


MESSAGES_KEPT = 4096  # counted messages kept: a few chats' histories and system prompts
REQUESTS_KEPT = 8  # counted tool lists kept (with and without a system prompt)
_PROBE = {"role": "user", "content": "Hello."}


def _key(value: dict[str, Any] | list[dict[str, Any]]) -> int:
    """A key for a message or a tool list: the hash of its items, or of its JSON when it nests
    (tool calls, content parts). 64 bits: a collision would only miscount a request."""
    if isinstance(value, dict):
        with contextlib.suppress(TypeError):  # a value that is a list or a dict
            return hash(tuple(sorted(value.items())))
    return hash(json.dumps(value, sort_keys=True))


class LitellmTokenCounter:
    def __init__(self, model: str) -> None:
        self._model = model
        self.context_window = model_context_window(model)  # CONTEXT_WINDOW_TOKENS overrides it
        self._messages: dict[int, int] = {}
        self._requests: dict[tuple[int, bool], int] = {}
        self._bare: int | None = None  # what litellm counts for a request of no message

    def _tokens(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
    ) -> int:
        return int(litellm.token_counter(model=self._model, messages=messages, tools=tools))

    def _message(self, message: dict[str, Any]) -> int:
        """What one message adds to any request it is in."""
        key = _key(message)
        if key not in self._messages:
            if len(self._messages) >= MESSAGES_KEPT:
                self._messages.clear()
            if self._bare is None:
                self._bare = self._tokens([])
            self._messages[key] = self._tokens([message]) - self._bare
        return self._messages[key]

    def _request(self, tools: list[dict[str, Any]] | None, with_system: bool) -> int:
        """What a request adds once, whatever its messages: the reply's priming and the tools'
        definitions (litellm takes a little off those when a system prompt is present)."""
        key = (_key(tools or []), with_system)
        if key not in self._requests:
            if len(self._requests) >= REQUESTS_KEPT:
                self._requests.clear()
            probe = {**_PROBE, "role": "system"} if with_system else _PROBE
            self._requests[key] = self._tokens([probe], tools or None) - self._message(probe)
        return self._requests[key]

    def count(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
    ) -> int:
        try:
            with_system = any(message.get("role") == "system" for message in messages)
            return sum(map(self._message, messages)) + self._request(tools, with_system)
        except Exception as error:  # a tokenizer that fails must not fail the turn
            logger.warning("token count failed (%s): estimated", type(error).__name__)
            text = json.dumps([messages, tools or []], ensure_ascii=False)
            return len(text) // ESTIMATED_CHARS_PER_TOKEN

"""`TokenCounter` on litellm: its tokenizer for the model (tiktoken's bundled encodings for
most, offline), and its model map's context window.

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


class LitellmTokenCounter:
    def __init__(self, model: str) -> None:
        self._model = model
        self.context_window = model_context_window(model)  # CONTEXT_WINDOW_TOKENS overrides it

    def count(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
    ) -> int:
        try:
            return int(
                litellm.token_counter(model=self._model, messages=messages, tools=tools or None)
            )
        except Exception as error:  # a tokenizer that fails must not fail the turn
            logger.warning("token count failed (%s): estimated", type(error).__name__)
            text = json.dumps([messages, tools or []], ensure_ascii=False)
            return len(text) // ESTIMATED_CHARS_PER_TOKEN

"""`TokenCounter` on litellm: its tokenizer for the model (tiktoken's bundled encodings for
most, offline), and its model map's context window. For a model the map does not know, served
at an API base of the operator's (LLM_API_BASE, a preset's `api_base`), the window is asked of
that server once per container: an OpenAI-compatible server's model list may say what it serves
the model with (`served_context_window`); if it does not, or does not answer at once,
UNKNOWN_CONTEXT_WINDOW is assumed.

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
import functools
import json
import logging
from typing import Any

import litellm
import requests

logger = logging.getLogger(__name__)

# For a model litellm's map does not know (a local or proxied one): a common, modest window.
UNKNOWN_CONTEXT_WINDOW = 32_768
# When the tokenizer fails: fewer characters per token than prose has, so the estimate errs high.
ESTIMATED_CHARS_PER_TOKEN = 3
# How long the model list of a server may take to answer: the container waits for it once.
SERVED_WINDOW_TIMEOUT_SECONDS = 2.0
# What an entry of an OpenAI-compatible server's model list (GET /models) calls the window it
# serves the model with: vLLM's `max_model_len`; `context_length` (OpenRouter, Together) or
# `context_window` (Groq). Ollama, LM Studio and llama.cpp give only what the model was trained
# for, elsewhere, which may be more than they serve: CONTEXT_WINDOW_TOKENS says it for them.
SERVED_WINDOW_FIELDS = ("max_model_len", "context_length", "context_window")
_served_windows: dict[tuple[str, str], int | None] = {}  # by (API base, model): once a container


def model_context_window(
    model: str, api_base: str | None = None, api_key: str | None = None
) -> int:
    """The model's input limit in litellm's model map; else what the server at `api_base`
    says it serves the model with; else UNKNOWN_CONTEXT_WINDOW."""
    try:
        info = litellm.get_model_info(model)
        window = info.get("max_input_tokens") or info.get("max_tokens")
    except Exception:
        window = None
    if window:
        return int(window)
    served = served_context_window(api_base, model, api_key) if api_base else None
    if served:
        logger.info("context window of %s: %d, as its server says", model, served)
        return served
    logger.info("context window of %s unknown: %d assumed", model, UNKNOWN_CONTEXT_WINDOW)
    return UNKNOWN_CONTEXT_WINDOW


def served_context_window(api_base: str, model: str, api_key: str | None = None) -> int | None:
    """The window the OpenAI-compatible server at `api_base` lists `model` with (its entry, by
    the name litellm sends it under, or the only one listed), asked once per container; None
    when it lists none or does not answer within SERVED_WINDOW_TIMEOUT_SECONDS."""
    key = (api_base, model)
    if key not in _served_windows:
        _served_windows[key] = _ask_served_window(api_base, model, api_key)
    return _served_windows[key]


def _ask_served_window(api_base: str, model: str, api_key: str | None) -> int | None:
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        response = requests.get(
            f"{api_base.rstrip('/')}/models", headers=headers, timeout=SERVED_WINDOW_TIMEOUT_SECONDS
        )
        listed = response.json().get("data") if response.ok else None
    except (requests.RequestException, ValueError, AttributeError) as error:
        logger.info("the model list of %s's server did not answer: %s", model, type(error).__name__)
        return None
    if not isinstance(listed, list):
        return None
    served_as = model.split("/", 1)[-1]  # without litellm's provider prefix
    entries = [entry for entry in listed if isinstance(entry, dict)]
    named = [entry for entry in entries if entry.get("id") == served_as]
    entry = named[0] if named else entries[0] if len(entries) == 1 else {}
    for field in SERVED_WINDOW_FIELDS:
        value = entry.get(field)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


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
    def __init__(
        self, model: str, *, api_base: str | None = None, api_key: str | None = None
    ) -> None:
        """`api_base`, `api_key`: where the model is served, for a window litellm does not
        know (see the module's docstring)."""
        self._model = model
        self._api_base = api_base
        self._api_key = api_key
        self._messages: dict[int, int] = {}
        self._requests: dict[tuple[int, bool], int] = {}
        self._bare: int | None = None  # what litellm counts for a request of no message

    @functools.cached_property
    def context_window(self) -> int:
        """Found when first asked (CONTEXT_WINDOW_TOKENS, when set, is asked instead)."""
        return model_context_window(self._model, self._api_base, self._api_key)

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

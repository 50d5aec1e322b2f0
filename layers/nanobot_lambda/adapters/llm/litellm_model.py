"""`ChatModel` on litellm: any provider litellm supports, chosen by `LLM_MODEL`.

Importing this module imports litellm (about 3 s), so only agent_turn does, in its init phase.
litellm's own retries handle 429/5xx/timeouts (`LLM_NUM_RETRIES`); when they are spent, the
fallback models (`LLM_FALLBACK_MODELS`) are tried in order. Credentials go only to the provider
they belong to: a fallback of another provider never receives `LLM_API_KEY`.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any

# Before litellm is imported: use the bundled cost map instead of fetching it over the network.
# litellm then points TIKTOKEN_CACHE_DIR at the tiktoken encodings it bundles (o200k_base,
# cl100k_base); the /tmp default only serves tiktoken users imported before it.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("TIKTOKEN_CACHE_DIR", "/tmp/tiktoken")  # noqa: S108

import litellm

from nanobot_lambda.core.errors import ModelError
from nanobot_lambda.core.model import ModelReply, ToolCall, ToolChoice, Usage
from nanobot_lambda.settings import LlmSettings

litellm.suppress_debug_info = True
litellm.drop_params = True  # a setting a provider does not support is dropped, not an error
# Counting tokens for a llama or cohere model would download its tokenizer from Hugging Face at
# run time; the bundled tiktoken encodings count it offline (layers/smoke_test.py checks).
litellm.disable_hf_tokenizer_download = True
for _name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "httpx", "openai"):
    logging.getLogger(_name).setLevel(logging.WARNING)

logger = logging.getLogger(__name__)

MAX_ERROR_DETAIL_CHARS = 300


def provider_of(model: str) -> str:
    """litellm's provider prefix ("anthropic" of "anthropic/claude-…"; bare names are OpenAI)."""
    return model.split("/", 1)[0] if "/" in model else "openai"


class LitellmChatModel:
    def __init__(self, settings: LlmSettings) -> None:
        self._model = settings.llm_model
        self._fallbacks = settings.llm_fallback_models
        self._timeout = settings.llm_timeout_seconds
        self._num_retries = settings.llm_num_retries
        self._options: dict[str, Any] = {"max_tokens": settings.llm_max_tokens}
        if settings.llm_temperature is not None:
            self._options["temperature"] = settings.llm_temperature
        # Where and with which key LLM_MODEL is reached: its provider's settings only.
        self._credentials: dict[str, Any] = {}
        if settings.llm_api_base:
            self._credentials["api_base"] = settings.llm_api_base
        if settings.llm_api_key is not None:
            self._credentials["api_key"] = settings.llm_api_key.get_secret_value()

    def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        *,
        tool_choice: ToolChoice = None,
        timeout: float | None = None,
    ) -> ModelReply:
        deadline = None if timeout is None else time.monotonic() + timeout
        failures = []
        for model in (self._model, *self._fallbacks):
            budget = None if deadline is None else deadline - time.monotonic()
            if budget is not None and budget <= 0:
                failures.append(f"{model}: no time left")
                break
            try:
                response = self._completion(model, messages, tools, tool_choice, budget)
            except Exception as error:
                failures.append(f"{model}: {self._describe(error)}")
                if model != (self._fallbacks or (self._model,))[-1]:
                    logger.warning("model %s failed; trying the next fallback", model)
                continue
            if model != self._model:
                logger.warning("answered by fallback model %s", model)
            return self._reply(response)
        raise ModelError("; ".join(failures))

    def _completion(
        self,
        model: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        tool_choice: ToolChoice,
        budget: float | None,
    ) -> Any:
        options = dict(self._options)
        if provider_of(model) == provider_of(self._model):
            options.update(self._credentials)
        if tool_choice is not None:
            options["tool_choice"] = tool_choice
        if uses_prompt_cache_markers(model):
            messages = mark_system_prompt_for_caching(messages)
        attempt_timeout = self._timeout
        if budget is not None:  # each attempt gets its share, so retries end within it too
            attempt_timeout = min(self._timeout, budget / (self._num_retries + 1))
        return litellm.completion(
            model=model,
            messages=messages,
            tools=tools or None,
            timeout=attempt_timeout,
            num_retries=self._num_retries,
            **options,
        )

    def _reply(self, response: Any) -> ModelReply:
        choice = response.choices[0]
        message = choice.message
        tool_calls = tuple(
            ToolCall(
                id=call.id or f"call_{index}",
                name=call.function.name or "",
                arguments=call.function.arguments or "{}",
            )
            for index, call in enumerate(message.tool_calls or [])
        )
        blocks = getattr(message, "thinking_blocks", None) or []
        return ModelReply(
            content=message.content,
            tool_calls=tool_calls,
            usage=_usage(response),
            reasoning_content=getattr(message, "reasoning_content", None) or None,
            thinking_blocks=tuple(dict(block) for block in blocks),
        )

    def _describe(self, error: Exception) -> str:
        """Kind, status and the start of the provider's explanation, with the API key masked.

        The explanation is what tells an operator to fix a key or a model name; it is cut short
        because some providers quote part of the request in it.
        """
        status = getattr(error, "status_code", None)
        detail = " ".join(str(error).split())[:MAX_ERROR_DETAIL_CHARS]
        key = self._credentials.get("api_key")
        if key:
            detail = detail.replace(key, "<api-key>")
        return f"{type(error).__name__} (status {status}): {detail}"


def uses_prompt_cache_markers(model: str) -> bool:
    """Claude models (Anthropic, Bedrock, Vertex, OpenRouter) cache a prefix only where told
    to; OpenAI-style providers cache automatically and may reject the markers."""
    return "claude" in model.lower() or model.lower().startswith("anthropic/")


def mark_system_prompt_for_caching(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The system prompt as a content block with `cache_control`: tools and system prompt,
    byte-stable across turns, are then read from the provider's cache at a tenth of the price."""
    marked = []
    for message in messages:
        if message.get("role") == "system" and isinstance(message.get("content"), str):
            block = {
                "type": "text",
                "text": message["content"],
                "cache_control": {"type": "ephemeral"},
            }
            message = {**message, "content": [block]}
        marked.append(message)
    return marked


def _usage(response: Any) -> Usage:
    usage = getattr(response, "usage", None)
    if usage is None:
        return Usage()
    details = getattr(usage, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", 0) or 0
    try:
        cost: float | None = float(litellm.completion_cost(completion_response=response))
    except Exception:
        cost = None  # unknown model or price: usage is still recorded without cost
    return Usage(
        prompt_tokens=usage.prompt_tokens or 0,
        completion_tokens=usage.completion_tokens or 0,
        cached_tokens=cached,
        cost_usd=cost,
    )

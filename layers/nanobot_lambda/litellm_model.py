"""`ChatModel` on litellm: any provider litellm supports, chosen by `LLM_MODEL`.

Importing this module imports litellm (about 3 s), so only agent_turn does, in its init phase.
litellm's own retries handle 429/5xx/timeouts (`LLM_NUM_RETRIES`).
"""

from __future__ import annotations

import logging
import os
from typing import Any

# Before litellm is imported: use the bundled cost map instead of fetching it over the network,
# and keep tiktoken's cache in Lambda's only writable directory.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("TIKTOKEN_CACHE_DIR", "/tmp/tiktoken")  # noqa: S108

import litellm

from nanobot_lambda.model import ModelError, ModelReply, ToolCall, ToolChoice, Usage
from nanobot_lambda.settings import LlmSettings

litellm.suppress_debug_info = True
litellm.drop_params = True  # a setting a provider does not support is dropped, not an error
for _name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "httpx", "openai"):
    logging.getLogger(_name).setLevel(logging.WARNING)

logger = logging.getLogger(__name__)

MAX_ERROR_DETAIL_CHARS = 300


class LitellmChatModel:
    def __init__(self, settings: LlmSettings) -> None:
        self._model = settings.llm_model
        self._options: dict[str, Any] = {
            "max_tokens": settings.llm_max_tokens,
            "timeout": settings.llm_timeout_seconds,
            "num_retries": settings.llm_num_retries,
        }
        if settings.llm_api_base:
            self._options["api_base"] = settings.llm_api_base
        if settings.llm_api_key is not None:
            self._options["api_key"] = settings.llm_api_key.get_secret_value()
        if settings.llm_temperature is not None:
            self._options["temperature"] = settings.llm_temperature
        self._cache_system_prompt = uses_prompt_cache_markers(settings.llm_model)

    def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        *,
        tool_choice: ToolChoice = None,
    ) -> ModelReply:
        extra: dict[str, Any] = {} if tool_choice is None else {"tool_choice": tool_choice}
        if self._cache_system_prompt:
            messages = mark_system_prompt_for_caching(messages)
        try:
            response = litellm.completion(
                model=self._model,
                messages=messages,
                tools=tools or None,
                **extra,
                **self._options,
            )
        except Exception as error:
            raise ModelError(self._describe(error)) from None
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
        key = self._options.get("api_key")
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

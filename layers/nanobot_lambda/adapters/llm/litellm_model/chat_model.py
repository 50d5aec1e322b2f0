"""`LitellmChatModel`: the `ChatModel` port on litellm, composed of the package's parts.

A completion tries LLM_MODEL (or the model asked for) and then its fallbacks in order; each model
gets its call options (credentials only for their provider, a reasoning effort in its own
words, cache breakpoints for Claude), its attempts (retries.py), and, given `on_text`, is read
as a stream (streaming.py), opened again whole when it breaks midway.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

import litellm

from nanobot_lambda.adapters.llm.http_responses import responses_closed_at_the_end
from nanobot_lambda.adapters.llm.litellm_model.prompt_cache import (
    mark_cache_breakpoints,
    uses_prompt_cache_markers,
)
from nanobot_lambda.adapters.llm.litellm_model.providers import is_claude, provider_of
from nanobot_lambda.adapters.llm.litellm_model.reasoning import reasoning_options
from nanobot_lambda.adapters.llm.litellm_model.retries import with_retries
from nanobot_lambda.adapters.llm.litellm_model.streaming import TextStreamError, read_stream
from nanobot_lambda.adapters.llm.model_errors import connection_refused, setup_problem
from nanobot_lambda.core.errors import ModelError
from nanobot_lambda.core.model import (
    REASONING_EFFORTS,
    CompletionRequest,
    ModelReply,
    TextStream,
    ToolCall,
    ToolChoice,
    Usage,
)
from nanobot_lambda.core.redaction import Redactor
from nanobot_lambda.settings import LlmSettings

logger = logging.getLogger(__name__)

MAX_ERROR_DETAIL_CHARS = 300


class LitellmChatModel:
    def __init__(
        self,
        settings: LlmSettings,
        model: str | None = None,
        *,
        options: Mapping[str, Any] | None = None,
    ) -> None:
        """LLM_MODEL with its fallbacks; or `model` (a cheaper one for background work, e.g.
        HEARTBEAT_MODEL, or a chat's /model preset), falling back to LLM_MODEL and its
        fallbacks. `options` are `model`'s own call options (a preset's temperature, max_tokens,
        reasoning_effort, api_base); the fallbacks are called without them."""
        self._model = model or settings.llm_model
        self._own_options = dict(options or {})
        # The model's own thinking level (a /think choice) is asked like a call's (see
        # `reasoning_options`), not passed to litellm as it is.
        self._own_effort: str | None = self._own_options.pop("reasoning_effort", None)
        self._fallbacks = tuple(
            name
            for name in dict.fromkeys((settings.llm_model, *settings.llm_fallback_models))
            if name != self._model
        )
        # LLM_API_KEY and LLM_API_BASE belong to LLM_MODEL's provider, whichever model is asked.
        self._keyed_provider = provider_of(settings.llm_model)
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
        # Masks the key in error descriptions, by the rules of the logs (core/redaction.py).
        self._redactor = Redactor()
        self._redactor.add([self._credentials.get("api_key", "")])

    def complete(self, request: CompletionRequest) -> ModelReply:
        messages, tools, tool_choice = request.messages, request.tools, request.tool_choice
        timeout, on_text = request.timeout, request.on_text
        for asked in (request.reasoning_effort, self._own_effort):
            if asked is not None and asked not in REASONING_EFFORTS:
                raise ValueError(
                    f"reasoning_effort {asked!r} is none of {', '.join(REASONING_EFFORTS)}"
                )
        deadline = None if timeout is None else time.monotonic() + timeout
        failures: list[str] = []
        problems: list[str | None] = []  # each failed model's setup problem, if it has one
        for model in (self._model, *self._fallbacks):
            budget = None if deadline is None else deadline - time.monotonic()
            if budget is not None and budget <= 0:
                failures.append(f"{model}: no time left")
                problems.append(None)
                break
            effort = request.reasoning_effort
            if effort is None and model == self._model:
                effort = self._own_effort
            thinking = reasoning_options(model, effort, tool_choice)
            try:
                if on_text is None:
                    response = self._completion(
                        model, messages, tools, tool_choice, budget, **thinking
                    )
                else:
                    response = self._streamed(
                        model, messages, tools, tool_choice, deadline, on_text, thinking
                    )
            except TextStreamError as failed:
                raise failed.error from None
            except Exception as error:
                failures.append(f"{model}: {self._describe(error, model)}")
                problems.append(setup_problem(model, error))
                if model != (self._fallbacks or (self._model,))[-1]:
                    logger.warning("model %s failed; trying the next fallback", model)
                continue
            if model != self._model:
                logger.warning("answered by fallback model %s", model)
            return self._reply(response, model)
        # A setup problem only if no model may answer later: the first model's is the owner's.
        permanent = all(problems)
        raise ModelError("; ".join(failures), setup_problem=problems[0] if permanent else None)

    def _completion(
        self,
        model: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        tool_choice: ToolChoice,
        budget: float | None,
        retries: int | None = None,
        **extra: Any,
    ) -> Any:
        options = self._call_options(model, tool_choice, extra)
        if uses_prompt_cache_markers(model):
            messages = mark_cache_breakpoints(messages)

        def attempt(timeout: float) -> Any:
            # Retried here, not by litellm: its wrapper for num_retries needs tenacity and would
            # stack on the provider SDK's own retries (max_retries).
            return litellm.completion(
                model=model,
                messages=messages,
                tools=tools or None,
                timeout=timeout,
                num_retries=0,
                max_retries=0,
                **options,
            )

        return with_retries(
            attempt,
            retries=self._num_retries if retries is None else retries,
            timeout=self._timeout,
            budget=budget,
            failed=lambda error: f"model {model} failed ({self._describe(error)})",
        )

    def _call_options(
        self, model: str, tool_choice: ToolChoice, extra: dict[str, Any]
    ) -> dict[str, Any]:
        """litellm's options for a call of `model`: the settings', its provider's credentials
        (LLM_MODEL's provider only), the model's own (a preset's) and the call's."""
        options = dict(self._options, **extra)
        if provider_of(model) == self._keyed_provider:
            options.update(self._credentials)
        if model == self._model:
            options.update(self._own_options)
        if "thinking_budget" in options:  # see reasoning_options
            options["max_tokens"] += options.pop("thinking_budget")
            if is_claude(model):
                options.pop("temperature", None)  # Claude thinks only at its default (1)
        if tool_choice is not None:
            options["tool_choice"] = tool_choice
        return options

    def _streamed(
        self,
        model: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        tool_choice: ToolChoice,
        deadline: float | None,
        on_text: TextStream,
        thinking: dict[str, Any],
    ) -> Any:
        """The completion streamed, its text so far given to `on_text` as it grows.

        `_completion` retries the opening; a stream that fails while it is read is opened again
        (with the retries left), and `on_text` then starts again from the beginning. litellm's
        timeout bounds each read of a stream, not the whole: the deadline is checked between
        chunks, so a stream that trickles ends with the budget (a stalled one at most one read
        timeout, the attempt's share of the budget, later).
        """
        retries = self._num_retries
        while True:
            budget = None if deadline is None else deadline - time.monotonic()
            with responses_closed_at_the_end():  # before the stream is opened again
                stream = self._completion(
                    model,
                    messages,
                    tools,
                    tool_choice,
                    budget,
                    retries,
                    stream=True,
                    stream_options={"include_usage": True},
                    **thinking,
                )
                try:
                    return read_stream(stream, messages, deadline, on_text)
                except TextStreamError:
                    raise
                except Exception as error:
                    if retries == 0 or (deadline is not None and time.monotonic() >= deadline):
                        raise
                    retries -= 1
                    logger.warning(
                        "stream of %s failed (%s); retrying", model, self._describe(error)
                    )

    def _reply(self, response: Any, model: str) -> ModelReply:
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
            content=message.content or None,  # "" from some providers when only tools were called
            tool_calls=tool_calls,
            usage=_usage(response),
            reasoning_content=getattr(message, "reasoning_content", None) or None,
            thinking_blocks=tuple(dict(block) for block in blocks),
            model=model,
        )

    def _describe(self, error: Exception, model: str | None = None) -> str:
        """Kind, status and the start of the provider's explanation, with the API key masked.

        The explanation is what tells an operator to fix a key or a model name; it is cut short
        because some providers quote part of the request in it. Nothing listening at the
        address is said as such (with LLM_API_BASE, if `model` is sent there): litellm gives it
        a status 500 of its own.
        """
        if connection_refused(error):
            where = self._credentials.get("api_base")
            if where and model is not None and provider_of(model) == self._keyed_provider:
                at = f" at {self._redactor.redact(where)}"
            else:
                at = ""
            return f"connection refused{at} (is the server running?)"
        status, kind = getattr(error, "status_code", None), type(error).__name__
        # litellm starts its messages with the kind, once or twice ("litellm.NotFoundError:
        # NotFoundError: OpenAIException - …"): said once, before the status.
        detail = " ".join(str(error).split())
        detail = detail.removeprefix(f"litellm.{kind}: ").removeprefix(f"{kind}: ")
        # Masked before it is cut: a key cut in two would be no whole value to mask.
        detail = self._redactor.redact(detail)[:MAX_ERROR_DETAIL_CHARS]
        return f"{kind} (status {status}): {detail}"


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

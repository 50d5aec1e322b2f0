"""`ChatModel` on litellm: any provider litellm supports, chosen by `LLM_MODEL`.

Importing this module imports litellm (about 3 s), so only agent_turn does, in its init phase.
Failures that may pass (429, 5xx, time-outs, lost connections) are retried here
(`LLM_NUM_RETRIES`, with a doubling pause); when the retries are spent, the fallback models
(`LLM_FALLBACK_MODELS`) are tried in order. Credentials go only to the provider
they belong to: a fallback of another provider never receives `LLM_API_KEY`.

Given `on_text`, a completion is streamed: a failure to open the stream is retried like any
other, a stream that breaks midway (or ends without a finish_reason) is retried whole, and
the time budget is checked between chunks.

Claude models (Anthropic, Bedrock, Vertex, OpenRouter) cache a prompt prefix only where the
request says so, so each request to one carries cache breakpoints (`mark_cache_breakpoints`):
after the system prompt, at the end of the history and on the last message. The history is sent
byte for byte as before (`core/context.py`), so a warm turn reads nearly all its input from the
cache; the tokens read show as cached tokens in the usage.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import time
import uuid
from typing import Any

# Before litellm is imported: use the bundled cost map instead of fetching it over the network.
# litellm then points TIKTOKEN_CACHE_DIR at the tiktoken encodings it bundles (o200k_base,
# cl100k_base); the /tmp default only serves tiktoken users imported before it.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("TIKTOKEN_CACHE_DIR", "/tmp/tiktoken")  # noqa: S108

import litellm

from nanobot_lambda.core.errors import ModelError
from nanobot_lambda.core.model import ModelReply, TextStream, ToolCall, ToolChoice, Usage
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
# Between attempts of one model (LLM_NUM_RETRIES): doubling, as the provider SDKs do.
RETRY_FIRST_PAUSE = 0.5
RETRY_MAX_PAUSE = 8.0
# Statuses worth another attempt: time-outs, conflicts, rate limits, server errors.
_RETRYABLE_STATUSES = {408, 409, 429}


# What litellm's first completion imports: the OpenAI SDK (litellm's client for OpenAI and the
# many OpenAI-compatible providers) loads its resources at the first `client.chat`, about half
# a second that a container's first turn would otherwise pay before its first token.
FIRST_USE_MODULES = ("openai.resources",)


def import_first_use_modules() -> None:
    for name in FIRST_USE_MODULES:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)


# litellm's HTTP clients: singletons it makes on first use and keeps in its module (each with
# a pool of open connections), and remakes when the name is missing (litellm/_lazy_imports.py).
_CONNECTION_SINGLETONS = (
    "in_memory_llm_clients_cache",
    "module_level_client",
    "module_level_aclient",
)


def forget_connections() -> list[str]:
    """Drop litellm's HTTP clients (after a SnapStart restore, their sockets are the snapshotted
    machine's): the next request makes new ones. Returns the names that were held."""
    held = vars(litellm)
    return [name for name in _CONNECTION_SINGLETONS if held.pop(name, None) is not None]


class IncompleteStreamError(Exception):
    """A stream that ended without a finish_reason: the reply may be cut short."""


class _TextStreamError(Exception):
    """`on_text` itself failed: not the model's fault, so neither retried nor a ModelError."""

    def __init__(self, error: Exception) -> None:
        super().__init__(error)
        self.error = error


def provider_of(model: str) -> str:
    """litellm's provider prefix ("anthropic" of "anthropic/claude-…"; bare names are OpenAI)."""
    return model.split("/", 1)[0] if "/" in model else "openai"


class LitellmChatModel:
    def __init__(self, settings: LlmSettings, model: str | None = None) -> None:
        """LLM_MODEL with its fallbacks; or `model` (a cheaper one for background work, e.g.
        HEARTBEAT_MODEL), falling back to LLM_MODEL and its fallbacks."""
        self._model = model or settings.llm_model
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

    def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        *,
        tool_choice: ToolChoice = None,
        timeout: float | None = None,
        on_text: TextStream | None = None,
    ) -> ModelReply:
        deadline = None if timeout is None else time.monotonic() + timeout
        failures = []
        for model in (self._model, *self._fallbacks):
            budget = None if deadline is None else deadline - time.monotonic()
            if budget is not None and budget <= 0:
                failures.append(f"{model}: no time left")
                break
            try:
                if on_text is None:
                    response = self._completion(model, messages, tools, tool_choice, budget)
                else:
                    response = self._streamed(
                        model, messages, tools, tool_choice, deadline, on_text
                    )
            except _TextStreamError as failed:
                raise failed.error from None
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
        retries: int | None = None,
        **extra: Any,
    ) -> Any:
        retries = self._num_retries if retries is None else retries
        options = dict(self._options, **extra)
        if provider_of(model) == self._keyed_provider:
            options.update(self._credentials)
        if tool_choice is not None:
            options["tool_choice"] = tool_choice
        if uses_prompt_cache_markers(model):
            messages = mark_cache_breakpoints(messages)
        attempt_timeout = self._timeout
        deadline = None if budget is None else time.monotonic() + budget
        if budget is not None:  # each attempt gets its share, so retries end within it too
            attempt_timeout = min(self._timeout, budget / (retries + 1))
        for attempt in range(retries + 1):
            try:
                # Retried here, not by litellm: its wrapper for num_retries needs tenacity and
                # would stack on the provider SDK's own retries (max_retries).
                return litellm.completion(
                    model=model,
                    messages=messages,
                    tools=tools or None,
                    timeout=attempt_timeout,
                    num_retries=0,
                    max_retries=0,
                    **options,
                )
            except Exception as error:
                pause = min(RETRY_MAX_PAUSE, RETRY_FIRST_PAUSE * 2**attempt)
                if attempt == retries or not _retryable(error):
                    raise
                if deadline is not None and time.monotonic() + pause >= deadline:
                    raise
                logger.warning("model %s failed (%s); retrying", model, self._describe(error))
                time.sleep(pause)
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _streamed(
        self,
        model: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        tool_choice: ToolChoice,
        deadline: float | None,
        on_text: TextStream,
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
            stream = self._completion(
                model,
                messages,
                tools,
                tool_choice,
                budget,
                retries,
                stream=True,
                stream_options={"include_usage": True},
            )
            try:
                return _read_stream(stream, messages, deadline, on_text)
            except _TextStreamError:
                raise
            except Exception as error:
                if retries == 0 or (deadline is not None and time.monotonic() >= deadline):
                    raise
                retries -= 1
                logger.warning("stream of %s failed (%s); retrying", model, self._describe(error))

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


def _retryable(error: Exception) -> bool:
    """A failure another attempt may cure: no HTTP status (a connection error, a time-out), or
    one of the transient ones. A refused key, a bad request or a missing model is not."""
    status = getattr(error, "status_code", None)
    return not isinstance(status, int) or status in _RETRYABLE_STATUSES or status >= 500


def uses_prompt_cache_markers(model: str) -> bool:
    """Claude models (Anthropic, Bedrock, Vertex, OpenRouter) cache a prefix only where told
    to; OpenAI-style providers cache automatically and may reject the markers."""
    return "claude" in model.lower() or model.lower().startswith("anthropic/")


MAX_CACHE_BREAKPOINTS = 4  # Anthropic rejects a request with more blocks marked
CACHE_CONTROL = {"type": "ephemeral"}
_MARKABLE_BLOCKS = {"text", "image_url", "file", "document"}  # carried by litellm to the wire


def mark_cache_breakpoints(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`messages` with cache breakpoints (`cache_control`) where a Claude model should cache:

    1. the system message: tools and system prompt, stable across turns;
    2. the end of the history, the message before the last user message (the current one; the
       tool loop adds its assistant and tool messages after it): the next turn reads it back;
    3. the last message (the user message, later the newest tool result), so the next call of
       the turn, and the next turn, find all of this request cached.

    A provider caches only where told, and a breakpoint hits only if everything before it is
    byte-identical: the history is sent as first sent (`core/context.py`). Marked messages are
    copies; the caller's dicts, saved to the session afterwards, are never changed. A message
    that cannot carry a marker on the wire (an assistant message with only tool calls, empty
    text) hands its breakpoint to the nearest earlier one that can. At most
    MAX_CACHE_BREAKPOINTS in all, counting markers the messages already carry.
    """
    marked = list(messages)
    budget = MAX_CACHE_BREAKPOINTS - sum(_markers(message) for message in messages)
    users = [index for index, message in enumerate(messages) if message.get("role") == "user"]
    systems = [index for index, message in enumerate(messages) if message.get("role") == "system"]
    wanted = [  # by value, should the budget not cover all three
        systems[-1] if systems else None,
        len(messages) - 1,
        users[-1] - 1 if users else None,
    ]
    done: set[int] = set()
    for target in wanted:
        if budget <= 0 or target is None:
            continue
        index = _markable_at_or_before(marked, target, done)
        if index is None:
            continue
        marked[index] = _with_marker(marked[index])
        done.add(index)
        budget -= 1
    return marked


def _markable_at_or_before(
    messages: list[dict[str, Any]], index: int, done: set[int]
) -> int | None:
    """The nearest message at or before `index` that can carry a marker and has none; a system
    message only as its own target (the end of a history that is only a system prompt is
    covered by the system breakpoint already)."""
    for candidate in range(index, -1, -1):
        message = messages[candidate]
        if candidate in done or _markers(message):
            return None  # already a breakpoint there: nothing to add
        if message.get("role") == "system" and candidate != index:
            return None
        if _can_carry_marker(message):
            return candidate
    return None


def _can_carry_marker(message: dict[str, Any]) -> bool:
    role, content = message.get("role"), message.get("content")
    if role == "tool":
        return True  # message-level marker: litellm puts it on the tool_result block
    if isinstance(content, str):
        return bool(content.strip())  # litellm drops (assistant) or replaces (user) blank text
    if isinstance(content, list) and content and isinstance(content[-1], dict):
        block = content[-1]
        kind = block.get("type")
        if kind == "text":
            return bool(str(block.get("text") or "").strip())
        return role != "assistant" and kind in _MARKABLE_BLOCKS
    return False  # None: an assistant message with only tool calls, whose marker litellm drops


def _with_marker(message: dict[str, Any]) -> dict[str, Any]:
    """A copy of `message` marked: on its last content block, or (a tool message) itself."""
    content = message.get("content")
    if message.get("role") == "tool":
        return {**message, "cache_control": dict(CACHE_CONTROL)}
    if isinstance(content, str):
        block = {"type": "text", "text": content, "cache_control": dict(CACHE_CONTROL)}
        return {**message, "content": [block]}
    blocks: list[Any] = list(content or [])  # a list: checked by _can_carry_marker
    blocks[-1] = {**blocks[-1], "cache_control": dict(CACHE_CONTROL)}
    return {**message, "content": blocks}


def _markers(message: dict[str, Any]) -> int:
    """How many breakpoints `message` carries already (the caller's own)."""
    content = message.get("content")
    blocks = content if isinstance(content, list) else []
    in_blocks = sum(isinstance(block, dict) and "cache_control" in block for block in blocks)
    return int("cache_control" in message) + in_blocks


def _read_stream(
    stream: Any, messages: list[dict[str, Any]], deadline: float | None, on_text: TextStream
) -> Any:
    """The complete response from a litellm stream, feeding `on_text` whenever the text grows.

    Raises what litellm raises when the stream breaks (a reset connection or a provider's error
    event: `MidStreamFallbackError`), TimeoutError past the deadline, and IncompleteStreamError
    when the stream ends without the provider's finish_reason (litellm then makes one up).
    """
    chunks, text = [], ""
    try:
        for chunk in stream:
            chunks.append(chunk)
            delta = chunk.choices[0].delta if chunk.choices else None
            if piece := getattr(delta, "content", None):
                text += piece
                try:
                    on_text(text)
                except Exception as error:
                    raise _TextStreamError(error) from error
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError("the stream outlasted the time budget")
    finally:
        # litellm's stream has no close of its own; let go of the provider's connection.
        with contextlib.suppress(Exception):
            stream.completion_stream.close()
    if not getattr(stream, "received_finish_reason", None):
        raise IncompleteStreamError("the stream ended without a finish_reason")
    _name_tool_calls(chunks)
    response: Any = litellm.stream_chunk_builder(chunks, messages=messages)
    message = response.choices[0].message
    message.content = message.content or None  # "" when only tools were called
    return response


def _name_tool_calls(chunks: list[Any]) -> None:
    """Give an id to each streamed tool call that came without one: litellm names those of a
    reply not streamed, but stream_chunk_builder drops a tool call that has no id."""
    first: dict[int, Any] = {}  # the first delta of each tool call, by its index
    named: set[int] = set()
    for chunk in chunks:
        delta = chunk.choices[0].delta if chunk.choices else None
        for call in getattr(delta, "tool_calls", None) or []:
            index = getattr(call, "index", 0) or 0
            first.setdefault(index, call)
            if getattr(call, "id", None):
                named.add(index)
    for index, call in first.items():
        if index not in named:
            call.id = f"call_{uuid.uuid4().hex[:24]}"


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

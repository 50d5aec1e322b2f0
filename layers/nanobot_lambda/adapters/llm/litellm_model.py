"""`ChatModel` on litellm: any provider litellm supports, chosen by `LLM_MODEL`.

Importing this module imports litellm (about 3 s), so only agent_turn does, in its init phase.
Failures that may pass (429, 5xx, time-outs, lost connections) are retried here
(`LLM_NUM_RETRIES`, with a doubling pause); when the retries are spent, the fallback models
(`LLM_FALLBACK_MODELS`) are tried in order. Credentials go only to the provider
they belong to: a fallback of another provider never receives `LLM_API_KEY`.

Given `on_text`, a completion is streamed: a failure to open the stream is retried like any
other, a stream that breaks midway (or ends without a finish_reason) is retried whole, and
the time budget is checked between chunks. A stream is complete when the provider said so (a
chunk of its own with a finish reason), whatever litellm makes of it (`_ProviderEnding`).

`reasoning_effort` ("off", "low", "medium", "high"; None: the provider's default) becomes
litellm's `reasoning_effort`, which each provider's translation turns into its own setting
(Anthropic's and Bedrock's thinking budget, Gemini's thinkingConfig, OpenAI's reasoning_effort);
see `reasoning_options` for what "off" is per provider and where litellm needs help. Thinking
comes back apart from the text (`reasoning_content`, `thinking_blocks` with their signatures;
Gemini's thought signature rides in the tool call's id) and never reaches `on_text`.

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
import time
import uuid
from collections.abc import Mapping
from typing import Any

# The package's __init__ has imported litellm with its offline options (the bundled cost map,
# tiktoken's bundled encodings), its pydantic models built on first use and its debug notes off.
import litellm
from litellm import constants as litellm_constants
from litellm.llms.vertex_ai.gemini.vertex_and_google_ai_studio_gemini import (
    ModelResponseIterator as GeminiStreamParser,
)

from nanobot_lambda.adapters.llm.http_responses import responses_closed_at_the_end
from nanobot_lambda.adapters.llm.model_errors import connection_refused, setup_problem
from nanobot_lambda.core.errors import ModelError
from nanobot_lambda.core.model import (
    REASONING_EFFORTS,
    ModelReply,
    TextStream,
    ToolCall,
    ToolChoice,
    Usage,
)
from nanobot_lambda.core.redaction import Redactor
from nanobot_lambda.settings import LlmSettings

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


# What litellm's first completion imports, imported at init instead: into the snapshot under
# SnapStart, and for keep-warm into the ping's init. httpcore, which httpx imports when litellm
# makes its first HTTP client (about 0.1 s), for every model. The OpenAI SDK's resources (about
# a third of a second) only for the providers litellm reaches through that SDK (OpenAI and its
# compatible servers as `openai/`, Azure): it loads them all at the first `client.chat`. Other
# providers never import them, so importing them at init would only lengthen a cold start.
FIRST_USE_MODULES = ("httpcore",)
OPENAI_SDK_MODULES = ("openai.resources",)
OPENAI_SDK_PROVIDERS = frozenset({"openai", "azure", "text-completion-openai", "azure_text"})


def import_first_use_modules(model: str) -> None:
    """What the first completion of `model` (LLM_MODEL) would import, now."""
    names = list(FIRST_USE_MODULES)
    if provider_of(model) in OPENAI_SDK_PROVIDERS:
        names += OPENAI_SDK_MODULES
    for name in names:
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

    def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        *,
        tool_choice: ToolChoice = None,
        timeout: float | None = None,
        on_text: TextStream | None = None,
        reasoning_effort: str | None = None,
    ) -> ModelReply:
        for asked in (reasoning_effort, self._own_effort):
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
            effort = reasoning_effort
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
            except _TextStreamError as failed:
                raise failed.error from None
            except Exception as error:
                failures.append(f"{model}: {self._describe(error, model)}")
                problems.append(setup_problem(model, error))
                if model != (self._fallbacks or (self._model,))[-1]:
                    logger.warning("model %s failed; trying the next fallback", model)
                continue
            if model != self._model:
                logger.warning("answered by fallback model %s", model)
            return self._reply(response)
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
        retries = self._num_retries if retries is None else retries
        options = dict(self._options, **extra)
        if provider_of(model) == self._keyed_provider:
            options.update(self._credentials)
        if model == self._model:
            options.update(self._own_options)
        if "thinking_budget" in options:  # see reasoning_options
            options["max_tokens"] += options.pop("thinking_budget")
            if _is_claude(model):
                options.pop("temperature", None)  # Claude thinks only at its default (1)
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
                    return _read_stream(stream, messages, deadline, on_text)
                except _TextStreamError:
                    raise
                except Exception as error:
                    if retries == 0 or (deadline is not None and time.monotonic() >= deadline):
                        raise
                    retries -= 1
                    logger.warning(
                        "stream of %s failed (%s); retrying", model, self._describe(error)
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
            content=message.content or None,  # "" from some providers when only tools were called
            tool_calls=tool_calls,
            usage=_usage(response),
            reasoning_content=getattr(message, "reasoning_content", None) or None,
            thinking_blocks=tuple(dict(block) for block in blocks),
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


def _retryable(error: Exception) -> bool:
    """A failure another attempt may cure: no HTTP status (a connection error, a time-out), or
    one of the transient ones. A refused key, a bad request or a missing model is not."""
    status = getattr(error, "status_code", None)
    return not isinstance(status, int) or status in _RETRYABLE_STATUSES or status >= 500


# litellm's thinking budgets for its reasoning efforts (Anthropic, Bedrock, Gemini 2.5): they
# count against max_tokens, so they are added to it (LLM_MAX_TOKENS stays the answer's).
THINKING_BUDGETS = {
    "low": litellm_constants.DEFAULT_REASONING_EFFORT_LOW_THINKING_BUDGET,
    "medium": litellm_constants.DEFAULT_REASONING_EFFORT_MEDIUM_THINKING_BUDGET,
    "high": litellm_constants.DEFAULT_REASONING_EFFORT_HIGH_THINKING_BUDGET,
}


def reasoning_options(model: str, effort: str | None, tool_choice: ToolChoice) -> dict[str, Any]:
    """litellm's options for `effort` with `model` (`thinking_budget` is the adapter's own: it is
    added to max_tokens, since litellm caps nothing: "high" is a budget of 4096, and Anthropic
    refuses a max_tokens of 4096 that is not greater than it).

    "off" is what turns thinking off where the model allows it: "none" (Anthropic, Bedrock's
    Claude, gpt-5.1 and later), "disable" (Gemini: a budget of 0, or the lowest level of
    Gemini 3); where it does not, the least it allows ("minimal": gpt-5, Gemini 2.5 Pro; "low":
    o-series). A model litellm knows as one that does not reason gets nothing. A model it does
    not know (a local server's) gets the effort asked, which it may use (vLLM's gpt-oss) or
    ignore, but nothing for "off": there is no common word for it, and such a server may refuse
    one it does not know. Claude refuses thinking with a forced tool call (consolidation), so it
    is not asked to think then.
    """
    if effort is None:
        return {}
    reasons = litellm.supports_reasoning(model)
    forced = tool_choice not in (None, "auto", "none")
    if effort == "off" or (forced and _is_claude(model)):
        return {"reasoning_effort": _least_effort(model)} if reasons else {}
    if not reasons and _model_info(model):
        return {}  # litellm knows it: a model that does not reason
    return {"reasoning_effort": effort, "thinking_budget": THINKING_BUDGETS[effort]}


def _least_effort(model: str) -> str:
    provider, name = provider_of(model), model.lower()
    if provider in ("gemini", "vertex_ai"):
        return "minimal" if "gemini-2.5-pro" in name else "disable"
    if provider == "openai":
        info = _model_info(model)
        if info.get("supports_none_reasoning_effort"):
            return "none"
        return "minimal" if info.get("supports_minimal_reasoning_effort") else "low"
    return "none"


def _model_info(model: str) -> dict[str, Any]:
    try:
        return dict(litellm.get_model_info(model))
    except Exception:
        return {}  # not in litellm's model map


def _is_claude(model: str) -> bool:
    return "claude" in model.lower()


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
    ending = _ProviderEnding(stream)
    # However the read ends, the caller closes the provider's response (http_responses.py):
    # litellm's stream has no close of its own.
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
    if not ending.seen:
        raise IncompleteStreamError("the stream ended without a finish_reason")
    _name_tool_calls(chunks)
    response: Any = litellm.stream_chunk_builder(chunks, messages=messages)
    message = response.choices[0].message
    message.content = message.content or None  # "" when only tools were called
    if thinking := _streamed_thinking_blocks(chunks):
        message.thinking_blocks = thinking
    return response


def _streamed_thinking_blocks(chunks: list[Any]) -> list[dict[str, Any]]:
    """The thinking blocks of a streamed reply, each as the provider sent it.

    A block must go back to the provider unchanged (its signature covers its text), but
    litellm's stream_chunk_builder joins every piece of thinking the chunks carry, and its
    Anthropic parser sends the whole text again with the signature: each block would go back
    with its text twice, and Anthropic would refuse the next call of the tool loop. So the
    pieces are joined here: a block ends with its signature, whose chunk carries either the
    last piece or the whole text once more; a redacted block comes whole.
    """
    blocks: list[dict[str, Any]] = []
    text = ""
    for chunk in chunks:
        delta = chunk.choices[0].delta if chunk.choices else None
        for block in getattr(delta, "thinking_blocks", None) or []:
            block = dict(block)
            if block.get("type") != "thinking":
                blocks.append(block)
                continue
            piece = str(block.get("thinking") or "")
            whole_again = block.get("signature") and text and piece.startswith(text)
            text = piece if whole_again else text + piece
            if block.get("signature"):
                blocks.append(
                    {"type": "thinking", "thinking": text, "signature": block["signature"]}
                )
                text = ""
    if text:  # thinking without a signature (Gemini's thoughts): kept as litellm keeps it
        blocks.append({"type": "thinking", "thinking": text})
    return blocks


class _ProviderEnding:
    """Whether a stream's provider said it had finished: a chunk it sent carried a finish
    reason (OpenAI's finish_reason, Anthropic's and Bedrock's stop reason, Gemini's finishReason).

    litellm cannot tell: the chunks it hands on end with a finish_reason of its own, "stop" when
    the provider sent none, and its flag for the provider's (`received_finish_reason`) is never
    set for Gemini, whose parser marks every chunk "not finished", the last one included. So the
    chunks are looked at where litellm's wrapper takes each one from the provider's parser
    (`chunk_creator`). Gemini's parser (Google AI Studio and Vertex) is looked into too: it puts
    a finish_reason on every chunk ("stop" where Gemini sent no finishReason), so for it the
    provider's own JSON is read as it is parsed (`chunk_parser`), on a stream opened at once or
    lazily on the first read (`make_call`).
    """

    def __init__(self, stream: Any) -> None:
        self.seen = False
        self._raw_json_read = False
        create = stream.chunk_creator

        def look_then_create(chunk: Any) -> Any:
            if not self._raw_json_read:
                self.seen = self.seen or _carries_finish_reason(chunk)
            return create(chunk=chunk)

        stream.chunk_creator = look_then_create
        if getattr(stream, "completion_stream", None) is not None:
            self._read_gemini_json(stream.completion_stream)
        elif (make_call := getattr(stream, "make_call", None)) is not None:

            def open_then_look(*args: Any, **kwargs: Any) -> Any:
                opened = make_call(*args, **kwargs)
                self._read_gemini_json(opened)
                return opened

            stream.make_call = open_then_look

    def _read_gemini_json(self, parser: Any) -> None:
        if not isinstance(parser, GeminiStreamParser):
            return
        self._raw_json_read = True
        parse = parser.chunk_parser

        def look_then_parse(chunk: Any) -> Any:
            candidates = chunk.get("candidates") if isinstance(chunk, dict) else None
            said = any(
                isinstance(candidate, dict) and candidate.get("finishReason")
                for candidate in candidates or ()
            )
            self.seen = self.seen or said
            return parse(chunk=chunk)

        parser.chunk_parser = look_then_parse  # type: ignore[method-assign]


def _carries_finish_reason(chunk: Any) -> bool:
    """A provider chunk as litellm's parsers yield it: a stream chunk object with choices, or
    a dict (litellm's generic chunk: `finish_reason`, `is_finished`)."""
    if isinstance(chunk, dict):
        return bool(chunk.get("finish_reason") or chunk.get("is_finished"))
    return any(
        getattr(choice, "finish_reason", None) for choice in getattr(chunk, "choices", None) or ()
    )


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

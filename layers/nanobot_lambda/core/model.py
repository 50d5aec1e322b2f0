"""What the agent loop exchanges with an LLM, independent of litellm: tool calls, usage,
replies, and tool definitions in the OpenAI format litellm takes for every provider.

The model itself is the `ChatModel` port (core/ports.py); the litellm adapter lives in
`adapters/llm/litellm_model/`, and only agent_turn imports it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # raw JSON text as the model produced it; validated by the tool registry

    def json_object(self) -> dict[str, Any] | None:
        """The arguments as a JSON object; None when they are not valid JSON or not an object."""
        try:
            parsed = json.loads(self.arguments or "{}")
        except json.JSONDecodeError:
            return None
        return parsed if isinstance(parsed, dict) else None


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    cost_usd: float | None = None

    def __add__(self, other: Usage) -> Usage:
        cost = None
        if self.cost_usd is not None or other.cost_usd is not None:
            cost = (self.cost_usd or 0.0) + (other.cost_usd or 0.0)
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.cached_tokens + other.cached_tokens,
            cost,
        )


@dataclass(frozen=True)
class ModelReply:
    content: str | None
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = field(default_factory=Usage)
    # Reasoning some providers require back with the assistant message that called tools
    # (Anthropic thinking blocks with their signatures; reasoning_content of DeepSeek, Kimi…).
    reasoning_content: str | None = None
    thinking_blocks: tuple[dict[str, Any], ...] = ()
    model: str | None = None  # the model that answered (a fallback's name when one did)

    def call_to(self, name: str) -> ToolCall | None:
        """The reply's call to `name` (the answer to a forced tool call), if it made one."""
        return next((call for call in self.tool_calls if call.name == name), None)


ToolChoice = str | dict[str, Any] | None

REASONING_EFFORTS = ("off", "low", "medium", "high")
"""How hard a reasoning model thinks before it answers, per call (`CompletionRequest`):
"off" is no thinking (or the least a model that always thinks allows); None (not one of these)
leaves it to the provider's default."""

TextStream = Callable[[str], None]
"""Receives the text of a reply as it is generated: the whole text so far, each time. A model
call that is retried after its stream broke starts again from the beginning (shorter text)."""


def function_tool(name: str, description: str, parameters: dict[str, Any]) -> dict[str, Any]:
    """A tool definition in the (OpenAI) format litellm takes for every provider."""
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": parameters},
    }


def force_tool(name: str) -> dict[str, Any]:
    """A `tool_choice` that makes the model call `name` (structured output through a tool)."""
    return {"type": "function", "function": {"name": name}}


@dataclass(frozen=True)
class Speech:
    """Text read aloud: the audio, and what it cost when the provider's price is known."""

    audio: bytes
    cost_usd: float | None = None


@dataclass(frozen=True)
class Transcript:
    """Audio as text, and what it cost when known (often not: providers price by duration)."""

    text: str
    cost_usd: float | None = None


@dataclass(frozen=True)
class Embeddings:
    """Texts as vectors (one per text, in order), and what the call cost when known."""

    vectors: tuple[tuple[float, ...], ...]
    model: str  # the model that made them: an index built with another is rebuilt
    cost_usd: float | None = None


@dataclass(frozen=True)
class CompletionRequest:
    """What one completion is asked: the messages so far and the tools offered (in the format
    of `function_tool`), and how.

    `tool_choice`: None lets the model choose (the agent's calls); `force_tool(name)` makes it
    call that tool (structured output). `timeout`: the seconds the call may take in all,
    fallbacks included; None: no bound but each attempt's own. With `on_text`, the reply is
    streamed and its text so far given to `on_text` as it arrives; the reply returned is still
    the whole one. `reasoning_effort` is one of `REASONING_EFFORTS`, None for the model's own
    (its /think choice) or the provider's default; thinking never reaches `on_text` or the
    reply's content.
    """

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] = field(default_factory=list)
    tool_choice: ToolChoice = None
    timeout: float | None = None
    on_text: TextStream | None = None
    reasoning_effort: str | None = None


class ChatModel(Protocol):
    def complete(self, request: CompletionRequest) -> ModelReply:
        """One completion of `request`. Raises ModelError when the provider (and every
        fallback) fails, mid-stream included."""
        ...


class Speaker(Protocol):
    def speak(self, text: str) -> Speech:
        """The Markdown `text` read aloud, as an OGG/Opus voice note. Raises ModelError on any
        failure, naming its kind and status, never the request."""
        ...


class TokenCounter(Protocol):
    @property
    def context_window(self) -> int:
        """The model's input limit in tokens."""
        ...

    def count(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
    ) -> int:
        """The input tokens of a request (messages and tool schemas), as the model's tokenizer
        counts them or close to it."""
        ...


class Embedder(Protocol):
    def embed(self, texts: Sequence[str]) -> Embeddings:
        """One vector per text, unit length. Raises ModelError on any failure, naming its kind
        and status, never the texts."""
        ...


class Transcriber(Protocol):
    def transcribe(self, filename: str, data: bytes) -> Transcript:
        """The speech in the audio as text. Raises ModelError on any failure, naming the kind
        and status of the failure, never the request."""
        ...

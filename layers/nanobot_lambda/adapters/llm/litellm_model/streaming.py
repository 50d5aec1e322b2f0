"""A streamed completion read to its end: its text handed on as it grows, its ending checked.

A stream is complete when the provider said so (a chunk of its own with a finish reason),
whatever litellm makes of it (`ProviderEnding`); the thinking blocks and tool calls of the
chunks are put together as the provider sent them.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import litellm
from litellm.llms.vertex_ai.gemini.vertex_and_google_ai_studio_gemini import (
    ModelResponseIterator as GeminiStreamParser,
)

from nanobot_lambda.core.model import TextStream


class IncompleteStreamError(Exception):
    """A stream that ended without a finish_reason: the reply may be cut short."""


class TextStreamError(Exception):
    """`on_text` itself failed: not the model's fault, so neither retried nor a ModelError."""

    def __init__(self, error: Exception) -> None:
        super().__init__(error)
        self.error = error


def read_stream(
    stream: Any, messages: list[dict[str, Any]], deadline: float | None, on_text: TextStream
) -> Any:
    """The complete response from a litellm stream, feeding `on_text` whenever the text grows.

    Raises what litellm raises when the stream breaks (a reset connection or a provider's error
    event: `MidStreamFallbackError`), TimeoutError past the deadline, and IncompleteStreamError
    when the stream ends without the provider's finish_reason (litellm then makes one up).
    """
    chunks, text = [], ""
    ending = ProviderEnding(stream)
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
                raise TextStreamError(error) from error
        if deadline is not None and time.monotonic() > deadline:
            raise TimeoutError("the stream outlasted the time budget")
    if not ending.seen:
        raise IncompleteStreamError("the stream ended without a finish_reason")
    name_tool_calls(chunks)
    response: Any = litellm.stream_chunk_builder(chunks, messages=messages)
    message = response.choices[0].message
    message.content = message.content or None  # "" when only tools were called
    if thinking := streamed_thinking_blocks(chunks):
        message.thinking_blocks = thinking
    return response


def streamed_thinking_blocks(chunks: list[Any]) -> list[dict[str, Any]]:
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


class ProviderEnding:
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


def name_tool_calls(chunks: list[Any]) -> None:
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

"""Stand-ins of providers' own wire formats on 127.0.0.1, for the provider matrix.

litellm talks to each over real HTTP, as to the provider: `GeminiServer` is Google AI Studio's
generateContent / streamGenerateContent (`gemini/…` with `api_base`), `BedrockServer` is
Bedrock's Converse / ConverseStream (`bedrock/converse/…` with `api_base`; the stream is AWS's
binary event stream); `AnthropicServer` (anthropic_server.py) is the Anthropic Messages API on
the same base. The OpenAI chat completions API (and OpenAI-compatible local servers) is
`scripted_model.py`.

Each serves a script of `Answer`s, one per request, in the order given: the same answer in
each provider's format, streamed or not. An answer says what a provider sends back: text,
thinking (with its signature), tool calls, usage with prompt-cache reads and writes, or a
failure: an error status before anything is sent, or a fault after some pieces of a stream
(`fault_after`): an error event as the provider sends it mid-stream (a server error or a rate
limit), or a connection dropped before the provider's final chunk. A request with no answer
left gets a 500 and is recorded in `unexpected`.

Each refuses a request as its provider does when thinking goes back wrong (a 400, the reason
in `refused`): a signature this server never gave, or (Bedrock's Claude with thinking on) a
tool step continued without its thinking, a forced tool or a max_tokens not above the thinking
budget, or (Gemini) a function call of the step continued
without the thought signature given with it.
"""

from __future__ import annotations

import binascii
import itertools
import json
import socket
import struct
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import unquote

from nanobot_lambda.operator.local.http import BackgroundHttpServer

TEXT_PIECE_CHARS = 6  # a streamed text arrives in pieces this long
JSON_PIECE_CHARS = 8  # and a tool call's input (where the provider streams it)


@dataclass(frozen=True)
class Thought:
    text: str
    signature: str  # what the provider requires back unchanged with the tool results


@dataclass
class Answer:
    text: str | None = "ok"
    tool_calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # (name, input)
    thinking: list[Thought] = field(default_factory=list)
    redacted: list[str] = field(default_factory=list)  # Anthropic's redacted thinking (its data)
    input_tokens: int = 100  # neither read from nor written to the cache
    output_tokens: int = 20
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    status: int = 200  # non-200: the provider's error response, before anything streams
    # Streaming only: after this many pieces, the fault ("error": the provider's error event,
    # "rate_limit": its rate-limit error event, "drop": the connection closed mid-body, "end":
    # the body ended properly there, without the provider's final chunk: a proxy cutting it).
    fault_after: int | None = None
    fault: str = "error"


class ProviderServer(BackgroundHttpServer):
    """Records each POST (path, headers, JSON body) and answers it from the script."""

    MODEL = ""

    def __init__(self) -> None:
        self.answers: deque[Answer] = deque()
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self.headers: list[dict[str, str]] = []
        self.unexpected: list[dict[str, Any]] = []
        self.refused: list[str] = []
        self.thoughts: set[Thought] = set()  # the thinking given so far, with its signatures
        self.redacted: set[str] = set()  # the redacted thinking given so far
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        super().__init__(self._handler())
        self._server.daemon_threads = True

    def script(self, *answers: Answer) -> None:
        self.answers.extend(answers)

    def call_id(self) -> str:
        return f"call{next(self._ids):04d}"

    def _take(self, path: str, headers: dict[str, str], body: dict[str, Any]) -> Answer | None:
        with self._lock:
            self.paths.append(path)
            self.headers.append(headers)
            self.requests.append(body)
            if refusal := self.refusal(body):
                self.refused.append(refusal)
                return Answer(status=400)
            if not self.answers:
                self.unexpected.append(body)
                return None
            answer = self.answers.popleft()
            self.thoughts.update(answer.thinking)
            self.redacted.update(answer.redacted)
            return answer

    def refusal(self, body: dict[str, Any]) -> str | None:
        """Why the provider would refuse `body`'s thinking, if it would."""
        return None

    # -- what a subclass says --------------------------------------------------------------

    def is_stream(self, path: str, body: dict[str, Any]) -> bool:
        raise NotImplementedError

    def message(self, answer: Answer) -> dict[str, Any]:
        """The whole answer, as the provider's JSON response."""
        raise NotImplementedError

    def events(self, answer: Answer) -> list[bytes]:
        """The streamed answer, each item one event as sent on the wire."""
        raise NotImplementedError

    def fault_event(self, answer: Answer) -> bytes:
        raise NotImplementedError

    def error(self, status: int) -> dict[str, Any]:
        raise NotImplementedError

    stream_content_type = "text/event-stream"

    # -- serving ---------------------------------------------------------------------------

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                path = unquote(self.path)
                answer = server._take(path, dict(self.headers), body)
                if answer is None or answer.status != 200:
                    status = 500 if answer is None else answer.status
                    self._json(status, server.error(status))
                elif server.is_stream(path, body):
                    self._stream(answer)
                else:
                    self._json(200, server.message(answer))

            def _json(self, status: int, payload: dict[str, Any]) -> None:
                encoded = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(encoded)))
                self.end_headers()
                self.wfile.write(encoded)

            def _stream(self, answer: Answer) -> None:
                # A chunked body: its end is explicit, so a connection closed before it is a
                # broken stream (as from a provider behind a proxy that cut it).
                events = server.events(answer)
                self.send_response(200)
                self.send_header("Content-Type", server.stream_content_type)
                self.send_header("Transfer-Encoding", "chunked")
                self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True
                if answer.fault_after is not None:
                    events = events[: answer.fault_after]
                try:
                    for event in events:
                        self._chunk(event)
                    if answer.fault_after is not None and answer.fault == "drop":
                        self.connection.shutdown(socket.SHUT_RDWR)
                        return
                    if answer.fault_after is not None and answer.fault != "end":
                        self._chunk(server.fault_event(answer))
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def _chunk(self, data: bytes) -> None:
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler


def pieces(text: str, size: int) -> list[str]:
    return [text[start : start + size] for start in range(0, len(text), size)]


def sse(data: dict[str, Any], event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data)}\n\n".encode()


# -- Gemini (Google AI Studio) ---------------------------------------------------------------


class GeminiServer(ProviderServer):
    """`POST {base}/models/{model}:generateContent` and `…:streamGenerateContent?alt=sse`.

    A thought is a part with `"thought": true`; its signature goes on the first part after the
    thinking (the function call, or the text), as Gemini sends it. Function calls arrive whole
    in one chunk (Gemini does not stream arguments). The final chunk carries finishReason and
    the usage (`cachedContentTokenCount` for cache reads: Gemini reports no cache writes).
    """

    MODEL = "gemini/gemini-2.5-flash"

    def env(self, api_key: str = "gemini-test-key") -> dict[str, str]:
        return {"LLM_MODEL": self.MODEL, "LLM_API_BASE": self.url, "LLM_API_KEY": api_key}

    def is_stream(self, path: str, body: dict[str, Any]) -> bool:
        return ":streamGenerateContent" in path

    def refusal(self, body: dict[str, Any]) -> str | None:
        contents = body.get("contents") or []
        for content in contents:
            for part in content.get("parts") or []:
                signature = part.get("thoughtSignature", part.get("thought_signature"))
                given = {thought.signature for thought in self.thoughts}
                if signature is not None and signature not in given:
                    return "Corrupted thought signature."
        answering = len(contents) >= 2 and any(
            _has(part, "functionResponse") for part in contents[-1].get("parts") or []
        )
        step = contents[-2].get("parts") or [] if answering else []
        calls = [part for part in step if _has(part, "functionCall")]
        if answering and self.thoughts and calls and not _has(calls[0], "thoughtSignature"):
            return "Function call is missing a thought_signature in functionCall parts."
        return None

    def _parts(self, answer: Answer) -> list[dict[str, Any]]:
        parts: list[dict[str, Any]] = [
            {"text": thought.text, "thought": True} for thought in answer.thinking
        ]
        answer_parts: list[dict[str, Any]] = []
        if answer.text:
            answer_parts.append({"text": answer.text})
        answer_parts += [{"functionCall": {"name": n, "args": a}} for n, a in answer.tool_calls]
        if answer.thinking and answer_parts:
            answer_parts[-1 if answer.tool_calls else 0]["thoughtSignature"] = answer.thinking[
                -1
            ].signature
        return parts + answer_parts

    def _usage(self, answer: Answer) -> dict[str, Any]:
        prompt = answer.input_tokens + answer.cache_read_tokens
        usage: dict[str, Any] = {
            "promptTokenCount": prompt,
            "candidatesTokenCount": answer.output_tokens,
            "totalTokenCount": prompt + answer.output_tokens,
        }
        if answer.cache_read_tokens:
            usage["cachedContentTokenCount"] = answer.cache_read_tokens
        return usage

    def _body(self, parts: list[dict[str, Any]], finish: bool, answer: Answer) -> dict[str, Any]:
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
        if finish:
            candidate["finishReason"] = "STOP"
        return {
            "candidates": [candidate],
            "usageMetadata": self._usage(answer),
            "modelVersion": "gemini-2.5-flash",
            "responseId": "resp-gemini",
        }

    def message(self, answer: Answer) -> dict[str, Any]:
        return self._body(self._parts(answer), True, answer)

    def events(self, answer: Answer) -> list[bytes]:
        parts: list[dict[str, Any]] = []
        for part in self._parts(answer):
            text = part.get("text")
            if text is None or len(text) <= TEXT_PIECE_CHARS:
                parts.append(part)
                continue
            # Each piece of a thought is marked as one; a signature comes once, with the last.
            texts = pieces(text, TEXT_PIECE_CHARS)
            for index, piece in enumerate(texts):
                marks = {"thought": True} if part.get("thought") else {}
                if "thoughtSignature" in part and index == len(texts) - 1:
                    marks["thoughtSignature"] = part["thoughtSignature"]
                parts.append({**marks, "text": piece})
        if parts and not answer.tool_calls and answer.text:
            # Gemini's last chunk often carries the end of the text with finishReason.
            return [
                sse(self._body([piece], index == len(parts) - 1, answer))
                for index, piece in enumerate(parts)
            ]
        chunks = [sse(self._body([piece], False, answer)) for piece in parts]
        return [*chunks, sse(self._body([{"text": ""}], True, answer))]

    def fault_event(self, answer: Answer) -> bytes:
        status = 429 if answer.fault == "rate_limit" else 500
        return sse(self.error(status))

    def error(self, status: int) -> dict[str, Any]:
        kind = {429: "RESOURCE_EXHAUSTED", 400: "INVALID_ARGUMENT"}.get(status, "INTERNAL")
        return {"error": {"code": status, "message": f"scripted {kind}", "status": kind}}


def _has(part: dict[str, Any], field: str) -> bool:
    """Whether a Gemini part has `field`: Gemini's JSON takes its fields in camel case or in
    snake case (litellm writes function_call, function_response)."""
    snake = "".join(f"_{char.lower()}" if char.isupper() else char for char in field)
    return field in part or snake in part


# -- Bedrock Converse --------------------------------------------------------------------------


class BedrockServer(ProviderServer):
    """`POST {base}/model/{modelId}/converse` and `…/converse-stream` (Bedrock runtime).

    ConverseStream answers in AWS's binary event stream (`application/vnd.amazon.eventstream`):
    messageStart, per content block contentBlockStart (tool use) / contentBlockDelta /
    contentBlockStop, messageStop (the stop reason), metadata (usage, cache reads and writes).
    Thinking is a reasoningContent block (text deltas, then its signature). A fault mid-stream
    is an exception message (`throttlingException`, `internalServerException`).
    """

    MODEL = "bedrock/converse/anthropic.claude-sonnet-4-5-20250929-v1:0"
    stream_content_type = "application/vnd.amazon.eventstream"

    def env(self, api_key: str = "bedrock-api-key-test") -> dict[str, str]:
        return {"LLM_MODEL": self.MODEL, "LLM_API_BASE": self.url, "LLM_API_KEY": api_key}

    def is_stream(self, path: str, body: dict[str, Any]) -> bool:
        return path.rstrip("/").endswith("/converse-stream")

    def refusal(self, body: dict[str, Any]) -> str | None:
        messages = body.get("messages") or []
        for message in messages:
            for block in message.get("content") or []:
                reasoning = (block.get("reasoningContent") or {}).get("reasoningText")
                if reasoning is None:
                    continue
                if Thought(reasoning.get("text"), reasoning.get("signature")) not in self.thoughts:
                    return "The thinking block's signature is invalid."
        thinking = (body.get("additionalModelRequestFields") or {}).get("thinking") or {}
        if thinking.get("type") not in ("enabled", "adaptive"):
            return None
        choice = (body.get("toolConfig") or {}).get("toolChoice") or {}
        if "any" in choice or "tool" in choice:
            return "Thinking may not be enabled when tool_choice forces tool use."
        if thinking.get("budget_tokens", 0) >= (body.get("inferenceConfig") or {}).get(
            "maxTokens", 0
        ):
            return "max_tokens must be greater than thinking.budget_tokens."
        continuing = len(messages) >= 2 and any(
            "toolResult" in block for block in messages[-1].get("content") or []
        )
        first = (messages[-2].get("content") or [{}])[0] if continuing else {}
        if continuing and "reasoningContent" not in first:
            return "Expected thinking or redacted_thinking, but found tool_use."
        return None

    def _blocks(self, answer: Answer) -> list[dict[str, Any]]:
        blocks: list[dict[str, Any]] = [
            {
                "reasoningContent": {
                    "reasoningText": {"text": thought.text, "signature": thought.signature}
                }
            }
            for thought in answer.thinking
        ]
        if answer.text:
            blocks.append({"text": answer.text})
        for name, arguments in answer.tool_calls:
            tool_use = {"toolUseId": f"tooluse_{self.call_id()}", "name": name, "input": arguments}
            blocks.append({"toolUse": tool_use})
        return blocks

    def _usage(self, answer: Answer) -> dict[str, int]:
        return {
            "inputTokens": answer.input_tokens,
            "outputTokens": answer.output_tokens,
            "totalTokens": answer.input_tokens + answer.output_tokens,
            "cacheReadInputTokens": answer.cache_read_tokens,
            "cacheWriteInputTokens": answer.cache_write_tokens,
        }

    def message(self, answer: Answer) -> dict[str, Any]:
        return {
            "output": {"message": {"role": "assistant", "content": self._blocks(answer)}},
            "stopReason": "tool_use" if answer.tool_calls else "end_turn",
            "usage": self._usage(answer),
            "metrics": {"latencyMs": 42},
        }

    def events(self, answer: Answer) -> list[bytes]:
        events = [_event("messageStart", {"role": "assistant"})]
        for index, block in enumerate(self._blocks(answer)):
            if "toolUse" in block:
                tool_use = block["toolUse"]
                start = {"toolUse": {"toolUseId": tool_use["toolUseId"], "name": tool_use["name"]}}
                events.append(
                    _event("contentBlockStart", {"start": start, "contentBlockIndex": index})
                )
                deltas = [
                    {"toolUse": {"input": piece}}
                    for piece in pieces(json.dumps(tool_use["input"]), JSON_PIECE_CHARS)
                ]
            elif "reasoningContent" in block:
                reasoning = block["reasoningContent"]["reasoningText"]
                deltas = [
                    {"reasoningContent": {"text": piece}}
                    for piece in pieces(reasoning["text"], TEXT_PIECE_CHARS)
                ]
                deltas.append({"reasoningContent": {"signature": reasoning["signature"]}})
            else:
                deltas = [{"text": piece} for piece in pieces(block["text"], TEXT_PIECE_CHARS)]
            events += [
                _event("contentBlockDelta", {"delta": delta, "contentBlockIndex": index})
                for delta in deltas
            ]
            events.append(_event("contentBlockStop", {"contentBlockIndex": index}))
        stop = "tool_use" if answer.tool_calls else "end_turn"
        events.append(_event("messageStop", {"stopReason": stop}))
        events.append(
            _event("metadata", {"usage": self._usage(answer), "metrics": {"latencyMs": 42}})
        )
        return events

    def fault_event(self, answer: Answer) -> bytes:
        if answer.fault == "rate_limit":
            kind, text = "throttlingException", "Too many requests, please wait."
        else:
            kind, text = "internalServerException", "scripted failure mid-stream"
        headers = {":message-type": "exception", ":exception-type": kind}
        return event_stream_message(headers, json.dumps({"message": text}).encode())

    def error(self, status: int) -> dict[str, Any]:
        kind = {429: "ThrottlingException", 400: "ValidationException"}.get(
            status, "InternalServerException"
        )
        return {"message": f"scripted {kind}", "__type": kind}


def _event(event_type: str, payload: dict[str, Any]) -> bytes:
    headers = {
        ":message-type": "event",
        ":event-type": event_type,
        ":content-type": "application/json",
    }
    return event_stream_message(headers, json.dumps({**payload, "p": "abcdef"}).encode())


def event_stream_message(headers: dict[str, str], payload: bytes) -> bytes:
    """One message of AWS's event stream: the prelude (total length, headers length, their
    CRC32), the headers (name, type 7 = string, value), the payload, the message's CRC32."""
    encoded = b""
    for name, value in headers.items():
        raw_name, raw_value = name.encode(), value.encode()
        encoded += struct.pack("!B", len(raw_name)) + raw_name
        encoded += struct.pack("!BH", 7, len(raw_value)) + raw_value
    total = 12 + len(encoded) + len(payload) + 4
    prelude = struct.pack("!II", total, len(encoded))
    prelude += struct.pack("!I", binascii.crc32(prelude))
    message = prelude + encoded + payload
    return message + struct.pack("!I", binascii.crc32(message))

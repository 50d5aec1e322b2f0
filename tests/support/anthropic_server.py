"""A scripted Anthropic Messages API on 127.0.0.1 for the tests.

litellm talks to it over real HTTP (`LLM_MODEL=anthropic/claude-sonnet-4-5`,
`LLM_API_BASE=<url>`: litellm posts to `<url>/v1/messages`). Each request is recorded (body and
headers) and consumes the next scripted reply; a request with no reply left gets a 500 and is
recorded in `unexpected`. A reply reports the usage it is given, prompt-cache reads and writes
included (`cache_read_input_tokens`, `cache_creation_input_tokens`), as Anthropic does.

A request with `"stream": true` is answered with Anthropic's server-sent events: message_start
(with the input usage), a content block per text or tool use (start, deltas, stop),
message_delta (stop reason and output tokens) and message_stop. No faults mid-stream: the
OpenAI-compatible `scripted_model` covers those.

`cache_breakpoints(body)` lists where a recorded body carries `cache_control`.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from nanobot_lambda.operator.local.http import BackgroundHttpServer

TEXT_PIECE_CHARS = 6  # a streamed text arrives in pieces this long
JSON_PIECE_CHARS = 8  # and a tool call's input


@dataclass
class Reply:
    text: str | None = "ok"
    tool_uses: list[dict[str, Any]] = field(default_factory=list)  # {"id", "name", "input"}
    status: int = 200  # non-200: an Anthropic error response
    input_tokens: int = 100  # not read from or written to the cache
    output_tokens: int = 20
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0

    def usage(self) -> dict[str, int]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_read_input_tokens": self.cache_read_input_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
        }

    def blocks(self) -> list[dict[str, Any]]:
        text = [{"type": "text", "text": self.text}] if self.text else []
        return text + [{"type": "tool_use", **tool_use} for tool_use in self.tool_uses]


class AnthropicServer(BackgroundHttpServer):
    MODEL = "anthropic/claude-sonnet-4-5"

    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.paths: list[str] = []
        self.unexpected: list[dict[str, Any]] = []
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        super().__init__(self._handler())
        self._server.daemon_threads = True

    def env(self, api_key: str = "test-key") -> dict[str, str]:
        return {"LLM_MODEL": self.MODEL, "LLM_API_BASE": self.url, "LLM_API_KEY": api_key}

    # -- scripting -------------------------------------------------------------------------

    def reply(self, text: str, **usage: Any) -> AnthropicServer:
        """Answer `text`; `usage`: input_tokens, output_tokens, cache_read_input_tokens,
        cache_creation_input_tokens (see `Reply`)."""
        self.replies.append(Reply(text=text, **usage))
        return self

    def call_tool(
        self, name: str, arguments: dict[str, Any], *, text: str | None = None, **usage: Any
    ) -> AnthropicServer:
        tool_use = {"id": f"toolu_{next(self._ids):04d}", "name": name, "input": arguments}
        self.replies.append(Reply(text=text, tool_uses=[tool_use], **usage))
        return self

    def fail(self, status: int = 500, times: int = 1) -> AnthropicServer:
        for _ in range(times):
            self.replies.append(Reply(status=status))
        return self

    # -- serving ---------------------------------------------------------------------------

    def _take(self, path: str, headers: dict[str, str], body: dict[str, Any]) -> Reply | None:
        with self._lock:
            self.paths.append(path)
            self.requests.append(body)
            self.headers.append(headers)
            if not self.replies:
                self.unexpected.append(body)
                return None
            return self.replies.popleft()

    def _message(self, reply: Reply, request: dict[str, Any]) -> dict[str, Any]:
        return {
            "id": f"msg_{next(self._ids):04d}",
            "type": "message",
            "role": "assistant",
            "model": request.get("model", "claude"),
            "content": reply.blocks(),
            "stop_reason": "tool_use" if reply.tool_uses else "end_turn",
            "stop_sequence": None,
            "usage": reply.usage(),
        }

    def _events(self, reply: Reply, request: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        message = self._message(reply, request)
        opening = {**message, "content": [], "stop_reason": None}
        opening["usage"] = {**reply.usage(), "output_tokens": 1}
        events: list[tuple[str, dict[str, Any]]] = [
            ("message_start", {"type": "message_start", "message": opening})
        ]
        for index, block in enumerate(message["content"]):
            start: dict[str, Any]
            if block["type"] == "text":
                start = {"type": "text", "text": ""}
                kind, key, whole = "text_delta", "text", block["text"]
                size = TEXT_PIECE_CHARS
            else:
                start = {**block, "input": {}}
                kind, key, whole = "input_json_delta", "partial_json", json.dumps(block["input"])
                size = JSON_PIECE_CHARS
            events.append(
                (
                    "content_block_start",
                    {"type": "content_block_start", "index": index, "content_block": start},
                )
            )
            for offset in range(0, len(whole), size):
                delta = {"type": kind, key: whole[offset : offset + size]}
                events.append(
                    (
                        "content_block_delta",
                        {"type": "content_block_delta", "index": index, "delta": delta},
                    )
                )
            events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
        events.append(
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                    "usage": {"output_tokens": reply.output_tokens},
                },
            )
        )
        events.append(("message_stop", {"type": "message_stop"}))
        return events

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                if not self.path.rstrip("/").endswith("/v1/messages"):
                    self._json(404, _error("not_found_error", f"no route {self.path}"))
                    return
                reply = server._take(self.path, dict(self.headers), body)
                if reply is None:
                    self._json(500, _error("api_error", "no scripted reply left"))
                elif reply.status != 200:
                    self._json(reply.status, _error("api_error", "scripted failure"))
                elif body.get("stream"):
                    self._stream(server._events(reply, body))
                else:
                    self._json(200, server._message(reply, body))

            def _json(self, status: int, payload: dict[str, Any]) -> None:
                encoded = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(encoded)))
                self.end_headers()
                self.wfile.write(encoded)

            def _stream(self, events: list[tuple[str, dict[str, Any]]]) -> None:
                # HTTP/1.0: the body ends when the connection closes, after message_stop.
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.end_headers()
                for name, data in events:
                    self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
                    self.wfile.flush()
                self.close_connection = True

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler


def _error(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


def cache_breakpoints(body: dict[str, Any]) -> list[str]:
    """Where a Messages API body carries `cache_control`: "tools[i]", "system[i]",
    "messages[i].content[j]" and, inside a tool_result, "messages[i].content[j].content[k]"."""
    found = [
        f"tools[{index}]"
        for index, tool in enumerate(body.get("tools") or [])
        if "cache_control" in tool
    ]
    system = body.get("system")
    for index, block in enumerate(system if isinstance(system, list) else []):
        if "cache_control" in block:
            found.append(f"system[{index}]")
    for number, message in enumerate(body.get("messages") or []):
        content = message.get("content")
        for index, block in enumerate(content if isinstance(content, list) else []):
            where = f"messages[{number}].content[{index}]"
            if "cache_control" in block:
                found.append(where)
            inner = block.get("content")
            for inner_index, part in enumerate(inner if isinstance(inner, list) else []):
                if isinstance(part, dict) and "cache_control" in part:
                    found.append(f"{where}.content[{inner_index}]")
    return found

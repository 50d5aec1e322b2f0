"""A scripted Anthropic Messages API on 127.0.0.1 for the tests.

litellm talks to it over real HTTP (`LLM_MODEL=anthropic/claude-sonnet-4-5`,
`LLM_API_BASE=<url>`: litellm posts to `<url>/v1/messages`). Each request is recorded (body and
headers) and consumes the next scripted `Answer` (tests/support/provider_servers.py, shared with
the other providers' stand-ins); a request with no answer left gets a 500 and is recorded in
`unexpected`. An answer reports the usage it is given, prompt-cache reads and writes included
(`cache_read_input_tokens`, `cache_creation_input_tokens`), as Anthropic does.

A request with `"stream": true` is answered with Anthropic's server-sent events: message_start
(with the input usage), a content block per thinking, text or tool use (start, deltas, stop; a
thinking block's signature as a signature_delta; a redacted thinking block whole in its start),
message_delta (stop reason and output tokens)
and message_stop. A fault mid-stream is Anthropic's error event (`overloaded_error`,
`rate_limit_error`), a dropped connection or a body that ends early (see `Answer`).

As Anthropic does, a request with thinking enabled is refused (400, the reason in `refused`)
when the assistant message of the tool step it continues does not start with a thinking block,
when it forces a tool, sets a temperature other than 1 or a max_tokens not above the thinking
budget; and any request is refused whose thinking blocks (redacted ones too) are not exactly
ones this server gave.

`cache_breakpoints(body)` lists where a recorded body carries `cache_control`.
"""

from __future__ import annotations

import json
from typing import Any, Self

from tests.support.provider_servers import (
    JSON_PIECE_CHARS,
    TEXT_PIECE_CHARS,
    Answer,
    ProviderServer,
    Thought,
    pieces,
    sse,
)

_USAGE_NAMES = {  # Anthropic's names of the usage an answer reports
    "input_tokens": "input_tokens",
    "output_tokens": "output_tokens",
    "cache_read_input_tokens": "cache_read_tokens",
    "cache_creation_input_tokens": "cache_write_tokens",
}


class AnthropicServer(ProviderServer):
    MODEL = "anthropic/claude-sonnet-4-5"

    def env(self, api_key: str = "test-key") -> dict[str, str]:
        return {"LLM_MODEL": self.MODEL, "LLM_API_BASE": self.url, "LLM_API_KEY": api_key}

    # -- scripting -------------------------------------------------------------------------

    def reply(self, text: str, **usage: int) -> Self:
        """Answer `text`; `usage` in Anthropic's names: input_tokens, output_tokens,
        cache_read_input_tokens, cache_creation_input_tokens."""
        self.answers.append(Answer(text=text, **_usage(usage)))
        return self

    def call_tool(
        self, name: str, arguments: dict[str, Any], *, text: str | None = None, **usage: int
    ) -> Self:
        self.answers.append(Answer(text=text, tool_calls=[(name, arguments)], **_usage(usage)))
        return self

    def fail(self, status: int = 500, times: int = 1) -> Self:
        self.answers.extend(Answer(status=status) for _ in range(times))
        return self

    # -- the wire format -------------------------------------------------------------------

    def is_stream(self, path: str, body: dict[str, Any]) -> bool:
        return bool(body.get("stream"))

    def refusal(self, body: dict[str, Any]) -> str | None:
        messages = body.get("messages") or []
        for message in messages:
            for block in _blocks_of(message):
                given = Thought(block.get("thinking"), block.get("signature"))
                if block.get("type") == "thinking" and given not in self.thoughts:
                    return "Invalid `signature` in `thinking` block"
                if block.get("type") == "redacted_thinking" and block["data"] not in self.redacted:
                    return "Invalid `data` in `redacted_thinking` block"
        if (body.get("thinking") or {}).get("type") not in ("enabled", "adaptive"):
            return None
        if (body.get("tool_choice") or {}).get("type") in ("any", "tool"):
            return "Thinking may not be enabled when tool_choice forces tool use."
        if body.get("temperature", 1) != 1:
            return "`temperature` may only be set to 1 when thinking is enabled."
        budget = (body.get("thinking") or {}).get("budget_tokens", 0)
        if budget >= body.get("max_tokens", 0):
            return "`max_tokens` must be greater than `thinking.budget_tokens`."
        continuing = len(messages) >= 2 and any(
            block.get("type") == "tool_result" for block in _blocks_of(messages[-1])
        )
        first = (_blocks_of(messages[-2]) or [{}])[0].get("type") if continuing else None
        if continuing and first not in ("thinking", "redacted_thinking"):
            return "Expected `thinking` or `redacted_thinking`, but found `tool_use`"
        return None

    def message(self, answer: Answer) -> dict[str, Any]:
        blocks: list[dict[str, Any]] = [
            {"type": "thinking", "thinking": thought.text, "signature": thought.signature}
            for thought in answer.thinking
        ]
        blocks += [{"type": "redacted_thinking", "data": data} for data in answer.redacted]
        if answer.text:
            blocks.append({"type": "text", "text": answer.text})
        blocks += [
            {"type": "tool_use", "id": f"toolu_{self.call_id()}", "name": name, "input": arguments}
            for name, arguments in answer.tool_calls
        ]
        return {
            "id": f"msg_{self.call_id()}",
            "type": "message",
            "role": "assistant",
            "model": self.MODEL.split("/", 1)[1],  # litellm prices the reply by it
            "content": blocks,
            "stop_reason": "tool_use" if answer.tool_calls else "end_turn",
            "stop_sequence": None,
            "usage": {
                "input_tokens": answer.input_tokens,
                "output_tokens": answer.output_tokens,
                "cache_read_input_tokens": answer.cache_read_tokens,
                "cache_creation_input_tokens": answer.cache_write_tokens,
            },
        }

    def events(self, answer: Answer) -> list[bytes]:
        message = self.message(answer)
        opening = {**message, "content": [], "stop_reason": None}
        opening["usage"] = {**message["usage"], "output_tokens": 1}
        events = [sse({"type": "message_start", "message": opening}, "message_start")]
        for index, block in enumerate(message["content"]):
            if block["type"] == "redacted_thinking":
                start, deltas = block, []  # whole in its start
            elif block["type"] == "tool_use":
                start = {**block, "input": {}}
                deltas = [
                    {"type": "input_json_delta", "partial_json": piece}
                    for piece in pieces(json.dumps(block["input"]), JSON_PIECE_CHARS)
                ]
            else:
                key = block["type"]  # "text" or "thinking"
                start = {"type": key, key: ""}
                deltas = [
                    {"type": f"{key}_delta", key: piece}
                    for piece in pieces(block[key], TEXT_PIECE_CHARS)
                ]
                if key == "thinking":
                    deltas.append({"type": "signature_delta", "signature": block["signature"]})
            started = {"type": "content_block_start", "index": index, "content_block": start}
            events.append(sse(started, "content_block_start"))
            for delta in deltas:
                event = {"type": "content_block_delta", "index": index, "delta": delta}
                events.append(sse(event, "content_block_delta"))
            stop = {"type": "content_block_stop", "index": index}
            events.append(sse(stop, "content_block_stop"))
        ending = {"stop_reason": message["stop_reason"], "stop_sequence": None}
        usage = {"output_tokens": answer.output_tokens}
        events.append(
            sse({"type": "message_delta", "delta": ending, "usage": usage}, "message_delta")
        )
        events.append(sse({"type": "message_stop"}, "message_stop"))
        return events

    def fault_event(self, answer: Answer) -> bytes:
        kind = "rate_limit_error" if answer.fault == "rate_limit" else "overloaded_error"
        return sse(_error(kind, "scripted failure mid-stream"), "error")

    def error(self, status: int) -> dict[str, Any]:
        if status == 400 and self.refused:
            return _error("invalid_request_error", self.refused[-1])
        kind = {429: "rate_limit_error", 400: "invalid_request_error"}.get(status, "api_error")
        return _error(kind, "scripted failure")


def _usage(usage: dict[str, int]) -> dict[str, int]:
    return {_USAGE_NAMES[name]: value for name, value in usage.items()}


def _blocks_of(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    blocks = content if isinstance(content, list) else []
    return [block for block in blocks if isinstance(block, dict)]


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

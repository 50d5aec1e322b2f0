"""A scripted, OpenAI-compatible chat-completions server on 127.0.0.1 for the tests.

litellm talks to it over real HTTP (`LLM_MODEL=openai/scripted`, `LLM_API_BASE=<base_url>`).
Each request consumes the next scripted step; a request with no step left gets a 500 and is
recorded in `unexpected`, so a test fails loudly on a call it did not plan for.

It also serves `/v1/audio/transcriptions` (multipart, as OpenAI's Whisper API) from its own
script (`transcribe`, `fail_transcription`), so `TRANSCRIPTION_MODEL=openai/whisper-1` with the
same base URL reaches it through litellm.
"""

from __future__ import annotations

import email.parser
import email.policy
import itertools
import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from nanobot_lambda.operator.local.http import JsonHttpServer


@dataclass
class Step:
    content: str | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    status: int = 200  # non-200: an error response (e.g. 500, 429)
    reasoning_content: str | None = None
    prompt_tokens: int = 100
    completion_tokens: int = 20
    delay: float = 0.0  # seconds before answering (a slow provider)
    # Answer only once this is set (at most 30 s): a test acts while the model "thinks".
    hold: threading.Event | None = None
    cached_tokens: int = 0  # of prompt_tokens, read from the provider's prompt cache


@dataclass
class TranscriptionStep:
    text: str = ""
    status: int = 200


@dataclass(frozen=True)
class TranscriptionRequest:
    model: str
    filename: str
    data: bytes
    headers: dict[str, str]


class ScriptedModelServer(JsonHttpServer):
    MODEL = "openai/scripted"
    TRANSCRIPTION_MODEL = "openai/whisper-1"

    def __init__(self) -> None:
        super().__init__()
        self.steps: deque[Step] = deque()
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.unexpected: list[dict[str, Any]] = []
        self.transcription_steps: deque[TranscriptionStep] = deque()
        self.transcriptions: list[TranscriptionRequest] = []
        # The model the responses name (litellm prices a reply by it); default: the requested one.
        self.response_model: str | None = None
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    def env(self, api_key: str = "sk-test-scripted") -> dict[str, str]:
        return {"LLM_MODEL": self.MODEL, "LLM_API_BASE": self.base_url, "LLM_API_KEY": api_key}

    # -- scripting -------------------------------------------------------------------------

    def reply(self, text: str, **usage: int) -> ScriptedModelServer:
        """Answer `text`; `usage`: prompt_tokens, completion_tokens, cached_tokens to report."""
        self.steps.append(Step(content=text, **usage))
        return self

    def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | str,
        *,
        content: str | None = None,
        **usage: int,
    ) -> ScriptedModelServer:
        raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
        call = {
            "id": f"call_{next(self._ids)}",
            "type": "function",
            "function": {"name": name, "arguments": raw},
        }
        self.steps.append(Step(content=content, tool_calls=[call], **usage))
        return self

    def fail(self, status: int = 500, times: int = 1) -> ScriptedModelServer:
        for _ in range(times):
            self.steps.append(Step(status=status))
        return self

    def transcribe(self, text: str) -> ScriptedModelServer:
        self.transcription_steps.append(TranscriptionStep(text=text))
        return self

    def fail_transcription(self, status: int = 500, times: int = 1) -> ScriptedModelServer:
        for _ in range(times):
            self.transcription_steps.append(TranscriptionStep(status=status))
        return self

    @property
    def remaining(self) -> int:
        return len(self.steps)

    # -- serving ---------------------------------------------------------------------------

    def _next(self, request: dict[str, Any], headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
        with self._lock:
            self.requests.append(request)
            self.headers.append(headers)
            if not self.steps:
                self.unexpected.append(request)
                return 500, {"error": {"message": "no scripted step left", "type": "server_error"}}
            step = self.steps.popleft()
        if step.delay:
            time.sleep(step.delay)
        if step.hold is not None:
            step.hold.wait(30)
        if step.status != 200:
            return step.status, {"error": {"message": "scripted failure", "type": "server_error"}}
        message: dict[str, Any] = {"role": "assistant", "content": step.content}
        if step.tool_calls:
            message["tool_calls"] = step.tool_calls
        if step.reasoning_content is not None:
            message["reasoning_content"] = step.reasoning_content
        return 200, {
            "id": f"chatcmpl-{next(self._ids)}",
            "object": "chat.completion",
            "created": 1763800000,
            "model": self.response_model or request.get("model", "scripted"),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if step.tool_calls else "stop",
                }
            ],
            "usage": {
                "prompt_tokens": step.prompt_tokens,
                "completion_tokens": step.completion_tokens,
                "total_tokens": step.prompt_tokens + step.completion_tokens,
                "prompt_tokens_details": {"cached_tokens": step.cached_tokens},
            },
        }

    def _transcription(self, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, Any]]:
        content_type = headers.get("Content-Type", headers.get("content-type", ""))
        parsed = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
            f"Content-Type: {content_type}\r\n\r\n".encode() + body
        )
        fields: dict[str, str] = {}
        filename, data = "", b""
        for part in parsed.iter_parts():
            name = part.get_param("name", header="content-disposition")
            payload = part.get_payload(decode=True)
            if not isinstance(payload, bytes):
                continue
            if part.get_filename():
                filename, data = str(part.get_filename()), payload
            elif isinstance(name, str):
                fields[name] = payload.decode()
        with self._lock:
            self.transcriptions.append(
                TranscriptionRequest(fields.get("model", ""), filename, data, headers)
            )
            if not self.transcription_steps:
                return 500, {
                    "error": {"message": "no transcription scripted", "type": "server_error"}
                }
            step = self.transcription_steps.popleft()
        if step.status != 200:
            return step.status, {"error": {"message": "scripted failure", "type": "server_error"}}
        return 200, {"text": step.text}

    def answer(
        self, method: str, path: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, Any]:
        if method == "POST" and path.rstrip("/").endswith("/audio/transcriptions"):
            return self._transcription(headers, body)
        if method != "POST" or not path.rstrip("/").endswith("/chat/completions"):
            return 404, {"error": {"message": f"no route {method} {path}"}}
        return self._next(json.loads(body or b"{}"), headers)

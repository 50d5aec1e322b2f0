"""A scripted, OpenAI-compatible chat-completions server on 127.0.0.1 for the tests.

litellm talks to it over real HTTP (`LLM_MODEL=openai/scripted`, `LLM_API_BASE=<base_url>`).
Each request consumes the next scripted step; a request with no step left gets a 500 and is
recorded in `unexpected`, so a test fails loudly on a call it did not plan for.

A request with `"stream": true` is answered as OpenAI streams: server-sent events of
`chat.completion.chunk`s (about a word of content per chunk, tool calls as argument deltas), a
final chunk with the `finish_reason`, the usage chunk when `stream_options.include_usage`, then
`data: [DONE]`. A step can pace the stream or make it fail midway (`Step.first_token_delay`,
`tokens_per_second`, `break_after`, `truncate_after`, `error_after`).

It also serves `/v1/audio/transcriptions` (multipart, as OpenAI's Whisper API) from its own
script (`transcribe`, `fail_transcription`), so `TRANSCRIPTION_MODEL=openai/whisper-1` with the
same base URL reaches it through litellm; and `/v1/audio/speech` (OpenAI's text to speech),
answering `SPEECH_AUDIO` to every request it records in `speeches` (or a 500 while
`speech_failures` lasts); and `/v1/images/generations` and `/v1/images/edits` (OpenAI's image
API), answering `IMAGE` as base64 to every request it records in `images` (or a content-policy
refusal while `image_refusals` lasts).

With `context_window` set, it refuses a request longer than that, as OpenAI does (400,
`context_length_exceeded`, counted with litellm's gpt-4o tokenizer, the reply's `max_tokens`
included), without taking a step; `too_long` records those requests.

With `served_models` set, `GET /v1/models` lists them, as an OpenAI-compatible server does
(vLLM's entries carry `max_model_len`, the window it serves the model with); unset, a 404.
`model_lists` records the headers of each such request.
"""

from __future__ import annotations

import base64
import io
import itertools
import json
import re
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any, BinaryIO, cast

from nanobot_lambda.operator.local.http import (
    FormFile,
    JsonHttpServer,
    parse_form_data,
    read_body,
)

ARGUMENT_PIECE_CHARS = 8  # a streamed tool call's arguments arrive in pieces this long


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
    # Streaming only (a request with "stream": true). "Pieces" are the chunks after the opening
    # one (role only): a word of content or reasoning, or a fragment of a tool call.
    first_token_delay: float = 0.0  # seconds after the headers before the first chunk
    tokens_per_second: float | None = None  # pace of the chunks; None: as fast as possible
    # After that many pieces, close the connection abruptly (mid-body: no finish_reason, no
    # [DONE], not even the end of the chunked body), as a connection reset does.
    break_after: int | None = None
    # After that many pieces, end the HTTP body properly but the event stream there: no
    # finish_reason, no [DONE] (a proxy cutting the stream cleanly).
    truncate_after: int | None = None
    # After that many pieces, send an error event as providers do mid-stream (`data: {"error":
    # {... "code": 500}}`), then end the body.
    error_after: int | None = None
    error_code: int = 500  # the error event's code (429: a rate limit mid-stream, as OpenRouter's)
    # (A fault after more pieces than the answer has does not happen.)


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
    SPEECH_MODEL = "openai/tts-1"
    SPEECH_AUDIO = b"OggS\x00\x02" + b"scripted opus audio" * 8  # what /audio/speech answers
    IMAGE_MODEL = "openai/gpt-image-1"
    IMAGE = b"\x89PNG\r\n\x1a\n" + b"scripted image" * 8  # what /images/generations answers

    def __init__(self) -> None:
        super().__init__()
        self.steps: deque[Step] = deque()
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.unexpected: list[dict[str, Any]] = []
        self.transcription_steps: deque[TranscriptionStep] = deque()
        self.transcriptions: list[TranscriptionRequest] = []
        self.speeches: list[dict[str, Any]] = []  # the JSON bodies of /audio/speech
        self.speech_failures = 0  # the next speech requests that get a 500
        self.images: list[tuple[str, bytes]] = []  # (path, body) of /images/generations|edits
        self.image_refusals = 0  # the next image requests refused by the "content policy"
        # The model the responses name (litellm prices a reply by it); default: the requested one.
        self.response_model: str | None = None
        self.context_window: int | None = None  # tokens; None: any request is taken
        self.too_long: list[dict[str, Any]] = []
        self.served_models: list[dict[str, Any]] | None = None  # what GET /models lists
        self.model_lists: list[dict[str, str]] = []  # the headers of each GET /models
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    def env(self, api_key: str = "sk-test-scripted") -> dict[str, str]:
        return {"LLM_MODEL": self.MODEL, "LLM_API_BASE": self.base_url, "LLM_API_KEY": api_key}

    # -- scripting -------------------------------------------------------------------------

    def reply(self, text: str, **options: Any) -> ScriptedModelServer:
        """Answer `text`; `options`: the usage to report (prompt_tokens, completion_tokens,
        cached_tokens) and, for a streamed request, its pace and faults (first_token_delay,
        tokens_per_second, break_after, truncate_after, error_after; see `Step`)."""
        self.steps.append(Step(content=text, **options))
        return self

    def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | str,
        *,
        content: str | None = None,
        **usage: Any,  # prompt_tokens, completion_tokens, cached_tokens (ints)
    ) -> ScriptedModelServer:
        return self.call_tools((name, arguments), content=content, **usage)

    def call_tools(
        self,
        *calls: tuple[str, dict[str, Any] | str],
        content: str | None = None,
        **usage: Any,  # prompt_tokens, completion_tokens, cached_tokens (ints)
    ) -> ScriptedModelServer:
        """One step that calls several tools at once, (name, arguments) each, in this order."""
        tool_calls = [
            {
                "id": f"call_{next(self._ids)}",
                "type": "function",
                "function": {
                    "name": name,
                    "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
                },
            }
            for name, arguments in calls
        ]
        self.steps.append(Step(content=content, tool_calls=tool_calls, **usage))
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

    @property
    def streamed(self) -> list[bool]:
        """For each request so far, whether it asked for a streamed answer."""
        return [bool(request.get("stream")) for request in self.requests]

    # -- serving ---------------------------------------------------------------------------

    def _take(self, request: dict[str, Any], headers: dict[str, str]) -> Step | None:
        """Record the request and take its step (None: none left), after the step's delay."""
        with self._lock:
            self.requests.append(request)
            self.headers.append(headers)
            if self._over_the_window(request):
                self.too_long.append(request)
                return Step(status=400)
            if not self.steps:
                self.unexpected.append(request)
                return None
            step = self.steps.popleft()
        if step.delay:
            time.sleep(step.delay)
        if step.hold is not None:
            step.hold.wait(30)
        return step

    def _over_the_window(self, request: dict[str, Any]) -> bool:
        if self.context_window is None:
            return False
        import litellm  # only when a test sets a window: litellm takes seconds to import

        tokens = litellm.token_counter(
            model="gpt-4o", messages=request.get("messages", []), tools=request.get("tools")
        )
        return int(tokens) + int(request.get("max_tokens") or 0) > self.context_window

    def _next(self, request: dict[str, Any], headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
        step = self._take(request, headers)
        if step is None:
            return 500, NO_STEP_LEFT
        if step.status != 200:
            return step.status, _failure(step)
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
                    "finish_reason": _finish_reason(step),
                }
            ],
            "usage": _usage(step),
        }

    def _chunks(self, step: Step, request: dict[str, Any]) -> tuple[list[dict[str, Any]], str]:
        """The chunks of the step as OpenAI streams them, and how the stream ends: "done", or
        the fault that cuts it short ("break", "truncate", "error"; see `Step`)."""
        base = {
            "id": f"chatcmpl-{next(self._ids)}",
            "object": "chat.completion.chunk",
            "created": 1763800000,
            "model": self.response_model or request.get("model", "scripted"),
        }
        with_usage = bool((request.get("stream_options") or {}).get("include_usage"))

        def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
            return {**base, "choices": [choice], **({"usage": None} if with_usage else {})}

        pieces: list[dict[str, Any]] = [
            {"reasoning_content": word} for word in _words(step.reasoning_content or "")
        ]
        pieces += [{"content": word} for word in _words(step.content or "")]
        for index, call in enumerate(step.tool_calls):
            function = call["function"]
            opening = {"index": index, "id": call["id"], "type": call.get("type", "function")}
            opening["function"] = {"name": function["name"], "arguments": ""}
            pieces.append({"tool_calls": [opening]})
            arguments = function.get("arguments") or ""
            for start in range(0, len(arguments), ARGUMENT_PIECE_CHARS):
                fragment = {"arguments": arguments[start : start + ARGUMENT_PIECE_CHARS]}
                pieces.append({"tool_calls": [{"index": index, "function": fragment}]})
        chunks = [chunk({"role": "assistant", "content": ""})]
        faults = [
            (after, kind)
            for after, kind in (
                (step.break_after, "break"),
                (step.truncate_after, "truncate"),
                (step.error_after, "error"),
            )
            if after is not None and after <= len(pieces)
        ]
        if faults:
            after, kind = min(faults)
            return chunks + [chunk(delta) for delta in pieces[:after]], kind
        chunks += [chunk(delta) for delta in pieces]
        chunks.append(chunk({}, _finish_reason(step)))
        if with_usage:
            chunks.append({**base, "choices": [], "usage": _usage(step)})
        return chunks, "done"

    def _stream(self, handler: BaseHTTPRequestHandler, request: dict[str, Any]) -> None:
        """Answer a `"stream": true` request with server-sent events, each flushed at once."""
        step = self._take(request, dict(handler.headers))
        if step is None or step.status != 200:
            status = 500 if step is None else step.status
            _send_json(handler, status, NO_STEP_LEFT if step is None else _failure(step))
            return
        chunks, end = self._chunks(step, request)
        # OpenAI streams over HTTP/1.1 in a chunked body: its end is explicit, so a connection
        # closed before it is a broken stream, not a short one.
        handler.protocol_version = "HTTP/1.1"
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Cache-Control", "no-cache")
        handler.send_header("Transfer-Encoding", "chunked")
        handler.send_header("Connection", "close")
        handler.end_headers()
        pause = 1 / step.tokens_per_second if step.tokens_per_second else 0.0
        try:
            # Each piece is due at its own time from the first token's, so the pace does not
            # drift by the time writing takes (a 600-piece answer would run late).
            first_token_at = time.monotonic() + step.first_token_delay
            for index, chunk in enumerate(chunks):
                due = first_token_at + max(0, index - 1) * pause
                time.sleep(max(0.0, due - time.monotonic()))
                _write_event(handler, json.dumps(chunk))
            if end == "break":  # mid-body, as a reset connection: no end of the chunked body
                handler.connection.shutdown(socket.SHUT_RDWR)
                return
            if end == "error":
                _write_event(handler, json.dumps(_stream_error(step.error_code)))
            elif end == "done":
                _write_event(handler, "[DONE]")
            handler.wfile.write(b"0\r\n\r\n")  # the end of the chunked body
            handler.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client went away (it gave up on a slow stream)

    def _transcription(self, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, Any]]:
        content_type = headers.get("Content-Type", headers.get("content-type", ""))
        fields: dict[str, str] = {}
        filename, data = "", b""
        for name, value in parse_form_data(content_type, body).items():
            if isinstance(value, FormFile):
                filename, data = value.filename, value.data
            else:
                fields[name] = value
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

    def _image(self, path: str, body: bytes) -> tuple[int, Any]:
        """OpenAI's image API: the image as base64, or a content-policy refusal."""
        with self._lock:
            self.images.append((path, body))
            if self.image_refusals:
                self.image_refusals -= 1
                return 400, IMAGE_REFUSED
        encoded = base64.b64encode(self.IMAGE).decode()
        usage = {  # as gpt-image-1 reports it (priced per token)
            "input_tokens": 50,
            "output_tokens": 1056,
            "total_tokens": 1106,
            "input_tokens_details": {"text_tokens": 50, "image_tokens": 0},
        }
        return 200, {"created": 1, "data": [{"b64_json": encoded}], "usage": usage}

    def answer(
        self, method: str, path: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, Any]:
        if method == "POST" and path.rstrip("/").endswith("/audio/transcriptions"):
            return self._transcription(headers, body)
        if method == "POST" and path.rstrip("/").endswith("/audio/speech"):
            with self._lock:
                self.speeches.append(json.loads(body or b"{}"))
                if self.speech_failures:
                    self.speech_failures -= 1
                    return 500, SCRIPTED_FAILURE
            return 200, self.SPEECH_AUDIO
        if method == "POST" and path.rstrip("/").endswith(("/images/generations", "/images/edits")):
            return self._image(path, body)
        if method == "GET" and path.rstrip("/").endswith("/models"):
            self.model_lists.append(headers)
            if self.served_models is None:
                return 404, {"error": {"message": f"no route {method} {path}"}}
            return 200, {"object": "list", "data": self.served_models}
        if method != "POST" or not path.rstrip("/").endswith("/chat/completions"):
            return 404, {"error": {"message": f"no route {method} {path}"}}
        return self._next(json.loads(body or b"{}"), headers)

    def _request_handler(self) -> type[BaseHTTPRequestHandler]:
        """The JSON handler, plus streamed chat completions (server-sent events)."""
        model = self
        json_handler: Any = super()._request_handler()

        class Handler(json_handler):  # type: ignore[misc]
            rfile: BinaryIO

            def do_POST(self) -> None:
                body = read_body(self)
                if self.path.rstrip("/").endswith("/chat/completions"):
                    request = json.loads(body or b"{}")
                    if request.get("stream"):
                        model._stream(self, request)
                        return
                self.rfile = io.BytesIO(body)  # the JSON handler reads the body again
                del self.headers["Transfer-Encoding"]
                del self.headers["Content-Length"]
                self.headers["Content-Length"] = str(len(body))
                super().do_POST()

        return cast(type[BaseHTTPRequestHandler], Handler)


IMAGE_REFUSED = {
    "error": {
        "message": "Your request was rejected as a result of our safety system.",
        "type": "invalid_request_error",
        "code": "content_policy_violation",
    }
}
NO_STEP_LEFT = {"error": {"message": "no scripted step left", "type": "server_error"}}
SCRIPTED_FAILURE = {"error": {"message": "scripted failure", "type": "server_error"}}
STREAM_ERROR = {
    "error": {"message": "scripted failure mid-stream", "type": "server_error", "code": 500}
}


CONTEXT_TOO_LONG = {
    "error": {
        "message": "This model's maximum context length was exceeded. Please reduce the length "
        "of the messages.",
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded",
    }
}


def _stream_error(code: int) -> dict[str, Any]:
    if code == 429:
        return {"error": {"message": "Rate limit exceeded", "type": "rate_limit", "code": 429}}
    return STREAM_ERROR


def _failure(step: Step) -> dict[str, Any]:
    return CONTEXT_TOO_LONG if step.status == 400 else SCRIPTED_FAILURE


def _finish_reason(step: Step) -> str:
    return "tool_calls" if step.tool_calls else "stop"


def _usage(step: Step) -> dict[str, Any]:
    return {
        "prompt_tokens": step.prompt_tokens,
        "completion_tokens": step.completion_tokens,
        "total_tokens": step.prompt_tokens + step.completion_tokens,
        "prompt_tokens_details": {"cached_tokens": step.cached_tokens},
    }


def _words(text: str) -> list[str]:
    """`text` in about a word per piece (each with the spaces before it); they join to it."""
    return re.findall(r"\s*\S+|\s+$", text)


def _write_event(handler: BaseHTTPRequestHandler, data: str) -> None:
    """One server-sent event as one chunk of the chunked body, sent at once."""
    event = f"data: {data}\n\n".encode()
    handler.wfile.write(f"{len(event):x}\r\n".encode() + event + b"\r\n")
    handler.wfile.flush()


def _send_json(handler: BaseHTTPRequestHandler, status: int, payload: dict[str, Any]) -> None:
    encoded = json.dumps(payload).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(encoded)))
    handler.end_headers()
    handler.wfile.write(encoded)

"""A small JSON-over-HTTP server on 127.0.0.1, the base of the local stand-ins for remote APIs;
and `parse_form_data`, for the stand-ins that take uploads (multipart/form-data)."""

from __future__ import annotations

import email.message
import email.parser
import email.policy
import json
import threading
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


@dataclass(frozen=True)
class FormFile:
    """A file part of a multipart/form-data request."""

    filename: str
    data: bytes = field(repr=False)
    content_type: str | None = None  # as the client declared it


def parse_form_data(content_type: str, body: bytes) -> dict[str, str | FormFile]:
    """The fields of a multipart/form-data body: text, or a `FormFile` for a part with a
    filename. Each part's headers are read with the stdlib email parser; the body is split on
    the boundary directly (the email parser takes seconds over a 50 MB upload)."""
    declared = email.message.EmailMessage(policy=email.policy.HTTP)
    declared["Content-Type"] = content_type
    boundary = declared.get_boundary()
    if not boundary:
        return {}
    fields: dict[str, str | FormFile] = {}
    # Every delimiter but a first one at the very start follows a CRLF (RFC 2046 5.1.1).
    segments = (b"\r\n" + body).split(b"\r\n--" + boundary.encode())
    for segment in segments[1:]:  # the first is the preamble
        if segment.startswith(b"--"):  # the close delimiter
            break
        head, _, content = segment.partition(b"\r\n\r\n")
        # Past the delimiter's own line end; names are UTF-8 as browsers and urllib3 send them.
        head = head.partition(b"\r\n")[2]
        headers = email.parser.HeaderParser(policy=email.policy.HTTP).parsestr(
            head.decode("utf-8", "replace") + "\r\n\r\n"
        )
        name = headers.get_param("name", header="content-disposition")
        if not isinstance(name, str):
            continue
        filename = headers.get_filename()
        if filename is not None:
            declared_type = headers.get_content_type() if "Content-Type" in headers else None
            fields[name] = FormFile(str(filename), content, declared_type)
        else:
            fields[name] = content.decode("utf-8", "replace")
    return fields


class BackgroundHttpServer:
    """An HTTP server on an ephemeral port of 127.0.0.1, serving from a daemon thread."""

    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Self:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


class ConnectionDropped(Exception):
    """Raised by `answer`: close the connection without an answer, as a network failure does
    (a stand-in told to fail that way performed the call or not; the client cannot know)."""


def read_body(handler: BaseHTTPRequestHandler) -> bytes:
    """A request's body, sized by Content-Length or sent in chunks (as httpx sends multipart
    uploads of unknown length)."""
    if handler.headers.get("Transfer-Encoding", "").lower() != "chunked":
        length = int(handler.headers.get("Content-Length") or 0)
        return handler.rfile.read(length) if length else b""
    body = b""
    while True:
        size = int(handler.rfile.readline().split(b";")[0].strip() or b"0", 16)
        if size == 0:
            handler.rfile.readline()  # the blank line after the last chunk (no trailers sent)
            return body
        body += handler.rfile.read(size)
        handler.rfile.readline()  # the CRLF after the chunk


class JsonHttpServer(BackgroundHttpServer, ABC):
    """Serves `answer(method, path, headers, body)` as JSON (the remote APIs' stand-ins)."""

    def __init__(self) -> None:
        super().__init__(self._request_handler())

    @abstractmethod
    def answer(
        self, method: str, path: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, Any]:
        """Return (HTTP status, JSON-serialisable body, or bytes) for one request."""

    def _request_handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self._respond("GET")

            def do_POST(self) -> None:
                self._respond("POST")

            def _respond(self, method: str) -> None:
                body = read_body(self)
                try:
                    status, payload = server.answer(method, self.path, dict(self.headers), body)
                except ConnectionDropped:
                    self.close_connection = True
                    return
                binary = isinstance(payload, bytes)  # e.g. audio
                encoded = payload if binary else json.dumps(payload).encode()
                self.send_response(status)
                kind = "application/octet-stream" if binary else "application/json"
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(encoded)))
                self.end_headers()
                self.wfile.write(encoded)

            def log_message(self, format: str, *args: Any) -> None:
                pass  # request lines can contain secrets (the Bot API puts the token in the path)

        return Handler
